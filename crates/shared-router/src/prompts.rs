//! The servers' prompts, passed through to every session as MCP prompts (what a client shows as
//! slash commands), each named `server/prompt` so two servers' prompts cannot collide.

use mcp_host::ToolRouter;
use rmcp::ErrorData;
use rmcp::model::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};

/// Every server's prompts, named `server/prompt` (a server name has no `/`).
pub(crate) async fn list(router: &ToolRouter) -> ListPromptsResult {
    let listed = router.prompts().await;
    for failure in &listed.errors {
        tracing::info!(server = %failure.server, error = %failure.error, "prompts not listed");
    }
    let prompts = listed
        .prompts
        .into_iter()
        .map(|summary| {
            let mut prompt = summary.prompt;
            prompt.name = qualified(&summary.server, &prompt.name);
            prompt
        })
        .collect();
    ListPromptsResult::with_all_items(prompts)
}

/// `server/prompt`.
pub(crate) fn qualified(server: &str, prompt: &str) -> String {
    format!("{server}/{prompt}")
}

/// The prompt a qualified name names, from its server.
pub(crate) async fn get(
    router: &ToolRouter,
    request: GetPromptRequestParams,
) -> Result<GetPromptResult, ErrorData> {
    let Some((server, name)) = request.name.split_once('/') else {
        let message = format!(
            "unknown prompt `{}`: the shared router's prompts are named `server/prompt`",
            request.name
        );
        return Err(ErrorData::invalid_params(message, None));
    };
    router
        .get_prompt(server, name, request.arguments)
        .await
        .map_err(|e| ErrorData::invalid_params(e.to_string(), None))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_qualified_name_splits_at_the_first_slash() {
        let name = super::qualified("docs", "release/notes");
        assert_eq!(name, "docs/release/notes");
        assert_eq!(name.split_once('/'), Some(("docs", "release/notes")));
    }
}
