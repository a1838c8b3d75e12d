//! Why a request to a server produced no result.

use std::time::Duration;

use serde_json::Value;

/// A request that produced no MCP result. The `Display` text is model-visible (the handlers
/// prefix it, e.g. `resources/read failed: …`), so it is written for a model to act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// No server of that name is configured (or it is disabled).
    #[error("unknown MCP server '{0}'")]
    UnknownServer(String),
    #[error("{message}")]
    /// The call was not made: the tool's definition is held (not the one pinned for its
    /// server), its approval policy refuses it, or the host did not approve it; `message`
    /// says which and what to do.
    Refused {
        /// The configured server name.
        server: String,
        /// The whole sentence.
        message: String,
    },
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
    /// The server needs a sign-in the router does not have, could not refresh, or that grants
    /// too little. Not a transport failure: the host signs in (`mcp-router login SERVER`, or
    /// the library's `oauth::Login`) and the next call works without a restart.
    #[error("MCP server '{server}' {}", .sign_in.advice(.server))]
    SignInRequired {
        /// The server.
        server: String,
        /// What the server or the credentials said.
        sign_in: SignIn,
    },
    /// A task handed to the background cannot be awaited: unknown, or several servers have one
    /// of that id.
    #[error("task '{task}': {error}")]
    Task {
        /// The task id as the model gave it.
        task: String,
        /// Why, as the model reads it.
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

/// Why a server needs a sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignIn {
    /// No credentials are stored, or the server refused them (HTTP 401).
    Required,
    /// Signed in, but the server asks for more (HTTP 403 `insufficient_scope`).
    MoreScope {
        /// The scope the server's challenge names, if it names one.
        scope: Option<String>,
    },
    /// The stored sign-in could not be refreshed: the authorization server did not answer.
    RefreshFailed,
    /// The sign-in could not be used for another reason (the credential store, the OAuth
    /// flow); the detail says which.
    Failed {
        /// What went wrong, for a person.
        detail: String,
    },
}

impl SignIn {
    /// What `server` needs and what to run, as a predicate ("needs sign-in: run …"): the text
    /// of every sign-in failure, in tool results, events and statuses.
    pub fn advice(&self, server: &str) -> String {
        match self {
            Self::Required => format!("needs sign-in: run `mcp-router login {server}`"),
            Self::MoreScope { scope } => {
                let scope = scope
                    .as_ref()
                    .map(|scope| format!(" (it asks for scope \"{scope}\")"))
                    .unwrap_or_default();
                format!(
                    "needs more permissions{scope}: run `mcp-router login {server}` to sign in again"
                )
            }
            Self::RefreshFailed => format!(
                "could not refresh its sign-in (the authorization server did not answer); try again, or run `mcp-router login {server}`"
            ),
            Self::Failed { detail } => format!("sign-in failed: {detail}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_in_failures_read_as_advice_naming_the_server() {
        let error = |sign_in| McpError::SignInRequired { server: "remote".into(), sign_in };
        let cases = [
            (SignIn::Required, "MCP server 'remote' needs sign-in: run `mcp-router login remote`"),
            (
                SignIn::MoreScope { scope: Some("files:write".into()) },
                "MCP server 'remote' needs more permissions (it asks for scope \"files:write\"): run `mcp-router login remote` to sign in again",
            ),
            (
                SignIn::MoreScope { scope: None },
                "MCP server 'remote' needs more permissions: run `mcp-router login remote` to sign in again",
            ),
            (
                SignIn::RefreshFailed,
                "MCP server 'remote' could not refresh its sign-in (the authorization server did not answer); try again, or run `mcp-router login remote`",
            ),
            (SignIn::Failed { detail: "no".into() }, "MCP server 'remote' sign-in failed: no"),
        ];
        for (sign_in, expected) in cases {
            assert_eq!(error(sign_in).to_string(), expected);
        }
    }
}
