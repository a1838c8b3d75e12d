//! A server's `sandbox` value (and `[mcp_router] sandbox`): a profile's name or a table.

use std::path::PathBuf;

use serde_json::Value;

use crate::errors::kind;

/// A `sandbox` value: a profile's name (`default`, `off`, `read-only`, `offline`, `strict`) or
/// a table of `write` (`"workspace"` or `"none"`), `network` (`true`, `false` or an array of
/// TCP ports), `allow_write` (more paths it may write, `~/` for the home directory), `deny`
/// (more paths it may not read) and `enabled`.
pub(crate) fn sandbox(value: &Value) -> Result<mcp_connection_manager::Sandbox, String> {
    use mcp_connection_manager::Sandbox;
    let names = Sandbox::NAMES.map(|n| format!("\"{n}\"")).join(", ");
    let table = match value {
        Value::String(name) => {
            return Sandbox::named(name)
                .ok_or_else(|| format!("expected one of {names} or a table, found \"{name}\""));
        }
        Value::Object(table) => table,
        other => return Err(format!("expected one of {names} or a table, found {}", kind(other))),
    };
    let mut sandbox = Sandbox::default();
    for (key, value) in table {
        match (key.as_str(), value) {
            ("enabled", Value::Bool(on)) => sandbox.enabled = *on,
            ("write", Value::String(w)) if w == "workspace" => sandbox.write = true,
            ("write", Value::String(w)) if w == "none" => sandbox.write = false,
            ("network", Value::Bool(on)) => sandbox.network = *on,
            ("network", Value::Array(items)) => {
                let port = |item: &Value| {
                    item.as_u64().and_then(|n| u16::try_from(n).ok()).filter(|n| *n > 0)
                };
                let ports: Option<Vec<u16>> = items.iter().map(port).collect();
                let ports = ports
                    .ok_or_else(|| "`network`: expected TCP ports from 1 to 65535".to_string())?;
                (sandbox.network, sandbox.ports) = (true, ports);
            }
            ("allow_write", Value::Array(items)) => sandbox.allow_write = paths(items)?,
            ("deny", Value::Array(items)) => sandbox.deny = paths(items)?,
            ("enabled", other) => {
                return Err(format!("`enabled`: expected true or false, found {}", kind(other)));
            }
            ("write", other) => {
                return Err(format!("`write`: expected \"workspace\" or \"none\", found {other}"));
            }
            ("network", other) => {
                return Err(format!(
                    "`network`: expected true, false or an array of ports, found {}",
                    kind(other)
                ));
            }
            (other, _) => {
                return Err(format!(
                    "unknown key `{other}` (enabled, write, network, allow_write, deny)"
                ));
            }
        }
    }
    Ok(sandbox)
}

/// `allow_write`'s paths, `~/` for the home directory.
fn paths(items: &[Value]) -> Result<Vec<PathBuf>, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let path = |item: &Value| match (item.as_str(), &home) {
        (Some(path), Some(home)) if path.starts_with("~/") => Some(home.join(&path[2..])),
        (Some(path), _) => Some(PathBuf::from(path)),
        (None, _) => None,
    };
    let paths: Option<Vec<PathBuf>> = items.iter().map(path).collect();
    paths.ok_or_else(|| "`allow_write`: expected an array of paths".to_string())
}
