//! Prompts as a host is told of them (slash commands): `ToolRouter::prompts`, exec's `prompts`
//! answer, `mcp-router prompts`.

use serde::{Deserialize, Serialize};

use crate::events::ServerFailure;

/// One prompt of one server: the server's own `Prompt` (name, title, description, arguments)
/// and the server's configured name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptSummary {
    /// The configured server that offers it.
    pub server: String,
    /// The prompt as the server listed it.
    #[serde(flatten)]
    pub prompt: rmcp::model::Prompt,
}

/// Every server's prompts, sorted by server, each server's order kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prompts {
    /// The prompts.
    pub prompts: Vec<PromptSummary>,
    /// Servers whose prompts could not be listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ServerFailure>,
}
