//! Building a running router from a config file (or the bundled demo servers).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use mcp_connection_manager::{ManagerOptions, McpConnectionManager, ServerConfig};
use router_config::{ConfigFile, load_config_file};
use router_protocol::EventSender;
use tool_router::{RouterSettings, ToolRouter};

/// A manager and the router over it.
pub(crate) struct Running {
    pub(crate) manager: Arc<McpConnectionManager>,
    pub(crate) router: ToolRouter,
}

/// The bundled demo: two demo servers, `docs` (pages of 2) and `notes`, run as child processes
/// of this very executable (`mcp-router serve-demo`).
pub(crate) fn demo_servers() -> anyhow::Result<Vec<ServerConfig>> {
    let exe = std::env::current_exe().context("cannot find the mcp-router executable")?;
    let exe = exe.to_string_lossy().to_string();
    let server = |name: &str, page_size: &str| {
        let args =
            ["serve-demo", "--name", name, "--page-size", page_size].map(String::from).to_vec();
        ServerConfig::stdio(name, exe.clone(), args)
    };
    Ok(vec![server("docs", "2"), server("notes", "100")])
}

/// The config file's servers and settings, or the bundled demo with default settings.
pub(crate) fn config(path: Option<&Path>) -> anyhow::Result<ConfigFile> {
    match path {
        Some(path) => Ok(load_config_file(path)?),
        None => Ok(ConfigFile {
            servers: demo_servers()?,
            settings: RouterSettings::default(),
            manager: ManagerOptions::default(),
        }),
    }
}

pub(crate) fn start(config: ConfigFile, events: EventSender) -> anyhow::Result<Running> {
    let manager = Arc::new(McpConnectionManager::start(config.servers, events, config.manager));
    let router = ToolRouter::with_mcp_settings(manager.clone(), &config.settings)?;
    Ok(Running { manager, router })
}
