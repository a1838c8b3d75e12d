//! Building a running router from a config file (or the bundled demo servers).

use std::path::PathBuf;

use anyhow::Context as _;
use mcp_connection_manager::{ServerConfig, ToolChanges};
use router_config::{ConfigFile, Strictness, load_config_file_with};
use router_protocol::EventSender;

/// A running router, as the front door gives it to every host.
pub(crate) type Running = mcp_host::Running;

/// The bundled demo: two demo servers, `docs` (pages of 2) and `notes`, run as child processes
/// of this very executable (`mcp-router serve-demo`).
pub(crate) fn demo_servers() -> anyhow::Result<Vec<ServerConfig>> {
    Ok(vec![
        demo_server("docs", &["--page-size", "2", "--demo-skills"])?,
        // The demo adds a tool to `notes` while it runs (live tool lists): its changes are
        // accepted and announced rather than held for approval.
        ServerConfig {
            tool_changes: ToolChanges::Accept,
            ..demo_server("notes", &["--page-size", "100"])?
        },
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
#[derive(clap::Args, Default, Clone)]
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
        return Ok(with_helper(ConfigFile::from_servers(demo_servers()?)));
    };
    let strictness = if arg.strict { Strictness::Strict } else { Strictness::Lenient };
    let mut config = load_config_file_with(path, strictness)?;
    // A held definition's message names the command that approves it, with this config.
    config.manager.trust.approve_command = Some(approve_command(arg));
    let config = with_helper(config);
    for unusable in &config.unusable {
        eprintln!(
            "mcp-router: warning: {}; server `{}` is left out, the others run (--strict refuses the file)",
            unusable.error, unusable.name
        );
    }
    Ok(config)
}

/// `config` with this binary as the sandbox's helper (`__sandbox-exec`): a sandboxed server is
/// then started by `posix_spawn`, whatever the router's memory, instead of by `fork`.
fn with_helper(mut config: ConfigFile) -> ConfigFile {
    if let Ok(exe) = std::env::current_exe() {
        config.manager.sandbox.helper = Some(exe);
    }
    config
}

/// `mcp-router trust approve` with the `--config` (absolute) that `arg` names: the command a
/// held definition's message prints, which works as printed from any directory.
pub(crate) fn approve_command(arg: &ConfigArg) -> String {
    let Some(path) = arg.config.as_deref() else {
        return "mcp-router trust approve".to_string();
    };
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    format!("mcp-router trust approve --config {}", shell_word(&path.to_string_lossy()))
}

pub(crate) use shared_router::shell_word;

/// The servers `start` would leave idle until used (reads the tool cache, starts nothing).
pub(crate) fn idle_servers(config: &ConfigFile) -> std::collections::BTreeSet<String> {
    mcp_host::Assembly::new(config.clone()).idle_servers()
}

/// The router over `config`'s servers, emitting to `events`: the front door's assembly, as a
/// host starts it.
pub(crate) fn start(config: ConfigFile, events: EventSender) -> anyhow::Result<Running> {
    Ok(mcp_host::Assembly::new(config).events(events).start()?)
}

/// [`start`] with `host` answering the servers' and the approvals' questions.
pub(crate) fn start_with_host(
    config: ConfigFile,
    events: EventSender,
    host: std::sync::Arc<dyn mcp_connection_manager::HostHandler>,
) -> anyhow::Result<Running> {
    Ok(mcp_host::Assembly::new(config).events(events).host_handler(host).start()?)
}
