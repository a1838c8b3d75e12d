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
        let value = given
            .iter()
            .find(|(k, _)| *k == var)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(&var).ok().filter(|v| !v.is_empty()));
        let already = || store.as_ref().and_then(|s| s.get(name, &var).ok().flatten()).is_some();
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
    /// Keep SERVER's secret NAME in the secret store; its value is read from stdin (one line).
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
            if std::io::stdin().is_terminal() {
                eprintln!("the value of {name} for {server} (one line; it is shown as you type):");
            }
            let mut value = String::new();
            std::io::stdin().read_to_string(&mut value).context("reading the value")?;
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
