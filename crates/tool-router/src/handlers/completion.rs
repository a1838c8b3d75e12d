//! `complete_mcp_resource_argument`: a server's completion values for an argument of one of its
//! resource templates (`completion/complete`). Offered only while some server declares the
//! `completions` capability.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::McpBackend;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::handler::ToolHandler;
use crate::handlers::args::{normalize_required_string, parse_args};
use crate::handlers::{backend_failure, one_server, produced, run};
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};
use crate::spec::ToolSpec;

/// Name of the completion tool.
pub const COMPLETE_MCP_RESOURCE_ARGUMENT: &str = "complete_mcp_resource_argument";

/// Handles `complete_mcp_resource_argument`.
pub(crate) struct McpCompletionHandler {
    backend: Arc<dyn McpBackend>,
}

#[derive(Debug, Default, Deserialize)]
struct CompleteArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    template: Option<String>,
    #[serde(default)]
    argument: Option<String>,
    #[serde(default)]
    value: Option<String>,
}

/// `{"server", "template", "argument", "values": […], "total"?, "hasMore"?}`
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CompletionPayload<'a> {
    server: &'a str,
    template: &'a str,
    argument: &'a str,
    values: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    has_more: Option<bool>,
}

impl McpCompletionHandler {
    /// A handler over `backend`.
    pub(crate) fn new(backend: Arc<dyn McpBackend>) -> Self {
        Self { backend }
    }

    /// The tool's spec.
    pub(crate) fn spec() -> ToolSpec {
        ToolSpec {
            name: COMPLETE_MCP_RESOURCE_ARGUMENT.to_string(),
            description: "Suggest values for one argument of an MCP resource template (completion/complete), given what has been typed so far. Use the suggestions as `parameters` of read_mcp_resource.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "MCP server name exactly as configured."},
                    "template": {"type": "string", "description": "The uriTemplate, as returned by list_mcp_resource_templates."},
                    "argument": {"type": "string", "description": "The template variable to complete."},
                    "value": {"type": "string", "description": "What has been typed so far (may be empty)."}
                },
                "required": ["server", "template", "argument"],
                "additionalProperties": false
            }),
        }
    }
}

#[async_trait]
impl ToolHandler for McpCompletionHandler {
    async fn offered(&self) -> bool {
        self.backend.supports_completions().await
    }

    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let args: CompleteArgs = parse_args(invocation.arguments.as_ref())?;
        let server = normalize_required_string("server", args.server)?;
        let template = normalize_required_string("template", args.template)?;
        let argument = normalize_required_string("argument", args.argument)?;
        let value = args.value.unwrap_or_default();
        let (call_id, event_invocation) = invocation.into_event(Some(server.clone()));
        let work = async {
            let info = self
                .backend
                .complete_resource_argument(&server, &template, &argument, &value)
                .await
                .map_err(|e| backend_failure(&server, "completion/complete", e))?;
            let payload = CompletionPayload {
                server: &server,
                template: &template,
                argument: &argument,
                values: &info.values,
                total: info.total,
                has_more: info.has_more,
            };
            produced(self.backend.as_ref(), &payload, one_server(info.values.len()))
        };
        run(ctx, call_id, event_invocation, work).await.0
    }
}

#[cfg(test)]
#[path = "completion_tests.rs"]
mod tests;
