//! The shared router on streamable HTTP: a loopback address only, a bearer secret in a file
//! only this user can read, and no browser page of another origin (DNS rebinding).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::place::{Place, new_secret};
use super::session::{SessionServer, Shared};

/// Listen on `addr` (loopback only) and serve sessions there; returns the URL clients use and
/// the task that accepts them (the caller owns it: its connections end with it).
/// The secret goes to the place's secret file, the URL and pid to its address file. A session
/// that sends nothing for `idle` (the router's idle timeout, when it has one) is closed, so a
/// client that went away without a `DELETE` cannot keep the router running; its client, if it
/// is still there, is told its session is gone (404) and starts a new one.
pub(crate) async fn start(
    shared: Arc<Shared>,
    addr: SocketAddr,
    place: &Place,
    idle: Option<std::time::Duration>,
) -> anyhow::Result<(String, impl Future<Output = ()> + use<>)> {
    check_loopback(addr)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let url = format!("http://{local}/mcp");
    let secret = Arc::new(new_secret(&place.secret())?);
    let address = serde_json::json!({"url": url, "pid": std::process::id()});
    std::fs::write(place.address(), format!("{address}\n"))?;
    let config = StreamableHttpServerConfig::default().with_allowed_origins([
        "http://localhost:*",
        "http://127.0.0.1:*",
        "http://[::1]:*",
    ]);
    let mut sessions = LocalSessionManager::default();
    if let Some(idle) = idle {
        sessions.session_config.keep_alive = Some(idle);
    }
    let service = StreamableHttpService::new(
        move || shared.open_session("http", None).map_err(std::io::Error::other),
        Arc::new(sessions),
        config,
    );
    Ok((url, accept(listener, service, secret)))
}

/// Refuses an address other machines could reach.
pub(crate) fn check_loopback(addr: SocketAddr) -> anyhow::Result<()> {
    if !addr.ip().is_loopback() {
        bail!(
            "the shared router listens on loopback addresses only ({addr} is not one): a router \
             others can reach needs an OAuth resource-server configuration, which it does not have"
        );
    }
    Ok(())
}

type Service = StreamableHttpService<SessionServer, LocalSessionManager>;

/// Accept connections until dropped; each connection is a task of this one's, ended with it.
async fn accept(listener: tokio::net::TcpListener, service: Service, secret: Arc<String>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
            Some(_) = connections.join_next() => continue,
        };
        let (service, secret) = (service.clone(), secret.clone());
        connections.spawn(async move {
            let handler =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let (service, secret) = (service.clone(), secret.clone());
                    async move {
                        if !bearer_matches(&request, &secret) {
                            return Ok::<_, Infallible>(refused());
                        }
                        Ok(service.handle(request).await)
                    }
                });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) =
                hyper::server::conn::http1::Builder::new().serve_connection(io, handler).await
            {
                tracing::debug!("http connection ended: {e}");
            }
        });
    }
}

/// Whether the request carries `Authorization: Bearer <secret>` (compared in constant time).
fn bearer_matches<B>(request: &Request<B>, secret: &str) -> bool {
    let given = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    given.len() == secret.len()
        && given.bytes().zip(secret.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

fn refused() -> Response<BoxBody<Bytes, Infallible>> {
    let body =
        r#"{"error":"the shared router needs its bearer secret (the file beside its socket)"}"#;
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_secret_passes() {
        let with = |value: &str| {
            Request::builder().header("authorization", value).body(()).expect("request")
        };
        assert!(bearer_matches(&with("Bearer abc123"), "abc123"));
        assert!(!bearer_matches(&with("Bearer abc124"), "abc123"));
        assert!(!bearer_matches(&with("Bearer abc1234"), "abc123"));
        assert!(!bearer_matches(&with("abc123"), "abc123"));
        assert!(!bearer_matches(&Request::new(()), "abc123"));
    }
}
