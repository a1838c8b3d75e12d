//! The one trait every handler implements.

use async_trait::async_trait;

use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};

/// Which payload a handler accepts; the router refuses a mismatch before invoking it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// `ToolPayload::Function`.
    Function,
    /// `ToolPayload::Mcp`.
    Mcp,
}

/// Handles tool calls. Object-safe: the router stores `Arc<dyn ToolHandler>`.
#[async_trait]
pub trait ToolHandler: Send + Sync {
    /// The payload kind this handler accepts.
    fn kind(&self) -> ToolKind;

    /// Whether the tool is offered right now (listed in specs and dispatched). Most tools
    /// always are; a tool that needs a server capability asks for it here.
    async fn offered(&self) -> bool {
        true
    }

    /// Run one call. `Err(RespondToModel)` becomes a failed output the model reads.
    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError>;
}
