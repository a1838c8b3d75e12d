//! The secret store: the values of servers' secret environment variables (API keys, tokens),
//! kept out of the config file. An entry names them (`env_secrets = ["NOTES_TOKEN"]`); the
//! values live in `secrets.json` beside the sign-in tokens (0600, in a folder only this user may
//! enter, which no sandboxed server may read), by server and variable, and are put into the
//! server's environment when the config is read. Never logged, never in a message.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// Server → variable → value.
type Secrets = BTreeMap<String, BTreeMap<String, String>>;

/// The secret store: one private JSON file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretStore {
    file: PathBuf,
}

impl SecretStore {
    /// The store in `file`.
    pub fn at(file: impl Into<PathBuf>) -> Self {
        Self { file: file.into() }
    }

    /// `secrets.json` beside the sign-in tokens: in `$MCP_ROUTER_HOME`, else
    /// `$XDG_CONFIG_HOME/mcp-router`, else `~/.config/mcp-router`.
    pub fn default_location() -> Option<Self> {
        let tokens = mcp_connection_manager::oauth::TokenStore::default_location()?;
        Some(Self::at(tokens.path().parent()?.join("secrets.json")))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.file
    }

    fn read(&self) -> Result<Secrets, String> {
        match std::fs::read(&self.file) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                format!("the secret store {} cannot be read ({e})", self.file.display())
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Secrets::new()),
            Err(e) => Err(format!("the secret store {} cannot be read ({e})", self.file.display())),
        }
    }

    /// `server`'s value of `name`, if stored.
    pub fn get(&self, server: &str, name: &str) -> Result<Option<String>, String> {
        Ok(self.read()?.get(server).and_then(|vars| vars.get(name)).cloned())
    }

    /// The names stored for each server (never the values).
    pub fn names(&self) -> Result<BTreeMap<String, Vec<String>>, String> {
        let all = self.read()?;
        Ok(all.into_iter().map(|(server, vars)| (server, vars.into_keys().collect())).collect())
    }

    /// Store `server`'s `name` = `value` (the file replaced whole, 0600).
    pub fn set(&self, server: &str, name: &str, value: &str) -> Result<(), String> {
        let mut all = self.read()?;
        all.entry(server.to_string()).or_default().insert(name.to_string(), value.to_string());
        self.write(&all)
    }

    /// Forget `server`'s `name`, or all its secrets with `None`; how many were forgotten.
    pub fn remove(&self, server: &str, name: Option<&str>) -> Result<usize, String> {
        let mut all = self.read()?;
        let removed = match (all.get_mut(server), name) {
            (None, _) => 0,
            (Some(vars), Some(name)) => usize::from(vars.remove(name).is_some()),
            (Some(vars), None) => std::mem::take(vars).len(),
        };
        if all.get(server).is_some_and(BTreeMap::is_empty) {
            all.remove(server);
        }
        if removed > 0 {
            self.write(&all)?;
        }
        Ok(removed)
    }

    fn write(&self, all: &Secrets) -> Result<(), String> {
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", self.file.display());
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(fail)?;
        let partial = self.file.with_extension(format!("json.{}", std::process::id()));
        let text = serde_json::to_vec_pretty(all).map_err(|e| e.to_string())?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&partial)
            .map_err(fail)?;
        file.write_all(&text).and_then(|()| file.sync_all()).map_err(fail)?;
        std::fs::rename(&partial, &self.file).map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn secrets_are_kept_by_server_privately_and_forgotten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SecretStore::at(dir.path().join("home/secrets.json"));
        assert_eq!(store.get("notes", "TOKEN"), Ok(None), "an empty store");
        store.set("notes", "TOKEN", "s3cret").expect("set");
        store.set("notes", "OTHER", "x").expect("set");
        store.set("git", "TOKEN", "y").expect("set");
        assert_eq!(store.get("notes", "TOKEN"), Ok(Some("s3cret".into())));
        let mode = std::fs::metadata(store.path()).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let names = store.names().expect("names");
        assert_eq!(names["notes"], ["OTHER", "TOKEN"]);
        assert_eq!(store.remove("notes", Some("OTHER")), Ok(1));
        assert_eq!(store.remove("notes", None), Ok(1));
        assert_eq!(store.get("notes", "TOKEN"), Ok(None));
        assert_eq!(store.get("git", "TOKEN"), Ok(Some("y".into())), "another server's kept");
        std::fs::write(store.path(), "not json").expect("spoil");
        let error = store.get("git", "TOKEN").expect_err("unreadable");
        assert!(error.contains("cannot be read"), "{error}");
    }
}
