//! Prompts for the host — what agents turn into slash commands: every server's prompts, one
//! prompt with its arguments, and completion of an argument. Host APIs beside dispatch; the
//! model gets prompts only through `get_mcp_prompt` when the host turns it on.

use mcp_backend::{McpError, no_capability};
use rmcp::model::{CompletionInfo, GetPromptResult, JsonObject};
use router_protocol::{PromptSummary, Prompts, ServerFailure};

use crate::router::ToolRouter;

impl ToolRouter {
    /// Every server's prompts (`prompts/list`, every page, asked afresh: a changed list shows at
    /// once), sorted by server, each server's order kept. Servers that do not declare
    /// `prompts` are not asked; an idle one is started unless its catalog says it has none.
    pub async fn prompts(&self) -> Prompts {
        let Some(prompts) = self.backend().and_then(|backend| backend.prompts()) else {
            return Prompts::default();
        };
        let listing = prompts.all_prompts().await;
        let mut out = Prompts::default();
        for (server, answer) in listing.servers {
            match answer {
                Ok(prompts) => out.prompts.extend(
                    prompts
                        .into_iter()
                        .map(|prompt| PromptSummary { server: server.clone(), prompt }),
                ),
                Err(error) => out.errors.push(ServerFailure { server, error }),
            }
        }
        out
    }

    /// `server`'s prompt `name` with `arguments` (string values, as the spec has them): the
    /// messages to put in the conversation. A server's input requests (2026-07-28) go to the
    /// host as for every request.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, McpError> {
        let backend = self.backend_for(server)?;
        let prompts = backend.prompts().ok_or_else(|| no_capability(server, "prompts"))?;
        prompts.get_prompt(server, name, arguments).await
    }

    /// Values for a prompt's argument that start like `value` (`completion/complete`).
    pub async fn complete_prompt_argument(
        &self,
        server: &str,
        prompt: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        let backend = self.backend_for(server)?;
        let prompts = backend.prompts().ok_or_else(|| no_capability(server, "prompts"))?;
        prompts.complete_prompt_argument(server, prompt, argument, value).await
    }
}
