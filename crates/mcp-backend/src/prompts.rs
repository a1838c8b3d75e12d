//! What the router asks of MCP for prompts: every server's `prompts/list` and one `prompts/get`,
//! what a host needs for slash commands.

use rmcp::model::Prompt;

/// Every server's prompts, sorted by server name.
#[derive(Debug, Clone, Default)]
pub struct PromptsListing {
    /// Servers that declare `prompts`, with their prompts (every page, the server's order) or
    /// why they could not be listed.
    pub servers: Vec<(String, Result<Vec<Prompt>, String>)>,
}
