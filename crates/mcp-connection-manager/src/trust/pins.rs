//! One server's pins (tools, prompts, resource templates, skills, each definition's canonical
//! hash), a definition as it is seen now, and the diff between the two. The files they are kept
//! in are `store.rs`'s.

use std::collections::{BTreeMap, BTreeSet};

use rmcp::model::Tool;
use router_protocol::{
    DefinitionChange, DefinitionDecision, DefinitionKind, FieldDiff, McpToolDefinitionChangedEvent,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::trust::canonical::{canonical, definition, pinned_fields, sha256_hex};
use crate::trust::flags::{flags, is_invisible};

/// The pins file's format; a file of another format is not used (its server's definitions are
/// held until it is fixed or removed).
pub(crate) const FORMAT: u32 = 1;
/// Most bytes of a field's text in a diff.
const DIFF_BYTES: usize = 2048;

/// One server's pins: each definition's canonical hash and pinned definition, by kind and name.
/// A kind left out was never seen.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerPins {
    pub(crate) format: u32,
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

    pub(crate) fn slot_mut(&mut self, kind: DefinitionKind) -> &mut Option<BTreeMap<String, Pin>> {
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
