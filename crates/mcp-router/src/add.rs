//! `mcp-router add NAME[@VERSION] | FILE.json --config FILE [--registry URL] [--as NAME]
//! [--env NAME=VALUE]… [--yes]`: a server from the MCP registry (`GET
//! /v0.1/servers/{name}/versions/{version}`, the latest when no version is given) or from a
//! `server.json` file, put into the router's config with its version pinned. A deleted version is
//! refused, a deprecated one said with its message. The package is chosen by what runs here
//! (npm with `npx`, PyPI with `uvx`, OCI with `docker`, else a streamable HTTP remote), its
//! command built as a list of words (never a shell line); the exact command, the environment it
//! gets and its sandbox are shown and consent asked (`--yes` for scripts). A secret variable is
//! never written: the entry passes it through from the router's environment by name.

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
    /// The registry's base URL (default: the official MCP registry).
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

/// The entry to write: its command (or URL) and environment, and what to tell the user.
pub(crate) struct Entry {
    pub(crate) table: toml::Table,
    pub(crate) shown: Vec<String>,
    /// A package the router installs itself: its command is set once it is installed
    /// (`Entry::install`).
    pub(crate) pending: Option<crate::packages::Pending>,
    /// Its secret variables (passed through by name until `secrets::keep` finds their values).
    pub(crate) secrets: Vec<String>,
    /// Secret values to put in the secret store when the entry is written.
    pub(crate) to_store: Vec<(String, String)>,
}

pub(crate) async fn run(args: &AddArgs) -> anyhow::Result<i32> {
    let listed = fetch(args).await?;
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
    let (existing, current) = crate::config_text::read(&args.config)?;
    let taken = current.get("mcp_servers").and_then(|s| s.get(&entry_name)).is_some();
    anyhow::ensure!(
        !taken,
        "a server `{entry_name}` is already in {} (name this one with --as)",
        args.config.display()
    );
    let given = given_env(&args.env)?;
    let mut entry = entry_of(server, &given, &|program| on_path(program))?;
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
async fn fetch(args: &AddArgs) -> anyhow::Result<Listed> {
    let path = Path::new(&args.server);
    if args.server.ends_with(".json") || path.exists() {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let value: Value = serde_json::from_str(&text).context("the file is not JSON")?;
        let server = value.get("server").cloned().unwrap_or(value);
        return Ok(Listed { server, status: "active".into(), message: None, registry: None });
    }
    let (name, version) = args.server.split_once('@').unwrap_or((&args.server, "latest"));
    let base = args.registry.as_deref().unwrap_or(OFFICIAL).trim_end_matches('/');
    let mut listed = lookup(base, name, version).await?;
    listed.registry = Some(base.to_string());
    Ok(listed)
}

/// `name` at `version` (or `latest`) in the registry at `base`.
pub(crate) async fn lookup(base: &str, name: &str, version: &str) -> anyhow::Result<Listed> {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    let url = format!("{base}/v0.1/servers/{}/versions/{}", enc(name), enc(version));
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

/// Whether `program` is on the `PATH`.
pub(crate) fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

/// The entry for `server`: its first package whose runtime is here, else its first
/// streamable HTTP remote.
pub(crate) fn entry_of(
    server: &Value,
    given: &[(String, String)],
    here: &dyn Fn(&str) -> bool,
) -> anyhow::Result<Entry> {
    let packages = server["packages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut missing = Vec::new();
    for package in packages {
        let kind = package["registryType"].as_str().unwrap_or_default();
        let runtime = match kind {
            "npm" => "npm",
            "pypi" => "python3",
            "oci" => "docker",
            // What a bundle runs is known once it is fetched and checked.
            "mcpb" => "mcpb",
            other => {
                missing.push(format!("{other} packages are not supported"));
                continue;
            }
        };
        let transport = package["transport"]["type"].as_str().unwrap_or("stdio");
        if transport != "stdio" {
            missing.push(format!("a {kind} package over {transport}"));
            continue;
        }
        if kind != "mcpb" && (!here(runtime) || (kind == "npm" && !here("node"))) {
            let needs = if kind == "npm" { "`npm` and `node`" } else { runtime };
            let needs = if kind == "npm" { needs.to_string() } else { format!("`{needs}`") };
            missing.push(format!("{kind} needs {needs}, which is not on the PATH"));
            continue;
        }
        return package_entry(package, kind, runtime, given);
    }
    let remotes = server["remotes"].as_array().map(Vec::as_slice).unwrap_or_default();
    if let Some(remote) = remotes.iter().find(|r| r["type"] == "streamable-http") {
        let url = remote["url"].as_str().context("a remote without a url")?;
        anyhow::ensure!(!url.contains('{'), "the remote's URL needs values ({url}), not supported");
        let mut table = toml::Table::new();
        table.insert("url".into(), url.into());
        let shown = vec![format!("url: {url}")];
        return Ok(Entry {
            table,
            shown,
            pending: None,
            secrets: Vec::new(),
            to_store: Vec::new(),
        });
    }
    anyhow::bail!(
        "nothing of it can run here: {}",
        if missing.is_empty() {
            "no package or streamable HTTP remote".to_string()
        } else {
            missing.join("; ")
        }
    )
}

/// A package's entry: the command as words, the arguments and environment it declares.
fn package_entry(
    package: &Value,
    kind: &str,
    runtime: &str,
    given: &[(String, String)],
) -> anyhow::Result<Entry> {
    let id = package["identifier"].as_str().context("a package without an identifier")?;
    let version = package["version"].as_str().context("a package without a version")?;
    anyhow::ensure!(
        !version.is_empty()
            && version != "latest"
            && !version.contains(['^', '~', '*', '>', '<', ' ']),
        "the package's version `{version}` is not exact"
    );
    let mut table = toml::Table::new();
    let pending = crate::packages::pending(package, kind, given)?;
    let mut args: Vec<String> = match kind {
        "oci" => vec!["run".into(), "-i".into(), "--rm".into()],
        _ => Vec::new(),
    };
    args.extend(arguments(&package["runtimeArguments"])?);
    args.push(match kind {
        "npm" => format!("{id}@{version}"),
        "pypi" => format!("{id}=={version}"),
        _ if id.contains('@') => id.to_string(),
        _ => format!("{id}:{version}"),
    });
    args.extend(arguments(&package["packageArguments"])?);
    table.insert("command".into(), runtime.into());
    table.insert(
        "args".into(),
        toml::Value::Array(args.iter().map(|a| a.as_str().into()).collect()),
    );
    let words: Vec<String> = std::iter::once(runtime.to_string()).chain(args).collect();
    let mut shown =
        vec![format!("command: {}", words.join(" ")), format!("package: {kind} {id} {version}")];
    let secrets = environment(package, given, &mut table, &mut shown)?;
    Ok(Entry { table, shown, pending, secrets, to_store: Vec::new() })
}

/// The environment a package declares, into `table`: a given value or its default (`env`), a
/// secret passed through by name (`env_vars`, never its value; `secrets::keep` may keep it in
/// the secret store instead); a required one missing refused. The secrets' names.
fn environment(
    package: &Value,
    given: &[(String, String)],
    table: &mut toml::Table,
    shown: &mut Vec<String>,
) -> anyhow::Result<Vec<String>> {
    let (mut env, mut passed) = (toml::Table::new(), Vec::new());
    for var in package["environmentVariables"].as_array().into_iter().flatten() {
        let name = var["name"].as_str().context("an environment variable without a name")?;
        if var["isSecret"] == true {
            passed.push(toml::Value::from(name));
            shown.push(format!("env {name}: a secret, passed from the router's environment (never written to the config)"));
            continue;
        }
        let value = given
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .or(var["default"].as_str());
        match value {
            Some(value) => {
                shown.push(format!("env {name}={value}"));
                env.insert(name.to_string(), value.into());
            }
            None if var["isRequired"] == true => anyhow::bail!(
                "it needs `{name}` ({}): give it with --env {name}=VALUE",
                var["description"].as_str().unwrap_or("no description")
            ),
            None => {}
        }
    }
    if !env.is_empty() {
        table.insert("env".into(), toml::Value::Table(env));
    }
    if !passed.is_empty() {
        table.insert("env_vars".into(), toml::Value::Array(passed.clone()));
    }
    Ok(passed.iter().filter_map(|n| n.as_str().map(str::to_string)).collect())
}

/// A package's declared arguments as words: positional values, named `--flag value`.
pub(crate) fn arguments(list: &Value) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for arg in list.as_array().into_iter().flatten() {
        let value = arg["value"].as_str().or(arg["default"].as_str());
        if value.is_some_and(|v| v.contains('{')) {
            anyhow::bail!(
                "an argument needs values filled in ({}), not supported",
                value.unwrap_or_default()
            );
        }
        match (arg["type"].as_str(), value) {
            (Some("named"), value) => {
                let name = arg["name"].as_str().context("a named argument without a name")?;
                if value.is_none() && arg["isRequired"] != true {
                    continue;
                }
                out.push(name.to_string());
                out.extend(value.map(str::to_string));
            }
            (_, Some(value)) => out.push(value.to_string()),
            (_, None) if arg["isRequired"] == true => anyhow::bail!(
                "a required argument ({}) has no value",
                arg["valueHint"].as_str().unwrap_or("?")
            ),
            (_, None) => {}
        }
    }
    Ok(out)
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
