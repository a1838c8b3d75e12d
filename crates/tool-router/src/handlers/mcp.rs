//! MCP-qualified tool calls (seed 001): the MCP payload only; the server's result (or why there
//! is none) passed through as `ToolOutput::Mcp`, bad arguments as a failed function output.

use std::sync::Arc;

use async_trait::async_trait;
use router_protocol::McpInvocation;
use serde_json::Value;

use crate::backend::McpBackend;
use crate::content::{ContentPolicy, shape_tool_result};
use crate::handler::{ToolHandler, ToolKind};
use crate::handlers::bracket;
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput, ToolPayload};

/// Handles `mcp__server__tool` calls.
pub struct McpHandler {
    backend: Arc<dyn McpBackend>,
    policy: ContentPolicy,
}

impl McpHandler {
    /// A handler over `backend` with the default content policy.
    pub fn new(backend: Arc<dyn McpBackend>) -> Self {
        Self::with_policy(backend, ContentPolicy::default())
    }

    /// A handler whose results' embedded resources follow `policy` (as reads do).
    pub fn with_policy(backend: Arc<dyn McpBackend>, policy: ContentPolicy) -> Self {
        Self { backend, policy }
    }
}

#[async_trait]
impl ToolHandler for McpHandler {
    fn kind(&self) -> ToolKind {
        ToolKind::Mcp
    }

    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let ToolPayload::Mcp { server, tool, raw_arguments } = invocation.payload else {
            return Err(FunctionCallError::RespondToModel(
                "mcp handler received unsupported payload".to_string(),
            ));
        };
        let output = handle_mcp_tool_call(
            self.backend.as_ref(),
            ctx,
            &invocation.call_id,
            server,
            tool,
            &raw_arguments,
        )
        .await;
        Ok(match output {
            ToolOutput::Mcp { result: Ok(result) } => {
                ToolOutput::Mcp { result: Ok(shape_tool_result(result, &self.policy)) }
            }
            other => other,
        })
    }
}

/// Parse the arguments (a failure goes back as `err: …` without contacting the server), then
/// call the tool between begin/end events.
async fn handle_mcp_tool_call(
    backend: &dyn McpBackend,
    ctx: &CallContext,
    call_id: &str,
    server: String,
    tool: String,
    raw_arguments: &str,
) -> ToolOutput {
    let arguments: Option<Value> = if raw_arguments.trim().is_empty() {
        None
    } else {
        match serde_json::from_str(raw_arguments) {
            Ok(value) => Some(value),
            Err(e) => return ToolOutput::failure(format!("err: {e}")),
        }
    };
    let object = match &arguments {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(_) => return ToolOutput::failure("err: tool arguments must be a JSON object"),
    };
    let invocation = McpInvocation { server: Some(server.clone()), tool: tool.clone(), arguments };
    let work = async {
        backend.call_tool(&server, &tool, object).await.map_err(|e| format!("tool call error: {e}"))
    };
    let result = bracket(ctx, call_id, invocation, work, |r| (r.clone(), None)).await;
    ToolOutput::Mcp { result }
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
