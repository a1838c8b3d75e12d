//! The config entry of a `server.json`: the package chosen by what runs here (npm, PyPI and MCP
//! bundles installed by the router itself, OCI with `docker`, else a streamable HTTP remote), its
//! command built as words (never a shell line), its arguments and environment as declared
//! (a required value missing refused, a secret never written), and what to show the user.

use anyhow::Context as _;
use serde_json::Value;

/// The entry to write: its command (or URL) and environment, and what to tell the user.
pub(crate) struct Entry {
    pub(crate) table: toml::Table,
    pub(crate) shown: Vec<String>,
    /// A package the router installs itself: its command is set once it is installed
    /// (`Entry::install`).
    pending: Option<Pending>,
    /// Its secret variables (passed through by name until `secrets::keep` finds their values).
    pub(crate) secrets: Vec<String>,
    /// Secret values to put in the secret store when the entry is written.
    pub(crate) to_store: Vec<(String, String)>,
}

/// A package to install, with the arguments (and values) its `server.json` gives.
enum Pending {
    Npm(crate::packages::NpmPlan, Vec<String>),
    Pypi(crate::pypi::PypiPlan, Vec<String>),
    Mcpb(crate::mcpb::McpbPlan, Vec<String>, Vec<(String, String)>),
    /// An image by tag, resolved to its digest (no files: docker keeps the image).
    Oci(crate::oci::Image),
}

impl Entry {
    /// The image's tag in the entry's `docker run` replaced by the digest its registry serves
    /// for it now.
    async fn pin_image(&mut self, image: &crate::oci::Image) -> anyhow::Result<()> {
        let digest = image.resolve().await?;
        let (tagged, pinned) = (image.reference(), image.pinned(&digest));
        if let Some(toml::Value::Array(args)) = self.table.get_mut("args") {
            for arg in args.iter_mut().filter(|a| a.as_str() == Some(tagged.as_str())) {
                *arg = pinned.as_str().into();
            }
        }
        for line in self.shown.iter_mut().filter(|l| l.starts_with("command: ")) {
            *line = line.replace(&tagged, &pinned);
        }
        self.shown.push(format!(
            "image: {tagged} is {digest} now; it runs by that digest (docker checks the image against it)"
        ));
        Ok(())
    }

    /// The package (if any) fetched, checked (an npm tarball against its registry's integrity,
    /// a bundle against its `fileSha256`) and installed in a staging folder; the entry then runs
    /// it from where it goes and records its digest (`integrity`). The staged package goes in
    /// its place when the entry is written (`Staged::commit`).
    pub(crate) async fn install(&mut self) -> anyhow::Result<Option<crate::packages::Staged>> {
        let root = crate::packages::root();
        let installed = match self.pending.take() {
            None => return Ok(None),
            Some(Pending::Npm(plan, args)) => {
                crate::packages::install_npm(&plan, args, &root?).await?
            }
            Some(Pending::Pypi(plan, args)) => crate::pypi::install(&plan, args, &root?).await?,
            Some(Pending::Mcpb(plan, args, given)) => {
                crate::mcpb::install(&plan, args, &given, &root?).await?
            }
            Some(Pending::Oci(image)) => {
                self.pin_image(&image).await?;
                return Ok(None);
            }
        };
        let staged = installed.staged;
        self.table.insert("command".into(), installed.command.as_str().into());
        let words = installed.args.iter().map(|a| a.as_str().into()).collect();
        self.table.insert("args".into(), toml::Value::Array(words));
        let mut env =
            self.table.get("env").and_then(toml::Value::as_table).cloned().unwrap_or_default();
        env.extend(installed.env.into_iter().map(|(k, v)| (k, toml::Value::from(v))));
        if !env.is_empty() {
            self.table.insert("env".into(), toml::Value::Table(env));
        }
        let mut shown = installed.shown;
        if !installed.passed.is_empty() {
            let names: Vec<toml::Value> =
                installed.passed.iter().map(|n| n.as_str().into()).collect();
            self.table.insert("env_vars".into(), toml::Value::Array(names));
            for name in &installed.passed {
                shown.push(format!("env {name}: a secret, passed from the router's environment (never written to the config)"));
            }
            self.secrets.extend(installed.passed);
        }
        let mut integrity = toml::Table::new();
        integrity.insert("path".into(), staged.dir.to_string_lossy().as_ref().into());
        integrity.insert("sha256".into(), staged.digest.as_str().into());
        self.table.insert("integrity".into(), toml::Value::Table(integrity));
        shown.push(format!(
            "integrity: its files' SHA-256 {}… is checked before every start",
            &staged.digest[..16]
        ));
        // In place of the command and package lines.
        self.shown.splice(0..2, shown);
        Ok(Some(staged))
    }
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
    let pending = pending(package, kind, given)?;
    let mut args: Vec<String> = match kind {
        "oci" => vec!["run".into(), "-i".into(), "--rm".into()],
        _ => Vec::new(),
    };
    args.extend(arguments(&package["runtimeArguments"])?);
    args.push(match kind {
        "npm" => format!("{id}@{version}"),
        "pypi" => format!("{id}=={version}"),
        "oci" if !id.contains('@') => {
            crate::oci::Image::parse(id, version, package["registryBaseUrl"].as_str()).reference()
        }
        // An image pinned by digest already, or a bundle's URL (its command comes from it).
        _ => id.to_string(),
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
fn arguments(list: &Value) -> anyhow::Result<Vec<String>> {
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

/// The package the router installs itself for `package`, if it is one of those (npm, mcpb).
fn pending(
    package: &Value,
    kind: &str,
    given: &[(String, String)],
) -> anyhow::Result<Option<Pending>> {
    let id = package["identifier"].as_str().unwrap_or_default();
    let version = package["version"].as_str().unwrap_or_default();
    if kind == "oci" && !id.contains('@') {
        let registry = package["registryBaseUrl"].as_str();
        return Ok(Some(Pending::Oci(crate::oci::Image::parse(id, version, registry))));
    }
    if kind == "npm" {
        // Installed and run by the router (`Entry::install`), not by npx.
        let plan = crate::packages::NpmPlan {
            registry: package["registryBaseUrl"].as_str().map(str::to_string),
            id: id.to_string(),
            version: version.to_string(),
        };
        return Ok(Some(Pending::Npm(plan, arguments(&package["packageArguments"])?)));
    }
    if kind == "pypi" {
        // Installed and run by the router (`Entry::install`), not by uvx.
        let plan = crate::pypi::PypiPlan {
            registry: package["registryBaseUrl"].as_str().map(str::to_string),
            name: id.to_string(),
            version: version.to_string(),
        };
        return Ok(Some(Pending::Pypi(plan, arguments(&package["packageArguments"])?)));
    }
    if kind == "mcpb" {
        let sha256 = package["fileSha256"].as_str().unwrap_or_default();
        anyhow::ensure!(
            sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit()),
            "the bundle {id} has no fileSha256 to check it by: refused"
        );
        let plan = crate::mcpb::McpbPlan {
            url: id.to_string(),
            sha256: sha256.to_string(),
            version: version.to_string(),
        };
        let args = arguments(&package["packageArguments"])?;
        return Ok(Some(Pending::Mcpb(plan, args, given.to_vec())));
    }
    Ok(None)
}
