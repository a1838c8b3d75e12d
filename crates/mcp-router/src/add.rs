//! `mcp-router add NAME[@VERSION] | FILE.json --config FILE [--registry URL] [--as NAME]
//! [--env NAME=VALUE]… [--yes]`: a server from the MCP registry (`GET
//! /v0.1/servers/{name}/versions/{version}`, the latest when no version is given) or from a
//! `server.json` file, put into the router's config with its version pinned. A deleted version is
//! refused, a deprecated one said with its message. Its entry (`entry.rs`: the package chosen by
//! what runs here, installed and checked by the router itself where it can be) is shown — the
//! exact command, the environment it gets, its sandbox — and consent asked (`--yes` for
//! scripts). A secret's value is never written (`secrets.rs`).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::Value;

/// The official registry.
const OFFICIAL: &str = "https://registry.modelcontextprotocol.io";

/// `mcp-router add`'s arguments.
#[derive(clap::Args)]
pub(crate) struct AddArgs {
    /// The server: NAME or NAME@VERSION in the registry, or a server.json file.
    server: String,
    /// The router's config to add it to (made when missing).
    #[arg(long)]
    config: PathBuf,
    /// The registry's base URL (default: the config's `[mcp_router] registry`, else the official
    /// MCP registry).
    #[arg(long)]
    registry: Option<String>,
    /// The entry's name in the config (default: the last part of the server's name).
    #[arg(long = "as")]
    entry: Option<String>,
    /// A value for one of its (non-secret) environment variables.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Add it without asking.
    #[arg(long)]
    yes: bool,
}

/// What the registry says of a version.
pub(crate) struct Listed {
    pub(crate) server: Value,
    pub(crate) status: String,
    pub(crate) message: Option<String>,
    /// The registry's base URL (none for a file).
    registry: Option<String>,
}

pub(crate) async fn run(args: &AddArgs) -> anyhow::Result<i32> {
    let (existing, current) = crate::config_text::read(&args.config)?;
    // `--registry`, else the config's `[mcp_router] registry`, else the official one.
    let configured = current.get("mcp_router").and_then(|s| s.get("registry"));
    let registry = args.registry.as_deref().or(configured.and_then(toml::Value::as_str));
    let listed = fetch(args, registry.unwrap_or(OFFICIAL)).await?;
    let server = &listed.server;
    let name = server["name"].as_str().context("the server.json has no `name`")?;
    let version = server["version"].as_str().unwrap_or("?");
    match listed.status.as_str() {
        "deleted" => anyhow::bail!(
            "{name} {version} was deleted from the registry{}; nothing added",
            listed.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
        ),
        "deprecated" => eprintln!(
            "mcp-router: warning: {name} {version} is deprecated{}",
            listed.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
        ),
        _ => {}
    }
    let entry_name = match &args.entry {
        Some(entry) => entry.clone(),
        None => name
            .rsplit('/')
            .next()
            .unwrap_or(name)
            .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_', "-"),
    };
    let taken = current.get("mcp_servers").and_then(|s| s.get(&entry_name)).is_some();
    anyhow::ensure!(
        !taken,
        "a server `{entry_name}` is already in {} (name this one with --as)",
        args.config.display()
    );
    let given = given_env(&args.env)?;
    let mut entry = crate::entry::entry_of(server, &given, &crate::packages::on_path)?;
    let staged = entry.install().await?;
    crate::secrets::keep(&mut entry, &entry_name, &given)?;
    if let Some(base) = &listed.registry {
        let mut source = toml::Table::new();
        source.insert("name".into(), name.into());
        source.insert("version".into(), version.into());
        source.insert("url".into(), base.as_str().into());
        entry.table.insert("registry".into(), toml::Value::Table(source));
    }
    println!("mcp-router add: {name} {version}");
    for line in &entry.shown {
        println!("  {line}");
    }
    println!(
        "  sandbox: the default (credentials and the router's state unreadable, writes to its workspace, temp and package caches)"
    );
    println!("  into: {} as [mcp_servers.{entry_name}]", args.config.display());
    if !args.yes && !consent()? {
        println!("nothing added");
        return Ok(1);
    }
    if let Some(staged) = staged {
        staged.commit()?;
    }
    crate::secrets::store(&entry_name, &entry.to_store)?;
    write(&args.config, &existing, &entry_name, entry.table, &format!("{name} {version}"))?;
    println!("added `{entry_name}`; its first start pins its tools, prompts and templates");
    Ok(0)
}

/// The server.json and its status: from the file, or from the registry.
async fn fetch(args: &AddArgs, base: &str) -> anyhow::Result<Listed> {
    let path = Path::new(&args.server);
    if args.server.ends_with(".json") || path.exists() {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let value: Value = serde_json::from_str(&text).context("the file is not JSON")?;
        let server = value.get("server").cloned().unwrap_or(value);
        return Ok(Listed { server, status: "active".into(), message: None, registry: None });
    }
    let (name, version) = args.server.split_once('@').unwrap_or((&args.server, "latest"));
    let base = base.trim_end_matches('/');
    let mut listed = lookup(base, name, version).await?;
    listed.registry = Some(base.to_string());
    Ok(listed)
}

/// `name` at `version` (or `latest`) in the registry at `base`.
pub(crate) async fn lookup(base: &str, name: &str, version: &str) -> anyhow::Result<Listed> {
    let url = format!(
        "{base}/v0.1/servers/{}/versions/{}",
        crate::packages::encode(name),
        crate::packages::encode(version)
    );
    let response = reqwest::Client::new()
        .get(&url)
        .header("accept", "application/json")
        .send()
        .await
        .with_context(|| format!("asking the registry at {base}"))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        anyhow::bail!("no server {name} (version {version}) in the registry at {base}");
    }
    anyhow::ensure!(
        response.status().is_success(),
        "the registry answered {} for {url}",
        response.status()
    );
    let value: Value = response.json().await.context("the registry's answer is not JSON")?;
    let official = &value["_meta"]["io.modelcontextprotocol.registry/official"];
    Ok(Listed {
        server: value.get("server").cloned().unwrap_or_else(|| value.clone()),
        status: official["status"].as_str().unwrap_or("active").to_string(),
        message: official["statusMessage"].as_str().map(str::to_string),
        registry: None,
    })
}

pub(crate) fn given_env(pairs: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    pairs
        .iter()
        .map(|pair| {
            let (k, v) = pair
                .split_once('=')
                .with_context(|| format!("--env {pair}: expected NAME=VALUE"))?;
            Ok((k.to_string(), v.to_string()))
        })
        .collect()
}

/// The user's yes, read from the terminal (no terminal: no).
pub(crate) fn consent() -> anyhow::Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        eprintln!("mcp-router: no terminal to ask for consent; run with --yes to add it");
        return Ok(false);
    }
    print!("Add it? [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// `existing` (the config at `path`) with the entry `name` appended after a note of where it
/// came from (`source`), written.
pub(crate) fn write(
    path: &Path,
    existing: &str,
    name: &str,
    table: toml::Table,
    source: &str,
) -> anyhow::Result<()> {
    let note = format!("{source}, added by mcp-router add");
    let text =
        crate::config_text::with_servers(existing, [(name.to_string(), table)], Some(&note))?;
    crate::config_text::write(path, &text)
}
