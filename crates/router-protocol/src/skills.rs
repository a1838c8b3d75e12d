//! Skills from MCP servers (SEP-2640) as a host is told of them: `ToolRouter::skills`, exec's
//! `skills` answer, `list_mcp_skills`.

use serde::{Deserialize, Serialize};

use crate::events::ServerFailure;

/// One skill as a host shows it (and `list_mcp_skills` answers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillSummary {
    /// The configured server that serves it.
    pub server: String,
    /// Its frontmatter `name`.
    pub name: String,
    /// Its frontmatter `description`.
    pub description: String,
    /// Its `SKILL.md` URI.
    pub uri: String,
}

/// Every server's skills, for a host's system prompt: sorted by server, each server's order
/// kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Skills {
    /// The usable skills.
    pub skills: Vec<SkillSummary>,
    /// Servers whose skills could not be listed, and entries left out (`uri: why`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ServerFailure>,
    /// Skills held from the model (their definitions changed since pinned, or new), per server,
    /// with the command that allows them: a list with none usable says why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<crate::HeldNote>,
}
