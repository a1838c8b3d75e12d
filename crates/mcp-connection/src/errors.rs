//! The one translation of rmcp's errors: a request's failure into [`McpError`] (what the model
//! reads), a handshake's into [`ConnectError`] (what a failed start reports). A refusal for
//! want of sign-in is typed ([`SignIn`]) wherever it is met, never found again in a string.

use mcp_backend::{McpError, SignIn};

use crate::client::RouterClient;

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
pub(crate) fn http_handshake_error(
    client: &RouterClient,
    error: &rmcp::service::ClientInitializeError,
) -> HandshakeError {
    if let Some(challenge) = error.auth_challenge() {
        if let Ok(mut last) = client.challenge.lock() {
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
        return HandshakeError::SignIn(crate::oauth::sign_in_of(auth));
    }
    HandshakeError::Handshake(initialize_failed(error))
}

/// The OAuth error (a refresh that failed, a credential store that could not be read) behind
/// a transport error, if that is what it was.
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

/// A readable reason: the transport's own error chain, without rmcp's internal type names.
pub fn initialize_failed(error: &rmcp::service::ClientInitializeError) -> String {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            let mut reason = error.error.to_string();
            let mut source = std::error::Error::source(error.error.as_ref());
            while let Some(inner) = source {
                reason = format!("{reason}: {inner}");
                source = inner.source();
            }
            format!("initialize failed ({context}): {reason}")
        }
        other => format!("initialize failed: {other}"),
    }
}

/// An rmcp request error as the model reads it.
pub fn service_error(server: &str, error: rmcp::ServiceError) -> McpError {
    let sign_in = |sign_in| McpError::SignInRequired { server: server.to_string(), sign_in };
    if error.is_authorization_required() {
        return sign_in(SignIn::Required);
    }
    if let Some(challenge) = error.auth_challenge() {
        // A 403 `insufficient_scope`: signed in, but with too little.
        return sign_in(SignIn::MoreScope { scope: challenge_scope(challenge) });
    }
    if let rmcp::ServiceError::TransportSend(sent) = &error
        && let Some(auth) = auth_error_in(sent.error.as_ref())
    {
        return sign_in(crate::oauth::sign_in_of(auth));
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
            error: "the connection is closed".to_string(),
        },
        other => McpError::Transport { server: server.to_string(), error: other.to_string() },
    }
}

/// The `scope="…"` parameter of a `WWW-Authenticate` challenge.
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
        let error = service_error("s", rmcp::ServiceError::McpError(data));
        assert_eq!(error.to_string(), "MCP error -32602: Resource x not found");
        let plain = rmcp::model::ErrorData::resource_not_found("Resource not found: x", None);
        let error = service_error("s", rmcp::ServiceError::McpError(plain));
        assert_eq!(error.to_string(), "MCP error -32002: Resource not found: x");
    }
}
