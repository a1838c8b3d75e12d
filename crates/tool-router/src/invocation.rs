//! The vocabulary of a call: what the model sent, what a handler receives and returns, and the
//! two kinds of failure.

use std::sync::Arc;

use rmcp::model::CallToolResult;
use router_protocol::{EventMsg, EventSender, SharedText};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call as the model produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's id for this call; every event and the output carry it.
    pub call_id: String,
    /// The tool name the model used (a registered name or an MCP-qualified name).
    pub name: String,
    /// The arguments, as the model API delivered them.
    pub arguments: ToolArguments,
}

/// A call's arguments as delivered: JSON text (what model APIs send), or JSON already parsed
/// (what a host that decoded its input line has). Parsed once, at the route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolArguments {
    /// JSON text; empty or whitespace means no arguments.
    Text(String),
    /// A parsed JSON value; `null` means no arguments.
    Json(Value),
}

impl Default for ToolArguments {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl From<String> for ToolArguments {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ToolArguments {
    fn from(text: &str) -> Self {
        Self::Text(text.to_string())
    }
}

impl From<Value> for ToolArguments {
    fn from(value: Value) -> Self {
        Self::Json(value)
    }
}

impl ToolArguments {
    /// The JSON value, parsing text if need be. Blank text is `None`; `null` is kept (some
    /// routes tell it apart from no arguments).
    pub(crate) fn into_value(self) -> Result<Option<Value>, serde_json::Error> {
        match self {
            Self::Text(text) if text.trim().is_empty() => Ok(None),
            Self::Text(text) => serde_json::from_str(&text).map(Some),
            Self::Json(value) => Ok(Some(value)),
        }
    }
}

/// A resolved call to a registered (function-style) tool, handed to its handler. The
/// arguments were parsed once, by the router; handlers read them into their own typed struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInvocation {
    /// The model's id for this call.
    pub call_id: String,
    /// The name the model used.
    pub tool_name: String,
    /// The parsed arguments; `None` when the model sent none (blank text or `null`).
    pub arguments: Option<Value>,
}

/// What goes back to the model. Serialized with a `type` tag: `function` or `mcp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolOutput {
    /// Text (and optionally structured items) with a success flag.
    Function {
        /// The text the model reads (for resource tools: a JSON document). Shared with the
        /// call's end event, not copied; serialized as a JSON string.
        content: SharedText,
        /// Structured items (e.g. images) when the text alone is not the whole answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_items: Option<Vec<ContentItem>>,
        /// `Some(false)` marks a failure the model should see as such.
        success: Option<bool>,
    },
    /// An MCP tool's result as the server gave it, or why there is none.
    Mcp {
        /// `{"Ok": CallToolResult}` or `{"Err": "message"}`. Shared with the call's end event.
        result: Result<Arc<CallToolResult>, String>,
    },
}

impl ToolOutput {
    /// A failed function output carrying `message` (how `RespondToModel` reaches the model).
    pub fn failure(message: impl Into<String>) -> Self {
        Self::Function {
            content: SharedText::from(message.into()),
            content_items: None,
            success: Some(false),
        }
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
    /// The host must act: the turn cannot go on. Produced when the MCP backend has been shut
    /// down (no call can reach a server any more), never for a single server's failure.
    #[error("fatal error: {0}")]
    Fatal(String),
}

/// What a handler may use besides its invocation: deliberately narrow.
#[derive(Debug, Clone)]
pub struct CallContext {
    events: EventSender,
    result_text: bool,
}

impl CallContext {
    /// A context whose events go to `events`.
    pub fn new(events: EventSender) -> Self {
        Self { events, result_text: true }
    }

    /// With `false`, end events leave the result's content out (`result_omitted: true`; the
    /// summary and `isError` stay): for hosts that already get the payload in the output. The
    /// router's `event_result_text = false` setting does the same for every call.
    pub fn with_result_text(mut self, result_text: bool) -> Self {
        self.result_text = result_text;
        self
    }

    /// Whether end events carry the result's content.
    pub fn result_text(&self) -> bool {
        self.result_text
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
