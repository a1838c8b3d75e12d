//! The servers the shared router does not share across sessions: an entry with
//! `shared = false` runs once per session, one with `shared = "cwd"` once per working directory
//! of the sessions' agents (a session from `connect` has its agent's directory: the bridge's
//! own). Both run in the one manager, as instances of their scope (`McpConnectionManager::view`),
//! in that directory unless their entry names a `cwd`, and end with the last session that
//! uses them.

use std::path::Path;

use mcp_connection_manager::{Scope, ServerConfig};
use router_config::{ConfigFile, Sharing};

/// Splits `config`: it keeps the entries every session shares, and the others are returned,
/// each with its scope.
pub(crate) fn split_off(config: &mut ConfigFile) -> Vec<(ServerConfig, Scope)> {
    let sharing = &config.sharing;
    let scoped = config
        .servers
        .iter()
        .filter_map(|server| {
            let scope = match sharing.get(&server.name)? {
                Sharing::Session => Scope::Session,
                Sharing::WorkingDirectory => Scope::Directory,
                _ => return None,
            };
            Some((server.clone(), scope))
        })
        .collect();
    config.servers.retain(|server| !is_scoped(sharing.get(&server.name)));
    scoped
}

/// Whether an entry of `sharing` runs per session or per directory.
fn is_scoped(sharing: Option<&Sharing>) -> bool {
    matches!(sharing, Some(Sharing::Session | Sharing::WorkingDirectory))
}

/// `server` of `config` as the shared router runs it for an agent working in `cwd`, with the
/// pins it keeps: an entry not shared by every session runs there (unless it names its own
/// `cwd`), which makes it an identity of its own in the one pin store; every other entry runs
/// as configured.
pub fn as_run_in(
    config: &ConfigFile,
    server: ServerConfig,
    cwd: &Path,
    pins: &mcp_connection_manager::PinStore,
) -> (ServerConfig, mcp_connection_manager::PinStore) {
    if !is_scoped(config.sharing.get(&server.name)) {
        return (server, pins.clone());
    }
    let mut server = server;
    if let mcp_connection_manager::TransportConfig::Stdio { cwd: entry_cwd, .. } =
        &mut server.transport
        && entry_cwd.is_none()
    {
        *entry_cwd = Some(cwd.to_path_buf());
    }
    (server, pins.clone())
}
