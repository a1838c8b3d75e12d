//! Runs many MCP servers and answers for them: starts them concurrently, restarts the ones
//! that died (a pure decision, `restart`), bounds every request by timeouts, keeps complete
//! listings, aggregates all-server lists sorted by server name, and qualifies every server's
//! tools. Implements `mcp_backend::McpBackend`, the tool router's interface to MCP. One
//! server's connection is the `mcp-connection` crate's.
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod approval;
mod backend;
mod catalog;
mod declared;
mod identity;
mod idle;
mod integrity;
mod lifecycle;
mod listings;
mod manager;
mod options;
mod prompts;
mod reconfigure;
mod requests;
mod restart;
mod scope;
mod server_map;
mod skills;
mod start;
mod tasks;
#[cfg(test)]
mod tests;
mod toolcache;
mod trust;
mod view;
mod waiting;

pub use idle::{LazyOver, idle_at_start};
pub use integrity::package_digest;
pub use manager::{McpConnectionManager, ServerStatus};
pub use mcp_connection::oauth;
pub use mcp_connection::sandbox_exec;
pub use mcp_connection::{
    APPS_MIME_TYPE, AppsHost, Asking, DefaultHost, HostCapabilities, HostHandler, TrustAnswer,
};
pub use mcp_connection::{ProtocolChoice, ServerConfig, Startup, ToolChanges, TransportConfig};
pub use reconfigure::Reconfigured;
pub use scope::Scope;
pub use view::{ScopedInstances, ScopedView};
/// Default `startup_timeout_sec` (Codex's).
pub const DEFAULT_STARTUP_TIMEOUT: std::time::Duration = ServerConfig::DEFAULT_STARTUP_TIMEOUT;
/// Default `tool_timeout_sec` (Codex's), also used for resource requests.
pub const DEFAULT_TOOL_TIMEOUT: std::time::Duration = ServerConfig::DEFAULT_TOOL_TIMEOUT;
/// The logging levels, least severe first (`log_level`'s values).
pub const LOG_LEVELS: [&str; 8] = ServerConfig::LOG_LEVELS;

/// The router's state folder when a host names none: `$MCP_ROUTER_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/mcp-router`, else `~/.cache/mcp-router` (catalogs, pins, the ledger).
pub fn default_state_dir() -> Option<std::path::PathBuf> {
    toolcache::cache_base()
}

/// Whether `name` may name a server: what Codex accepts in a qualified tool name.
pub fn is_valid_server_name(name: &str) -> bool {
    ServerConfig::is_valid_name(name)
}

pub use options::{
    LifecycleOptions, ListOptions, ManagerOptions, RequestOptions, StartupOptions, TaskOptions,
    TrustOptions, WatchOptions,
};
pub use router_protocol::{ApprovalPolicy, PackageIntegrity, Sandbox};
pub use toolcache::{CachedCatalog, CatalogFailure, ToolCache};
pub use trust::pins::{Pin, ServerPins};
pub use trust::store::{PinKey, PinStore, PinsError, Review, UnusablePins};
