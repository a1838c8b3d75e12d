//! The one translation of rmcp's errors: a request's failure into [`McpError`] (what the model
//! reads), a handshake's into [`ConnectError`] (what a failed start reports). A refusal for
//! want of sign-in is typed ([`SignIn`]) wherever it is met, never found again in a string.

use mcp_backend::{McpError, SignIn};

/// Why a server could not be connected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConnectError {
    /// It needs a sign-in: a new one lets the next use start it at once.
    SignIn(SignIn),
    /// Anything else, as a readable reason.
    Failed(String),
}

impl ConnectError {
    /// The reason, as events and later calls report it.
    pub fn message(&self, server: &str) -> String {
        match self {
            Self::SignIn(sign_in) => sign_in.advice(server),
            Self::Failed(message) => message.clone(),
        }
    }
}

impl From<String> for ConnectError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for ConnectError {
    fn from(message: &str) -> Self {
        Self::Failed(message.to_string())
    }
}

/// Why a handshake produced no connection.
pub(crate) enum HandshakeError {
    /// The server could not even be started (a stdio command that does not run, a bad header):
    /// trying another lifecycle would not help.
    Launch(String),
    /// The server was reached but the handshake failed.
    Handshake(String),
    /// The server wants a sign-in the router does not have (or could not refresh): another
    /// lifecycle would meet the same refusal.
    #[cfg_attr(not(feature = "streamable-http"), allow(dead_code))]
    SignIn(SignIn),
}

impl From<HandshakeError> for ConnectError {
    fn from(error: HandshakeError) -> Self {
        match error {
            HandshakeError::Launch(message) | HandshakeError::Handshake(message) => {
                Self::Failed(message)
            }
            HandshakeError::SignIn(sign_in) => Self::SignIn(sign_in),
        }
    }
}

/// A failed HTTP handshake: a 401 (or a sign-in that could not be refreshed) is a sign-in
/// failure with the login hint; anything else is a handshake failure.
#[cfg(feature = "streamable-http")]
pub(crate) fn http_handshake_error(
    (challenge_slot, address): (&std::sync::Mutex<Option<String>>, Option<&str>),
    error: &rmcp::service::ClientInitializeError,
) -> HandshakeError {
    if let Some(challenge) = error.auth_challenge() {
        if let Ok(mut last) = challenge_slot.lock() {
            *last = Some(challenge.to_string());
        }
        if !error.is_authorization_required() {
            // A 403 `insufficient_scope` already at the handshake.
            return HandshakeError::SignIn(SignIn::MoreScope { scope: challenge_scope(challenge) });
        }
    }
    if error.is_authorization_required() {
        return HandshakeError::SignIn(SignIn::Required);
    }
    if let rmcp::service::ClientInitializeError::TransportError { error: sent, .. } = error
        && let Some(auth) = auth_error_in(sent.error.as_ref())
    {
        return HandshakeError::SignIn(crate::auth::sign_in_of(auth));
    }
    HandshakeError::Handshake(initialize_failed(error, address))
}

/// The OAuth error (a refresh that failed, a credential store that could not be read) behind
/// a transport error, if that is what it was.
#[cfg(feature = "streamable-http")]
fn auth_error_in<'a>(
    error: &'a (dyn std::error::Error + Send + Sync + 'static),
) -> Option<&'a rmcp::transport::AuthError> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(auth) = e.downcast_ref::<rmcp::transport::AuthError>() {
            return Some(auth);
        }
        current = e.source();
    }
    None
}

/// A readable reason for a failed handshake, without rmcp's internal type names. `address` is
/// where an HTTP server was reached (see [`address_of`]).
pub(crate) fn initialize_failed(
    error: &rmcp::service::ClientInitializeError,
    address: Option<&str>,
) -> String {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            format!("initialize failed ({context}): {}", describe(error.error.as_ref(), address))
        }
        rmcp::service::ClientInitializeError::ConnectionClosed(context) => {
            format!("initialize failed ({context}): the server closed the connection")
        }
        other => format!("initialize failed: {}", readable(&other.to_string())),
    }
}

/// [`initialize_failed`] for a stdio server that exited meanwhile: its exit (`why`, see
/// `ChildGroup::why_ended`) is the cause then, not the closed pipe it left.
pub(crate) fn initialize_failed_after_exit(
    error: &rmcp::service::ClientInitializeError,
    why: &str,
) -> String {
    use rmcp::service::ClientInitializeError::{ConnectionClosed, TransportError};
    match error {
        TransportError { context, .. } => format!("initialize failed ({context}): {why}"),
        ConnectionClosed(context) => format!("initialize failed ({context}): {why}"),
        other => format!("{}; {why}", initialize_failed(other, None)),
    }
}

/// `host:port` of an HTTP server's URL, as failures name it.
pub(crate) fn address_of(url: &str) -> Option<String> {
    let (host, port) = host_and_port(url)?;
    Some(match port {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// The host of an HTTP server's URL and its port (the scheme's when the URL names none).
pub(crate) fn host_and_port(url: &str) -> Option<(String, Option<u16>)> {
    let uri: http::Uri = url.parse().ok()?;
    let host = uri.host().filter(|h| !h.is_empty())?;
    let default = match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("https") => Some(443),
        Some(s) if s.eq_ignore_ascii_case("http") => Some(80),
        _ => None,
    };
    Some((host.to_string(), uri.port_u16().or(default)))
}

/// The one mapping from a transport failure (reqwest, hyper, rmcp's HTTP and stdio transports,
/// I/O) to a short sentence a person can act on: the cause, and where (`address`) when it was
/// an HTTP server. Never a type name, never a response body's markup.
pub(crate) fn describe(error: &(dyn std::error::Error + 'static), address: Option<&str>) -> String {
    let chain = causes(error);
    let from = address.map(|a| format!(" from {a}")).unwrap_or_default();
    let messages: Vec<String> = chain.iter().map(|e| e.to_string()).collect();
    #[cfg(feature = "streamable-http")]
    if let Some(http) = chain.iter().find_map(|e| e.downcast_ref::<reqwest::Error>()) {
        if let Some(status) = http.status() {
            return format!("{}{from}", status_line(status.as_u16()));
        }
        if http.is_connect() {
            return connect_failure(&chain, &messages, address);
        }
        if http.is_timeout() {
            return match address {
                Some(a) => format!("no answer from {a} in time"),
                None => "no answer in time".to_string(),
            };
        }
        if http.is_body() || http.is_decode() || http.is_request() {
            return format!("the server closed the connection{}", mid_answer(address));
        }
    }
    #[cfg(feature = "streamable-http")]
    if let Some(status) = chain
        .iter()
        .find_map(|e| e.downcast_ref::<rmcp::transport::streamable_http_client::HttpStatusError>())
    {
        return format!("{}{from}", status_line(status.status));
    }
    if let Some(io) = chain.iter().find_map(|e| e.downcast_ref::<std::io::Error>()) {
        use std::io::ErrorKind::*;
        match io.kind() {
            BrokenPipe | UnexpectedEof | ConnectionReset | ConnectionAborted | NotConnected => {
                return "the server closed the connection".to_string();
            }
            _ => {}
        }
    }
    for message in &messages {
        if let Some(rest) = message.strip_prefix("unexpected server response: HTTP ") {
            return http_answer(rest, &from);
        }
        if message.starts_with("Session expired") {
            return format!("the server no longer knows this session (HTTP 404{from})");
        }
        if message == "unexpected end of stream" {
            return format!("the server closed the stream before answering{from}");
        }
        if message == "Transport channel closed" || message == "Transport closed" {
            return "the server closed the connection".to_string();
        }
    }
    // Otherwise the most specific readable message: the innermost one without type names.
    messages
        .iter()
        .rev()
        .map(|m| readable(m))
        .find(|m| !m.is_empty())
        .unwrap_or_else(|| "the transport failed".to_string())
}

/// The error and its causes, outermost first. rmcp's HTTP transport wraps the HTTP client's
/// error without naming it as the source; it is followed all the same.
fn causes<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut chain = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        chain.push(e);
        next = inner_of(e);
    }
    chain
}

/// The error `e` wraps: its source, or for rmcp's HTTP transport error the HTTP client's error
/// (or the status) it holds.
#[cfg(feature = "streamable-http")]
fn inner_of<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    type HttpError = rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>;
    match e.downcast_ref::<HttpError>() {
        Some(HttpError::Client(inner)) => Some(inner as &(dyn std::error::Error + 'static)),
        // Transparent: its own source would skip the status.
        Some(HttpError::HttpStatus(status)) => Some(status as &(dyn std::error::Error + 'static)),
        _ => e.source(),
    }
}

/// The error `e` wraps: its source (no HTTP transport in this build).
#[cfg(not(feature = "streamable-http"))]
fn inner_of<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    e.source()
}

/// A connection that could not be opened: refused, not resolved, TLS, or something else.
#[cfg(feature = "streamable-http")]
fn connect_failure(
    chain: &[&(dyn std::error::Error + 'static)],
    messages: &[String],
    address: Option<&str>,
) -> String {
    let to = address.unwrap_or("the server");
    let innermost = messages.iter().rev().map(|m| readable(m)).find(|m| !m.is_empty());
    let kind = chain.iter().find_map(|e| e.downcast_ref::<std::io::Error>()).map(|e| e.kind());
    let all = messages.join(" ").to_ascii_lowercase();
    if kind == Some(std::io::ErrorKind::ConnectionRefused) || all.contains("connection refused") {
        return format!("connection refused by {to}");
    }
    if kind == Some(std::io::ErrorKind::TimedOut) || all.contains("timed out") {
        return format!("timed out connecting to {to}");
    }
    let host = address.map(|a| a.rsplit_once(':').map_or(a, |(h, _)| h)).unwrap_or("the host");
    if all.contains("dns error") || all.contains("lookup address") || all.contains("resolve") {
        return format!("could not resolve {host}");
    }
    let detail = innermost.map(|m| format!(": {m}")).unwrap_or_default();
    let tls = ["tls", "ssl", "certificate", "corrupt message", "alert", "handshake"];
    if tls.iter().any(|w| all.contains(w)) {
        return format!("TLS handshake with {to} failed{detail}");
    }
    format!("could not connect to {to}{detail}")
}

#[cfg(feature = "streamable-http")]
fn mid_answer(address: Option<&str>) -> String {
    address.map(|a| format!(" ({a}) before it answered")).unwrap_or_default()
}

/// `HTTP 502 Bad Gateway`.
fn status_line(status: u16) -> String {
    match http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()) {
        Some(reason) => format!("HTTP {status} {reason}"),
        None => format!("HTTP {status}"),
    }
}

/// rmcp's `HTTP 404 Not Found: <body>` for a status it does not classify: the status, and
/// the body's message when it is a JSON-RPC error or one short line of plain text (never
/// markup).
fn http_answer(rest: &str, from: &str) -> String {
    let (code, body) = rest.split_once(": ").unwrap_or((rest, ""));
    let status = code.split(' ').next().and_then(|c| c.parse::<u16>().ok());
    let head = match status {
        Some(status) => format!("{}{from}", status_line(status)),
        None => format!("HTTP {code}{from}"),
    };
    let said = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let message = v.pointer("/error/message").or_else(|| v.get("message"))?;
            message.as_str().map(str::to_string)
        })
        .or_else(|| {
            let line = body.trim();
            let plain =
                !line.is_empty() && !line.starts_with(['<', '{', '[']) && !line.contains('\n');
            plain.then(|| line.to_string())
        })
        .map(|m| cut(&readable(&m), 200))
        .filter(|m| !m.is_empty());
    match said {
        Some(said) => format!("{head}: {said}"),
        None => head,
    }
}

/// `message` without anything that reads as a Rust type (`a::b`, `[Traced<…>]`, `Foo<a::B>`):
/// bracketed spans and words that hold a path are dropped; empty when nothing else is left.
fn readable(message: &str) -> String {
    if !message.contains("::") {
        return message.trim().to_string();
    }
    let mut kept = String::new();
    let mut span = String::new();
    let mut depth = 0usize;
    for c in message.chars() {
        match c {
            '[' | '<' => {
                depth += 1;
                span.push(c);
            }
            ']' | '>' if depth > 0 => {
                depth -= 1;
                span.push(c);
                if depth == 0 {
                    if !span.contains("::") {
                        kept.push_str(&span);
                    }
                    span.clear();
                }
            }
            _ if depth > 0 => span.push(c),
            _ => kept.push(c),
        }
    }
    if !span.contains("::") {
        kept.push_str(&span);
    }
    let words: Vec<&str> = kept.split_whitespace().filter(|w| !w.contains("::")).collect();
    words.join(" ").trim_matches(|c: char| c == ':' || c.is_whitespace()).to_string()
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Whether a failed request certainly never reached the server: its HTTP connection could not
/// even be opened (refused, not resolved, TLS). Such a request may be sent again on a new
/// connection, even a `tools/call`.
pub fn never_sent(error: &rmcp::ServiceError) -> bool {
    let rmcp::ServiceError::TransportSend(sent) = error else { return false };
    causes(sent.error.as_ref()).into_iter().any(|e| {
        #[cfg(feature = "streamable-http")]
        if e.downcast_ref::<reqwest::Error>().is_some_and(reqwest::Error::is_connect) {
            return true;
        }
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
}

/// An rmcp request error as the model reads it; `address` is where an HTTP server was reached
/// (see [`address_of`]).
pub(crate) fn service_error(
    server: &str,
    address: Option<&str>,
    error: rmcp::ServiceError,
) -> McpError {
    let sign_in = |sign_in| McpError::SignInRequired { server: server.to_string(), sign_in };
    if error.is_authorization_required() {
        return sign_in(SignIn::Required);
    }
    #[cfg(feature = "streamable-http")]
    if let Some(challenge) = error.auth_challenge() {
        // A 403 `insufficient_scope`: signed in, but with too little.
        return sign_in(SignIn::MoreScope { scope: challenge_scope(challenge) });
    }
    #[cfg(feature = "streamable-http")]
    if let rmcp::ServiceError::TransportSend(sent) = &error
        && let Some(auth) = auth_error_in(sent.error.as_ref())
    {
        return sign_in(crate::auth::sign_in_of(auth));
    }
    if let rmcp::ServiceError::TransportSend(sent) = &error
        && let Some(too_large) = causes(sent.error.as_ref()).iter().find_map(|e| {
            let io = e.downcast_ref::<std::io::Error>()?;
            io.get_ref()?.downcast_ref::<crate::transport::wire::TooLarge>()
        })
    {
        // Nothing was written: the request failed, the connection did not.
        return McpError::Protocol { server: server.to_string(), error: too_large.to_string() };
    }
    match error {
        rmcp::ServiceError::McpError(data) => {
            // Some servers (server-everything) already start their message with our prefix.
            let prefix = format!("MCP error {}: ", data.code.0);
            let message = data.message.strip_prefix(prefix.as_str()).unwrap_or(&data.message);
            McpError::Server { code: data.code.0, message: message.to_string(), data: data.data }
        }
        // An answer rmcp could not read as a result of this request: the server's fault, the
        // connection is fine.
        rmcp::ServiceError::UnexpectedResponse => McpError::Protocol {
            server: server.to_string(),
            error: "sent an answer that is not a result of this request".to_string(),
        },
        rmcp::ServiceError::TransportClosed => McpError::Transport {
            server: server.to_string(),
            error: "the server closed the connection".to_string(),
        },
        rmcp::ServiceError::TransportSend(sent) => McpError::Transport {
            server: server.to_string(),
            error: describe(sent.error.as_ref(), address),
        },
        other => {
            McpError::Transport { server: server.to_string(), error: readable(&other.to_string()) }
        }
    }
}

/// The `scope="…"` parameter of a `WWW-Authenticate` challenge.
#[cfg(feature = "streamable-http")]
fn challenge_scope(challenge: &str) -> Option<String> {
    challenge.split("scope=\"").nth(1).and_then(|rest| rest.split('"').next()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_message_that_repeats_the_prefix_is_not_doubled() {
        let data =
            rmcp::model::ErrorData::invalid_params("MCP error -32602: Resource x not found", None);
        let error = service_error("s", None, rmcp::ServiceError::McpError(data));
        assert_eq!(error.to_string(), "MCP error -32602: Resource x not found");
        let plain = rmcp::model::ErrorData::resource_not_found("Resource not found: x", None);
        let error = service_error("s", None, rmcp::ServiceError::McpError(plain));
        assert_eq!(error.to_string(), "MCP error -32002: Resource not found: x");
    }

    /// A server on 127.0.0.1 that answers every connection with `reply` (nothing at all when
    /// `None`: it reads the request and closes, or never answers when `hang`).
    async fn canned(reply: Option<&'static [u8]>, hang: bool) -> String {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let _ = stream.read(&mut buf).await;
                    if hang {
                        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                    }
                    if let Some(reply) = reply {
                        let _ = stream.write_all(reply).await;
                    }
                });
            }
        });
        addr
    }

    /// An HTTP response with `body`.
    fn answer(status: &str, content_type: &str, body: &str) -> &'static [u8] {
        let head = format!("HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n");
        let text = format!("{head}content-length: {}\r\n\r\n{body}", body.len());
        Box::leak(text.into_bytes().into_boxed_slice())
    }

    /// What a handshake with `url` through `client` fails with, the address written `ADDR`.
    async fn handshake_failure(client: reqwest::Client, url: &str, addr: &str) -> String {
        use rmcp::ServiceExt as _;
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let config = StreamableHttpClientTransportConfig::with_uri(url);
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let Err(error) = ().serve(transport).await else { panic!("the handshake succeeded") };
        initialize_failed(&error, Some(addr)).replace(addr, "ADDR")
    }

    /// A resolver that finds nothing (no query leaves the machine).
    struct NoSuchHost;
    impl reqwest::dns::Resolve for NoSuchHost {
        fn resolve(&self, _: reqwest::dns::Name) -> reqwest::dns::Resolving {
            Box::pin(async {
                let none = std::io::Error::other("failed to lookup address information");
                Err(Box::new(none) as Box<dyn std::error::Error + Send + Sync>)
            })
        }
    }

    /// Every class of transport failure, as a person reads it: the cause and the address,
    /// never a type name or a response body's markup.
    #[tokio::test]
    async fn transport_failures_in_words() {
        let plain = reqwest::Client::new;
        let mut said = Vec::new();
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr").to_string()
        };
        let url = |addr: &str| format!("http://{addr}/mcp");
        said.push(("refused", handshake_failure(plain(), &url(&closed), &closed).await));
        let bad_gateway =
            canned(Some(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n"), false).await;
        said.push(("5xx", handshake_failure(plain(), &url(&bad_gateway), &bad_gateway).await));
        let html =
            answer("404 Not Found", "text/html", "<!DOCTYPE html><pre>Cannot POST /mcp</pre>");
        let not_found = canned(Some(html), false).await;
        said.push(("4xx html", handshake_failure(plain(), &url(&not_found), &not_found).await));
        let error = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"No session"}}"#;
        let json = answer("400 Bad Request", "application/json", error);
        let bad_request = canned(Some(json), false).await;
        said.push((
            "4xx json-rpc",
            handshake_failure(plain(), &url(&bad_request), &bad_request).await,
        ));
        let hangs_up = canned(None, false).await;
        said.push(("closed", handshake_failure(plain(), &url(&hangs_up), &hangs_up).await));
        let no_dns = reqwest::Client::builder().dns_resolver(std::sync::Arc::new(NoSuchHost));
        let no_dns = no_dns.build().expect("client");
        said.push((
            "dns",
            handshake_failure(no_dns, "http://mcp.example:8080/mcp", "mcp.example:8080").await,
        ));
        let not_tls = canned(Some(b"HTTP/1.1 200 OK\r\n\r\n"), false).await;
        said.push((
            "tls",
            handshake_failure(plain(), &format!("https://{not_tls}/mcp"), &not_tls).await,
        ));
        let slow = canned(None, true).await;
        let impatient = reqwest::Client::builder().timeout(std::time::Duration::from_millis(200));
        let impatient = impatient.build().expect("client");
        said.push(("timeout", handshake_failure(impatient, &url(&slow), &slow).await));
        for (class, message) in &said {
            assert!(!message.contains("::") && !message.contains('<'), "{class}: {message}");
        }
        let said: Vec<String> = said.iter().map(|(class, m)| format!("{class}: {m}")).collect();
        insta::assert_snapshot!(said.join("\n"));
    }
}
