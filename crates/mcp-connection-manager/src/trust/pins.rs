//! The pin store: each server's pinned definitions (tools, prompts, resource templates,
//! skills), one JSON file per server in a directory beside the tool catalog, and what a list of
//! tools looks like against them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rmcp::model::Tool;
use router_protocol::{
    DefinitionChange, DefinitionDecision, DefinitionKind, FieldDiff, McpToolDefinitionChangedEvent,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::trust::canonical::{canonical, definition, pinned_fields, sha256_hex};
use crate::trust::flags::{flags, is_invisible};

/// The pins file's format; a file of another format is not read (its server is seen afresh).
const FORMAT: u32 = 1;
/// Most bytes of a field's text in a diff.
const DIFF_BYTES: usize = 2048;

/// Pinned tool definitions, one file per server (`<server>.json`, 0600), replaced atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinStore {
    dir: PathBuf,
}

/// One server's pins: each definition's canonical hash and pinned definition, by kind and name.
/// A kind left out was never seen.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerPins {
    format: u32,
    /// Tools, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<BTreeMap<String, Pin>>,
    /// Prompts, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<BTreeMap<String, Pin>>,
    /// Resource templates, by URI template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_templates: Option<BTreeMap<String, Pin>>,
    /// Skills, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<BTreeMap<String, Pin>>,
    /// Kinds first seen in pages whose list was not yet followed to its end: what is new to
    /// them is pinned as first seen until it is.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub opening: BTreeSet<DefinitionKind>,
    /// Definitions held, as last seen, by kind and name — all but tools (whose last list is the
    /// tool catalog), so that `mcp-router trust` can show and approve them without the server.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held: BTreeMap<DefinitionKind, BTreeMap<String, Pin>>,
    /// Tools a host approved "always" (`approval = "ask"`), each with the identity (SHA-256)
    /// of the definition it approved: a changed tool asks again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub always: BTreeMap<String, String>,
}

impl ServerPins {
    /// The pins of `kind`; `None` when that kind was never seen.
    pub fn of(&self, kind: DefinitionKind) -> Option<&BTreeMap<String, Pin>> {
        self.slot(kind).as_ref()
    }

    fn slot(&self, kind: DefinitionKind) -> &Option<BTreeMap<String, Pin>> {
        match kind {
            DefinitionKind::Tool => &self.tools,
            DefinitionKind::Prompt => &self.prompts,
            DefinitionKind::ResourceTemplate => &self.resource_templates,
            DefinitionKind::Skill => &self.skills,
        }
    }

    fn slot_mut(&mut self, kind: DefinitionKind) -> &mut Option<BTreeMap<String, Pin>> {
        match kind {
            DefinitionKind::Tool => &mut self.tools,
            DefinitionKind::Prompt => &mut self.prompts,
            DefinitionKind::ResourceTemplate => &mut self.resource_templates,
            DefinitionKind::Skill => &mut self.skills,
        }
    }

    /// The pins of `kind`, made (empty) if that kind was never seen.
    pub(crate) fn of_mut(&mut self, kind: DefinitionKind) -> &mut BTreeMap<String, Pin> {
        self.slot_mut(kind).get_or_insert_with(BTreeMap::new)
    }

    /// `name` of `kind`'s pin.
    pub fn pin(&self, kind: DefinitionKind, name: &str) -> Option<&Pin> {
        self.of(kind)?.get(name)
    }

    /// Pin `pin` as `name` of `kind`, no longer held.
    pub(crate) fn put(&mut self, kind: DefinitionKind, name: &str, pin: Pin) {
        self.unhold(kind, name);
        self.of_mut(kind).insert(name.to_string(), pin);
    }

    /// Keep `pin` as the held definition of `name`; whether that changed anything.
    pub(crate) fn hold(&mut self, kind: DefinitionKind, name: &str, pin: &Pin) -> bool {
        let held = self.held.entry(kind).or_default();
        if held.get(name).is_some_and(|p| p.sha256 == pin.sha256) {
            return false;
        }
        held.insert(name.to_string(), pin.clone());
        true
    }

    /// Forget the held definition of `name`; whether there was one.
    pub(crate) fn unhold(&mut self, kind: DefinitionKind, name: &str) -> bool {
        let Some(held) = self.held.get_mut(&kind) else { return false };
        let was = held.remove(name).is_some();
        if held.is_empty() {
            self.held.remove(&kind);
        }
        was
    }
}

/// One tool's pin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pin {
    /// SHA-256 of the definition's canonical JSON (RFC 8785), hex.
    pub sha256: String,
    /// The definition as pinned: name, title, description, schemas and annotations.
    pub definition: Value,
}

/// A definition as it is now: its kind, name, pinned definition, hash and flags.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) kind: DefinitionKind,
    pub(crate) name: String,
    pub(crate) definition: Value,
    pub(crate) sha256: String,
    pub(crate) flags: Vec<String>,
}

impl Seen {
    pub(crate) fn of(tool: &Tool) -> Self {
        Self::new(DefinitionKind::Tool, tool.name.to_string(), tool)
    }

    /// `item` (a prompt, template or skill as its server sent it) seen as `name` of `kind`.
    pub(crate) fn new(kind: DefinitionKind, name: String, item: &impl Serialize) -> Self {
        let definition = definition(kind, item);
        let sha256 = sha256_hex(&canonical(&definition));
        let flags = flags(&definition);
        Self { kind, name, definition, sha256, flags }
    }

    /// A held definition as the pins file keeps it.
    pub(crate) fn held(kind: DefinitionKind, name: &str, pin: &Pin) -> Self {
        let flags = flags(&pin.definition);
        let (definition, sha256) = (pin.definition.clone(), pin.sha256.clone());
        Self { kind, name: name.to_string(), definition, sha256, flags }
    }

    pub(crate) fn pin(&self) -> Pin {
        Pin { sha256: self.sha256.clone(), definition: self.definition.clone() }
    }

    /// The event for this definition against `pinned` (`None`: not pinned), with `decision`.
    pub(crate) fn event(
        &self,
        server: &str,
        pinned: Option<&Pin>,
        first_sight: bool,
        decision: DefinitionDecision,
    ) -> McpToolDefinitionChangedEvent {
        let change = match (first_sight, pinned) {
            (true, _) => DefinitionChange::FirstSeen,
            (false, Some(_)) => DefinitionChange::Changed,
            (false, None) => DefinitionChange::Added,
        };
        McpToolDefinitionChangedEvent {
            server: server.to_string(),
            kind: self.kind,
            tool: self.name.clone(),
            change,
            decision,
            diff: pinned
                .map(|pin| diff(self.kind, &pin.definition, &self.definition))
                .unwrap_or_default(),
            flags: self.flags.clone(),
            sha256: self.sha256.clone(),
        }
    }
}

/// The fields of two definitions that differ, as canonical text cut to [`DIFF_BYTES`].
pub(crate) fn diff(kind: DefinitionKind, before: &Value, after: &Value) -> Vec<FieldDiff> {
    let text = |value: &Value, field: &str| {
        value.get(field).map(|v| {
            // Invisible characters are shown by their code point, so a person sees them.
            let mut text: String =
                canonical(v)
                    .chars()
                    .map(|c| {
                        if is_invisible(c) {
                            format!("<U+{:04X}>", c as u32)
                        } else {
                            c.to_string()
                        }
                    })
                    .collect();
            if text.len() > DIFF_BYTES {
                let mut end = DIFF_BYTES;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                text.push('…');
            }
            text
        })
    };
    pinned_fields(kind)
        .iter()
        .filter(|field| **field != "name")
        .filter(|field| before.get(**field) != after.get(**field))
        .map(|field| FieldDiff {
            field: field.to_string(),
            before: text(before, field),
            after: text(after, field),
        })
        .collect()
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

    /// The pins of the servers run for one working directory (the shared router's
    /// `shared = "cwd"` entries): a store of their own, `cwd/<hash of the directory>/` below
    /// this one, so one directory's server neither takes nor moves another's pins.
    pub fn for_directory(&self, dir: &Path) -> Self {
        use std::os::unix::ffi::OsStrExt as _;
        let text = String::from_utf8_lossy(dir.as_os_str().as_bytes());
        let hash = crate::trust::canonical::sha256_hex(&text);
        Self::at(self.dir.join("cwd").join(&hash[..16]))
    }

    fn file(&self, server: &str) -> PathBuf {
        self.dir.join(format!("{server}.json"))
    }

    /// `server`'s pins; `None` when its tools were never pinned (or the file is unreadable,
    /// which is said in the log).
    pub fn load(&self, server: &str) -> Option<ServerPins> {
        let path = self.file(server);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot read the pins");
                return None;
            }
        };
        match serde_json::from_str::<ServerPins>(&text) {
            Ok(pins) if pins.format == FORMAT => Some(pins),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "unreadable pins ignored");
                None
            }
        }
    }

    /// Write `server`'s pins (a private file, replaced by rename).
    pub fn save(&self, server: &str, pins: &ServerPins) -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::create_dir_all(&self.dir)?;
        let pins = ServerPins { format: FORMAT, ..pins.clone() };
        let text = serde_json::to_vec_pretty(&pins).map_err(std::io::Error::other)?;
        let path = self.file(server);
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

    /// `tools` of `server` against its pins, and the other definitions held for it: what is not
    /// the pinned definition (each as the event a host would get, decision `held`) and every
    /// flagged tool.
    pub fn review(&self, server: &str, tools: &[Tool]) -> Review {
        let pins = self.load(server);
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
        let Some(pins) = pins else { return review };
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
        review
    }

    /// Pin what is held of `server` as it is now: its `tools` (those not pinned as they are)
    /// and its held prompts, templates and skills — those named in `names`, or every one with
    /// `names` empty. Returns the names pinned anew.
    pub fn approve(
        &self,
        server: &str,
        tools: &[Tool],
        names: &[String],
    ) -> std::io::Result<Vec<String>> {
        let mut pins = self.load(server).unwrap_or_default();
        let mut approved = Vec::new();
        let named = |name: &str| names.is_empty() || names.iter().any(|n| n == name);
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
        self.save(server, &pins)?;
        Ok(approved)
    }

    /// The held definitions of `server` (all but tools), by kind and name. Only looks.
    pub fn held(&self, server: &str) -> BTreeMap<DefinitionKind, BTreeMap<String, Pin>> {
        self.load(server).map(|p| p.held).unwrap_or_default()
    }

    /// Forget `server`'s pins of `names` (of any kind), or all of them with `names` empty (the
    /// next sight of the server pins again). Returns how many were forgotten.
    pub fn forget(&self, server: &str, names: &[String]) -> std::io::Result<usize> {
        let Some(mut pins) = self.load(server) else { return Ok(0) };
        let count = |pins: &ServerPins| {
            DefinitionKind::ALL.iter().filter_map(|k| pins.of(*k)).map(BTreeMap::len).sum::<usize>()
        };
        if names.is_empty() {
            let forgotten = count(&pins);
            std::fs::remove_file(self.file(server))?;
            return Ok(forgotten);
        }
        let before = count(&pins);
        for kind in DefinitionKind::ALL {
            if let Some(pinned) = pins.slot_mut(kind) {
                pinned.retain(|name, _| !names.contains(name));
            }
            for name in names {
                pins.unhold(kind, name);
            }
        }
        let after = count(&pins);
        self.save(server, &pins)?;
        Ok(before - after)
    }
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
