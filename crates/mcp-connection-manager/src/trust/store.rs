//! The pin store: one JSON file per server identity (`<server>-<key>.json`, 0600) in a directory
//! beside the tool catalog. Every write takes the directory's lock, reads the file again and
//! merges (so no writer loses another's approval); a file that cannot be used is an error the
//! trust layer holds on, never an empty file to pin afresh.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use mcp_connection::{ServerConfig, TransportConfig};
use rmcp::model::Tool;
use router_protocol::{DefinitionDecision, DefinitionKind, McpToolDefinitionChangedEvent};

use crate::trust::canonical::sha256_hex;
use crate::trust::pins::{FORMAT, Pin, Seen, ServerPins};

/// Pinned definitions, one file per server identity, replaced atomically under a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinStore {
    dir: PathBuf,
}

/// Which pins a server has: its name (in events and messages) and the file its identity keeps
/// them in — the name and a hash of its transport, command or URL, arguments and working
/// directory, so that two projects' `time` servers of different arguments are pinned apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PinKey {
    /// The server's name.
    pub server: String,
    /// The file's name without `.json`.
    file: String,
    /// The directory it runs in, when its entry or its scope names one: where the shared
    /// router kept a scoped server's pins before they moved into the one store (read until
    /// its own file is written).
    dir: Option<PathBuf>,
}

impl PinKey {
    /// The pins of the server `config` configures. No env or header values are hashed (they
    /// may be secrets, and a new token is not a new server).
    pub fn of(config: &ServerConfig) -> Self {
        let (transport, dir) = match &config.transport {
            TransportConfig::Stdio { command, args, cwd, .. } => {
                (serde_json::json!({"stdio": command, "args": args, "cwd": cwd}), cwd.clone())
            }
            TransportConfig::StreamableHttp { url, .. } => (serde_json::json!({"http": url}), None),
        };
        let hash = sha256_hex(&transport.to_string());
        let file = format!("{}-{}", config.name, &hash[..12]);
        Self { server: config.name.clone(), file, dir }
    }

    /// The pins of a server known by its name alone (the file of the first pins format, read
    /// when a server's own file does not exist yet).
    pub fn named(server: &str) -> Self {
        Self { server: server.to_string(), file: server.to_string(), dir: None }
    }
}

/// A pins file that cannot be used: unreadable, not JSON of a known shape, or of a newer
/// format. Its server's definitions are held until it is fixed or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnusablePins {
    /// The file.
    pub file: PathBuf,
    /// What is wrong with it.
    pub why: String,
}

impl std::fmt::Display for UnusablePins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "its pins file {} cannot be used ({})", self.file.display(), self.why)
    }
}

impl std::error::Error for UnusablePins {}

/// Why a write of pins failed.
#[derive(Debug, thiserror::Error)]
pub enum PinsError {
    /// The file there now cannot be used: nothing was written over it.
    #[error(transparent)]
    Unusable(#[from] UnusablePins),
    /// The directory or the file could not be written.
    #[error("cannot write the pins: {0}")]
    Io(#[from] std::io::Error),
}

impl PinStore {
    /// Pins kept in `dir` (created when first written).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `pins/` beside the tool catalog's `tools/`: under `$MCP_ROUTER_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/mcp-router`, else `~/.cache/mcp-router`. `None` without any of them.
    pub fn default_location() -> Option<Self> {
        crate::toolcache::cache_base().map(|base| Self::at(base.join("pins")))
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the shared router kept the pins of the servers run for one working directory
    /// before they moved into the one store (`cwd/<hash of the directory>/` below it): read
    /// for a key whose own file is not written yet.
    fn for_directory(&self, dir: &Path) -> Self {
        use std::os::unix::ffi::OsStrExt as _;
        let text = String::from_utf8_lossy(dir.as_os_str().as_bytes());
        let hash = sha256_hex(&text);
        Self::at(self.dir.join("cwd").join(&hash[..16]))
    }

    /// The file of `key`.
    pub fn file(&self, key: &PinKey) -> PathBuf {
        self.dir.join(format!("{}.json", key.file))
    }

    /// `key`'s pins: `None` when it was never pinned (no file of its own, nor one its
    /// directory's store kept, nor one of its name alone from the first format); an error when
    /// the file cannot be used.
    pub fn load(&self, key: &PinKey) -> Result<Option<ServerPins>, UnusablePins> {
        if let Some(pins) = self.load_file(&self.file(key))? {
            return Ok(Some(pins));
        }
        if let Some(dir) = &key.dir {
            let old = self.for_directory(dir);
            if let Some(pins) = old.load_file(&old.file(key))? {
                return Ok(Some(pins));
            }
        }
        if key.file != key.server {
            return self.load_file(&self.file(&PinKey::named(&key.server)));
        }
        Ok(None)
    }

    fn load_file(&self, path: &Path) -> Result<Option<ServerPins>, UnusablePins> {
        let unusable = |why: String| UnusablePins { file: path.to_path_buf(), why };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(unusable(format!("cannot read it: {e}"))),
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| unusable(format!("not JSON: {e}")))?;
        match value.get("format").and_then(serde_json::Value::as_u64) {
            Some(format) if format > u64::from(FORMAT) => {
                return Err(unusable(format!(
                    "it is of format {format}, newer than this router's {FORMAT}"
                )));
            }
            Some(format) if format == u64::from(FORMAT) => {}
            _ => return Err(unusable("it has no pins format this router knows".to_string())),
        }
        serde_json::from_value(value).map(Some).map_err(|e| unusable(format!("not pins: {e}")))
    }

    /// Change `key`'s pins by `change`, under the directory's lock, on what the file holds now
    /// (empty when there is none); the result is written (a private file, replaced by rename)
    /// and returned. Nothing is written over a file that cannot be used.
    pub fn update<R>(
        &self,
        key: &PinKey,
        change: impl FnOnce(&mut ServerPins) -> R,
    ) -> Result<(R, ServerPins), PinsError> {
        let _lock = self.lock()?;
        let mut pins = self.load(key)?.unwrap_or_default();
        let answer = change(&mut pins);
        self.write(key, &pins)?;
        Ok((answer, pins))
    }

    /// Write `ours` — `base` as read, changed by this writer — merged with what the file holds
    /// now: what this writer changed is taken from `ours`, the rest from the file, so another
    /// writer's approvals since `base` are kept. Returns what was written.
    pub fn save_merged(
        &self,
        key: &PinKey,
        base: &ServerPins,
        ours: &ServerPins,
    ) -> Result<ServerPins, PinsError> {
        self.update(key, |now| *now = merged(base, ours, now)).map(|((), pins)| pins)
    }

    fn lock(&self) -> std::io::Result<std::fs::File> {
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(self.dir.join(".lock"))?;
        file.lock()?;
        Ok(file)
    }

    fn write(&self, key: &PinKey, pins: &ServerPins) -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let pins = ServerPins { format: FORMAT, ..pins.clone() };
        let text = serde_json::to_vec_pretty(&pins).map_err(std::io::Error::other)?;
        let path = self.file(key);
        let partial = path.with_extension(format!("json.{}.partial", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)?;
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&partial, &path)
    }

    /// `tools` of `key`'s server against its pins, and the other definitions held for it: what
    /// is not the pinned definition (each as the event a host would get, decision `held`) and
    /// every flagged tool. A pins file that cannot be used is the error.
    pub fn review(&self, key: &PinKey, tools: &[Tool]) -> Result<Review, UnusablePins> {
        let server = key.server.as_str();
        let pins = self.load(key)?;
        let pinned_tools = pins.as_ref().and_then(|p| p.tools.as_ref());
        let mut review = Review { pinned: pinned_tools.map(BTreeMap::len), ..Review::default() };
        for tool in tools {
            let seen = Seen::of(tool);
            let pinned = pinned_tools.and_then(|p| p.get(&seen.name));
            if pinned_tools.is_some() && pinned.is_none_or(|pin| pin.sha256 != seen.sha256) {
                review.pending.push(seen.event(server, pinned, false, DefinitionDecision::Held));
            }
            if !seen.flags.is_empty() {
                review.flagged.push((seen.name.clone(), seen.flags.clone()));
            }
        }
        let Some(pins) = pins else { return Ok(review) };
        for (kind, held) in &pins.held {
            for (name, pin) in held {
                let seen = Seen::held(*kind, name, pin);
                let pinned = pins.pin(*kind, name);
                review.pending.push(seen.event(server, pinned, false, DefinitionDecision::Held));
            }
        }
        for kind in &DefinitionKind::ALL[1..] {
            if let Some(pinned) = pins.of(*kind) {
                review.others.push((*kind, pinned.len()));
            }
        }
        Ok(review)
    }

    /// Pin what is held of `key`'s server as it is now: its `tools` (those not pinned as they
    /// are) and its held prompts, templates and skills — those named in `names`, or every one
    /// with `names` empty. Returns the names pinned anew.
    pub fn approve(
        &self,
        key: &PinKey,
        tools: &[Tool],
        names: &[String],
    ) -> Result<Vec<String>, PinsError> {
        let named = |name: &str| names.is_empty() || names.iter().any(|n| n == name);
        let approve = |pins: &mut ServerPins| {
            let mut approved = Vec::new();
            for tool in tools.iter().filter(|t| named(&t.name)) {
                let seen = Seen::of(tool);
                let pinned = pins.pin(DefinitionKind::Tool, &seen.name);
                if pinned.is_none_or(|pin| pin.sha256 != seen.sha256) {
                    pins.put(DefinitionKind::Tool, &seen.name, seen.pin());
                    approved.push(seen.name);
                }
            }
            let held: Vec<(DefinitionKind, String, Pin)> = pins
                .held
                .iter()
                .flat_map(|(kind, held)| held.iter().map(|(name, pin)| (*kind, name, pin)))
                .filter(|(_, name, _)| named(name))
                .map(|(kind, name, pin)| (kind, name.clone(), pin.clone()))
                .collect();
            for (kind, name, pin) in held {
                pins.put(kind, &name, pin);
                approved.push(name);
            }
            approved
        };
        self.update(key, approve).map(|(approved, _)| approved)
    }

    /// The held definitions of `key`'s server (all but tools), by kind and name. Only looks.
    pub fn held(
        &self,
        key: &PinKey,
    ) -> Result<BTreeMap<DefinitionKind, BTreeMap<String, Pin>>, UnusablePins> {
        Ok(self.load(key)?.map(|p| p.held).unwrap_or_default())
    }

    /// Forget `key`'s pins of `names` (of any kind), or all of them with `names` empty: then the
    /// file goes, even one that cannot be used (the next sight of the server pins again).
    /// Returns how many were forgotten.
    pub fn forget(&self, key: &PinKey, names: &[String]) -> Result<usize, PinsError> {
        let count = |pins: &ServerPins| {
            DefinitionKind::ALL.iter().filter_map(|k| pins.of(*k)).map(BTreeMap::len).sum::<usize>()
        };
        if names.is_empty() {
            let _lock = self.lock()?;
            let forgotten = self.load(key).ok().flatten().as_ref().map_or(0, count);
            for file in [self.file(key), self.file(&PinKey::named(&key.server))] {
                match std::fs::remove_file(file) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                    _ => {}
                }
            }
            return Ok(forgotten);
        }
        let forget = |pins: &mut ServerPins| {
            let before = count(pins);
            for kind in DefinitionKind::ALL {
                if let Some(pinned) = pins.slot_mut(kind) {
                    pinned.retain(|name, _| !names.contains(name));
                }
                for name in names {
                    pins.unhold(kind, name);
                }
            }
            before - count(pins)
        };
        self.update(key, forget).map(|(forgotten, _)| forgotten)
    }
}

/// `base` changed by one writer (`ours`) and by others (`theirs`, the file now): each entry
/// `ours` changed from `base` as `ours` has it, every other as `theirs` has it.
pub(crate) fn merged(base: &ServerPins, ours: &ServerPins, theirs: &ServerPins) -> ServerPins {
    let mut out = ServerPins { format: FORMAT, ..ServerPins::default() };
    let none = BTreeMap::new();
    for kind in DefinitionKind::ALL {
        let (b, o, t) = (base.of(kind), ours.of(kind), theirs.of(kind));
        if o.is_some() || t.is_some() {
            let map = three_way(b.unwrap_or(&none), o.unwrap_or(&none), t.unwrap_or(&none));
            *out.of_mut(kind) = map;
        }
        let held = |p: &ServerPins| p.held.get(&kind).cloned().unwrap_or_default();
        let map = three_way(&held(base), &held(ours), &held(theirs));
        if !map.is_empty() {
            out.held.insert(kind, map);
        }
    }
    let set = |s: &BTreeSet<DefinitionKind>| s.iter().map(|k| (*k, ())).collect::<BTreeMap<_, _>>();
    out.opening = three_way(&set(&base.opening), &set(&ours.opening), &set(&theirs.opening))
        .into_keys()
        .collect();
    out.always = three_way(&base.always, &ours.always, &theirs.always);
    out
}

/// Each key's value as `ours` has it where it differs from `base`, else as `theirs` has it.
fn three_way<K: Ord + Clone, V: Clone + PartialEq>(
    base: &BTreeMap<K, V>,
    ours: &BTreeMap<K, V>,
    theirs: &BTreeMap<K, V>,
) -> BTreeMap<K, V> {
    let keys: BTreeSet<&K> = base.keys().chain(ours.keys()).chain(theirs.keys()).collect();
    keys.into_iter()
        .filter_map(|key| {
            let mine = ours.get(key);
            let value = if mine != base.get(key) { mine } else { theirs.get(key) };
            value.map(|v| (key.clone(), v.clone()))
        })
        .collect()
}

/// A server's tools against its pins (see [`PinStore::review`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Review {
    /// How many tools are pinned; `None` when the server was never pinned.
    pub pinned: Option<usize>,
    /// The tools that are not the pinned ones.
    pub pending: Vec<McpToolDefinitionChangedEvent>,
    /// Each flagged tool with its flags.
    pub flagged: Vec<(String, Vec<String>)>,
    /// How many prompts, resource templates and skills are pinned, for the kinds seen.
    pub others: Vec<(DefinitionKind, usize)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "description": description,
            "inputSchema": {"type": "object"}}))
        .expect("a tool")
    }

    fn stdio(name: &str, args: &[&str]) -> ServerConfig {
        ServerConfig::stdio(name, "mcp-server-time", args.iter().map(|a| a.to_string()).collect())
    }

    #[test]
    fn a_file_that_cannot_be_used_is_an_error_never_an_empty_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = PinStore::at(dir.path());
        let key = PinKey::of(&stdio("time", &[]));
        assert_eq!(store.load(&key), Ok(None), "never pinned");
        store.approve(&key, &[tool("now", "Now.")], &[]).expect("pinned");
        let good = std::fs::read_to_string(store.file(&key)).expect("written");
        for (text, why) in [
            (good[..good.len() / 2].to_string(), "not JSON"),
            ("{\"tools\": {}}".to_string(), "no pins format"),
            (good.replace("\"format\": 1", "\"format\": 2"), "format 2, newer"),
            ("{\"format\": 1, \"tools\": 7}".to_string(), "not pins"),
        ] {
            std::fs::write(store.file(&key), &text).expect("damaged");
            let unusable = store.load(&key).expect_err(why);
            assert!(unusable.why.contains(why), "{why}: {unusable}");
            assert!(unusable.to_string().contains(&store.file(&key).display().to_string()));
            // Nothing is written over it: an approval fails and leaves the file as it was.
            let approved = store.approve(&key, &[tool("now", "Later.")], &[]);
            assert!(matches!(approved, Err(PinsError::Unusable(_))), "{why}");
            assert_eq!(std::fs::read_to_string(store.file(&key)).expect("kept"), text);
        }
        // Forgetting every pin removes even an unusable file.
        store.forget(&key, &[]).expect("forgotten");
        assert_eq!(store.load(&key), Ok(None));
    }

    #[test]
    fn same_named_servers_of_different_arguments_keep_pins_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = PinStore::at(dir.path());
        let (a, b) =
            (PinKey::of(&stdio("time", &["--tz", "UTC"])), PinKey::of(&stdio("time", &[])));
        assert_ne!(store.file(&a), store.file(&b));
        store.approve(&a, &[tool("now", "Now in UTC.")], &[]).expect("a");
        assert_eq!(store.load(&b), Ok(None), "b was never pinned");
        store.approve(&b, &[tool("now", "Now here.")], &[]).expect("b");
        let description = |key: &PinKey| {
            let pins = store.load(key).expect("usable").expect("pinned");
            pins.tools.expect("tools")["now"].definition["description"].clone()
        };
        assert_eq!((description(&a), description(&b)), (json!("Now in UTC."), json!("Now here.")));
        // A file of the first format, named after the server alone, is read until the
        // server's own is written.
        let old = PinKey::named("calc");
        store.approve(&old, &[tool("add", "Add.")], &[]).expect("old");
        let new = PinKey::of(&stdio("calc", &[]));
        assert!(store.load(&new).expect("usable").is_some(), "the old file is read");
    }

    /// A scoped server's pins written where the shared router kept them before the one store
    /// (its directory's folder) are read until its own file is written: nothing pinned is lost.
    #[test]
    fn a_directory_servers_pins_from_before_the_one_store_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = PinStore::at(dir.path());
        let mut config = stdio("calc", &[]);
        if let TransportConfig::Stdio { cwd, .. } = &mut config.transport {
            *cwd = Some(PathBuf::from("/w/one"));
        }
        let key = PinKey::of(&config);
        let old = store.for_directory(Path::new("/w/one"));
        old.approve(&key, &[tool("add", "Add.")], &[]).expect("pinned the old way");
        let pins = store.load(&key).expect("usable").expect("found in the old folder");
        assert!(pins.tools.expect("tools").contains_key("add"));
        let elsewhere = PinKey::of(&stdio("calc", &[]));
        assert_eq!(store.load(&elsewhere), Ok(None), "another directory's are not its own");
    }

    #[test]
    fn writers_at_once_keep_each_others_approvals() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = PinKey::of(&stdio("calc", &[]));
        let names: Vec<String> = (0..16).map(|i| format!("tool{i}")).collect();
        std::thread::scope(|scope| {
            for name in &names {
                let (store, key) = (PinStore::at(dir.path()), key.clone());
                scope.spawn(move || {
                    store.approve(&key, &[tool(name, "T.")], &[]).expect("approved");
                });
            }
        });
        let pins = PinStore::at(dir.path()).load(&key).expect("usable").expect("pins");
        let pinned: Vec<&String> = pins.tools.as_ref().expect("tools").keys().collect();
        assert_eq!(pinned.len(), names.len(), "every approval kept: {pinned:?}");
    }

    #[test]
    fn a_merge_takes_our_changes_and_keeps_theirs() {
        let pin = |sha: &str| Pin { sha256: sha.to_string(), definition: json!({}) };
        let mut base = ServerPins::default();
        base.put(DefinitionKind::Tool, "a", pin("1"));
        base.put(DefinitionKind::Tool, "b", pin("1"));
        let mut ours = base.clone();
        ours.put(DefinitionKind::Tool, "a", pin("2"));
        ours.always.insert("a".into(), "2".into());
        let mut theirs = base.clone();
        theirs.put(DefinitionKind::Tool, "b", pin("3"));
        theirs.put(DefinitionKind::Prompt, "p", pin("4"));
        let out = merged(&base, &ours, &theirs);
        let sha = |kind, name| out.pin(kind, name).map(|p| p.sha256.clone());
        assert_eq!(sha(DefinitionKind::Tool, "a").as_deref(), Some("2"), "ours");
        assert_eq!(sha(DefinitionKind::Tool, "b").as_deref(), Some("3"), "theirs");
        assert_eq!(sha(DefinitionKind::Prompt, "p").as_deref(), Some("4"), "their new kind");
        assert_eq!(out.always.get("a").map(String::as_str), Some("2"));
        // What another writer removed stays removed when we did not touch it.
        let mut gone = base.clone();
        gone.of_mut(DefinitionKind::Tool).remove("b");
        let out = merged(&base, &ours, &gone);
        assert!(out.pin(DefinitionKind::Tool, "b").is_none());
    }
}
