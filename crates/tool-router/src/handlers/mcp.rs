//! MCP-qualified tool calls, as Codex's MCP handler has them: the server's result (or why there
//! is none) passed through as `ToolOutput::Mcp`, its embedded resources shaped as reads are.
//! The router resolves the name and parses the arguments before a call gets here.

use std::sync::Arc;

use mcp_backend::{McpBackend, McpError};
use rmcp::model::{CallToolResult, JsonObject};
use router_protocol::{CallResult, McpInvocation};
use serde_json::Value;

use crate::content::{ContentPolicy, needs_shaping, shape_tool_result};
use crate::handlers::bracket;
use crate::invocation::{CallContext, FunctionCallError, ToolOutput};

/// A resolved `mcp__server__tool` call.
pub(crate) struct McpCall {
    pub(crate) call_id: String,
    /// The configured server name.
    pub(crate) server: String,
    /// The tool's original name on that server.
    pub(crate) tool: String,
    /// The arguments as parsed (for the events): `None`, `null` or an object.
    pub(crate) arguments: Option<Value>,
}

/// Runs qualified MCP tool calls: the router's MCP route.
pub(crate) struct McpHandler {
    backend: Arc<dyn McpBackend>,
    policy: ContentPolicy,
}

impl McpHandler {
    /// A handler whose results' embedded resources follow `policy` (as reads do).
    pub(crate) fn new(backend: Arc<dyn McpBackend>, policy: ContentPolicy) -> Self {
        Self { backend, policy }
    }

    /// Arguments other than an object (or none) are refused before any server is contacted,
    /// with Codex's `err: …` wording.
    pub(crate) fn arguments_object(
        arguments: Option<&Value>,
    ) -> Result<Option<JsonObject>, FunctionCallError> {
        match arguments {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map.clone())),
            Some(_) => Err(FunctionCallError::RespondToModel(
                "err: tool arguments must be a JSON object".to_string(),
            )),
        }
    }

    /// Call the tool between begin/end events.
    pub(crate) async fn call(
        &self,
        ctx: &CallContext,
        call: McpCall,
    ) -> Result<ToolOutput, FunctionCallError> {
        let object = Self::arguments_object(call.arguments.as_ref())?;
        let McpCall { call_id, server, tool, arguments } = call;
        let invocation =
            McpInvocation { server: Some(server.clone()), tool: tool.clone(), arguments };
        // The end event shows the server's result as sent, the model gets it shaped: one
        // shared allocation when shaping changes nothing (almost always), two when it does.
        let keep_raw = ctx.has_listener();
        let work = async {
            let raw = self.backend.call_tool(&server, &tool, object).await?;
            Ok(shape_shared(raw, &self.policy, keep_raw))
        };
        let (outcome, _) = bracket(ctx, &call_id, invocation, work, |r| {
            let result = r.as_ref().map_err(tool_call_error);
            (result.map(|(raw, _)| CallResult::Call(raw.clone())), None)
        })
        .await;
        match outcome {
            Ok((_, shaped)) => Ok(ToolOutput::Mcp { result: Ok(shaped) }),
            Err(McpError::ShutDown) => {
                Err(FunctionCallError::Fatal(McpError::ShutDown.to_string()))
            }
            Err(e) => Ok(ToolOutput::Mcp { result: Err(tool_call_error(&e)) }),
        }
    }
}

/// The server's result for the end event and the shaped result for the model. The raw one is
/// only kept apart when shaping changes something and someone listens.
fn shape_shared(
    raw: CallToolResult,
    policy: &ContentPolicy,
    keep_raw: bool,
) -> (Arc<CallToolResult>, Arc<CallToolResult>) {
    if !needs_shaping(&raw, policy) {
        let shared = Arc::new(raw);
        return (shared.clone(), shared);
    }
    if keep_raw {
        let shaped = Arc::new(shape_tool_result(raw.clone(), policy));
        return (Arc::new(raw), shaped);
    }
    let shaped = Arc::new(shape_tool_result(raw, policy));
    (shaped.clone(), shaped)
}

fn tool_call_error(error: &McpError) -> String {
    format!("tool call error: {error}")
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
