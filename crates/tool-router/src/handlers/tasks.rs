//! `await_mcp_task {task, server?, wait_sec?}` (offered when the host hands long tasks to the
//! background, `background_tasks_after_sec`): the result of a tool call whose task (SEP-2663)
//! went on in the background, waiting up to `wait_sec` (default 30, at most 600) for it; while
//! the task still runs, its handle again with the latest status. The result is the tool's, shaped
//! as every tool result is (budget, kept rest, links), between begin/end events.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_backend::McpBackend;
use serde::Deserialize;
use serde_json::json;

use crate::handler::ToolHandler;
use crate::handlers::args::{
    normalize_optional_string, normalize_required_string, parse_args, respond,
};
use crate::handlers::mcp::{McpCall, McpHandler};
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};
use crate::spec::ToolSpec;

/// Name of the await tool.
pub const AWAIT_MCP_TASK: &str = "await_mcp_task";

/// Waited when the model names no `wait_sec`.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// Most seconds one call waits.
const MAX_WAIT_SEC: f64 = 600.0;

#[derive(Debug, Default, Deserialize)]
struct AwaitArgs {
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    wait_sec: Option<f64>,
}

/// Handles `await_mcp_task`.
pub(crate) struct AwaitTaskHandler {
    backend: Arc<dyn McpBackend>,
    mcp: Arc<McpHandler>,
}

impl AwaitTaskHandler {
    pub(crate) fn new(backend: Arc<dyn McpBackend>, mcp: Arc<McpHandler>) -> Self {
        Self { backend, mcp }
    }

    pub(crate) fn spec() -> ToolSpec {
        ToolSpec {
            name: AWAIT_MCP_TASK.to_string(),
            description: "Collect the result of an MCP tool call that went on in the background (its result was a handle with a `task`). Waits up to `wait_sec` seconds; if the task still runs, returns the handle again with its status.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "task": {"type": "string", "description": "The handle's `task`."},
                    "server": {"type": "string", "description": "The handle's `server` (needed only when two servers have a task of that id)."},
                    "wait_sec": {"type": "number", "description": "Most seconds to wait (default 30, at most 600)."}
                },
                "required": ["task"],
                "additionalProperties": false
            }),
        }
    }
}

#[async_trait]
impl ToolHandler for AwaitTaskHandler {
    /// Offered exactly while the backend hands calls to the background.
    async fn offered(&self) -> bool {
        self.backend.tasks().is_some()
    }

    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let args: AwaitArgs = parse_args(invocation.arguments.as_ref())?;
        let task = normalize_required_string("task", args.task)?;
        let wait = match args.wait_sec {
            None => DEFAULT_WAIT,
            Some(secs) if secs.is_finite() && secs >= 0.0 => {
                Duration::from_secs_f64(secs.min(MAX_WAIT_SEC))
            }
            Some(_) => return Err(respond("wait_sec must be a number of seconds, 0 or more")),
        };
        let server = normalize_optional_string(args.server);
        let Some(tasks) = self.backend.tasks() else {
            return Err(respond("no call is handed to the background in this host"));
        };
        let server = tasks
            .backgrounded_task(server.as_deref(), &task)
            .map_err(|e| respond(e.to_string()))?;
        let call = McpCall {
            call_id: invocation.call_id,
            server: server.clone(),
            tool: invocation.tool_name,
            arguments: invocation.arguments,
        };
        let result = tasks.await_task(&server, &task, wait);
        self.mcp.answer(ctx, call, None, result).await
    }
}
