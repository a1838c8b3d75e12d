//! Qualified MCP tool names, `mcp__{server}__{tool}`, with Codex's sanitising and 64-character
//! rule: characters outside `[A-Za-z0-9_-]` become `_`; a longer name becomes its first 24
//! sanitised characters followed by the 40-hex SHA-1 of the raw qualified name.

use sha1::{Digest, Sha1};

const DELIMITER: &str = "__";
const PREFIX: &str = "mcp";
/// The longest name a model API accepts for a tool.
pub const MAX_TOOL_NAME_LENGTH: usize = 64;

/// The model-visible name for `tool` on `server`.
pub fn qualified_tool_name(server: &str, tool: &str) -> String {
    let raw = format!("{PREFIX}{DELIMITER}{server}{DELIMITER}{tool}");
    let sanitized: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    if sanitized.len() <= MAX_TOOL_NAME_LENGTH {
        return sanitized;
    }
    let digest = Sha1::digest(raw.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    // `sanitized` is ASCII, so any byte index is a character boundary.
    format!("{}{hex}", &sanitized[..MAX_TOOL_NAME_LENGTH - hex.len()])
}

/// Whether `name` has the shape of a qualified MCP tool name (it may still be unknown).
pub fn looks_qualified(name: &str) -> bool {
    name.starts_with("mcp__")
}

#[cfg(test)]
mod tests {
    use super::*;

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
