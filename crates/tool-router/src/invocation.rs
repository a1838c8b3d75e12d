//! The vocabulary of a call: what the model sent, what a handler receives and returns, and the
//! two kinds of failure.

pub use router_protocol::{ContentItem, ToolOutput};
use router_protocol::{EventMsg, EventSender};
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

impl ToolInvocation {
    /// The call's id and what its begin/end events say it invoked (`server`, the name the model
    /// used and its arguments): the preamble every handler shares before its work runs.
    pub(crate) fn into_event(
        self,
        server: Option<String>,
    ) -> (String, router_protocol::McpInvocation) {
        let event = router_protocol::McpInvocation {
            server,
            tool: self.tool_name,
            arguments: self.arguments.map(std::sync::Arc::new),
        };
        (self.call_id, event)
    }
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
    /// `None`: the router's `event_payload_bytes`.
    event_payload_bytes: Option<usize>,
    /// The host's trace context: sent on every request of the call.
    pub(crate) trace: Option<std::sync::Arc<mcp_backend::TraceContext>>,
}

impl CallContext {
    /// A context whose events go to `events`.
    pub fn new(events: EventSender) -> Self {
        Self { events, result_text: true, event_payload_bytes: None, trace: None }
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

    /// Most bytes (as JSON) of arguments and of a result that begin and end events carry;
    /// beyond it they carry a cut copy and the full size (see `McpToolCallEndEvent`). The
    /// router's `event_payload_bytes` setting (default 256 KiB) applies unless this is set.
    pub fn with_event_payload_bytes(mut self, bytes: usize) -> Self {
        self.event_payload_bytes = Some(bytes);
        self
    }

    /// The bound events keep to (see [`Self::with_event_payload_bytes`]).
    pub fn event_payload_bytes(&self) -> usize {
        self.event_payload_bytes
            .unwrap_or(crate::results::event_bounds::DEFAULT_EVENT_PAYLOAD_BYTES)
    }

    /// Whether the bound was set on this context.
    pub(crate) fn has_event_payload_bytes(&self) -> bool {
        self.event_payload_bytes.is_some()
    }

    /// The host's W3C trace context for the calls made with this context: every request they
    /// send carries it (in `_meta`, and as HTTP headers), so a server's work joins the host's
    /// trace; with the `otel` feature the router's own spans come between.
    pub fn with_trace_context(mut self, trace: mcp_backend::TraceContext) -> Self {
        self.trace = Some(std::sync::Arc::new(trace));
        self
    }

    /// The host's trace context, if it gave one.
    pub fn trace_context(&self) -> Option<&mcp_backend::TraceContext> {
        self.trace.as_deref()
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
