//! The router's config as text, for the commands that add to it (`add`, `update`, `import`,
//! `wire` for Codex): read (a missing file is empty), tables appended after every byte already
//! there, the result parsed back before it is written.

use std::path::Path;

use anyhow::Context as _;

/// The config at `path` as text and as TOML; a missing file is an empty one.
pub(crate) fn read(path: &Path) -> anyhow::Result<(String, toml::Table)> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).context(format!("reading {}", path.display())),
    };
    let table = toml::from_str(&text).context("the router's config is not TOML")?;
    Ok((text, table))
}

/// `existing` with `addition` after it, one blank line between them.
pub(crate) fn appended(existing: &str, addition: &str) -> String {
    let gap = match existing {
        "" => "",
        t if t.ends_with("\n\n") => "",
        t if t.ends_with('\n') => "\n",
        _ => "\n\n",
    };
    format!("{existing}{gap}{addition}")
}

/// `existing` with `[mcp_servers.NAME]` tables for `servers` appended (after `note` as a
/// comment line, when given), checked to parse.
pub(crate) fn with_servers(
    existing: &str,
    servers: impl IntoIterator<Item = (String, toml::Table)>,
    note: Option<&str>,
) -> anyhow::Result<String> {
    let servers: toml::Table =
        servers.into_iter().map(|(name, entry)| (name, toml::Value::Table(entry))).collect();
    let mut top = toml::Table::new();
    top.insert("mcp_servers".into(), toml::Value::Table(servers));
    let note = note.map(|n| format!("# {}\n", n.replace(|c: char| c.is_control(), " ")));
    let text =
        appended(existing, &format!("{}{}", note.unwrap_or_default(), toml::to_string(&top)?));
    let _: toml::Table = toml::from_str(&text).context(
        "adding to the config would not leave valid TOML (is `mcp_servers` an inline table?); nothing written",
    )?;
    Ok(text)
}

/// `text` written to `path`, its folder made when missing.
pub(crate) fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
