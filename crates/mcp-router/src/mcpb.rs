//! MCP bundles (`.mcpb`): a zip with a `manifest.json` that says how its server runs. `add`
//! fetches the bundle its `server.json` names, checks it against the `fileSha256` given there
//! before anything else (a bundle that does not match is neither unpacked nor run), unpacks it
//! into the package store (no entry outside its folder), and runs what its manifest's
//! `server.mcp_config` says, `${__dirname}` being that folder.

use std::io::Read as _;
use std::path::Path;

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::packages::{Installed, Staged};

/// Most bytes of one bundle, and of all its files unpacked.
const MAX_BUNDLE: usize = 200 << 20;
const MAX_UNPACKED: u64 = 1 << 30;

/// A bundle to install: where it is, the SHA-256 its `server.json` gives, and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpbPlan {
    pub(crate) url: String,
    pub(crate) sha256: String,
    pub(crate) version: String,
}

/// `plan` fetched, checked, unpacked into a staging folder under `root`, and read: the command
/// its manifest gives, with `args` (the `server.json`'s package arguments) after its own.
pub(crate) async fn install(
    plan: &McpbPlan,
    args: Vec<String>,
    given: &[(String, String)],
    root: &Path,
) -> anyhow::Result<Installed> {
    let client = reqwest::Client::new();
    let response = crate::packages::fetch(&client, &plan.url).await?;
    let bytes = response.bytes().await.context("reading the bundle")?;
    anyhow::ensure!(bytes.len() <= MAX_BUNDLE, "the bundle {} is over 200 MiB", plan.url);
    let found = crate::packages::sha256_hex(&bytes);
    if !found.eq_ignore_ascii_case(&plan.sha256) {
        bail!(
            "the bundle {} does not match its fileSha256 ({} given, {found} fetched): refused, nothing unpacked or run",
            plan.url,
            plan.sha256
        );
    }
    let manifest = read_manifest(&bytes)?;
    let name = manifest["name"].as_str().context("the bundle's manifest has no `name`")?;
    let folder: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let mut staged = Staged::new(&root.join("mcpb"), &format!("{folder}@{}", plan.version))?;
    unpack(&bytes, staged.staging())?;
    staged.seal()?;
    let launch = launch(&manifest, &staged.dir, given)?;
    let mut all = launch.args;
    all.extend(args);
    let shown = vec![
        format!("command: {} {}", launch.command, all.join(" ")),
        format!(
            "package: mcpb {name} {}, its SHA-256 matched the fileSha256 given; unpacked in {}",
            plan.version,
            staged.dir.display()
        ),
    ];
    Ok(Installed {
        staged,
        command: launch.command,
        args: all,
        env: launch.env,
        passed: launch.passed,
        shown,
    })
}

/// The bundle's `manifest.json`.
fn read_manifest(bytes: &[u8]) -> anyhow::Result<Value> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .context("the bundle is not a zip archive")?;
    let mut file = archive.by_name("manifest.json").context("the bundle has no manifest.json")?;
    let mut text = String::new();
    file.by_ref().take(1 << 20).read_to_string(&mut text).context("reading its manifest")?;
    serde_json::from_str(&text).context("its manifest.json is not JSON")
}

/// Every entry of the bundle into `dir`: none outside it (an absolute path or `..` refuses the
/// whole bundle), links not made, executable bits kept, at most [`MAX_UNPACKED`] bytes.
fn unpack(bytes: &[u8], dir: &Path) -> anyhow::Result<()> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))?;
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i)?;
        let Some(relative) = entry.enclosed_name() else {
            bail!("the bundle's entry {} lies outside it: refused", entry.name());
        };
        let path = dir.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&path)?;
            continue;
        }
        anyhow::ensure!(
            !entry.is_symlink(),
            "the bundle's entry {} is a link: refused",
            entry.name()
        );
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut out = std::fs::File::create(&path)?;
        let limit = MAX_UNPACKED.saturating_sub(total);
        total += std::io::copy(&mut entry.by_ref().take(limit + 1), &mut out)?;
        anyhow::ensure!(total <= MAX_UNPACKED, "the bundle unpacks to over 1 GiB: refused");
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o755))?;
        }
    }
    Ok(())
}

/// How the bundle's server starts.
struct Launch {
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    passed: Vec<String>,
}

/// The manifest's `server.mcp_config` with its variables filled in: `${__dirname}` (where the
/// bundle is unpacked), `${HOME}`, `${/}` and `${pathSeparator}`, and `${user_config.KEY}` — a
/// value given with `--env KEY=VALUE` or the manifest's default; a sensitive one in the
/// environment is passed through by name, never written.
fn launch(manifest: &Value, dir: &Path, given: &[(String, String)]) -> anyhow::Result<Launch> {
    let config = &manifest["server"]["mcp_config"];
    let command =
        config["command"].as_str().context("the manifest has no server.mcp_config.command")?;
    let fill = |text: &str| fill(text, dir, manifest, given);
    let command = fill(command)?.context("the command needs a sensitive value")?;
    let is_path = command.contains('/');
    anyhow::ensure!(
        is_path || crate::packages::on_path(&command),
        "the bundle runs `{command}`, which is not on the PATH"
    );
    let mut args = Vec::new();
    for arg in config["args"].as_array().into_iter().flatten() {
        let arg = arg.as_str().context("an argument that is not a string")?;
        args.push(fill(arg)?.with_context(|| {
            format!("the argument {arg} needs a sensitive value: not supported")
        })?);
    }
    let (mut env, mut passed) = (Vec::new(), Vec::new());
    for (name, value) in config["env"].as_object().into_iter().flatten() {
        let value = value.as_str().context("an environment value that is not a string")?;
        match fill(value)? {
            Some(value) => env.push((name.clone(), value)),
            None => passed.push(name.clone()),
        }
    }
    Ok(Launch { command, args, env, passed })
}

/// `text` with its variables filled in; `None` when it names a sensitive user value (which is
/// never written).
fn fill(
    text: &str,
    dir: &Path,
    manifest: &Value,
    given: &[(String, String)],
) -> anyhow::Result<Option<String>> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').context("an unclosed ${ in the manifest")? + start;
        let name = &rest[start + 2..end];
        let value = match name {
            "__dirname" => dir.to_string_lossy().into_owned(),
            "HOME" => std::env::var("HOME").unwrap_or_default(),
            "/" | "pathSeparator" => "/".to_string(),
            _ => match name.strip_prefix("user_config.") {
                Some(key) => match user_value(manifest, key, given)? {
                    Some(value) => value,
                    None => return Ok(None),
                },
                None => bail!("the manifest names ${{{name}}}, which is not supported"),
            },
        };
        out.push_str(&value);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(Some(out))
}

/// A user value: given, else its default; `None` for a sensitive one not given.
fn user_value(
    manifest: &Value,
    key: &str,
    given: &[(String, String)],
) -> anyhow::Result<Option<String>> {
    let declared = &manifest["user_config"][key];
    if let Some((_, value)) = given.iter().find(|(k, _)| k == key) {
        anyhow::ensure!(
            declared["sensitive"] != true,
            "`{key}` is sensitive: put it in the router's environment, not on the command line"
        );
        return Ok(Some(value.clone()));
    }
    if declared["sensitive"] == true {
        return Ok(None);
    }
    let default = match &declared["default"] {
        Value::String(text) => Some(text.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    };
    match default {
        Some(value) => Ok(Some(value)),
        None if declared["required"] == true => bail!(
            "the bundle needs `{key}` ({}): give it with --env {key}=VALUE",
            declared["title"].as_str().unwrap_or("no description")
        ),
        None => Ok(Some(String::new())),
    }
}
