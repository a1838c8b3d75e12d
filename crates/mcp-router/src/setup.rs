//! Building a running router from a config file (or the bundled demo servers).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use mcp_connection_manager::{ManagerOptions, McpConnectionManager, ServerConfig, ToolCache};
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
    Ok(vec![
        demo_server("docs", &["--page-size", "2"])?,
        demo_server("notes", &["--page-size", "100"])?,
    ])
}

/// The demo server named `name`, run by this executable with `args` (`serve-demo` options).
pub(crate) fn demo_server(name: &str, args: &[&str]) -> anyhow::Result<ServerConfig> {
    let exe = std::env::current_exe().context("cannot find the mcp-router executable")?;
    let mut all = vec!["serve-demo".to_string(), "--name".to_string(), name.to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    Ok(ServerConfig::stdio(name, exe.to_string_lossy().to_string(), all))
}

/// The config file's servers and settings, or the bundled demo with default settings.
pub(crate) fn config(path: Option<&Path>) -> anyhow::Result<ConfigFile> {
    match path {
        Some(path) => Ok(load_config_file(path)?),
        None => Ok(ConfigFile {
            servers: demo_servers()?,
            settings: RouterSettings::default(),
            manager: ManagerOptions::default(),
            tool_cache: true,
        }),
    }
}

pub(crate) fn start(mut config: ConfigFile, events: EventSender) -> anyhow::Result<Running> {
    if config.tool_cache && config.manager.tool_cache.is_none() {
        config.manager.tool_cache = ToolCache::default_location();
    }
    let manager = Arc::new(McpConnectionManager::start(config.servers, events, config.manager));
    let router = ToolRouter::with_mcp_settings(manager.clone(), &config.settings)?;
    Ok(Running { manager, router })
}
