//! What `mcp-router add` put in a config: `outdated` asks the registry each entry came from (its
//! `registry` table) for the latest version and for the pinned one's status; `update` moves an
//! entry to the latest version after showing what changes and asking again; `remove` takes an
//! entry out of the config, every other byte kept.

use std::path::PathBuf;

use anyhow::Context as _;

/// `mcp-router outdated`'s arguments.
#[derive(clap::Args)]
pub(crate) struct OutdatedArgs {
    /// The router's config.
    #[arg(long)]
    config: PathBuf,
}

/// `mcp-router remove`'s arguments.
#[derive(clap::Args)]
pub(crate) struct RemoveArgs {
    /// The entry to take out.
    name: String,
    /// The router's config.
    #[arg(long)]
    config: PathBuf,
}

/// A line per entry that came from a registry: newer version, deprecated, deleted, or current.
pub(crate) async fn outdated(args: &OutdatedArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("reading {}", args.config.display()))?;
    let table: toml::Table = toml::from_str(&text).context("the config is not TOML")?;
    let servers = table.get("mcp_servers").and_then(toml::Value::as_table).cloned();
    let mut failed = false;
    let mut any = false;
    for (entry, value) in servers.unwrap_or_default() {
        let Some(source) = value.get("registry") else { continue };
        let field = |k: &str| source.get(k).and_then(toml::Value::as_str).unwrap_or_default();
        let (name, pinned, base) = (field("name"), field("version"), field("url"));
        any = true;
        let (latest, now) = (
            crate::add::lookup(base, name, "latest").await,
            crate::add::lookup(base, name, pinned).await,
        );
        let line = match (latest, now) {
            (_, Ok(now)) if now.status == "deleted" => format!(
                "{entry}: {pinned} was deleted from the registry{}; remove it or add another version",
                said(now.message.as_deref())
            ),
            (Ok(latest), now) => {
                let newest = latest.server["version"].as_str().unwrap_or("?").to_string();
                let mut line = if newest == pinned {
                    format!("{entry}: {pinned} is the latest ({name})")
                } else {
                    format!("{entry}: {pinned} → {newest} ({name})")
                };
                if let Ok(now) = &now
                    && now.status == "deprecated"
                {
                    let message = said(now.message.as_deref());
                    line.push_str(&format!("; {pinned} is deprecated{message}"));
                }
                line
            }
            (Err(e), _) => {
                failed = true;
                format!("{entry}: the registry could not be asked: {e:#}")
            }
        };
        println!("{line}");
    }
    if !any {
        println!("no server in {} came from a registry (mcp-router add)", args.config.display());
    }
    Ok(i32::from(failed))
}

fn said(message: Option<&str>) -> String {
    message.map(|m| format!(": {m}")).unwrap_or_default()
}

/// Take `[mcp_servers.NAME]` (and its sub-tables, and the comment `add` put before it) out of
/// the config; what is left must be the config without that entry, else nothing is written.
pub(crate) fn remove(args: &RemoveArgs) -> anyhow::Result<i32> {
    let path = &args.config;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let edited = without(&text, &args.name, path)?;
    std::fs::write(path, edited).with_context(|| format!("writing {}", path.display()))?;
    println!("removed `{}` from {}", args.name, path.display());
    // Its secrets go, and the package `add` installed for it (only ever one in the store).
    if let Some(store) = router_config::SecretStore::default_location() {
        let forgotten = store.remove(&args.name, None).map_err(anyhow::Error::msg)?;
        if forgotten > 0 {
            println!("forgot its {forgotten} secrets in {}", store.path().display());
        }
    }
    let table: toml::Table = toml::from_str(&text).unwrap_or_default();
    let entry = table.get("mcp_servers").and_then(|s| s.get(&args.name));
    let installed = entry.and_then(|e| e.get("integrity")?.get("path")?.as_str());
    if let (Some(dir), Ok(store)) = (installed, crate::packages::root()) {
        let dir = std::path::Path::new(dir);
        if dir.starts_with(&store) && dir.is_dir() {
            std::fs::remove_dir_all(dir)
                .with_context(|| format!("removing its package {}", dir.display()))?;
            println!("removed its package {}", dir.display());
        }
    }
    Ok(0)
}

/// `text` (the config at `path`) without the entry `name`, checked against the parsed config.
fn without(text: &str, name: &str, path: &std::path::Path) -> anyhow::Result<String> {
    let mut table: toml::Table = toml::from_str(text).context("the config is not TOML")?;
    let servers = table.get_mut("mcp_servers").and_then(toml::Value::as_table_mut);
    let removed = servers.and_then(|servers| servers.remove(name));
    anyhow::ensure!(removed.is_some(), "no server `{name}` in {}", path.display());
    let heads = [format!("[mcp_servers.{name}"), format!("[mcp_servers.\"{name}\"")];
    let is_own = |line: &str| {
        let line = line.trim();
        heads.iter().any(|h| {
            line.strip_prefix(h.as_str())
                .is_some_and(|rest| rest.starts_with(']') || rest.starts_with('.'))
        })
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut kept = Vec::with_capacity(lines.len());
    let mut inside = false;
    let loose = |line: &str| line.trim().is_empty() || line.trim_start().starts_with('#');
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with('[') {
            inside = is_own(line);
        } else if inside && loose(line) {
            // Comments and blank lines before the next table are that table's, not this one's.
            let next = lines[i..].iter().find(|l| !loose(l));
            if next.is_none_or(|l| l.trim_start().starts_with('[') && !is_own(l)) {
                inside = false;
            }
        }
        let added_note = line.starts_with("# ")
            && line.trim_end().ends_with(", added by mcp-router add")
            && lines.get(i + 1).is_some_and(|next| is_own(next));
        if !inside && !added_note {
            kept.push(*line);
        }
    }
    let edited = kept.concat();
    let mut check: toml::Table = toml::from_str(&edited).unwrap_or_default();
    // An `mcp_servers` left empty may be there or not.
    for t in [&mut check, &mut table] {
        if t.get("mcp_servers").and_then(toml::Value::as_table).is_some_and(toml::Table::is_empty) {
            t.remove("mcp_servers");
        }
    }
    anyhow::ensure!(
        check == table,
        "`{name}` is not a table of its own in {} (an inline or dotted entry): edit the file by hand",
        path.display()
    );
    Ok(edited)
}

/// `mcp-router update`'s arguments.
#[derive(clap::Args)]
pub(crate) struct UpdateArgs {
    /// The entry to update (one `mcp-router add` wrote).
    name: String,
    /// The router's config.
    #[arg(long)]
    config: PathBuf,
    /// A value for one of its (non-secret) environment variables (the entry's own are kept).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Update it without asking.
    #[arg(long)]
    yes: bool,
}

/// The entry at its registry's latest version: what changes is shown, consent asked again (a
/// new version is a new consent), the entry replaced.
pub(crate) async fn update(args: &UpdateArgs) -> anyhow::Result<i32> {
    let path = &args.config;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let table: toml::Table = toml::from_str(&text).context("the config is not TOML")?;
    let entry =
        table.get("mcp_servers").and_then(|s| s.get(&args.name)).and_then(toml::Value::as_table);
    let entry =
        entry.with_context(|| format!("no server `{}` in {}", args.name, path.display()))?;
    let source = entry.get("registry").with_context(|| {
        format!("`{}` did not come from a registry (mcp-router add): nothing to update", args.name)
    })?;
    let field = |k: &str| source.get(k).and_then(toml::Value::as_str).unwrap_or_default();
    let (name, pinned, base) = (field("name"), field("version"), field("url"));
    let latest = crate::add::lookup(base, name, "latest").await?;
    let newest = latest.server["version"].as_str().unwrap_or("?").to_string();
    if newest == pinned {
        println!("{}: {pinned} is the latest ({name})", args.name);
        return Ok(0);
    }
    anyhow::ensure!(latest.status != "deleted", "{name} {newest} was deleted from the registry");
    if latest.status == "deprecated" {
        eprintln!(
            "mcp-router: warning: {name} {newest} is deprecated{}",
            said(latest.message.as_deref())
        );
    }
    let mut given: Vec<(String, String)> = entry
        .get("env")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    given.splice(0..0, crate::add::given_env(&args.env)?);
    let mut new = crate::entry::entry_of(&latest.server, &given, &crate::packages::on_path)?;
    let staged = new.install().await?;
    crate::secrets::keep(&mut new, &args.name, &given)?;
    let mut source = source.as_table().cloned().unwrap_or_default();
    source.insert("version".into(), newest.as_str().into());
    new.table.insert("registry".into(), toml::Value::Table(source));
    println!("mcp-router update: {} {name} {pinned} → {newest}", args.name);
    for key in ["command", "args", "url", "env", "env_vars", "env_secrets", "integrity"] {
        let show =
            |t: &toml::Table| t.get(key).map(ToString::to_string).unwrap_or_else(|| "-".into());
        let (before, after) = (show(entry), show(&new.table));
        if before != after {
            println!("  {key}: {before} → {after}");
        }
    }
    let place = staged.as_ref().map(|s| (s.staging(), s.dir.as_path()));
    let trial = crate::trial::Trial::run(path, &args.name, &new.table, place).await?;
    if !args.yes && !crate::add::consent()? {
        println!("nothing changed");
        return Ok(1);
    }
    let rest = without(&text, &args.name, path)?;
    if let Some(staged) = staged {
        staged.commit()?;
    }
    crate::secrets::store(&args.name, &new.to_store)?;
    crate::add::write(path, &rest, &args.name, new.table, &format!("{name} {newest}"))?;
    // Consented as shown: its first start holds nothing the user has not seen.
    trial.approve()?;
    println!("updated `{}`: {pinned} → {newest}; its definitions pinned as shown", args.name);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn removing(text: &str, name: &str) -> (anyhow::Result<i32>, String) {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("c.toml");
        std::fs::write(&config, text).expect("write");
        let done = remove(&RemoveArgs { name: name.to_string(), config: config.clone() });
        (done, std::fs::read_to_string(&config).expect("read"))
    }

    /// The entry, its sub-tables and `add`'s note go; a user's comment before the next table,
    /// other entries and the top stay; an entry that is not a table of its own is refused.
    #[test]
    fn remove_takes_out_one_table_and_nothing_else() {
        let text = "model = \"x\"\n\n# io.github.a/b 1.0.0, added by mcp-router add\n[mcp_servers.b]\ncommand = \"npx\"\n\n[mcp_servers.b.env]\nK = \"v\"\n\n# mine\n[mcp_servers.c]\ncommand = \"c\"\n";
        let (done, after) = removing(text, "b");
        assert_eq!(done.expect("removed"), 0);
        // The blank lines around it stay (they are not its).
        assert_eq!(after, "model = \"x\"\n\n\n# mine\n[mcp_servers.c]\ncommand = \"c\"\n");
        let inline = "mcp_servers = { b = { command = \"x\" } }\n";
        let (done, after) = removing(inline, "b");
        assert!(done.is_err_and(|e| e.to_string().contains("not a table of its own")));
        assert_eq!(after, inline);
        let (done, _) = removing(text, "nope");
        assert!(done.is_err_and(|e| e.to_string().contains("no server `nope`")));
    }
}
