//! The one error type of this crate: why a request to a server produced no result.

use std::time::Duration;

use serde_json::Value;

/// A request that produced no MCP result. The `Display` text is model-visible (the handlers
/// prefix it, e.g. `resources/read failed: …`), so it is written for a model to act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// No server of that name is configured (or it is disabled).
    #[error("unknown MCP server '{0}'")]
    UnknownServer(String),
    /// The server could not be started; every call to it reports the startup error.
    #[error("MCP server '{server}' failed to start: {error}")]
    NotStarted {
        /// The server.
        server: String,
        /// Why.
        error: String,
    },
    /// The server declared no capability for this request.
    #[error("MCP server '{server}' does not support {capability}")]
    Unsupported {
        /// The server.
        server: String,
        /// e.g. `resources`.
        capability: &'static str,
    },
    /// No answer within the server's tool timeout; the server was told the request is cancelled.
    /// (Codex's words, then the server.)
    #[error("timed out awaiting {method} after {timeout:?} (MCP server '{server}')")]
    Timeout {
        /// The server.
        server: String,
        /// e.g. `tools/call`.
        method: &'static str,
        /// The configured `tool_timeout_sec`.
        timeout: Duration,
    },
    /// The server answered with a JSON-RPC error; its message is passed through.
    #[error("MCP error {code}: {message}")]
    Server {
        /// JSON-RPC error code (e.g. -32002 resource not found).
        code: i32,
        /// The server's message.
        message: String,
        /// The server's `data`, if any.
        data: Option<Value>,
    },
    /// The connection broke (process exited, HTTP session gone, bad framing).
    #[error("connection to MCP server '{server}' failed: {error}")]
    Transport {
        /// The server.
        server: String,
        /// What the transport said.
        error: String,
    },
}

impl McpError {
    pub(crate) fn from_service(server: &str, error: rmcp::ServiceError) -> Self {
        match error {
            rmcp::ServiceError::McpError(data) => {
                // Some servers (server-everything) already start their message with our prefix.
                let prefix = format!("MCP error {}: ", data.code.0);
                let message = data.message.strip_prefix(prefix.as_str()).unwrap_or(&data.message);
                Self::Server { code: data.code.0, message: message.to_string(), data: data.data }
            }
            rmcp::ServiceError::TransportClosed => Self::Transport {
                server: server.to_string(),
                error: "the connection is closed".to_string(),
            },
            other => Self::Transport { server: server.to_string(), error: other.to_string() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_message_that_repeats_the_prefix_is_not_doubled() {
        let data =
            rmcp::model::ErrorData::invalid_params("MCP error -32602: Resource x not found", None);
        let error = McpError::from_service("s", rmcp::ServiceError::McpError(data));
        assert_eq!(error.to_string(), "MCP error -32602: Resource x not found");
        let plain = rmcp::model::ErrorData::resource_not_found("Resource not found: x", None);
        let error = McpError::from_service("s", rmcp::ServiceError::McpError(plain));
        assert_eq!(error.to_string(), "MCP error -32002: Resource not found: x");
    }
}
