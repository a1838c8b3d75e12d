//! A config that could not be used, and the format it was read as.

use std::path::Path;

/// A configuration file that could not be used. The message names the file, the server and the
/// key at fault.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    file: String,
    message: String,
}

impl ConfigError {
    pub(crate) fn new(file: &Path, message: impl Into<String>) -> Self {
        Self { file: file.display().to_string(), message: message.into() }
    }
}

/// Which file format to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// Codex `config.toml`: `[mcp_servers.NAME]`.
    CodexToml,
    /// Claude Desktop / Cursor `mcp.json`: `{"mcpServers": {…}}`.
    McpJson,
}

impl ConfigFormat {
    /// `.json` files are `mcp.json`; everything else is Codex TOML.
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Self::McpJson,
            _ => Self::CodexToml,
        }
    }
}

/// A JSON value's kind, as the errors name it (`a string`, `a table`, …).
pub(crate) fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "a table",
    }
}
