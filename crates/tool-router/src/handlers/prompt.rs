//! `get_mcp_prompt {server, name, arguments?}` (setting `prompt_tool`, default off): a server's
//! prompt, its messages as the model reads them — for hosts that let the model use prompts the
//! way a user would with a slash command. Offered while a server offers prompts.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::McpBackend;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::handler::ToolHandler;
use crate::handlers::args::{normalize_required_string, parse_args, respond};
use crate::handlers::{Failed, Produced, backend_failure, one_server, produced, run};
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};
use crate::spec::ToolSpec;

/// Name of the prompt tool.
pub const GET_MCP_PROMPT: &str = "get_mcp_prompt";

#[derive(Debug, Default, Deserialize)]
struct PromptArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Handles `get_mcp_prompt`.
pub(crate) struct PromptHandler {
    backend: Arc<dyn McpBackend>,
}

impl PromptHandler {
    pub(crate) fn new(backend: Arc<dyn McpBackend>) -> Self {
        Self { backend }
    }

    pub(crate) fn spec() -> ToolSpec {
        ToolSpec {
            name: GET_MCP_PROMPT.to_string(),
            description: "Get a prompt an MCP server offers, filled in with its arguments: the messages it stands for.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "MCP server that offers the prompt."},
                    "name": {"type": "string", "description": "The prompt's name."},
                    "arguments": {"type": "object", "description": "The prompt's arguments by name.", "additionalProperties": {"type": "string"}}
                },
                "required": ["server", "name"],
                "additionalProperties": false
            }),
        }
    }

    async fn get(
        &self,
        server: &str,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> Result<Produced, Failed> {
        let prompts = self.backend.prompts().ok_or_else(|| {
            backend_failure(server, "prompts/get", mcp_backend::no_capability(server, "prompts"))
        })?;
        let result = prompts.get_prompt(server, name, arguments).await;
        let result = result.map_err(|e| backend_failure(server, "prompts/get", e))?;
        let payload = json!({"server": server, "name": name, "description": result.description, "messages": result.messages});
        produced(self.backend.as_ref(), &payload, one_server(result.messages.len()))
    }
}

#[async_trait]
impl ToolHandler for PromptHandler {
    async fn offered(&self) -> bool {
        match self.backend.prompts() {
            Some(prompts) => prompts.offers_prompts().await,
            None => false,
        }
    }

    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let args: PromptArgs = parse_args(invocation.arguments.as_ref())?;
        let server = normalize_required_string("server", args.server)?;
        let name = normalize_required_string("name", args.name)?;
        let arguments = match args.arguments {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => Some(map),
            Some(_) => return Err(respond("arguments must be an object of strings")),
        };
        let (call_id, event_invocation) = invocation.into_event(Some(server.clone()));
        let work = self.get(&server, &name, arguments);
        run(ctx, call_id, event_invocation, work).await.0
    }
}
