//! `mcp-router trust`: the pinned definitions and the changes held, from the pins (which keep the
//! held prompts, resource templates and skills) and the tool catalog (each server's last tool
//! list), without starting a server; `approve` pins a held definition as it is now, `forget`
//! drops pins (the next sight pins again).

use std::io::Write as _;

use anyhow::Context as _;
use mcp_connection_manager::{PinKey, PinStore, Review, ServerConfig, ToolCache, UnusablePins};
use router_protocol::{DefinitionKind, McpToolDefinitionChangedEvent};

use crate::setup::{ConfigArg, config};
use shared_router::as_run_in;

/// What `trust` does.
#[derive(clap::Subcommand)]
pub(crate) enum TrustCommand {
    /// Pin the held definitions of SERVER as they are now (the NAMEd tools, prompts, resource
    /// templates or skills only, when named).
    Approve {
        #[command(flatten)]
        config: ConfigArg,
        /// The server.
        server: String,
        /// What to approve (every held definition when none is named).
        tools: Vec<String>,
    },
    /// Forget SERVER's pins (of the NAMEd definitions only, when named): the next sight pins
    /// them again.
    Forget {
        #[command(flatten)]
        config: ConfigArg,
        /// The server.
        server: String,
        /// What to forget (every pin when none is named).
        tools: Vec<String>,
    },
}

fn stores() -> anyhow::Result<(PinStore, ToolCache)> {
    let pins = PinStore::default_location()
        .context("no cache directory: set HOME or MCP_ROUTER_CACHE_DIR")?;
    let catalogs = ToolCache::default_location().context("no cache directory")?;
    Ok((pins, catalogs))
}

/// Each configured server's pins against its last tool list (an error: its pins file cannot
/// be used).
type Reviewed = (ServerConfig, Result<Option<Review>, UnusablePins>);

/// Each configured server's pins against its last tool list.
fn reviews(arg: &ConfigArg) -> anyhow::Result<Vec<Reviewed>> {
    let (pins, catalogs) = stores()?;
    let config = config(arg)?;
    let here = std::env::current_dir().context("no current directory")?;
    Ok(config
        .servers
        .iter()
        .map(|server| {
            let (run, pins) = as_run_in(&config, server.clone(), &here, &pins);
            let key = PinKey::of(&run);
            let review = match pins.load(&key) {
                Err(unusable) => Err(unusable),
                Ok(_) => catalogs.load(&run).map(|c| pins.review(&key, &c.tools)).transpose(),
            };
            (server.clone(), review)
        })
        .collect())
}

/// `server` of the config as the shared router runs it for an agent in this directory (see
/// `as_run_in`), with the pins it keeps.
fn scoped(
    arg: &ConfigArg,
    server: &str,
    pins: &PinStore,
) -> anyhow::Result<(ServerConfig, PinStore)> {
    let config = config(arg)?;
    let configured = find(&config, server)?;
    let here = std::env::current_dir().context("no current directory")?;
    Ok(as_run_in(&config, configured, &here, pins))
}

/// `mcp-router trust --refresh`: every server started and asked for its tools, prompts,
/// resource templates and skills, as the model would see them — so their pins judge what each
/// offers now (and the tool catalogs hold it) — then stopped.
pub(crate) async fn refresh(arg: &ConfigArg) -> anyhow::Result<()> {
    use mcp_host::McpBackend as _;
    use mcp_host::backend::{ListKind, Reuse};
    let mut config = config(arg)?;
    config.manager.startup.lazy_when_cataloged.clear();
    config.manager.startup.lazy_over = None;
    for server in &mut config.servers {
        server.startup = mcp_connection_manager::Startup::Eager;
    }
    let running = crate::setup::start(config, router_protocol::EventSender::discard())?;
    running.manager.wait_until_started().await;
    let _ = running.manager.list_tools().await;
    let _ = running.manager.list_all(ListKind::Templates, Reuse::Never).await;
    let _ = running.router.prompts().await;
    let _ = running.router.skills().await;
    running.shutdown().await;
    Ok(())
}

/// `mcp-router trust [--refresh] [approve | forget]`: exit code 0 when done.
pub(crate) async fn main(
    arg: &ConfigArg,
    json: bool,
    refresh: bool,
    command: Option<TrustCommand>,
) -> anyhow::Result<i32> {
    if refresh {
        self::refresh(arg).await?;
    }
    match command {
        None => list(arg, json)?,
        Some(command) => run(command).await?,
    }
    Ok(0)
}

/// `mcp-router trust`: a paragraph per server, or the JSON of it.
fn list(arg: &ConfigArg, json: bool) -> anyhow::Result<()> {
    let reviews = reviews(arg)?;
    let approve = crate::setup::approve_command(arg);
    let mut out = std::io::stdout().lock();
    if json {
        let all: Vec<serde_json::Value> = reviews.iter().map(|(s, r)| review_json(s, r)).collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
        return Ok(());
    }
    for (server, review) in &reviews {
        let review = match review {
            Ok(review) => review.as_ref(),
            Err(unusable) => {
                writeln!(out, "{}", unusable_line(&server.name, unusable, arg))?;
                continue;
            }
        };
        writeln!(out, "{}", headline(&server.name, review, &approve))?;
        let Some(review) = review else { continue };
        for change in &review.pending {
            write_change(&mut out, change)?;
        }
        for (tool, flags) in &review.flagged {
            writeln!(out, "  flagged {tool}: {}", flags.join("; "))?;
        }
    }
    Ok(())
}

/// A server whose pins file cannot be used: everything of it is held.
fn unusable_line(server: &str, unusable: &UnusablePins, arg: &ConfigArg) -> String {
    let forget = crate::setup::approve_command(arg).replacen("approve", "forget", 1);
    format!(
        "{server}: everything held: {unusable}; fix the file, or remove it with `{forget} {server}` (the next start pins what the server offers then)"
    )
}

fn headline(server: &str, review: Option<&Review>, approve: &str) -> String {
    match review {
        None => format!("{server}: no tool list seen yet (its tools are pinned when first listed)"),
        Some(Review { pinned: None, .. }) => {
            format!("{server}: not pinned yet (its tools are pinned when first listed)")
        }
        Some(Review { pinned: Some(n), pending, others, .. }) if pending.is_empty() => {
            format!("{server}: {n} tools{} pinned, nothing held", and_others(others))
        }
        Some(Review { pinned: Some(n), pending, others, .. }) => format!(
            "{server}: {n} tools{} pinned, {} held (approve: {approve} {server})",
            and_others(others),
            pending.len()
        ),
    }
}

/// `, 2 prompts, 1 resource template`: the other kinds pinned.
fn and_others(others: &[(DefinitionKind, usize)]) -> String {
    others
        .iter()
        .map(|(kind, n)| format!(", {n} {}{}", kind.as_str(), if *n == 1 { "" } else { "s" }))
        .collect()
}

fn write_change(
    out: &mut impl std::io::Write,
    change: &McpToolDefinitionChangedEvent,
) -> std::io::Result<()> {
    let how = serde_json::to_value(change.change).unwrap_or_default();
    let kind =
        if change.kind.is_tool() { String::new() } else { format!("{} ", change.kind.as_str()) };
    writeln!(
        out,
        "  held {kind}{} ({}), sha256 {}",
        change.tool,
        how.as_str().unwrap_or("?"),
        change.sha256
    )?;
    for diff in &change.diff {
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".to_string());
        writeln!(out, "    {}: {} → {}", diff.field, text(&diff.before), text(&diff.after))?;
    }
    Ok(())
}

fn review_json(
    server: &ServerConfig,
    review: &Result<Option<Review>, UnusablePins>,
) -> serde_json::Value {
    let unusable = review.as_ref().err().map(ToString::to_string);
    let review = review.as_ref().ok().and_then(Option::as_ref);
    serde_json::json!({
        "server": server.name,
        "tool_changes": server.tool_changes.as_str(),
        "seen": review.is_some(),
        "pinned": review.and_then(|r| r.pinned),
        "pinned_other": review.map(|r| {
            r.others.iter().map(|(kind, n)| (kind_key(*kind), serde_json::json!(n))).collect::<serde_json::Map<_, _>>()
        }).unwrap_or_default(),
        "held": review.map(|r| r.pending.clone()).unwrap_or_default(),
        "flagged": review.map(|r| {
            r.flagged.iter().map(|(tool, flags)| serde_json::json!({"tool": tool, "flags": flags})).collect::<Vec<_>>()
        }).unwrap_or_default(),
        "unusable": unusable,
    })
}

/// A kind as the JSON names it (`prompt`, `resource_template`, `skill`).
fn kind_key(kind: DefinitionKind) -> String {
    serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// `mcp-router trust approve` / `forget`.
async fn run(command: TrustCommand) -> anyhow::Result<()> {
    let (pins, catalogs) = stores()?;
    match command {
        TrustCommand::Approve { config: arg, server, tools } => {
            let (configured, pins) = scoped(&arg, &server, &pins)?;
            let key = PinKey::of(&configured);
            // Unusable pins are never approved over.
            pins.held(&key).map_err(|e| anyhow::anyhow!(unusable_line(&server, &e, &arg)))?;
            let catalog = catalogs.load(&configured);
            let listed = catalog.as_ref().map(|c| c.tools.as_slice()).unwrap_or_default();
            let mut approved = pins.approve(&key, listed, &tools)?;
            if approved.is_empty() {
                // The catalog may be older than what the server offers now (or there is none:
                // `tool_cache = false`): the server is asked, as the router runs it here.
                approved = approve_live(&arg, configured, pins, &tools).await?;
            }
            match approved.as_slice() {
                [] => println!("{server}: nothing to approve"),
                names => println!("{server}: approved {}", names.join(", ")),
            }
        }
        TrustCommand::Forget { config: arg, server, tools } => {
            let (configured, pins) = scoped(&arg, &server, &pins)?;
            let forgotten = pins.forget(&PinKey::of(&configured), &tools)?;
            println!("{server}: forgot {forgotten} pins");
        }
    }
    Ok(())
}

/// `server` (as `scoped` made it) started alone with its pins, its tools listed now, and
/// `tools` of them (every held one when empty) approved as the server offers them: what the
/// running router would show. Fails when the server names no such tool.
async fn approve_live(
    arg: &ConfigArg,
    mut server: ServerConfig,
    pins: PinStore,
    tools: &[String],
) -> anyhow::Result<Vec<String>> {
    use mcp_host::McpBackend as _;
    let mut config = config(arg)?;
    let name = server.name.clone();
    // Started eagerly and alone: its pins judge what it offers now.
    server.startup = mcp_connection_manager::Startup::Eager;
    config.servers = vec![server];
    config.sharing.clear();
    config.manager.startup.lazy_when_cataloged.clear();
    config.manager.startup.lazy_over = None;
    config.manager.trust.pins = Some(pins);
    let running = crate::setup::start(config, router_protocol::EventSender::discard())?;
    running.manager.wait_until_started().await;
    let listed = running.manager.list_tools().await;
    let held = running.manager.held_definitions();
    let known = |t: &String| {
        listed.iter().any(|q| q.server == name && q.tool.name == t.as_str())
            || held.iter().any(|(s, _, n)| *s == name && n == t)
    };
    let unknown: Vec<&String> = tools.iter().filter(|t| !known(t)).collect();
    let approved = if unknown.is_empty() {
        running.manager.approve_held(&name, tools).map_err(anyhow::Error::from)
    } else {
        Err(anyhow::anyhow!(
            "`{name}` offers no tool {unknown:?} now, nor a held prompt, resource template or skill of that name"
        ))
    };
    running.shutdown().await;
    approved
}

fn find(config: &router_config::ConfigFile, server: &str) -> anyhow::Result<ServerConfig> {
    let servers = &config.servers;
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    let found = servers.iter().find(|s| s.name == server).cloned();
    found.with_context(|| {
        format!("no server `{server}` in the config (servers: {})", names.join(", "))
    })
}
