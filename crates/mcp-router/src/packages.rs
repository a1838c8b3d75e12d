//! The packages `mcp-router add` installs itself, so that what runs is what was checked: an npm
//! package's tarball is fetched from its registry and must match the `dist.integrity` the registry
//! publishes for that exact version; it is installed (install scripts off, nothing of it run)
//! into a folder of its own under the router's package store, and the folder's digest is written
//! to the entry (`integrity`), which the manager checks before every start. An MCP bundle
//! (`.mcpb`) goes the same way (`mcpb.rs`).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context as _, bail};
use base64::Engine as _;
use serde_json::Value;
use sha2::Digest as _;

/// The npm registry when a package names none.
const NPM: &str = "https://registry.npmjs.org";

/// Most bytes of one package's tarball.
const MAX_TARBALL: usize = 200 << 20;

/// An npm package to install: its registry, name, exact version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NpmPlan {
    pub(crate) registry: Option<String>,
    pub(crate) id: String,
    pub(crate) version: String,
}

/// A package installed in a staging folder: put in its place by [`Staged::commit`], gone if
/// dropped before (the user said no).
pub(crate) struct Staged {
    staging: PathBuf,
    /// Where it goes.
    pub(crate) dir: PathBuf,
    /// The installed folder's digest (`mcp_connection_manager::package_digest`).
    pub(crate) digest: String,
}

impl Staged {
    /// An empty staging folder for the package `name` (a file name) under `store`.
    pub(crate) fn new(store: &Path, name: &str) -> anyhow::Result<Self> {
        std::fs::create_dir_all(store).with_context(|| format!("creating {}", store.display()))?;
        let staging = store.join(format!(".{name}.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging)?;
        Ok(Self { staging, dir: store.join(name), digest: String::new() })
    }

    /// The staging folder (what is installed goes there).
    pub(crate) fn staging(&self) -> &Path {
        &self.staging
    }

    /// Its digest, once everything is in it.
    pub(crate) fn seal(&mut self) -> anyhow::Result<()> {
        self.digest = mcp_connection_manager::package_digest(&self.staging)?;
        Ok(())
    }

    /// Put in its place (a folder of the same version there before is replaced).
    pub(crate) fn commit(mut self) -> anyhow::Result<PathBuf> {
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir)
                .with_context(|| format!("removing the old {}", self.dir.display()))?;
        }
        std::fs::rename(&self.staging, &self.dir)
            .with_context(|| format!("moving the package to {}", self.dir.display()))?;
        self.staging = PathBuf::new();
        Ok(self.dir.clone())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.staging.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
    }
}

/// What an installed package runs and what `add` shows of it.
pub(crate) struct Installed {
    pub(crate) staged: Staged,
    pub(crate) command: String,
    /// Its arguments, with the paths where it will be once committed.
    pub(crate) args: Vec<String>,
    /// Environment values it declares (a bundle's).
    pub(crate) env: Vec<(String, String)>,
    /// Variables passed through by name from the router's environment (secrets).
    pub(crate) passed: Vec<String>,
    /// What was checked and where it goes, for the user.
    pub(crate) shown: Vec<String>,
}

/// Where installed packages live: `$MCP_ROUTER_PACKAGES`, else
/// `$XDG_DATA_HOME/mcp-router/packages`, else `~/.local/share/mcp-router/packages` (outside the
/// folders a sandboxed server may not read: it runs from here).
pub(crate) fn root() -> anyhow::Result<PathBuf> {
    router_protocol::dirs::data_dir("MCP_ROUTER_PACKAGES", "packages")
        .context("no HOME to keep packages in (set MCP_ROUTER_PACKAGES)")
}

/// `plan` fetched, checked and installed into a staging folder under `root`; run with `node`
/// and `args`.
pub(crate) async fn install_npm(
    plan: &NpmPlan,
    args: Vec<String>,
    root: &Path,
) -> anyhow::Result<Installed> {
    let base = plan.registry.as_deref().unwrap_or(NPM).trim_end_matches('/');
    let (id, version) = (&plan.id, &plan.version);
    let url = format!("{base}/{}/{}", id.replace('/', "%2f"), version);
    let client = reqwest::Client::new();
    let meta: Value =
        fetch(&client, &url).await?.json().await.context("npm's answer is not JSON")?;
    let tarball = meta["dist"]["tarball"].as_str().context("npm names no tarball")?;
    let integrity = meta["dist"]["integrity"].as_str().unwrap_or_default();
    let Some(expected) = integrity.strip_prefix("sha512-") else {
        bail!(
            "npm publishes no sha512 integrity for {id} {version}: it cannot be checked, nothing installed"
        );
    };
    let bytes = fetch(&client, tarball).await?.bytes().await.context("reading the tarball")?;
    anyhow::ensure!(bytes.len() <= MAX_TARBALL, "the tarball of {id} {version} is over 200 MiB");
    let found = base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(&bytes));
    if found != expected {
        bail!(
            "the tarball of {id} {version} does not match the registry's integrity (sha512-{expected} published, sha512-{found} fetched): nothing installed"
        );
    }
    let name = format!("{}@{version}", id.replace('/', "+"));
    let mut staged = Staged::new(&root.join("npm"), &name)?;
    std::fs::write(staged.staging().join("package.tgz"), &bytes)?;
    npm_install(staged.staging()).await?;
    let bin = command_of(staged.staging(), id)?;
    staged.seal()?;
    let program = staged.dir.join(bin).to_string_lossy().into_owned();
    let args: Vec<String> = std::iter::once(program).chain(args).collect();
    let shown = vec![
        format!("command: node {}", args.join(" ")),
        format!(
            "package: npm {id} {version}, its tarball matched the registry's {}…; installed in {} with its install scripts off",
            integrity.get(..24).unwrap_or(integrity),
            staged.dir.display()
        ),
    ];
    Ok(Installed {
        staged,
        command: "node".into(),
        args,
        env: Vec::new(),
        passed: Vec::new(),
        shown,
    })
}

pub(crate) async fn fetch(
    client: &reqwest::Client,
    url: &str,
) -> anyhow::Result<reqwest::Response> {
    let response = client.get(url).send().await.with_context(|| format!("fetching {url}"))?;
    anyhow::ensure!(response.status().is_success(), "{url} answered {}", response.status());
    Ok(response)
}

/// `npm install` of the checked tarball in `dir`: no install scripts (nothing of it runs), no
/// dev dependencies, no audit; its dependencies from the user's npm registry.
async fn npm_install(dir: &Path) -> anyhow::Result<()> {
    let out = tokio::process::Command::new("npm")
        .args(["install", "--prefix", ".", "--no-save", "--ignore-scripts", "--omit=dev"])
        .args(["--no-audit", "--no-fund", "--no-update-notifier", "./package.tgz"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .await
        .context("running npm")?;
    if !out.status.success() {
        let error = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = error.lines().rev().take(5).collect();
        bail!(
            "npm install failed ({}): {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        );
    }
    Ok(())
}

/// The package's command (its `bin`: the one it names, the one named after it, or its only
/// one), relative to the install folder.
fn command_of(dir: &Path, id: &str) -> anyhow::Result<PathBuf> {
    let package = dir.join("node_modules").join(id);
    let text = std::fs::read_to_string(package.join("package.json"))
        .with_context(|| format!("{id} was not installed"))?;
    let manifest: Value = serde_json::from_str(&text).context("its package.json is not JSON")?;
    let short = id.rsplit('/').next().unwrap_or(id);
    let bin = match &manifest["bin"] {
        Value::String(path) => Some(path.as_str()),
        Value::Object(bins) if bins.len() == 1 => bins.values().next().and_then(Value::as_str),
        Value::Object(bins) => bins.get(short).and_then(Value::as_str),
        _ => None,
    };
    let bin = bin.with_context(|| format!("{id} has no command (`bin`) to run"))?;
    let relative = Path::new("node_modules").join(id).join(bin);
    anyhow::ensure!(
        !bin.split('/').any(|part| part == ".."),
        "{id}'s command {bin} lies outside it"
    );
    Ok(relative)
}

/// Whether `program` is on the `PATH`.
pub(crate) fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

/// The SHA-256 of `bytes`, lower-case hex (what a bundle's `fileSha256`, an index's `#sha256=`
/// and an image digest give).
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `text` percent-encoded for a URL's path segment or query value (RFC 3986 unreserved
/// characters kept).
pub(crate) fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
