//! `mcp-router update`'s trial start: the new version started once, alone, sandboxed as it will
//! run and with nothing pinned, its tools listed and held against what the user approved of the
//! version it replaces (that version's pins). The differences are shown before consent. With
//! consent the new version (a new identity: its command or digest changed) takes the old one's
//! pins, and the tools the trial showed are pinned over them, so its first real start holds
//! nothing the user has not seen; when the trial start failed, that first start holds whatever
//! differs from the old version's pins.

use std::path::Path;

use anyhow::Context as _;
use mcp_connection_manager::{PinKey, PinStore, ServerConfig, TransportConfig};
use rmcp::model::Tool;

use crate::setup::ConfigArg;

/// What the trial start found.
pub(crate) struct Trial {
    /// The new version's tools, as it listed them (`None`: its trial start failed).
    tools: Option<Vec<Tool>>,
    /// Where the new version's pins go (its identity as it will run), when pins are kept.
    key: Option<(PinStore, PinKey)>,
    /// The current version's pins.
    old: Option<(PinStore, PinKey)>,
}

impl Trial {
    /// The new version started as `new` (the entry as written to `config`, its package still in
    /// `staging` instead of `installed` when it was installed) and compared with `old`'s pins;
    /// the comparison written to stdout.
    pub(crate) async fn run(
        config: &Path,
        name: &str,
        new: &toml::Table,
        staged: Option<(&Path, &Path)>,
    ) -> anyhow::Result<Self> {
        let arg = ConfigArg { config: Some(config.to_path_buf()), strict: false };
        let file = crate::setup::config(&arg)?;
        let here = std::env::current_dir().context("no current directory")?;
        let pins = PinStore::default_location();
        let keyed = |server: ServerConfig| {
            pins.as_ref().map(|pins| {
                let (run, pins) = shared_router::as_run_in(&file, server, &here, pins);
                let key = PinKey::of(&run);
                (pins, key)
            })
        };
        let old = file.servers.iter().find(|s| s.name == name).cloned();
        let old = old.and_then(keyed);
        let server = entry(name, new)?;
        let key = keyed(server.clone());
        let mut trial = server;
        if let Some((staging, installed)) = staged {
            relocate(&mut trial, installed, staging);
        }
        let tools = match start_alone(&file, trial).await? {
            Ok(tools) => Some(tools),
            Err(why) => {
                println!("  its trial start failed: {why}");
                println!(
                    "    its definitions are held against the current version's pins at its first start instead"
                );
                None
            }
        };
        let this = Self { tools, key, old };
        if let Some(tools) = &this.tools {
            this.compare(tools)?;
        }
        Ok(this)
    }

    /// The new version's tools against the old one's pins, for the user.
    fn compare(&self, tools: &[Tool]) -> anyhow::Result<()> {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        println!("  definitions after a trial start: {} tools ({})", names.len(), names.join(", "));
        let Some((pins, key)) = &self.old else {
            println!("    nothing of the current version is pinned here to compare with");
            return Ok(());
        };
        let review = pins.review(key, tools)?;
        if review.pinned.is_none() {
            println!(
                "    the current version was never started here: nothing pinned to compare with"
            );
            return Ok(());
        }
        if review.pending.is_empty() {
            println!("    the same as the current version's pinned definitions");
        }
        for change in &review.pending {
            let how = serde_json::to_value(change.change).unwrap_or_default();
            println!(
                "    {} {}: {}",
                change.kind.as_str(),
                change.tool,
                how.as_str().unwrap_or("?")
            );
            for diff in &change.diff {
                let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
                println!("      {}: {} → {}", diff.field, text(&diff.before), text(&diff.after));
            }
        }
        for (tool, flags) in &review.flagged {
            println!("    tool {tool} is flagged: {}", flags.join("; "));
        }
        Ok(())
    }

    /// The user consented: the new version takes the old one's pins (when it has none of its
    /// own), and the tools the trial showed are pinned over them.
    pub(crate) fn approve(&self) -> anyhow::Result<()> {
        let Some((pins, key)) = &self.key else { return Ok(()) };
        if let Some((old_pins, old_key)) = &self.old
            && let Some(carried) = old_pins.load(old_key)?
            && pins.load(key)?.is_none()
        {
            pins.update(key, |now| *now = carried)?;
        }
        if let Some(tools) = &self.tools {
            pins.approve(key, tools, &[])?;
        }
        Ok(())
    }
}

/// The server the entry `name` = `table` configures.
fn entry(name: &str, table: &toml::Table) -> anyhow::Result<ServerConfig> {
    let mut servers = toml::Table::new();
    servers.insert(name.to_string(), toml::Value::Table(table.clone()));
    let mut root = toml::Table::new();
    root.insert("mcp_servers".into(), toml::Value::Table(servers));
    let text = toml::to_string(&root)?;
    let format = router_config::ConfigFormat::CodexToml;
    let file = router_config::parse_config_file(&text, format, Path::new("update"))?;
    file.servers.into_iter().next().context("the new entry is not a server")
}

/// `server` run from `staging` where it names `installed` (its package not yet in place).
fn relocate(server: &mut ServerConfig, installed: &Path, staging: &Path) {
    let (from, to) = (installed.to_string_lossy(), staging.to_string_lossy());
    let moved = |text: &mut String| *text = text.replace(from.as_ref(), &to);
    if let TransportConfig::Stdio { command, args, env, .. } = &mut server.transport {
        moved(command);
        args.iter_mut().for_each(moved);
        env.values_mut().for_each(moved);
    }
    if let Some(integrity) = &mut server.integrity {
        integrity.path = staging.to_path_buf();
    }
}

/// `server` started alone with `file`'s settings, nothing pinned or cached; its tools, or why
/// it did not start.
async fn start_alone(
    file: &router_config::ConfigFile,
    mut server: ServerConfig,
) -> anyhow::Result<Result<Vec<Tool>, String>> {
    use mcp_host::McpBackend as _;
    let name = server.name.clone();
    server.startup = mcp_connection_manager::Startup::Eager;
    let mut config = file.clone();
    config.servers = vec![server];
    config.sharing.clear();
    config.pin_tools = false;
    config.tool_cache = false;
    config.manager.trust.pins = None;
    config.manager.startup.tool_cache = None;
    config.manager.startup.lazy_when_cataloged.clear();
    config.manager.startup.lazy_over = None;
    let running = crate::setup::start(config, router_protocol::EventSender::discard())?;
    running.manager.wait_until_started().await;
    let status = running.manager.status(&name);
    let tools: Vec<Tool> = running.manager.list_tools().await.into_iter().map(|q| q.tool).collect();
    running.shutdown().await;
    Ok(match status {
        Some(mcp_connection_manager::ServerStatus::Failed(why)) => Err(why),
        _ => Ok(tools),
    })
}
