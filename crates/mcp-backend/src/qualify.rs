//! Qualified MCP tool names, `mcp__{server}__{tool}`, with Codex's sanitising and 64-character
//! rule: characters outside `[A-Za-z0-9_-]` become `_`; a longer name becomes its first 24
//! sanitised characters followed by the 40-hex SHA-1 of the raw qualified name.

use rmcp::model::Tool;
use sha1::{Digest, Sha1};

const DELIMITER: &str = "__";
const PREFIX: &str = "mcp";
/// The longest name a model API accepts for a tool.
pub const MAX_TOOL_NAME_LENGTH: usize = 64;

/// The model-visible name for `tool` on `server`.
pub fn qualified_tool_name(server: &str, tool: &str) -> String {
    let raw = format!("{PREFIX}{DELIMITER}{server}{DELIMITER}{tool}");
    let sanitized = sanitize(&raw);
    if sanitized.len() <= MAX_TOOL_NAME_LENGTH {
        return sanitized;
    }
    let digest = Sha1::digest(raw.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    // `sanitized` is ASCII, so any byte index is a character boundary.
    format!("{}{hex}", &sanitized[..MAX_TOOL_NAME_LENGTH - hex.len()])
}

/// Characters outside `[A-Za-z0-9_-]` as `_`.
fn sanitize(raw: &str) -> String {
    raw.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect()
}

/// Whether `qualified` could name a tool of `server`: it begins as that server's qualified
/// names begin (as far as a hashed name keeps its beginning). A backend waits for a starting
/// server to learn its tools only when this holds, never for the others.
pub fn could_name_a_tool_of(qualified: &str, server: &str) -> bool {
    let prefix = sanitize(&format!("{PREFIX}{DELIMITER}{server}{DELIMITER}"));
    let hex = 40;
    let kept = if qualified.len() == MAX_TOOL_NAME_LENGTH {
        prefix.len().min(MAX_TOOL_NAME_LENGTH - hex)
    } else {
        prefix.len()
    };
    qualified.as_bytes().get(..kept).is_some_and(|start| start == &prefix.as_bytes()[..kept])
}

/// Whether `name` has the shape of a qualified MCP tool name (it may still be unknown).
pub fn looks_qualified(name: &str) -> bool {
    name.starts_with("mcp__")
}

/// An MCP tool with its model-visible qualified name.
#[derive(Debug, Clone)]
pub struct QualifiedTool {
    /// `mcp__{server}__{tool}` after sanitising and hashing.
    pub qualified_name: String,
    /// The configured server name.
    pub server: String,
    /// The tool as the server described it (original name kept for the call).
    pub tool: Tool,
}

/// The server and original name of the listed tool whose qualified name is `qualified`.
pub fn find_listed_tool(qualified: &str, listed: &[QualifiedTool]) -> Option<(String, String)> {
    listed
        .iter()
        .find(|t| t.qualified_name == qualified)
        .map(|t| (t.server.clone(), t.tool.name.to_string()))
}

/// A name no server listed, read as `mcp__{server}__{tool}` with a configured server (the
/// longest matching server name wins) and a tool that `allowed(server, tool)` lets through.
pub fn unlisted_tool<'a>(
    qualified: &str,
    servers: impl IntoIterator<Item = &'a str>,
    allowed: impl Fn(&str, &str) -> bool,
) -> Option<(String, String)> {
    let rest = qualified.strip_prefix("mcp__")?;
    servers
        .into_iter()
        .filter_map(|server| {
            let tool = rest.strip_prefix(server)?.strip_prefix(DELIMITER)?;
            (!tool.is_empty() && allowed(server, tool))
                .then(|| (server.to_string(), tool.to_string()))
        })
        .max_by_key(|(server, _)| server.len())
}

/// The one rule for a model's qualified tool name: a listed tool first; otherwise
/// [`unlisted_tool`]. The server is the authority on its tools (its list may have changed since
/// it was read): for a tool it does not have, its own error result reaches the model. Filtered
/// tools and unknown servers resolve to nothing.
pub fn resolve_tool_name<'a>(
    qualified: &str,
    listed: &[QualifiedTool],
    servers: impl IntoIterator<Item = &'a str>,
    allowed: impl Fn(&str, &str) -> bool,
) -> Option<(String, String)> {
    find_listed_tool(qualified, listed).or_else(|| unlisted_tool(qualified, servers, allowed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(server: &str, tool: &str) -> QualifiedTool {
        QualifiedTool {
            qualified_name: qualified_tool_name(server, tool),
            server: server.to_string(),
            tool: Tool::new(tool.to_string(), "", rmcp::model::JsonObject::new()),
        }
    }

    #[test]
    fn a_name_could_belong_only_to_servers_it_begins_with() {
        let long_tool = "a".repeat(80);
        for (server, tool) in [("docs", "read"), ("my.server", "x"), ("docs", long_tool.as_str())] {
            let name = qualified_tool_name(server, tool);
            assert!(could_name_a_tool_of(&name, server), "{name}");
        }
        let long = qualified_tool_name("docs", &long_tool);
        assert_eq!(long.len(), MAX_TOOL_NAME_LENGTH);
        assert!(!could_name_a_tool_of(&long, "notes"));
        assert!(!could_name_a_tool_of("mcp__doc__read", "docs"));
        assert!(!could_name_a_tool_of("mcp__docsx__read", "docs"));
        assert!(!could_name_a_tool_of("mcp__zz__t", "docs"));
        assert!(!could_name_a_tool_of("", "docs"));
    }

    #[test]
    fn resolution_prefers_listed_then_longest_configured_server() {
        let tools = [listed("a", "x.y")];
        let servers = ["a", "a__b", "c"];
        let all = |_: &str, _: &str| true;
        let resolve = |name: &str| resolve_tool_name(name, &tools, servers, all);
        // Listed: the original name, not the sanitised one.
        assert_eq!(resolve("mcp__a__x_y"), Some(("a".into(), "x.y".into())));
        // Unlisted: the longest configured server name wins.
        assert_eq!(resolve("mcp__a__b__t"), Some(("a__b".into(), "t".into())));
        assert_eq!(resolve("mcp__c__new"), Some(("c".into(), "new".into())));
        for unknown in ["mcp__zz__t", "mcp__c__", "mcp__", "c__t", ""] {
            assert_eq!(resolve(unknown), None, "{unknown}");
        }
        let only_t = |_: &str, tool: &str| tool == "t";
        assert_eq!(resolve_tool_name("mcp__c__u", &tools, servers, only_t), None);
        assert_eq!(
            resolve_tool_name("mcp__c__t", &tools, servers, only_t),
            Some(("c".into(), "t".into()))
        );
    }

    #[test]
    fn plain_names_pass_through() {
        assert_eq!(qualified_tool_name("docs", "echo"), "mcp__docs__echo");
        assert_eq!(qualified_tool_name("my-srv", "get_sum"), "mcp__my-srv__get_sum");
    }

    #[test]
    fn odd_characters_become_underscores() {
        assert_eq!(qualified_tool_name("docs", "files.read/all é"), "mcp__docs__files_read_all__");
    }

    #[test]
    fn long_names_are_hashed_to_exactly_64() {
        let tool = "a".repeat(80);
        let name = qualified_tool_name("server", &tool);
        assert_eq!(name.len(), MAX_TOOL_NAME_LENGTH);
        assert!(name.starts_with("mcp__server__aaaaaaaaaaa"));
        // SHA-1 of the raw qualified name, computed independently of this module.
        let raw = format!("mcp__server__{tool}");
        let digest = Sha1::digest(raw.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(&name[24..], hex);
        assert_eq!(qualified_tool_name("server", &"a".repeat(51)).len(), 64);
        assert_eq!(
            qualified_tool_name("server", &"a".repeat(51)),
            format!("mcp__server__{}", "a".repeat(51))
        );
    }

    #[test]
    fn hash_uses_raw_name_so_sanitised_twins_differ() {
        let a = qualified_tool_name("s", &format!("{}.x", "t".repeat(70)));
        let b = qualified_tool_name("s", &format!("{}/x", "t".repeat(70)));
        assert_ne!(a, b);
    }
}
