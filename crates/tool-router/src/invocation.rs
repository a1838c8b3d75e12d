//! The vocabulary of a call: what the model sent, what a handler receives and returns, and the
//! two kinds of failure.

use rmcp::model::CallToolResult;
use router_protocol::{EventMsg, EventSender};
use serde::{Deserialize, Serialize};

/// A tool call as the model produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's id for this call; every event and the output carry it.
    pub call_id: String,
    /// The tool name the model used (a registered name or an MCP-qualified name).
    pub name: String,
    /// The arguments as JSON text (may be empty).
    pub arguments: String,
}

/// A resolved call, handed to one handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInvocation {
    /// The model's id for this call.
    pub call_id: String,
    /// The name the model used.
    pub tool_name: String,
    /// What the handler works on.
    pub payload: ToolPayload,
}

/// What a handler receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPayload {
    /// A function tool: the raw JSON arguments.
    Function {
        /// JSON text; empty or whitespace means no arguments.
        arguments: String,
    },
    /// An MCP tool, resolved from its qualified name.
    Mcp {
        /// The configured server name.
        server: String,
        /// The tool's original name on that server.
        tool: String,
        /// JSON text; empty or whitespace means no arguments.
        raw_arguments: String,
    },
}

/// What goes back to the model. Serialized with a `type` tag: `function` or `mcp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolOutput {
    /// Text (and optionally structured items) with a success flag.
    Function {
        /// The text the model reads (for resource tools: a JSON document).
        content: String,
        /// Structured items (e.g. images) when the text alone is not the whole answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_items: Option<Vec<ContentItem>>,
        /// `Some(false)` marks a failure the model should see as such.
        success: Option<bool>,
    },
    /// An MCP tool's result as the server gave it, or why there is none.
    Mcp {
        /// `{"Ok": CallToolResult}` or `{"Err": "message"}`.
        result: Result<CallToolResult, String>,
    },
}

impl ToolOutput {
    /// A failed function output carrying `message` (how `RespondToModel` reaches the model).
    pub fn failure(message: impl Into<String>) -> Self {
        Self::Function { content: message.into(), content_items: None, success: Some(false) }
    }

    /// Whether the model should read this as a success. An MCP result counts by its `isError`.
    pub fn is_success(&self) -> bool {
        match self {
            Self::Function { success, .. } => success.unwrap_or(true),
            Self::Mcp { result: Ok(result) } => !result.is_error.unwrap_or(false),
            Self::Mcp { result: Err(_) } => false,
        }
    }
}

/// A structured item of a function output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentItem {
    /// Text.
    InputText {
        /// The text.
        text: String,
    },
    /// An image as a URL (usually a `data:` URL).
    InputImage {
        /// The URL.
        image_url: String,
    },
}

/// A call that produced no output, split by who must act.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FunctionCallError {
    /// The model must act: the message goes back to it as a failed function output.
    #[error("{0}")]
    RespondToModel(String),
    /// The host must act: the turn cannot go on.
    #[error("fatal error: {0}")]
    Fatal(String),
}

/// What a handler may use besides its invocation: deliberately narrow.
#[derive(Debug, Clone)]
pub struct CallContext {
    events: EventSender,
}

impl CallContext {
    /// A context whose events go to `events`.
    pub fn new(events: EventSender) -> Self {
        Self { events }
    }

    /// Whether events reach anyone (see [`EventSender::is_active`]).
    pub fn has_listener(&self) -> bool {
        self.events.is_active()
    }

    /// Emit an event (never blocks).
    pub fn emit(&self, event: EventMsg) {
        self.events.send(event);
    }
}
