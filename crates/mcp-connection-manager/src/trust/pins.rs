//! The pin store: each server's pinned tool definitions, one JSON file per server in a
//! directory beside the tool catalog, and what a list of tools looks like against them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmcp::model::Tool;
use router_protocol::{
    DefinitionChange, DefinitionDecision, FieldDiff, McpToolDefinitionChangedEvent,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::trust::canonical::{PINNED_FIELDS, canonical, definition, sha256_hex};
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

/// One server's pins: each tool's canonical hash and pinned definition, by tool name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerPins {
    format: u32,
    /// By tool name.
    pub tools: BTreeMap<String, Pin>,
    /// Tools a host approved "always" (`approval = "ask"`), each with the identity (SHA-256)
    /// of the definition it approved: a changed tool asks again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub always: BTreeMap<String, String>,
}

/// One tool's pin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pin {
    /// SHA-256 of the definition's canonical JSON (RFC 8785), hex.
    pub sha256: String,
    /// The definition as pinned: name, title, description, schemas and annotations.
    pub definition: Value,
}

/// A tool as it is now: its name, pinned definition, hash and flags.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) name: String,
    pub(crate) definition: Value,
    pub(crate) sha256: String,
    pub(crate) flags: Vec<String>,
}

impl Seen {
    pub(crate) fn of(tool: &Tool) -> Self {
        let definition = definition(tool);
        let sha256 = sha256_hex(&canonical(&definition));
        let flags = flags(&definition);
        Self { name: tool.name.to_string(), definition, sha256, flags }
    }

    pub(crate) fn pin(&self) -> Pin {
        Pin { sha256: self.sha256.clone(), definition: self.definition.clone() }
    }

    /// The event for this tool against `pinned` (`None`: not pinned), with `decision`.
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
            tool: self.name.clone(),
            change,
            decision,
            diff: pinned.map(|pin| diff(&pin.definition, &self.definition)).unwrap_or_default(),
            flags: self.flags.clone(),
            sha256: self.sha256.clone(),
        }
    }
}

/// The fields of two definitions that differ, as canonical text cut to [`DIFF_BYTES`].
pub(crate) fn diff(before: &Value, after: &Value) -> Vec<FieldDiff> {
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
    PINNED_FIELDS
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

    /// `tools` of `server` against its pins: the tools that are not the pinned ones (each as
    /// the event a host would get, decision `held`) and every flagged one.
    pub fn review(&self, server: &str, tools: &[Tool]) -> Review {
        let pins = self.load(server);
        let mut review =
            Review { pinned: pins.as_ref().map(|p| p.tools.len()), ..Review::default() };
        for tool in tools {
            let seen = Seen::of(tool);
            let pinned = pins.as_ref().and_then(|p| p.tools.get(&seen.name));
            match (&pins, pinned) {
                (Some(_), Some(pin)) if pin.sha256 == seen.sha256 => {}
                (Some(_), _) => {
                    review.pending.push(seen.event(server, pinned, false, DefinitionDecision::Held))
                }
                (None, _) => {}
            }
            if !seen.flags.is_empty() {
                review.flagged.push((seen.name.clone(), seen.flags.clone()));
            }
        }
        review
    }

    /// Pin `tools` of `server` as they are now: those named in `names`, or with `names` empty
    /// every one not pinned as it is. Returns the names pinned anew.
    pub fn approve(
        &self,
        server: &str,
        tools: &[Tool],
        names: &[String],
    ) -> std::io::Result<Vec<String>> {
        let mut pins = self.load(server).unwrap_or_default();
        let mut approved = Vec::new();
        for tool in tools.iter().filter(|t| names.is_empty() || names.iter().any(|n| *n == t.name))
        {
            let seen = Seen::of(tool);
            if pins.tools.get(&seen.name).is_none_or(|pin| pin.sha256 != seen.sha256) {
                pins.tools.insert(seen.name.clone(), seen.pin());
                approved.push(seen.name);
            }
        }
        self.save(server, &pins)?;
        Ok(approved)
    }

    /// Forget `server`'s pins of `names`, or all of them with `names` empty (the next sight of
    /// the server pins its tools again). Returns how many were forgotten.
    pub fn forget(&self, server: &str, names: &[String]) -> std::io::Result<usize> {
        let Some(mut pins) = self.load(server) else { return Ok(0) };
        if names.is_empty() {
            let count = pins.tools.len();
            std::fs::remove_file(self.file(server))?;
            return Ok(count);
        }
        let before = pins.tools.len();
        pins.tools.retain(|name, _| !names.contains(name));
        self.save(server, &pins)?;
        Ok(before - pins.tools.len())
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
}
