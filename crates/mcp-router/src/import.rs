//! `mcp-router import [AGENT… | --all] --config FILE [--dry-run]`: the MCP servers of the agents
//! already configured on this machine — Claude Desktop, Claude Code (user scope and its
//! projects), Cursor, VS Code, Gemini CLI, Codex, and the project files of the directory it runs
//! in (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`, `.gemini/settings.json`) — taken into
//! the router's config.
//! The same server met in several files is taken once; a name taken by another server gets the
//! agent's name after it; what cannot be used (an SSE server, a disabled one, a value that needs
//! the agent's own variables, the router's own `connect` entry) is named with why. The config
//! file gets the new tables appended, every byte before them kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::Value;

use crate::wire::{Agent, ENTRY};

/// `mcp-router import`'s arguments.
#[derive(clap::Args)]
pub(crate) struct ImportArgs {
    /// The agents to read: claude-desktop, claude-code, cursor, vscode, gemini, codex.
    #[arg(value_enum)]
    agents: Vec<Agent>,
    /// Every agent whose config is on this machine.
    #[arg(long)]
    all: bool,
    /// The router's config to add them to (made when missing).
    #[arg(long)]
    config: PathBuf,
    /// Say what would be taken, change nothing.
    #[arg(long)]
    dry_run: bool,
}

/// One server found in an agent's file.
struct Found {
    name: String,
    /// Where it was found: `claude-desktop`, `claude-code (project /p)`, …
    from: String,
    /// As the router's config has it (`command`/`args`/`env`/`cwd` or `url`/`http_headers`),
    /// or why it cannot be used.
    entry: Result<toml::Table, String>,
}

/// `mcp-router import`: a line per server taken, merged or left out; exit 1 when a file could
/// not be read.
pub(crate) fn run(args: &ImportArgs) -> anyhow::Result<i32> {
    anyhow::ensure!(args.all || !args.agents.is_empty(), "name an agent, or --all");
    let (home, config_home) = crate::wire::homes()?;
    let agents = if args.all { Agent::ALL.to_vec() } else { args.agents.clone() };
    let mut found = Vec::new();
    let mut failed = false;
    for agent in agents {
        let path = agent.path(&home, &config_home);
        let mut files = vec![(path, agent.name().to_string())];
        // The project's own file, in the directory import runs in.
        let here = std::env::current_dir().context("no current directory")?;
        let project = match agent {
            Agent::ClaudeCode => Some(".mcp.json"),
            Agent::Cursor => Some(".cursor/mcp.json"),
            Agent::Vscode => Some(".vscode/mcp.json"),
            Agent::Gemini => Some(".gemini/settings.json"),
            _ => None,
        };
        if let Some(project) = project.map(|p| here.join(p)).filter(|p| *p != files[0].0) {
            files.push((project, format!("{} (project {})", agent.name(), here.display())));
        }
        let files_len = files.len();
        for (path, from) in files {
            match read_agent(agent, &path, &from) {
                Ok(servers) => found.extend(servers),
                Err(e) if (args.all || files_len > 1) && is_missing(&e) => {}
                Err(e) => {
                    failed = true;
                    eprintln!("mcp-router: {from}: {}: {e:#}", path.display());
                }
            }
        }
    }
    let (existing, current) = crate::config_text::read(&args.config)?;
    let (taken, lines) = merge(&current, found);
    for line in &lines {
        println!("{line}");
    }
    if taken.is_empty() {
        println!("nothing to add to {}", args.config.display());
        return Ok(i32::from(failed));
    }
    if args.dry_run {
        println!("(dry run: {} not changed)", args.config.display());
        return Ok(i32::from(failed));
    }
    write(&args.config, &existing, taken)?;
    Ok(i32::from(failed))
}

fn is_missing(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// The servers of `agent`'s file at `path`.
fn read_agent(agent: Agent, path: &Path, from: &str) -> anyhow::Result<Vec<Found>> {
    let text = std::fs::read_to_string(path)?;
    if agent == Agent::Codex {
        let table: toml::Table = toml::from_str(&text).context("not TOML")?;
        let servers = table.get("mcp_servers").and_then(toml::Value::as_table).cloned();
        let servers = servers.unwrap_or_default().into_iter();
        return Ok(servers
            .map(|(name, entry)| {
                let entry = match entry {
                    toml::Value::Table(entry) => Ok(entry),
                    _ => Err("not a table".to_string()),
                };
                Found { name, from: from.to_string(), entry }
            })
            .collect());
    }
    let value: Value = serde_json::from_str(&crate::wire_json::plain(&text))
        .map_err(|e| anyhow::anyhow!("not JSON: {e}"))?;
    let key = if agent == Agent::Vscode { "servers" } else { "mcpServers" };
    let mut out = servers_of(&value[key], from);
    if agent == Agent::ClaudeCode && from == agent.name() {
        for (project, settings) in value["projects"].as_object().into_iter().flatten() {
            let from = format!("claude-code (project {project})");
            out.extend(servers_of(&settings["mcpServers"], &from));
        }
    }
    Ok(out)
}

fn servers_of(servers: &Value, from: &str) -> Vec<Found> {
    let servers = servers.as_object().into_iter().flatten();
    let entries = servers.map(|(name, entry)| Found {
        name: name.clone(),
        from: from.to_string(),
        entry: from_json(entry),
    });
    entries.collect()
}

/// A JSON server entry (Claude's, Cursor's, VS Code's, Gemini's shape) as the router's.
fn from_json(entry: &Value) -> Result<toml::Table, String> {
    if entry["disabled"] == true || entry["enabled"] == false {
        return Err("disabled there".to_string());
    }
    if entry.to_string().contains("${") {
        return Err("a value uses the agent's own variables (${…}), which the router cannot fill"
            .to_string());
    }
    let strings = |v: &Value| -> Result<Vec<toml::Value>, String> {
        let items = v.as_array().map(Vec::as_slice).unwrap_or_default();
        items
            .iter()
            .map(|i| i.as_str().map(|s| toml::Value::String(s.to_string())))
            .collect::<Option<_>>()
            .ok_or_else(|| "an argument that is not a string".to_string())
    };
    let map = |v: &Value| -> Result<toml::Table, String> {
        let items = v.as_object().into_iter().flatten();
        items
            .map(|(k, v)| v.as_str().map(|s| (k.clone(), toml::Value::String(s.to_string()))))
            .collect::<Option<_>>()
            .ok_or_else(|| "a value that is not a string".to_string())
    };
    let mut out = toml::Table::new();
    if let Some(command) = entry["command"].as_str() {
        out.insert("command".into(), toml::Value::String(command.to_string()));
        let args = strings(&entry["args"])?;
        if !args.is_empty() {
            out.insert("args".into(), toml::Value::Array(args));
        }
        let env = map(&entry["env"])?;
        if !env.is_empty() {
            out.insert("env".into(), toml::Value::Table(env));
        }
        if let Some(cwd) = entry["cwd"].as_str() {
            out.insert("cwd".into(), toml::Value::String(cwd.to_string()));
        }
        return Ok(out);
    }
    let url = entry["url"].as_str().or(entry["httpUrl"].as_str()).or(entry["serverUrl"].as_str());
    let Some(url) = url else { return Err("neither a command nor a URL".to_string()) };
    if entry["type"] == "sse" || (entry["httpUrl"].is_null() && url.ends_with("/sse")) {
        return Err("an SSE server (the router speaks streamable HTTP)".to_string());
    }
    out.insert("url".into(), toml::Value::String(url.to_string()));
    let headers = map(&entry["headers"])?;
    if !headers.is_empty() {
        out.insert("http_headers".into(), toml::Value::Table(headers));
    }
    Ok(out)
}

/// What identifies a server whatever it is named: its command and arguments, or its URL.
fn identity(entry: &toml::Table) -> String {
    let part = |k: &str| entry.get(k).map(ToString::to_string).unwrap_or_default();
    format!("{}|{}|{}|{}", part("command"), part("args"), part("cwd"), part("url"))
}

/// The servers to add (name → entry) and a line for every server found.
fn merge(current: &toml::Table, found: Vec<Found>) -> (BTreeMap<String, toml::Table>, Vec<String>) {
    let mut known: BTreeMap<String, String> = BTreeMap::new(); // identity → name
    let mut names: BTreeMap<String, String> = BTreeMap::new(); // name → identity
    let servers = current.get("mcp_servers").and_then(toml::Value::as_table);
    for (name, entry) in servers.into_iter().flatten() {
        if let Some(entry) = entry.as_table() {
            known.insert(identity(entry), name.clone());
            names.insert(name.clone(), identity(entry));
        }
    }
    let mut taken = BTreeMap::new();
    let mut lines = Vec::new();
    for Found { name, from, entry } in found {
        let is_router = |e: &toml::Table| {
            let args = e.get("args").map(ToString::to_string).unwrap_or_default();
            name == ENTRY || args.starts_with("[\"connect\"")
        };
        let entry = match entry {
            Ok(entry) if is_router(&entry) => {
                lines.push(format!("{from}: {name}: left out (the router's own connect entry)"));
                continue;
            }
            Ok(entry) => entry,
            Err(why) => {
                lines.push(format!("{from}: {name}: left out ({why})"));
                continue;
            }
        };
        let id = identity(&entry);
        if let Some(same) = known.get(&id) {
            lines.push(format!("{from}: {name}: already there as `{same}`"));
            continue;
        }
        let mut target = name.clone();
        if names.contains_key(&target) {
            let agent = from.split(' ').next().unwrap_or(&from);
            target = format!("{name}-{agent}");
            let mut n = 2;
            while names.contains_key(&target) {
                target = format!("{name}-{agent}-{n}");
                n += 1;
            }
        }
        let secrets = entry.get("env").and_then(toml::Value::as_table).map_or(0, toml::Table::len)
            + entry.get("http_headers").and_then(toml::Value::as_table).map_or(0, toml::Table::len);
        let note = match secrets {
            0 => String::new(),
            n => format!(" ({n} env or header values copied as they are there)"),
        };
        lines.push(format!("{from}: {name}: taken as `{target}`{note}"));
        known.insert(id.clone(), target.clone());
        names.insert(target.clone(), id);
        taken.insert(target, entry);
    }
    (taken, lines)
}

/// `taken` appended to the config at `path` (`existing` its text), checked before writing.
fn write(path: &Path, existing: &str, taken: BTreeMap<String, toml::Table>) -> anyhow::Result<()> {
    let text = crate::config_text::with_servers(existing, taken, None)?;
    crate::config_text::write(path, &text)?;
    println!("added to {}", path.display());
    Ok(())
}
