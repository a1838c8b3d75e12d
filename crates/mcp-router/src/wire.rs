//! `mcp-router wire AGENT… | --all [--config FILE] [--undo]`: one `mcp-router connect` entry,
//! named `mcp-router`, written into each agent's own MCP config in its own format — Claude
//! Desktop, Claude Code (user scope), Cursor, VS Code, Gemini CLI, Codex — so every agent on the
//! machine uses the one shared router. Everything else in the file stays byte for byte (comments
//! and order included: JSON files are edited in place, Codex's TOML gets a table appended); the
//! file as it was is kept beside it before the first change, and `--undo` puts it back exactly
//! (or removes a file that wiring made). Wiring again changes nothing.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::wire_json;

/// The entry's name in every agent's config.
pub(crate) const ENTRY: &str = "mcp-router";

/// The agents `wire` knows, as the command line names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Agent {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Gemini,
    Codex,
}

impl Agent {
    pub(crate) const ALL: [Agent; 6] = [
        Agent::ClaudeDesktop,
        Agent::ClaudeCode,
        Agent::Cursor,
        Agent::Vscode,
        Agent::Gemini,
        Agent::Codex,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Agent::ClaudeDesktop => "claude-desktop",
            Agent::ClaudeCode => "claude-code",
            Agent::Cursor => "cursor",
            Agent::Vscode => "vscode",
            Agent::Gemini => "gemini",
            Agent::Codex => "codex",
        }
    }

    /// The agent's user-level MCP config on this machine (Linux paths).
    pub(crate) fn path(self, home: &Path, config_home: &Path) -> PathBuf {
        match self {
            Agent::ClaudeDesktop => config_home.join("Claude/claude_desktop_config.json"),
            Agent::ClaudeCode => home.join(".claude.json"),
            Agent::Cursor => home.join(".cursor/mcp.json"),
            Agent::Vscode => config_home.join("Code/User/mcp.json"),
            Agent::Gemini => home.join(".gemini/settings.json"),
            Agent::Codex => home.join(".codex/config.toml"),
        }
    }

    /// The key of the servers' object in a JSON config.
    fn key(self) -> &'static str {
        if self == Agent::Vscode { "servers" } else { "mcpServers" }
    }
}

/// What `wire` does to one file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Done {
    Wired,
    Already,
    Undone,
    NothingToUndo,
}

/// The command and arguments of the entry: this binary's `connect` on `config`.
pub(crate) fn connect_entry(config: Option<&Path>) -> anyhow::Result<(String, Vec<String>)> {
    let exe = std::env::current_exe().context("this program's path")?;
    let mut args = vec!["connect".to_string()];
    if let Some(config) = config {
        let config = std::path::absolute(config).context("the config's path")?;
        args.extend(["--config".to_string(), config.display().to_string()]);
    }
    Ok((exe.display().to_string(), args))
}

/// `mcp-router wire`'s arguments.
#[derive(clap::Args)]
pub(crate) struct WireArgs {
    /// The agents to wire: claude-desktop, claude-code, cursor, vscode, gemini, codex.
    #[arg(value_enum)]
    agents: Vec<Agent>,
    /// Every agent set up on this machine.
    #[arg(long)]
    all: bool,
    /// The router's config the entry connects to (absent: the bundled demo servers).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Put each file back as it was before it was first wired.
    #[arg(long)]
    undo: bool,
}

/// `mcp-router wire`: each agent named (every one with `--all`), wired or unwired; a line each.
pub(crate) fn run(args: &WireArgs) -> anyhow::Result<i32> {
    let WireArgs { agents, all, config, undo } = args;
    let (all, undo, config) = (*all, *undo, config.as_deref());
    anyhow::ensure!(all || !agents.is_empty(), "name an agent ({}), or --all", names());
    let (home, config_home) = homes()?;
    let chosen: Vec<Agent> = if all { Agent::ALL.to_vec() } else { agents.to_vec() };
    let (command, args) = connect_entry(config)?;
    let mut failed = false;
    for agent in chosen {
        let path = agent.path(&home, &config_home);
        // With --all, an agent that is not set up here (no folder for its config) is skipped.
        if all && !undo && !path.parent().is_some_and(Path::exists) {
            println!(
                "{}: not set up here ({} has no folder), skipped",
                agent.name(),
                path.display()
            );
            continue;
        }
        let done = if undo { unwire(&path) } else { wire(agent, &path, &command, &args) };
        match done {
            Ok(done) => println!("{}: {}", agent.name(), said(done, &path)),
            Err(e) => {
                failed = true;
                eprintln!("mcp-router: {}: {e:#}", agent.name());
            }
        }
    }
    Ok(i32::from(failed))
}

/// The home directory and the config home (`$XDG_CONFIG_HOME`, else `~/.config`) the agents'
/// configs are found under.
pub(crate) fn homes() -> anyhow::Result<(PathBuf, PathBuf)> {
    let home = std::env::var_os("HOME").map(PathBuf::from).context("no home directory")?;
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home.join(".config"), PathBuf::from);
    Ok((home, config_home))
}

fn names() -> String {
    Agent::ALL.map(Agent::name).join(", ")
}

fn said(done: Done, path: &Path) -> String {
    match done {
        Done::Wired => {
            format!("wired ({}; the file as it was: {})", path.display(), backup(path).display())
        }
        Done::Already => format!("already wired ({})", path.display()),
        Done::Undone => format!("restored {} as it was before wiring", path.display()),
        Done::NothingToUndo => format!("nothing to undo ({})", path.display()),
    }
}

/// Where the file as it was before the first wiring is kept.
fn backup(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".mcp-router-backup");
    path.with_file_name(name)
}

/// The marker of a file that wiring made (there was none to keep).
fn made(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".mcp-router-made");
    path.with_file_name(name)
}

/// Write the entry into `path` (made when missing), keeping the rest of it.
pub(crate) fn wire(
    agent: Agent,
    path: &Path,
    command: &str,
    args: &[String],
) -> anyhow::Result<Done> {
    let before = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let text = before.clone().unwrap_or_default();
    let after = if agent == Agent::Codex {
        wired_toml(&text, command, args)?
    } else {
        let text = if text.trim().is_empty() { "{}\n" } else { text.as_str() };
        wired_json(text, agent, command, args)?
    };
    let Some(after) = after else { return Ok(Done::Already) };
    match &before {
        Some(text) if !backup(path).exists() && !made(path).exists() => {
            std::fs::write(backup(path), text).context("keeping the file as it was")?;
        }
        None => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("making {}", dir.display()))?;
            }
            std::fs::write(made(path), "").context("marking the file as made by wire")?;
        }
        Some(_) => {}
    }
    std::fs::write(path, after).with_context(|| format!("writing {}", path.display()))?;
    Ok(Done::Wired)
}

/// Put `path` back as it was before the first wiring.
pub(crate) fn unwire(path: &Path) -> anyhow::Result<Done> {
    if made(path).exists() {
        let _ = std::fs::remove_file(path);
        std::fs::remove_file(made(path))?;
        return Ok(Done::Undone);
    }
    let kept = backup(path);
    if !kept.exists() {
        return Ok(Done::NothingToUndo);
    }
    std::fs::copy(&kept, path).with_context(|| format!("restoring {}", path.display()))?;
    std::fs::remove_file(&kept)?;
    Ok(Done::Undone)
}

/// The entry's JSON value for `agent`.
fn entry_json(agent: Agent, command: &str, args: &[String]) -> serde_json::Value {
    let mut entry = serde_json::json!({"command": command, "args": args});
    if agent == Agent::Vscode {
        entry = serde_json::json!({"type": "stdio", "command": command, "args": args});
    }
    entry
}

/// `text` with the entry in its servers' object, or `None` when it is there as it should be.
pub(crate) fn wired_json(
    text: &str,
    agent: Agent,
    command: &str,
    args: &[String],
) -> anyhow::Result<Option<String>> {
    let top = wire_json::top(text).map_err(|e| anyhow::anyhow!("the file is not JSON: {e}"))?;
    let entry = entry_json(agent, command, args);
    let pretty = entry_text(agent, command, args)?;
    let servers = top.members.iter().find(|m| m.key == agent.key());
    let edited = match servers {
        Some(member) => {
            let object = wire_json::object_at(text, &member.value)
                .with_context(|| format!("`{}` in the file is not an object", agent.key()))?;
            if let Some(found) = object.members.iter().find(|m| m.key == ENTRY) {
                let now: serde_json::Value =
                    serde_json::from_str(&wire_json::plain(&text[found.value.clone()]))
                        .unwrap_or_default();
                if now == entry {
                    return Ok(None);
                }
            }
            wire_json::set_member(text, &object, ENTRY, &pretty)
        }
        None => {
            let inner = pretty.replace('\n', "\n  ");
            let servers = format!("{{\n  {}: {inner}\n}}", serde_json::to_string(ENTRY)?);
            wire_json::set_member(text, &top, agent.key(), &servers)
        }
    };
    let check: serde_json::Value = serde_json::from_str(&wire_json::plain(&edited))
        .context("the edit would not leave valid JSON; the file is left as it was")?;
    anyhow::ensure!(
        check[agent.key()][ENTRY] == entry,
        "the edit did not take; the file is left as it was"
    );
    Ok(Some(edited))
}

/// The entry as JSON text, its keys in the usual order (`type`, `command`, `args`).
fn entry_text(agent: Agent, command: &str, args: &[String]) -> anyhow::Result<String> {
    let mut lines = Vec::new();
    if agent == Agent::Vscode {
        lines.push("\"type\": \"stdio\"".to_string());
    }
    lines.push(format!("\"command\": {}", serde_json::to_string(command)?));
    lines.push(format!("\"args\": {}", serde_json::to_string(args)?));
    Ok(format!("{{\n  {}\n}}", lines.join(",\n  ")))
}

/// `text` (Codex's `config.toml`) with `[mcp_servers.mcp-router]` appended, or `None` when it is
/// there as it should be. An entry of that name that differs is not edited over.
pub(crate) fn wired_toml(
    text: &str,
    command: &str,
    args: &[String],
) -> anyhow::Result<Option<String>> {
    let parsed: toml::Table = toml::from_str(text).context("the file is not TOML")?;
    let existing = parsed.get("mcp_servers").and_then(|s| s.get(ENTRY));
    if let Some(existing) = existing {
        let same = existing.get("command").and_then(toml::Value::as_str) == Some(command)
            && existing.get("args").and_then(toml::Value::as_array).is_some_and(|a| {
                a.iter().map(toml::Value::as_str).collect::<Vec<_>>()
                    == args.iter().map(|s| Some(s.as_str())).collect::<Vec<_>>()
            });
        anyhow::ensure!(
            same,
            "it already has an `{ENTRY}` server of another command; remove it, then wire again"
        );
        return Ok(None);
    }
    let quoted = |s: &str| toml::Value::String(s.to_string()).to_string();
    let list: Vec<String> = args.iter().map(|a| quoted(a)).collect();
    let edited = crate::config_text::appended(
        text,
        &format!(
            "[mcp_servers.{ENTRY}]\ncommand = {}\nargs = [{}]\n",
            quoted(command),
            list.join(", ")
        ),
    );
    let check: toml::Table = toml::from_str(&edited)
        .context("appending the entry would not leave valid TOML (is `mcp_servers` an inline table?); the file is left as it was")?;
    anyhow::ensure!(
        check.get("mcp_servers").and_then(|s| s.get(ENTRY)).is_some(),
        "the edit did not take; the file is left as it was"
    );
    Ok(Some(edited))
}
