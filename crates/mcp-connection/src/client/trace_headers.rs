//! The HTTP client of every streamable HTTP connection: rmcp's (reqwest), with the request's
//! W3C trace context — the `traceparent` and `tracestate` its `_meta` carries — also sent as
//! HTTP headers, so that proxies, gateways and servers that read headers join the trace too.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

/// `C`, with each request's trace context as headers.
#[derive(Clone)]
pub(crate) struct TraceHeaders<C>(pub(crate) C);

/// `headers`, with `message`'s `traceparent` and `tracestate` (from its `_meta`) added.
fn with_trace(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    let JsonRpcMessage::Request(request) = message else { return headers };
    let Some(meta) = crate::meta::params_meta_of(&request.request) else { return headers };
    let trace =
        [("traceparent", meta.0.get_traceparent()), ("tracestate", meta.0.get_tracestate())];
    for (name, value) in trace {
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    headers
}

/// The reqwest client a connection without sign-in uses: no idle pool (a pooled connection
/// whose last body was not read stalls ~40 ms on Linux's delayed ACK), and only same-origin
/// 307/308 redirects followed (they keep the method and body; another origin would be sent the
/// session id and the configured headers), at most 10 — as rmcp's own default client.
pub(crate) fn plain_client() -> reqwest::Client {
    let redirects = reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        let first = attempt.previous().first();
        let same_origin = first.is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("exceeded 10 redirects")
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(redirects)
        .build()
        .unwrap_or_default()
}

type Posted<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;
type Stream<E> =
    Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, StreamableHttpError<E>>;

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for TraceHeaders<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Posted<Self::Error> {
        let headers = with_trace(&message, custom_headers);
        self.0.post_message(uri, message, session_id, auth_header, headers).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Posted<Self::Error> {
        let headers = with_trace(&message, custom_headers);
        let inner = &self.0;
        inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Posted<Self::Error> {
        let headers = with_trace(&message, custom_headers);
        let inner = &self.0;
        inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                limits,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Stream<Self::Error> {
        self.0.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Stream<Self::Error> {
        let inner = &self.0;
        inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
