//! Where the router keeps its state when a host names no folder: one rule, read by every crate
//! that keeps or guards something there.

use std::path::PathBuf;

fn var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The router's cache folder (tool catalogs, pins, the ledger, kept results, embeddings):
/// `$MCP_ROUTER_CACHE_DIR`, else `$XDG_CACHE_HOME/mcp-router`, else `~/.cache/mcp-router`;
/// `None` without any of them.
pub fn cache_dir() -> Option<PathBuf> {
    var("MCP_ROUTER_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("mcp-router")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("mcp-router")))
}

/// The router's data folder (installed packages, the search model), or `$override_var` when
/// set: `$XDG_DATA_HOME/mcp-router/<sub>`, else `~/.local/share/mcp-router/<sub>`.
pub fn data_dir(override_var: &str, sub: &str) -> Option<PathBuf> {
    if let Some(dir) = var(override_var) {
        return Some(dir);
    }
    let data = var("XDG_DATA_HOME").or_else(|| var("HOME").map(|h| h.join(".local/share")))?;
    Some(data.join("mcp-router").join(sub))
}
