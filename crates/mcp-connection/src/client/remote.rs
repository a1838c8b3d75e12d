//! Opening a connection to a streamable HTTP server: a static bearer token, stored OAuth
//! credentials (refreshed as needed), or none. Without the `streamable-http` feature the build
//! has no HTTP stack, and a `url` server fails at start saying so.

use rmcp::ClientLifecycleMode;
#[cfg(feature = "streamable-http")]
use rmcp::ClientServiceExt as _;

use crate::auth::TokenStore;
use crate::client::{Opened, RouterClient};
use crate::config::ServerConfig;
#[cfg(feature = "streamable-http")]
use crate::config::TransportConfig;
use crate::errors::HandshakeError;
#[cfg(feature = "streamable-http")]
use crate::transport::wire::MAX_MESSAGE_BYTES;

/// A streamable HTTP server: a static bearer token, stored OAuth credentials, or none.
#[cfg(feature = "streamable-http")]
pub(crate) async fn open_http(
    config: &ServerConfig,
    client: RouterClient,
    lifecycle: ClientLifecycleMode,
    tokens: Option<&TokenStore>,
) -> Result<Opened, HandshakeError> {
    use crate::errors::http_handshake_error;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::{AuthClient, StreamableHttpClientTransport};
    let TransportConfig::StreamableHttp { url, bearer_token_env_var, http_headers, oauth } =
        &config.transport
    else {
        return Err(HandshakeError::Launch(format!(
            "server `{}` is not an HTTP server",
            config.name
        )));
    };
    let challenge_slot = client.clone();
    let mut transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
        .max_sse_event_size(MAX_MESSAGE_BYTES);
    if let Some(var) = bearer_token_env_var {
        let token = std::env::var(var).map_err(|_| {
            HandshakeError::Launch(format!(
                "environment variable `{var}` (bearer_token_env_var) is not set"
            ))
        })?;
        transport_config = transport_config.auth_header(token);
    }
    transport_config = transport_config
        .custom_headers(crate::config::http_headers(http_headers).map_err(HandshakeError::Launch)?);
    // A static bearer token, or no place to keep credentials: plain HTTP.
    let tokens = tokens.filter(|_| bearer_token_env_var.is_none());
    let Some(tokens) = tokens else {
        let http = super::trace_headers::TraceHeaders(super::trace_headers::plain_client());
        let transport = StreamableHttpClientTransport::with_client(http, transport_config);
        let transport = client.traced(transport);
        let service = client.serve_with_lifecycle(transport, lifecycle).await.map_err(|e| {
            http_handshake_error((&challenge_slot.challenge, challenge_slot.address.as_deref()), &e)
        })?;
        return Ok((service, None));
    };
    let auth =
        crate::auth::authorizer(&config.name, url, oauth, tokens).await.map_err(|e| match e {
            crate::auth::error::AuthError::SignIn { sign_in, .. } => {
                HandshakeError::SignIn(sign_in)
            }
            other => HandshakeError::Launch(other.to_string()),
        })?;
    let http =
        super::trace_headers::TraceHeaders(AuthClient::new(reqwest::Client::default(), auth));
    let transport = StreamableHttpClientTransport::with_client(http, transport_config);
    let transport = client.traced(transport);
    let service = client.serve_with_lifecycle(transport, lifecycle).await.map_err(|e| {
        http_handshake_error((&challenge_slot.challenge, challenge_slot.address.as_deref()), &e)
    })?;
    Ok((service, None))
}

/// This build has no HTTP transport: the server is named and the reason given.
#[cfg(not(feature = "streamable-http"))]
pub(crate) async fn open_http(
    config: &ServerConfig,
    _: RouterClient,
    _: ClientLifecycleMode,
    _: Option<&TokenStore>,
) -> Result<Opened, HandshakeError> {
    Err(HandshakeError::Launch(format!(
        "server `{}` is a streamable HTTP server, and this build has no HTTP transport \
         (the `streamable-http` feature of mcp-host / mcp-connection is off)",
        config.name
    )))
}
