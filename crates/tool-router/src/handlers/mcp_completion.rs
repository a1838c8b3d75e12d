//! `complete_mcp_resource_argument`: a server's completion values for an argument of one of its
//! resource templates (`completion/complete`). Offered only while some server declares the
//! `completions` capability.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{CallToolResult, ContentBlock};
use router_protocol::{McpInvocation, ResourceCallSummary, ServerFailure};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::backend::McpBackend;
use crate::handler::{ToolHandler, ToolKind};
use crate::handlers::args::{normalize_required_string, parse_args, parse_arguments, respond};
use crate::handlers::bracket;
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput, ToolPayload};
use crate::spec::ToolSpec;

/// Name of the completion tool.
pub const COMPLETE_MCP_RESOURCE_ARGUMENT: &str = "complete_mcp_resource_argument";

/// Handles `complete_mcp_resource_argument`.
pub struct McpCompletionHandler {
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
    pub fn new(backend: Arc<dyn McpBackend>) -> Self {
        Self { backend }
    }

    /// The tool's spec.
    pub fn spec() -> ToolSpec {
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
    fn kind(&self) -> ToolKind {
        ToolKind::Function
    }

    async fn offered(&self) -> bool {
        self.backend.supports_completions().await
    }

    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let ToolPayload::Function { arguments } = invocation.payload else {
            return Err(respond("completion handler received unsupported payload"));
        };
        let arguments = parse_arguments(&arguments)?;
        let args: CompleteArgs = parse_args(arguments.clone())?;
        let server = normalize_required_string("server", args.server)?;
        let template = normalize_required_string("template", args.template)?;
        let argument = normalize_required_string("argument", args.argument)?;
        let value = args.value.unwrap_or_default();
        let mcp_invocation = McpInvocation {
            server: Some(server.clone()),
            tool: COMPLETE_MCP_RESOURCE_ARGUMENT.to_string(),
            arguments,
        };
        let work = async {
            let info = self
                .backend
                .complete_resource_argument(&server, &template, &argument, &value)
                .await
                .map_err(|e| format!("completion/complete failed: {e}"))?;
            let payload = CompletionPayload {
                server: &server,
                template: &template,
                argument: &argument,
                values: &info.values,
                total: info.total,
                has_more: info.has_more,
            };
            let content = serde_json::to_string(&payload).map_err(|e| e.to_string())?;
            Ok::<_, String>((content, info.values.len()))
        };
        let outcome =
            bracket(ctx, &invocation.call_id, mcp_invocation, work, |outcome| match outcome {
                Ok((content, items)) => {
                    let mut result =
                        CallToolResult::success(vec![ContentBlock::text(content.clone())]);
                    result.result_type = None;
                    let summary = ResourceCallSummary {
                        items: *items,
                        pages: 1,
                        servers: 1,
                        failed_servers: vec![],
                    };
                    (Ok(result), Some(summary))
                }
                Err(error) => {
                    let failed = ServerFailure { server: server.clone(), error: error.clone() };
                    let summary = ResourceCallSummary {
                        items: 0,
                        pages: 0,
                        servers: 1,
                        failed_servers: vec![failed],
                    };
                    (Err(error.clone()), Some(summary))
                }
            })
            .await;
        match outcome {
            Ok((content, _)) => {
                Ok(ToolOutput::Function { content, content_items: None, success: Some(true) })
            }
            Err(error) => Err(respond(error)),
        }
    }
}

#[cfg(test)]
#[path = "mcp_completion_tests.rs"]
mod tests;
