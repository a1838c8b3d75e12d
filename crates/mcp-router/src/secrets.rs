//! Secrets out of the config file: `add` and `update` keep a server's secret variables in the
//! router's secret store (`router_config::SecretStore`) and write only their names
//! (`env_secrets`); `mcp-router secret set | list | remove` manage the store. A value comes from
//! `--env NAME=VALUE`, else from the environment `add` runs in, else it is already stored for
//! that entry; without one the variable is passed through from the router's environment by name
//! (`env_vars`), as before. Values are never printed.

use std::io::{IsTerminal as _, Read as _};

use anyhow::Context as _;
use router_config::SecretStore;

use crate::entry::Entry;

/// Where `entry` (the config's `name`) gets each of its secrets: kept in the store when a value
/// is given or found (`env_secrets`), else passed through by name (`env_vars`).
pub(crate) fn keep(
    entry: &mut Entry,
    name: &str,
    given: &[(String, String)],
) -> anyhow::Result<()> {
    if entry.secrets.is_empty() {
        return Ok(());
    }
    let store = SecretStore::default_location();
    let (mut kept, mut passed) = (Vec::new(), Vec::new());
    for var in std::mem::take(&mut entry.secrets) {
        let mut value = given
            .iter()
            .find(|(k, _)| *k == var)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(&var).ok().filter(|v| !v.is_empty()));
        let already = || store.as_ref().and_then(|s| s.get(name, &var).ok().flatten()).is_some();
        if value.is_none() && store.is_some() && !already() && std::io::stdin().is_terminal() {
            let prompt = format!(
                "{var}, a secret of {name} (typed, not shown; Enter alone passes it from the router's environment instead): "
            );
            value = ask(&prompt)?.filter(|v| !v.is_empty());
        }
        let said = match (value, &store) {
            (Some(value), Some(store)) => {
                entry.to_store.push((var.clone(), value));
                kept.push(var.clone());
                format!(
                    "env {var}: a secret, kept in the secret store {} (never written to the config)",
                    store.path().display()
                )
            }
            (None, Some(store)) if already() => {
                kept.push(var.clone());
                format!(
                    "env {var}: a secret, already in the secret store {}",
                    store.path().display()
                )
            }
            _ => {
                passed.push(var.clone());
                format!(
                    "env {var}: a secret, passed from the router's environment (never written to the config); `mcp-router secret set {name} {var}` keeps it in the secret store instead"
                )
            }
        };
        let line = entry.shown.iter_mut().find(|l| l.starts_with(&format!("env {var}: ")));
        match line {
            Some(line) => *line = said,
            None => entry.shown.push(said),
        }
    }
    let list =
        |names: &[String]| toml::Value::Array(names.iter().map(|n| n.as_str().into()).collect());
    entry.table.remove("env_vars");
    if !passed.is_empty() {
        entry.table.insert("env_vars".into(), list(&passed));
    }
    if !kept.is_empty() {
        entry.table.insert("env_secrets".into(), list(&kept));
    }
    entry.secrets = kept.into_iter().chain(passed).collect();
    Ok(())
}

/// `values` of the entry `name` put in the secret store.
pub(crate) fn store(name: &str, values: &[(String, String)]) -> anyhow::Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    let store = SecretStore::default_location().context("no folder for the secret store")?;
    for (var, value) in values {
        store.set(name, var, value).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// `mcp-router secret`'s subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum SecretCommand {
    /// Keep SERVER's secret NAME in the secret store: typed at a prompt that does not show it,
    /// or read from stdin (one line) when stdin is not a terminal.
    Set {
        /// The server (its name in the config).
        server: String,
        /// The variable.
        name: String,
    },
    /// The names kept for each server (never the values).
    List,
    /// Forget SERVER's secret NAME (all of SERVER's without a NAME).
    Remove {
        /// The server.
        server: String,
        /// The variable.
        name: Option<String>,
    },
}

/// `mcp-router secret set | list | remove`.
pub(crate) fn run(command: &SecretCommand) -> anyhow::Result<i32> {
    let store = SecretStore::default_location()
        .context("no folder for the secret store (set HOME or MCP_ROUTER_HOME)")?;
    match command {
        SecretCommand::Set { server, name } => {
            let mut value = String::new();
            if std::io::stdin().is_terminal() {
                let prompt = format!("{name} for {server} (typed, not shown): ");
                value = ask(&prompt)?.unwrap_or_default();
            } else {
                std::io::stdin().read_to_string(&mut value).context("reading the value")?;
            }
            let value = value.trim_end_matches(['\n', '\r']);
            anyhow::ensure!(!value.is_empty(), "no value on stdin: nothing kept");
            store.set(server, name, value).map_err(anyhow::Error::msg)?;
            println!("kept {name} for {server} in {}", store.path().display());
        }
        SecretCommand::List => {
            for (server, names) in store.names().map_err(anyhow::Error::msg)? {
                println!("{server}: {}", names.join(", "));
            }
        }
        SecretCommand::Remove { server, name } => {
            let forgotten = store.remove(server, name.as_deref()).map_err(anyhow::Error::msg)?;
            println!("forgot {forgotten} secrets of {server}");
        }
    }
    Ok(0)
}

/// A value typed on the terminal after `prompt`, not echoed (raw mode); Enter ends it, Escape
/// gives none, Ctrl-C stops the command.
fn ask(prompt: &str) -> anyhow::Result<Option<String>> {
    use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
    use std::io::Write as _;
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    crossterm::terminal::enable_raw_mode().context("the terminal cannot hide what is typed")?;
    let typed = (|| -> anyhow::Result<Option<String>> {
        let mut value = String::new();
        loop {
            match crossterm::event::read()? {
                Event::Key(key) if key.kind != KeyEventKind::Release => match key.code {
                    KeyCode::Enter => return Ok(Some(value)),
                    KeyCode::Esc => return Ok(None),
                    KeyCode::Backspace => drop(value.pop()),
                    KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                        anyhow::bail!("stopped at the secret's prompt; nothing written")
                    }
                    KeyCode::Char(c) => value.push(c),
                    _ => {}
                },
                Event::Paste(text) => value.push_str(&text),
                _ => {}
            }
        }
    })();
    let _ = crossterm::terminal::disable_raw_mode();
    eprintln!();
    typed
}
