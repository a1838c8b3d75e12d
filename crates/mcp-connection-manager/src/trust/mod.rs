//! Trust in what the model is given: every server's tool definitions pinned on first sight
//! (`pins.rs`, a canonical SHA-256 of each, `canonical.rs`; kept per server identity by
//! `store.rs`), a definition that is not the pinned one held from the model until approved —
//! or accepted, or its server refused, by the server's `tool_changes` — with an
//! `mcp_tool_definition_changed` event and a question to the host, suspicious text flagged and
//! invisible characters taken out (`flags.rs`).
//!
//! Trust fails closed: a pins file that cannot be used, or a lock poisoned by a panic, holds
//! every definition of the server, with a message that says why; nothing is pinned afresh
//! over it. Pins written by another process (`mcp-router trust approve`, another router) are
//! seen while the router runs: the pins directory is watched, and a call of a held definition
//! reads the files again before it is refused.

pub(crate) mod canonical;
mod files;
pub(crate) mod flags;
mod held;
pub(crate) mod pins;
pub(crate) mod store;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mcp_connection::{HostHandler, ToolChanges};
use rmcp::model::Tool;
use router_protocol::{
    DefinitionChange, DefinitionDecision, DefinitionKind, EventMsg, EventSender,
    McpToolDefinitionChangedEvent,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::trust::files::Loaded;
use crate::trust::flags::without_invisible;
use crate::trust::pins::{Seen, ServerPins};
use crate::trust::store::{PinKey, PinStore};

/// What holds a list of tools: a connection's `Arc<Vec<Tool>>`, or a catalog.
pub(crate) type Owner = Arc<dyn std::any::Any + Send + Sync>;

/// Why everything is held after a panic while the pins were in hand.
pub(crate) const POISONED: &str = "the router's trust state was lost to an internal error (a panic while it was in use); restart the router";

/// Definitions the model may see: made only here, by admitting a list against its server's
/// pins, so a list path that skips the trust layer does not compile.
#[derive(Clone, Debug)]
pub(crate) struct Shown<L>(L);

impl<L> Shown<L> {
    /// Only the trust layer (this module and its children) makes one.
    fn new(list: L) -> Self {
        Self(list)
    }

    /// The definitions.
    pub(crate) fn get(&self) -> &L {
        &self.0
    }

    /// The definitions, to hand on.
    pub(crate) fn into_inner(self) -> L {
        self.0
    }
}

impl<L> std::ops::Deref for Shown<L> {
    type Target = L;

    fn deref(&self) -> &L {
        &self.0
    }
}

/// A server's tools as the model may see them.
pub(crate) struct Admitted {
    /// The tools that match their pins (or were just pinned), without invisible characters.
    pub(crate) visible: Shown<Arc<Vec<Tool>>>,
    /// The tools held: not the pinned ones.
    pub(crate) held: Vec<Held>,
}

/// What a list of definitions comes to against a server's pins.
#[derive(Default)]
struct Verdict {
    /// Indices of the definitions shown.
    visible: Vec<usize>,
    held: Vec<Held>,
    /// Questions for the host: the event and the pin an approval makes (for the server the
    /// list is of).
    asks: Vec<(McpToolDefinitionChangedEvent, pins::Pin)>,
    /// A pin changed: the file is written.
    changed: bool,
    /// The kind's first sight was open.
    opened: bool,
}

/// A definition held from the model.
pub(crate) struct Held {
    pub(crate) tool: String,
    pub(crate) change: DefinitionChange,
    /// The fields that differ from the pin (empty for an added one).
    pub(crate) fields: Vec<String>,
    /// Held because the pins cannot be used at all (the file, or a poisoned lock): why.
    pub(crate) unusable: Option<Arc<str>>,
}

impl Held {
    /// `tool`, held because the pins cannot be used (`why`).
    fn unusable(tool: String, why: &Arc<str>) -> Self {
        let change = DefinitionChange::Changed;
        Self { tool, change, fields: Vec::new(), unusable: Some(why.clone()) }
    }
}

#[derive(Default)]
struct ServerTrust {
    /// Whose pins these are (set when the manager launches the server; its name alone before).
    key: Option<PinKey>,
    /// Loaded on first use (empty when the server was never seen).
    pins: Option<Loaded>,
    /// The last list of tools admitted (what holds it, kept so its address is not reused, and
    /// the generation then) and what came of it.
    last: Option<(Owner, u64, Arc<Admitted>)>,
    /// (kind, name, hash) of the definitions the host was told of, so it is told once.
    told: HashSet<(DefinitionKind, String, String)>,
    /// The prompts, templates and skills held now, by kind and name.
    held: BTreeMap<(DefinitionKind, String), Held>,
    /// The kinds whose first page was admitted while the router runs.
    first_pages: HashSet<DefinitionKind>,
    /// Where its held definitions are approved from (a scoped instance's directory).
    approve_in: Option<std::path::PathBuf>,
}

impl ServerTrust {
    fn key(&self, server: &str) -> PinKey {
        self.key.clone().unwrap_or_else(|| PinKey::named(crate::identity::name_of(server)))
    }

    /// The pins, read on first use.
    fn loaded(&mut self, store: &PinStore, server: &str) -> &mut Loaded {
        let key = self.key(server);
        self.pins.get_or_insert_with(|| Loaded::read(store, &key))
    }
}

/// The pins of every server and what they admit.
pub(crate) struct Trust {
    store: Option<PinStore>,
    events: EventSender,
    host: Arc<dyn HostHandler>,
    /// The command that approves a held definition, as messages print it.
    approve_command: String,
    /// Bumped when a pin changes while the router runs (a host's approval, a file written by
    /// another process): lists are admitted again.
    generation: AtomicU64,
    servers: Mutex<HashMap<String, ServerTrust>>,
    /// Watches the pins directory while the router runs (`None`: no store, or no watcher).
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Trust {
    /// Pins kept in `store` (`None`: nothing is pinned or held; invisible characters are still
    /// taken out); `approve_command` (`None`: `mcp-router trust approve`) is what a held
    /// definition's message tells the user to run.
    pub(crate) fn new(
        store: Option<PinStore>,
        events: EventSender,
        host: Arc<dyn HostHandler>,
        approve_command: Option<String>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            _watcher: store.as_ref().and_then(|store| files::watch(store, this.clone())),
            store,
            events,
            host,
            approve_command: approve_command
                .unwrap_or_else(|| "mcp-router trust approve".to_string()),
            generation: AtomicU64::new(0),
            servers: Mutex::new(HashMap::new()),
        })
    }

    /// Whether definitions are pinned (a pin store is set).
    pub(crate) fn pins_on(&self) -> bool {
        self.store.is_some()
    }

    /// Changes whenever a pin changed while the router runs.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// What `server`'s `tools` (held by `owner`) admit under `policy`; the same list (the same
    /// owner) is admitted once per generation. First sight pins every tool — `unshown` too,
    /// the ones the config's filters leave out, so that letting one in later does not hold it;
    /// a tool that is not its pin is held (`Hold`, `Refuse`) or pinned as it is now
    /// (`Accept`), each announced once. Pins that cannot be used hold every tool.
    pub(crate) fn admit(
        self: &Arc<Self>,
        server: &str,
        policy: ToolChanges,
        owner: Owner,
        tools: &[Tool],
        unshown: &[Tool],
    ) -> Arc<Admitted> {
        let generation = self.generation();
        let Ok(mut servers) = self.servers.lock() else {
            let why: Arc<str> = Arc::from(POISONED);
            return Arc::new(all_held(tools, &why));
        };
        let state = servers.entry(server.to_string()).or_default();
        if let Some((last, at, admitted)) = &state.last
            && std::ptr::addr_eq(Arc::as_ptr(last), Arc::as_ptr(&owner))
            && *at == generation
        {
            return admitted.clone();
        }
        let Some(store) = &self.store else {
            let admitted = Arc::new(plain(tools));
            state.last = Some((owner, generation, admitted.clone()));
            return admitted;
        };
        let key = state.key(server);
        let loaded = state.pins.get_or_insert_with(|| Loaded::read(store, &key));
        let pins = match loaded {
            Loaded::Usable { now, .. } => now,
            Loaded::Unusable(unusable) => {
                let why: Arc<str> = Arc::from(unusable.to_string());
                let admitted = Arc::new(all_held(tools, &why));
                state.last = Some((owner, generation, admitted.clone()));
                return admitted;
            }
        };
        let seen: Vec<Seen> = tools.iter().map(Seen::of).collect();
        let judged = Judged::whole(DefinitionKind::Tool, policy);
        let Verdict { visible, held, asks, changed, opened } =
            self.judge(server, judged, pins, &mut state.told, &seen);
        let unpinned = |t: &&Tool| pins.pin(DefinitionKind::Tool, &t.name).is_none();
        let first_seen = unshown.iter().filter(|_| opened).filter(unpinned).map(Seen::of);
        for seen in first_seen.collect::<Vec<_>>() {
            pins.put(DefinitionKind::Tool, &seen.name, seen.pin());
        }
        if changed {
            self.save(store, &key, loaded);
        }
        let visible = visible.into_iter().map(|i| cleaned(&tools[i])).collect();
        let admitted = Arc::new(Admitted { visible: Shown::new(Arc::new(visible)), held });
        state.last = Some((owner, generation, admitted.clone()));
        drop(servers);
        for (event, pin) in asks {
            self.ask(server, event, pin);
        }
        admitted
    }

    /// What `server`'s prompts, resource templates or skills (`kind`; `items`, each named by
    /// `name`) admit under `judged`'s policy: the ones shown, without invisible characters.
    /// `items` may be one page of a list (see [`Judged`]): the kind's first sight stays open
    /// until its list was seen from its first page to its last, so every page is pinned on
    /// sight. Pins that cannot be used hold every item.
    pub(crate) fn admit_items<T: Serialize + DeserializeOwned + Clone>(
        self: &Arc<Self>,
        server: &str,
        judged: Judged,
        items: Vec<T>,
        name: impl Fn(&T) -> String,
    ) -> Shown<Vec<T>> {
        let Some(store) = &self.store else {
            return Shown::new(items.iter().map(cleaned).collect());
        };
        let Ok(mut servers) = self.servers.lock() else { return Shown::new(Vec::new()) };
        let state = servers.entry(server.to_string()).or_default();
        let key = state.key(server);
        let seen: Vec<Seen> = items.iter().map(|i| Seen::new(judged.kind, name(i), i)).collect();
        let loaded = state.pins.get_or_insert_with(|| Loaded::read(store, &key));
        let pins = match loaded {
            Loaded::Usable { now, .. } => now,
            Loaded::Unusable(unusable) => {
                let why: Arc<str> = Arc::from(unusable.to_string());
                for seen in seen {
                    let held = Held::unusable(seen.name.clone(), &why);
                    state.held.insert((judged.kind, seen.name), held);
                }
                return Shown::new(Vec::new());
            }
        };
        let mut verdict = self.judge(server, judged, pins, &mut state.told, &seen);
        if judged.first {
            state.first_pages.insert(judged.kind);
        }
        let through = judged.last && state.first_pages.contains(&judged.kind);
        if pins.opening.contains(&judged.kind) && through {
            pins.opening.remove(&judged.kind);
            verdict.changed = true;
        } else if !through && verdict.opened {
            verdict.changed |= pins.opening.insert(judged.kind);
        }
        let Verdict { visible, held, asks, changed, .. } = verdict;
        if changed {
            self.save(store, &key, loaded);
        }
        for &i in &visible {
            state.held.remove(&(judged.kind, seen[i].name.clone()));
        }
        for held in held {
            state.held.insert((judged.kind, held.tool.clone()), held);
        }
        drop(servers);
        for (event, pin) in asks {
            self.ask(server, event, pin);
        }
        Shown::new(visible.into_iter().map(|i| cleaned(&items[i])).collect())
    }

    /// `seen` (of one kind) against `pins`: the ones shown (by index), the ones held, the
    /// questions for the host (each definition once, by `told`), and whether a pin changed.
    /// While the kind's first sight is open every definition not pinned is pinned.
    fn judge(
        &self,
        server: &str,
        judged: Judged,
        pins: &mut ServerPins,
        told: &mut HashSet<(DefinitionKind, String, String)>,
        seen: &[Seen],
    ) -> Verdict {
        let Judged { kind, policy, .. } = judged;
        let mut verdict = Verdict::default();
        let opening = pins.of(kind).is_none() || pins.opening.contains(&kind);
        if pins.of(kind).is_none() {
            pins.of_mut(kind);
            verdict.changed = true;
        }
        for (i, seen) in seen.iter().enumerate() {
            let pin = pins.pin(kind, &seen.name);
            if pin.is_some_and(|p| p.sha256 == seen.sha256) {
                verdict.visible.push(i);
                verdict.changed |= pins.unhold(kind, &seen.name);
                continue;
            }
            let decision = match (pin, opening, policy) {
                (None, true, _) => DefinitionDecision::Pinned,
                (_, _, ToolChanges::Accept) => DefinitionDecision::Accepted,
                _ => DefinitionDecision::Held,
            };
            let shown = crate::identity::name_of(server);
            let event = seen.event(shown, pin, decision == DefinitionDecision::Pinned, decision);
            let new = told.insert((kind, seen.name.clone(), seen.sha256.clone()));
            if decision != DefinitionDecision::Held {
                if new && (decision == DefinitionDecision::Accepted || !seen.flags.is_empty()) {
                    self.events.send(EventMsg::McpToolDefinitionChanged(event));
                }
                pins.put(kind, &seen.name, seen.pin());
                verdict.visible.push(i);
                verdict.changed = true;
                continue;
            }
            let fields = event.diff.iter().map(|d| d.field.clone()).collect();
            let name = seen.name.clone();
            let change = event.change;
            verdict.held.push(Held { tool: name, change, fields, unusable: None });
            if !kind.is_tool() {
                verdict.changed |= pins.hold(kind, &seen.name, &seen.pin());
            }
            if new {
                self.events.send(EventMsg::McpToolDefinitionChanged(event.clone()));
                verdict.asks.push((event, seen.pin()));
            }
        }
        verdict.opened = opening;
        verdict
    }

    /// Whether the host approved `tool` of `server` "always" for the definition `sha256`.
    pub(crate) fn always(&self, server: &str, tool: &str, sha256: &str) -> bool {
        let (Some(store), Ok(mut servers)) = (&self.store, self.servers.lock()) else {
            return false;
        };
        let state = servers.entry(server.to_string()).or_default();
        match state.loaded(store, server) {
            Loaded::Usable { now, .. } => now.always.get(tool).is_some_and(|s| s == sha256),
            Loaded::Unusable(_) => false,
        }
    }

    /// Keep the host's "always" for `tool` of `server` at the definition `sha256`.
    pub(crate) fn remember_always(&self, server: &str, tool: &str, sha256: &str) {
        let (Some(store), Ok(mut servers)) = (&self.store, self.servers.lock()) else { return };
        let state = servers.entry(server.to_string()).or_default();
        let key = state.key(server);
        let loaded = state.loaded(store, server);
        if let Loaded::Usable { now, .. } = loaded {
            now.always.insert(tool.to_string(), sha256.to_string());
            self.save(store, &key, loaded);
        }
    }
}

/// How a list is judged: its kind, the server's policy, and which page of its list it is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judged {
    pub(crate) kind: DefinitionKind,
    pub(crate) policy: ToolChanges,
    /// The list's first page (asked for without a cursor).
    pub(crate) first: bool,
    /// The list's last page (no next cursor).
    pub(crate) last: bool,
}

impl Judged {
    /// A whole list (every page gathered).
    pub(crate) fn whole(kind: DefinitionKind, policy: ToolChanges) -> Self {
        Self { kind, policy, first: true, last: true }
    }
}

/// `item` without invisible characters.
fn cleaned<T: Serialize + DeserializeOwned + Clone>(item: &T) -> T {
    without_invisible(item).unwrap_or_else(|| item.clone())
}

/// Every tool admitted, without invisible characters (pinning off).
fn plain(tools: &[Tool]) -> Admitted {
    let visible = tools.iter().map(cleaned);
    Admitted { visible: Shown::new(Arc::new(visible.collect())), held: Vec::new() }
}

/// Every tool held, for `why`.
fn all_held(tools: &[Tool], why: &Arc<str>) -> Admitted {
    let held = tools.iter().map(|t| Held::unusable(t.name.to_string(), why)).collect();
    Admitted { visible: Shown::new(Arc::new(Vec::new())), held }
}

#[cfg(test)]
mod tests;
