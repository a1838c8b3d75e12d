//! Why a request to a server produced no result.

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
    /// The backend has been shut down: no request reaches a server any more. The router
    /// reports this to its host (`FunctionCallError::Fatal`), not to the model.
    #[error("the MCP servers have been shut down")]
    ShutDown,
    /// The server answered in a way the router cannot complete: an unknown `resultType`, an
    /// `input_required` answer without anything to answer, more input rounds than allowed.
    #[error("MCP server '{server}' {error}")]
    Protocol {
        /// The server.
        server: String,
        /// What went wrong, as a predicate ("answered tools/call with …").
        error: String,
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
