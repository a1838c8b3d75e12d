//! Runs many MCP servers (stdio child processes and streamable HTTP) on rmcp, and answers for
//! them: single-server requests bounded by timeouts, all-server lists aggregated and sorted by
//! server name, MCP tools under qualified names. Implements `mcp_backend::McpBackend`, the
//! tool router's interface to MCP.
//!
//! Only this crate talks to rmcp transports and processes.

mod backend;
mod cache;
mod catalog;
mod client;
mod config;
mod errors;
mod host;
mod input;
mod lifecycle;
mod listings;
mod manager;
pub mod oauth;
mod procs;
mod restart;
mod stdio;
mod telemetry;
#[cfg(test)]
mod tests;
mod token_store;
mod toolcache;
mod watch;

pub use config::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, ProtocolChoice, ServerConfig, Startup,
    TransportConfig, is_valid_server_name,
};
pub use host::{DefaultHost, HostCapabilities, HostHandler};
pub use manager::{ManagerOptions, McpConnectionManager, ServerStatus};
pub use toolcache::{CachedCatalog, ToolCache};
