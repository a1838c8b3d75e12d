//! Runs many MCP servers (stdio child processes and streamable HTTP) on rmcp, and answers for
//! them: single-server requests bounded by timeouts, all-server lists aggregated and sorted by
//! server name, MCP tools under qualified names.
//!
//! Only this crate talks to rmcp transports and processes.

mod client;
mod config;
mod error;
mod host;
mod manager;
mod qualify;
mod stdio;

pub use config::{
    ConfigError, ConfigFile, ConfigFormat, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT,
    RouterSettings, ServerConfig, TransportConfig, is_valid_server_name, load_config,
    load_config_file, parse_config, parse_config_file,
};
pub use error::McpError;
pub use host::{DefaultHost, HostCapabilities, HostHandler};
pub use manager::{
    Aggregate, ManagerOptions, McpConnectionManager, QualifiedTool, ServerListing, ServerStatus,
};
pub use qualify::{MAX_TOOL_NAME_LENGTH, looks_qualified, qualified_tool_name};
