//! One `tracing` span per MCP request the manager sends, after OpenTelemetry's semantic
//! conventions for MCP (client side):
//!
//! - target `mcp_router::mcp`, level INFO, tracing name `mcp.request`; the convention's span
//!   name `{mcp.method.name} {target}` (the tool for `tools/call`, else the method alone: a
//!   resource URI is not put in names) goes in `otel.name`, which `tracing-opentelemetry` uses
//!   as the exported name; `otel.kind = "client"`;
//! - attributes `mcp.method.name`, `mcp.protocol.version`, `mcp.resource.uri`,
//!   `jsonrpc.request.id`, `gen_ai.tool.name`, `gen_ai.operation.name` (`execute_tool` for
//!   `tools/call`), `network.transport` (`pipe` for stdio, `tcp` for HTTP),
//!   `network.protocol.name` (`http`), `server.address` (the host, or for stdio the configured
//!   server name), `server.port`; our own `mcp_router.server` and `mcp_router.call_id` (the
//!   model's call the request serves, see `mcp_backend::current_call_id`);
//! - on failure `error.type` (the JSON-RPC error code, `tool_error` for a tool result with
//!   `isError`, `timeout`, `cancelled` when the request was dropped before its answer — the
//!   tool timeout or the caller going away, which makes rmcp send `notifications/cancelled` —,
//!   `transport_closed`, `transport_error`, `unexpected_response`) with
//!   `otel.status_code = "ERROR"` and `otel.status_description`;
//! - when it ends, a DEBUG event on target `mcp_router::metrics` with
//!   `histogram.mcp.client.operation.duration` (seconds) and the metric's attributes, which
//!   `tracing-opentelemetry`'s metrics layer records as the histogram
//!   `mcp.client.operation.duration`.
//!
//! The JSON-RPC id is chosen inside rmcp, so the span is tied to its request through a `_meta`
//! key that the connection's transport ([`Traced`]) takes out again before the request is
//! written: nothing extra reaches the server. With the `otel` feature the W3C `traceparent`
//! (and `tracestate`) of the request span go in `params._meta`, so a server's spans join the
//! host's trace.
//!
//! When no subscriber wants the spans, nothing is recorded: a disabled span, no `_meta` key.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use rmcp::model::{RequestId, RequestMetaObject};
use rmcp::service::ServiceError;
use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

use crate::config::{ServerConfig, TransportConfig};

/// The `_meta` key that ties a request to its span until [`Traced`] takes it out.
const SPAN_KEY: &str = "io.github.mcp-router/span";

/// What a connection's request spans say of the server, and the spans waiting for their
/// JSON-RPC id.
pub struct Telemetry {
    server: String,
    transport: &'static str,
    protocol_name: Option<&'static str>,
    address: String,
    port: Option<u16>,
    protocol_version: OnceLock<String>,
    pending: Mutex<HashMap<u64, Span>>,
    pending_count: AtomicUsize,
    next: AtomicU64,
    /// The config's `log_level`, asked of a 2026-07-28 server on every request.
    pub(crate) log_level: Option<String>,
}

impl Telemetry {
    /// The spans of one connection to the server `config` describes.
    pub fn new(config: &ServerConfig) -> Arc<Self> {
        let (transport, protocol_name, address, port) = match &config.transport {
            TransportConfig::Stdio { .. } => ("pipe", None, config.name.clone(), None),
            TransportConfig::StreamableHttp { url, .. } => {
                let (host, port) = crate::errors::host_and_port(url).unzip();
                ("tcp", Some("http"), host.unwrap_or_else(|| config.name.clone()), port.flatten())
            }
        };
        Arc::new(Self {
            server: config.name.clone(),
            transport,
            protocol_name,
            address,
            port,
            protocol_version: OnceLock::new(),
            pending: Mutex::new(HashMap::new()),
            pending_count: AtomicUsize::new(0),
            next: AtomicU64::new(1),
            log_level: config.log_level.clone(),
        })
    }

    /// The configured server name.
    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    /// The protocol version the handshake settled on (recorded on every later span).
    pub(crate) fn set_protocol_version(&self, version: &str) {
        let _ = self.protocol_version.set(version.to_string());
    }

    /// Starts the span of one `method` request; `tool` is the tool of a `tools/call`, `uri`
    /// the resource of a read or subscription.
    pub fn start(
        self: &Arc<Self>,
        method: &'static str,
        tool: Option<&str>,
        uri: Option<&str>,
    ) -> RequestSpan {
        let span = tracing::info_span!(
            target: "mcp_router::mcp",
            "mcp.request",
            otel.name = Empty,
            otel.kind = "client",
            otel.status_code = Empty,
            otel.status_description = Empty,
            mcp.method.name = method,
            mcp.protocol.version = Empty,
            mcp.resource.uri = Empty,
            mcp.session.id = Empty,
            jsonrpc.request.id = Empty,
            gen_ai.tool.name = Empty,
            gen_ai.operation.name = Empty,
            error.type = Empty,
            network.transport = self.transport,
            network.protocol.name = Empty,
            server.address = Empty,
            server.port = Empty,
            mcp_router.server = Empty,
            mcp_router.call_id = Empty,
        );
        if !span.is_disabled() {
            self.record(&span, method, tool, uri);
            #[cfg(feature = "otel")]
            adopt_host_trace(&span);
        }
        RequestSpan {
            span,
            telemetry: self.clone(),
            method,
            tool: tool.map(str::to_string),
            started: Instant::now(),
            key: None,
            done: false,
        }
    }

    /// What a request's span knows when it starts: its name, tool, resource, the server's
    /// protocol and address, and the model's call it serves.
    fn record(&self, span: &Span, method: &'static str, tool: Option<&str>, uri: Option<&str>) {
        match tool {
            Some(tool) => {
                span.record("otel.name", format!("{method} {tool}"));
                span.record("gen_ai.tool.name", tool);
                span.record("gen_ai.operation.name", "execute_tool");
            }
            None => {
                span.record("otel.name", method);
            }
        }
        if let Some(uri) = uri {
            span.record("mcp.resource.uri", uri);
        }
        if let Some(version) = self.protocol_version.get() {
            span.record("mcp.protocol.version", version.as_str());
        }
        if let Some(name) = self.protocol_name {
            span.record("network.protocol.name", name);
        }
        span.record("server.address", self.address.as_str());
        if let Some(port) = self.port {
            span.record("server.port", port);
        }
        span.record("mcp_router.server", self.server.as_str());
        if let Some(call_id) = mcp_backend::current_call_id() {
            span.record("mcp_router.call_id", &*call_id);
        }
    }

    /// A tagged request is being written as `id`: its span learns the id, and the tag leaves
    /// its params' `_meta`.
    pub(crate) fn written(&self, params_meta: &mut Option<RequestMetaObject>, id: &RequestId) {
        if self.pending_count.load(Ordering::SeqCst) > 0
            && let Some(key) = params_meta.as_mut().and_then(|m| m.0.0.remove(SPAN_KEY))
            && let Some(span) = key.as_u64().and_then(|key| self.take(key))
        {
            span.record("jsonrpc.request.id", id.to_string());
        }
    }

    /// The config's `log_level`, for a 2026-07-28 request's `_meta` (see `ask_log_level`).
    pub(crate) fn log_level(&self) -> Option<&str> {
        self.log_level.as_deref()
    }

    /// The span waiting for the id of the request tagged `key`, taken.
    fn take(&self, key: u64) -> Option<Span> {
        let span = self.pending.lock().ok()?.remove(&key);
        if span.is_some() {
            self.pending_count.fetch_sub(1, Ordering::SeqCst);
        }
        span
    }
}

/// One request's span: tag the request's `_meta` with [`RequestSpan::tag`], run the request in
/// [`RequestSpan::span`], end with [`RequestSpan::finish`] (or drop it: `cancelled`).
pub struct RequestSpan {
    span: Span,
    telemetry: Arc<Telemetry>,
    method: &'static str,
    tool: Option<String>,
    started: Instant,
    key: Option<u64>,
    done: bool,
}

impl RequestSpan {
    /// The span to run the request in.
    pub fn span(&self) -> Span {
        self.span.clone()
    }

    /// The protocol version a handshake settled on.
    pub(crate) fn record_protocol_version(&self, version: &str) {
        self.span.record("mcp.protocol.version", version);
    }

    /// Puts the correlation key (taken out again by [`Traced`]) and, with the `otel` feature,
    /// the trace context into the request's `_meta`. Does nothing when the span is not recorded.
    pub fn tag(&mut self, meta: &mut Option<RequestMetaObject>) {
        if self.span.is_disabled() {
            host_trace(meta);
            return;
        }
        let telemetry = &self.telemetry;
        let key = telemetry.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut pending) = telemetry.pending.lock() {
            pending.insert(key, self.span.clone());
            telemetry.pending_count.fetch_add(1, Ordering::SeqCst);
            self.key = Some(key);
        }
        let meta = meta.get_or_insert_with(RequestMetaObject::new);
        if self.key.is_some() {
            meta.0.0.insert(SPAN_KEY.to_string(), Value::from(key));
        }
        #[cfg(feature = "otel")]
        if let Some((parent, state)) = trace_context(&self.span) {
            meta.set_traceparent(parent);
            if let Some(state) = state {
                meta.set_tracestate(state);
            }
            return;
        }
        if let Some(trace) = mcp_backend::current_trace() {
            set_trace(meta, &trace);
        }
    }

    /// Ends the span with the request's outcome: `Err` carries the `error.type` and a readable
    /// description.
    pub fn finish(mut self, outcome: Result<(), (String, String)>) {
        self.end(outcome);
    }

    /// Ends the span from rmcp's answer; `tool_error` tells whether an answer that arrived is
    /// a tool result with `isError`.
    pub fn finish_with<T>(
        self,
        result: &Result<T, ServiceError>,
        tool_error: impl FnOnce(&T) -> bool,
    ) {
        let outcome = match result {
            Ok(answer) if tool_error(answer) => {
                Err(("tool_error".to_string(), "the tool reported an error".to_string()))
            }
            Ok(_) => Ok(()),
            Err(e) => Err((error_type(e), e.to_string())),
        };
        self.finish(outcome);
    }

    fn end(&mut self, outcome: Result<(), (String, String)>) {
        if self.done {
            return;
        }
        self.done = true;
        if let Some(key) = self.key.take() {
            // Sent or not, the request no longer needs its id recorded.
            self.telemetry.take(key);
        }
        let error = outcome.err();
        if let Some((kind, description)) = &error {
            self.span.record("error.type", kind.as_str());
            self.span.record("otel.status_code", "ERROR");
            self.span.record("otel.status_description", description.as_str());
        }
        let telemetry = &self.telemetry;
        tracing::event!(
            target: "mcp_router::metrics",
            parent: &self.span,
            tracing::Level::DEBUG,
            { "histogram.mcp.client.operation.duration" } = self.started.elapsed().as_secs_f64(),
            { "mcp.method.name" } = self.method,
            { "mcp.protocol.version" } = telemetry.protocol_version.get().map(String::as_str),
            { "gen_ai.tool.name" } = self.tool.as_deref(),
            { "error.type" } = error.as_ref().map(|(kind, _)| kind.as_str()),
            { "network.transport" } = telemetry.transport,
            { "server.address" } = telemetry.address.as_str(),
            "mcp request finished"
        );
    }
}

impl Drop for RequestSpan {
    fn drop(&mut self) {
        if self.done {
            // Finished: nothing to say (and no description to build for nothing).
            return;
        }
        self.end(Err((
            "cancelled".to_string(),
            "the request was dropped before its answer (timeout or cancellation)".to_string(),
        )));
    }
}

/// The convention's `error.type` for a request rmcp failed.
pub(crate) fn error_type(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => data.code.0.to_string(),
        ServiceError::TransportSend(_) => "transport_error".to_string(),
        ServiceError::TransportClosed => "transport_closed".to_string(),
        ServiceError::UnexpectedResponse => "unexpected_response".to_string(),
        ServiceError::Timeout { .. } => "timeout".to_string(),
        ServiceError::Cancelled { .. } => "cancelled".to_string(),
        _ => "other".to_string(),
    }
}

/// The host's trace context for the call being made (`mcp_backend::current_trace`), in a
/// request's `_meta` when the router puts no span of its own there: passed on unchanged, as a
/// W3C intermediary without spans does.
fn host_trace(meta: &mut Option<RequestMetaObject>) {
    if let Some(trace) = mcp_backend::current_trace() {
        set_trace(meta.get_or_insert_with(RequestMetaObject::new), &trace);
    }
}

fn set_trace(meta: &mut RequestMetaObject, trace: &mcp_backend::TraceContext) {
    meta.set_traceparent(trace.traceparent().to_string());
    if let Some(state) = trace.tracestate() {
        meta.set_tracestate(state.to_string());
    }
}

/// With the host's trace context for the call (`mcp_backend::current_trace`) and no span of
/// the router's around `span` in a trace already (a host that embeds the router without
/// spans, a `serve` client's `_meta`): `span` continues the host's trace, as its child.
#[cfg(feature = "otel")]
pub(crate) fn adopt_host_trace(span: &Span) {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let Some(trace) = mcp_backend::current_trace() else { return };
    let around = Span::current().context();
    if around.span().span_context().is_valid() {
        return;
    }
    if let Some(remote) = remote_context(&trace) {
        let _ = span.set_parent(remote);
    }
}

/// The OpenTelemetry context of a host's trace context (a remote parent).
#[cfg(feature = "otel")]
fn remote_context(trace: &mcp_backend::TraceContext) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId};
    let flags = if trace.sampled() { TraceFlags::SAMPLED } else { TraceFlags::default() };
    let state = trace.tracestate().and_then(|s| s.parse().ok()).unwrap_or_default();
    let context = SpanContext::new(
        TraceId::from_hex(trace.trace_id()).ok()?,
        SpanId::from_hex(trace.span_id()).ok()?,
        flags,
        true,
        state,
    );
    Some(opentelemetry::Context::new().with_remote_span_context(context))
}

/// The W3C trace context of `span` (`traceparent`, and `tracestate` when not empty), when the
/// span belongs to a valid OpenTelemetry trace.
#[cfg(feature = "otel")]
fn trace_context(span: &Span) -> Option<(String, Option<String>)> {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let context = span.context();
    let otel_span = context.span();
    let sc = otel_span.span_context();
    if !sc.is_valid() {
        return None;
    }
    let parent = format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8());
    let state = sc.trace_state().header();
    Some((parent, (!state.is_empty()).then_some(state)))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use rmcp::model::ClientRequest;
    use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
    use rmcp::transport::Transport;

    use crate::client::traced::Traced;
    use crate::meta::declare_tasks;

    use rmcp::model::{
        JsonRpcMessage, JsonRpcRequest, NumberOrString, ReadResourceRequest,
        ReadResourceRequestParams,
    };
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, SubscriberExt as _};
    use tracing_subscriber::registry::LookupSpan;

    use super::*;

    type EventFields = Vec<(String, String)>;

    /// Records every `jsonrpc.request.id` recorded on a span, and the fields of every event.
    #[derive(Clone, Default)]
    struct Recorder {
        ids: Arc<Mutex<Vec<String>>>,
        events: Arc<Mutex<Vec<EventFields>>>,
    }

    struct Fields(Vec<(String, String)>);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push((field.name().to_string(), format!("{value:?}")));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push((field.name().to_string(), value.to_string()));
        }
    }

    impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Recorder {
        fn on_record(
            &self,
            _: &tracing::span::Id,
            values: &tracing::span::Record<'_>,
            _: Context<'_, S>,
        ) {
            let mut fields = Fields(Vec::new());
            values.record(&mut fields);
            for (name, value) in fields.0 {
                if name == "jsonrpc.request.id" {
                    self.ids.lock().expect("lock").push(value);
                }
            }
        }
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            let mut fields = Fields(Vec::new());
            event.record(&mut fields);
            self.events.lock().expect("lock").push(fields.0);
        }
    }

    /// Keeps what is sent.
    struct Sink(Arc<Mutex<Vec<String>>>);
    impl Transport<RoleClient> for Sink {
        type Error = std::io::Error;
        fn send(
            &mut self,
            item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            let text = serde_json::to_string(&item).unwrap_or_default();
            self.0.lock().expect("lock").push(text);
            std::future::ready(Ok(()))
        }
        fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> {
            std::future::ready(None)
        }
        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn read_request(id: i64, params: ReadResourceRequestParams) -> TxJsonRpcMessage<RoleClient> {
        JsonRpcMessage::Request(JsonRpcRequest::new(
            NumberOrString::Number(id),
            ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params)),
        ))
    }

    /// A [`Recorder`] as this thread's subscriber until the guard is dropped.
    fn recording() -> (Recorder, tracing::subscriber::DefaultGuard) {
        let recorder = Recorder::default();
        let subscriber = tracing_subscriber::registry().with(recorder.clone());
        let guard = tracing::subscriber::set_default(subscriber);
        // Other tests' subscribers may have cached an interest in these callsites: ask again.
        tracing::callsite::rebuild_interest_cache();
        (recorder, guard)
    }

    #[test]
    fn the_tasks_extension_is_declared_on_the_requests_it_matters_to_only() {
        use rmcp::model::{
            CallToolRequest, CallToolRequestParams, ClientCapabilities, GetMeta as _,
        };
        let modern = |mut request: ClientRequest| {
            let caps = serde_json::json!({"elicitation": {}});
            request
                .get_meta_mut()
                .0
                .0
                .insert("io.modelcontextprotocol/clientCapabilities".to_string(), caps);
            declare_tasks(&mut request);
            request.get_meta_mut().0.0["io.modelcontextprotocol/clientCapabilities"].clone()
        };
        let call =
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("t")));
        assert_eq!(
            modern(call),
            serde_json::json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
        let read = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new("demo://x"),
        ));
        assert_eq!(modern(read), serde_json::json!({"elicitation": {}}));
        let params = rmcp::model::InitializeRequestParams::new(
            ClientCapabilities::default(),
            rmcp::model::Implementation::new("c", "1"),
        );
        let mut initialize =
            ClientRequest::InitializeRequest(rmcp::model::InitializeRequest::new(params));
        declare_tasks(&mut initialize);
        let ClientRequest::InitializeRequest(initialize) = initialize else { unreachable!() };
        assert!(initialize.params.capabilities.supports_tasks());
    }

    #[tokio::test]
    async fn the_transport_records_the_id_and_sends_no_tag() {
        let (recorder, _guard) = recording();
        let telemetry = Telemetry::new(&ServerConfig::stdio("demo", "true", Vec::new()));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let client = crate::client::RouterClient {
            telemetry: telemetry.clone(),
            ..crate::scripted::router_client(Arc::new(crate::host::DefaultHost))
        };
        let mut transport = Traced::new(Sink(sent.clone()), client);

        let mut span = telemetry.start("resources/read", None, Some("demo://a"));
        let mut params = ReadResourceRequestParams::new("demo://a");
        span.tag(&mut params.meta);
        assert!(params.meta.as_ref().is_some_and(|m| m.0.0.contains_key(SPAN_KEY)));
        transport.send(read_request(42, params)).await.expect("send");
        span.finish(Ok(()));

        // A request nobody tagged passes untouched.
        let plain = ReadResourceRequestParams::new("demo://b");
        transport.send(read_request(43, plain)).await.expect("send");

        assert_eq!(*recorder.ids.lock().expect("lock"), vec!["42".to_string()]);
        let sent = sent.lock().expect("lock");
        assert_eq!(sent.len(), 2);
        assert!(sent.iter().all(|line| !line.contains(SPAN_KEY)), "{sent:?}");
        assert!(sent[0].contains("\"uri\":\"demo://a\""), "{}", sent[0]);
        assert_eq!(telemetry.pending_count.load(Ordering::SeqCst), 0);
        let events = recorder.events.lock().expect("lock");
        let metric = events
            .iter()
            .find(|e| e.iter().any(|(k, _)| k == "histogram.mcp.client.operation.duration"))
            .expect("a duration event");
        assert!(metric.contains(&("mcp.method.name".into(), "resources/read".into())));
        assert!(metric.contains(&("network.transport".into(), "pipe".into())));
    }

    #[tokio::test]
    async fn a_dropped_request_ends_cancelled_and_forgets_its_tag() {
        let (recorder, _guard) = recording();
        let telemetry = Telemetry::new(&ServerConfig::http("remote", "http://127.0.0.1:9/mcp"));
        let mut span = telemetry.start("tools/call", Some("echo"), None);
        let mut meta = None;
        span.tag(&mut meta);
        assert_eq!(telemetry.pending_count.load(Ordering::SeqCst), 1);
        drop(span);
        assert_eq!(telemetry.pending_count.load(Ordering::SeqCst), 0);
        let events = recorder.events.lock().expect("lock");
        let metric = events.last().expect("a duration event");
        assert!(metric.contains(&("error.type".into(), "cancelled".into())), "{metric:?}");
        assert!(metric.contains(&("gen_ai.tool.name".into(), "echo".into())));
        assert!(metric.contains(&("network.transport".into(), "tcp".into())));
        assert!(metric.contains(&("server.address".into(), "127.0.0.1".into())));
    }
}
