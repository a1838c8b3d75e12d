//! Building a running router from a config file (or the bundled demo servers).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use mcp_connection_manager::{ManagerOptions, McpConnectionManager, ServerConfig, ToolCache};
use router_config::{ConfigFile, Strictness, load_config_file_with};
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
        demo_server("docs", &["--page-size", "2", "--demo-skills"])?,
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

/// Where the servers come from: `--config` (and `--strict`).
#[derive(clap::Args, Default)]
pub(crate) struct ConfigArg {
    /// Codex `config.toml` or `mcp.json`; the bundled demo servers when absent.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Refuse the whole file when a server entry cannot be used (by default that server is
    /// left out with a warning and the others run).
    #[arg(long)]
    pub(crate) strict: bool,
}

/// The config file's servers and settings, or the bundled demo with default settings. Server
/// entries that cannot be used are named on stderr (and left out) unless `--strict`.
pub(crate) fn config(arg: &ConfigArg) -> anyhow::Result<ConfigFile> {
    let Some(path) = arg.config.as_deref() else {
        return Ok(ConfigFile {
            servers: demo_servers()?,
            settings: RouterSettings::default(),
            manager: ManagerOptions::default(),
            tool_cache: true,
            apps_ui: false,
            unusable: Vec::new(),
        });
    };
    let strictness = if arg.strict { Strictness::Strict } else { Strictness::Lenient };
    let config = load_config_file_with(path, strictness)?;
    for unusable in &config.unusable {
        eprintln!(
            "mcp-router: warning: {}; server `{}` is left out, the others run (--strict refuses the file)",
            unusable.error, unusable.name
        );
    }
    Ok(config)
}

/// The manager options `config` asks for, with the tool cache's default place filled in.
fn manager_options(config: &ConfigFile) -> ManagerOptions {
    let mut options = config.manager.clone();
    for unusable in &config.unusable {
        options.unusable.insert(unusable.name.clone(), unusable.error.clone());
    }
    if config.tool_cache && options.tool_cache.is_none() {
        options.tool_cache = ToolCache::default_location();
    }
    options
}

/// The servers `start` would leave idle until used (reads the tool cache, starts nothing).
pub(crate) fn idle_servers(config: &ConfigFile) -> std::collections::BTreeSet<String> {
    mcp_connection_manager::idle_at_start(&config.servers, &manager_options(config))
}

pub(crate) fn start(mut config: ConfigFile, events: EventSender) -> anyhow::Result<Running> {
    config.manager = manager_options(&config);
    // `apps_ui`: the host renders MCP Apps and says so; server requests keep the defaults.
    let host: Arc<dyn mcp_connection_manager::HostHandler> = match config.apps_ui {
        true => Arc::new(mcp_connection_manager::AppsHost),
        false => Arc::new(mcp_connection_manager::DefaultHost),
    };
    let manager =
        McpConnectionManager::start_with_host(config.servers, events, config.manager, host);
    let manager = Arc::new(manager);
    let router = ToolRouter::with_mcp_settings(manager.clone(), &config.settings)?;
    Ok(Running { manager, router })
}
