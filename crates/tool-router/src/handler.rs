//! The one trait every registered tool implements.

use async_trait::async_trait;

use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};

/// Handles calls of one registered tool. Object-safe: the router stores `Arc<dyn ToolHandler>`.
/// Qualified MCP tools (`mcp__…`) are not registered handlers: the router's MCP route owns them.
#[async_trait]
pub trait ToolHandler: Send + Sync {
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
