//! What a call gives back: the model's output ([`ToolOutput`], shared with the call's end
//! event) and the notice of a read resource that changed since ([`ResourceChange`]).

use std::sync::Arc;

use rmcp::model::CallToolResult;
use serde::{Deserialize, Serialize};

use crate::shared::SharedText;

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
#[non_exhaustive]
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

/// A resource the model read that the server says changed since (`resources/updated`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceChange {
    /// The configured server name.
    pub server: String,
    /// The resource's URI.
    pub uri: String,
    /// When the router heard of the change (RFC 3339, UTC, milliseconds).
    pub detected_at: String,
}
