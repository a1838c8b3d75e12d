//! What is held, said and answered: the message a refused call gets, the host asked about a
//! held definition (at first sight, and again when a call meets it), an approval pinned.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_connection::{Asking, TrustAnswer};
use rmcp::model::Tool;
use router_protocol::{
    DefinitionChange, DefinitionDecision, DefinitionKind, EventMsg, HeldNote,
    McpToolDefinitionChangedEvent,
};

use crate::trust::files::Loaded;
use crate::trust::pins::{self, Seen};
use crate::trust::{POISONED, Trust};

impl Trust {
    /// Ask the host about a held definition of the server of identity `key`, on a task of
    /// its own; an approval pins it.
    pub(crate) fn ask(
        self: &Arc<Self>,
        key: &str,
        event: McpToolDefinitionChangedEvent,
        pin: pins::Pin,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let trust = self.clone();
        let key = key.to_string();
        runtime.spawn(async move {
            let asking = Asking::new(event.server.clone(), None);
            let decision = match trust.host.tool_definition_changed(&asking, &event).await {
                TrustAnswer::Approve => {
                    trust.pin(&key, event.kind, &event.tool, pin);
                    DefinitionDecision::Approved
                }
                TrustAnswer::Refuse => DefinitionDecision::Refused,
                _ => return,
            };
            let answered = McpToolDefinitionChangedEvent { decision, ..event };
            trust.events.send(EventMsg::McpToolDefinitionChanged(answered));
        });
    }

    /// A call (`call_id`) of `tool` of `server`, held: its host is asked as at first sight, now
    /// with the call, so the user who made it can approve it (the shared router elicits its
    /// session's client). An approval pins it and lets the call go on; anything else leaves it
    /// held. Pins that cannot be used are never approved over.
    pub(crate) async fn ask_for_call(
        self: &Arc<Self>,
        server: &str,
        tool: &Tool,
        call_id: Option<String>,
    ) -> bool {
        let seen = Seen::of(tool);
        let pinned = {
            let Ok(servers) = self.servers.lock() else { return false };
            match servers.get(server).and_then(|state| state.pins.as_ref()) {
                Some(Loaded::Usable { now, .. }) => {
                    now.pin(DefinitionKind::Tool, &seen.name).cloned()
                }
                _ => return false,
            }
        };
        let shown = crate::identity::name_of(server);
        let event = seen.event(shown, pinned.as_ref(), false, DefinitionDecision::Held);
        let asking = Asking::new(shown, call_id);
        let params = serde_json::to_value(&event).unwrap_or_default();
        let ask = self.host.tool_definition_changed(&asking, &event);
        let told = |answer: &TrustAnswer| {
            let approval = match answer {
                TrustAnswer::Approve => "approve",
                TrustAnswer::Refuse => "refuse",
                _ => "hold",
            };
            serde_json::json!({"approval": approval})
        };
        let method = "approval/definition";
        let answer =
            crate::waiting::waiting(&self.events, &asking, method, params, ask, told).await;
        let decision = match answer {
            TrustAnswer::Approve => DefinitionDecision::Approved,
            TrustAnswer::Refuse => DefinitionDecision::Refused,
            _ => return false,
        };
        if decision == DefinitionDecision::Approved {
            self.pin(server, DefinitionKind::Tool, &seen.name, seen.pin());
        }
        let answered = McpToolDefinitionChangedEvent { decision, ..event };
        self.events.send(EventMsg::McpToolDefinitionChanged(answered));
        decision == DefinitionDecision::Approved
    }

    /// Pin `name` of `kind` of `server` as `pin` says, and admit every list again.
    pub(crate) fn pin(&self, server: &str, kind: DefinitionKind, name: &str, pin: pins::Pin) {
        let Some(store) = &self.store else { return };
        if let Ok(mut servers) = self.servers.lock() {
            let state = servers.entry(server.to_string()).or_default();
            state.held.remove(&(kind, name.to_string()));
            let key = state.key(server);
            let loaded = state.loaded(store, server);
            if let Loaded::Usable { now, .. } = loaded {
                now.put(kind, name, pin);
                self.save(store, &key, loaded);
            }
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Why `name` (of `kind`) of `server` is kept from the model, if it is held: for a tool, by
    /// the last list of tools admitted; else by the last list of its kind. After a panic while
    /// the pins were in hand, everything is.
    pub(crate) fn held_message(
        &self,
        server: &str,
        kind: DefinitionKind,
        name: &str,
    ) -> Option<String> {
        let what = kind.as_str();
        let key = server;
        let server = crate::identity::name_of(key);
        let Ok(servers) = self.servers.lock() else {
            return Some(format!("{what} `{name}` of MCP server '{server}' is held: {POISONED}"));
        };
        let state = servers.get(key)?;
        let held = if kind.is_tool() {
            let (_, _, admitted) = state.last.as_ref()?;
            admitted.held.iter().find(|h| h.tool == name)?
        } else {
            state.held.get(&(kind, name.to_string()))?
        };
        let approve = self.approve_in(state.approve_in.as_deref());
        if let Some(why) = &held.unusable {
            return Some(format!(
                "{what} `{name}` of MCP server '{server}' is held: {why}; nothing of '{server}' is shown until the file is fixed or removed (`{} {server}` removes it, and the next start pins what the server offers then)",
                forget_command(&approve)
            ));
        }
        let how = match held.change {
            DefinitionChange::Changed => {
                format!("its definition changed since it was pinned ({})", held.fields.join(", "))
            }
            _ => format!("it is new to a server whose {what}s are pinned"),
        };
        Some(format!(
            "{what} `{name}` of MCP server '{server}' is held: {how}; run `{approve} {server} {name}` to allow it"
        ))
    }

    /// The command that approves a held definition (messages add the server and names).
    pub(crate) fn approve_command(&self) -> &str {
        &self.approve_command
    }

    /// The approve command run from `dir` (a scoped instance's pins are its directory's).
    fn approve_in(&self, dir: Option<&std::path::Path>) -> String {
        match dir {
            Some(dir) => {
                let cd = shell_word(&dir.to_string_lossy());
                format!("cd {cd} && {}", self.approve_command)
            }
            None => self.approve_command.clone(),
        }
    }

    /// Every definition held now, by server: tools by the last list of each server admitted,
    /// the other kinds by their last list.
    pub(crate) fn held_now(&self) -> Vec<(String, DefinitionKind, String)> {
        let Ok(servers) = self.servers.lock() else { return Vec::new() };
        let mut out = Vec::new();
        for (server, state) in servers.iter() {
            let tools = state.last.iter().flat_map(|(_, _, admitted)| admitted.held.iter());
            out.extend(tools.map(|h| (server.clone(), DefinitionKind::Tool, h.tool.clone())));
            let others = state.held.keys();
            out.extend(others.map(|(kind, name)| (server.clone(), *kind, name.clone())));
        }
        out.sort();
        out
    }

    /// The definitions of `kind` held now of the servers whose identity `sees` admits, one
    /// note per server (sorted by name), each with the command that approves all of them.
    pub(crate) fn notes(&self, kind: DefinitionKind, sees: impl Fn(&str) -> bool) -> Vec<HeldNote> {
        let mut notes: Vec<(String, HeldNote)> = Vec::new();
        let held = self.held_now().into_iter().filter(|(key, k, _)| *k == kind && sees(key));
        for (key, _, name) in held {
            match notes.last_mut() {
                Some((last, note)) if *last == key => {
                    note.count += 1;
                    note.names.push(name);
                }
                _ => {
                    let server = crate::identity::name_of(&key).to_string();
                    let note =
                        HeldNote { server, count: 1, names: vec![name], approve: String::new() };
                    notes.push((key, note));
                }
            }
        }
        let dirs: Vec<Option<std::path::PathBuf>> = {
            let servers = self.servers.lock();
            let dir = |key: &String| servers.as_ref().ok()?.get(key)?.approve_in.clone();
            notes.iter().map(|(key, _)| dir(key)).collect()
        };
        let mut notes: Vec<HeldNote> = notes
            .into_iter()
            .zip(dirs)
            .map(|((_, mut note), dir)| {
                let names: Vec<String> = note.names.iter().map(|n| shell_word(n)).collect();
                let approve = self.approve_in(dir.as_deref());
                note.approve =
                    format!("{approve} {} {}", shell_word(&note.server), names.join(" "));
                note.names.truncate(HeldNote::NAMES_SHOWN);
                note
            })
            .collect();
        notes.sort_by(|a, b| a.server.cmp(&b.server));
        notes
    }

    /// Whether tool `tool` of `server` is held (by the last list admitted).
    pub(crate) fn is_held(&self, server: &str, tool: &str) -> bool {
        self.held_message(server, DefinitionKind::Tool, tool).is_some()
    }
}

/// `word` as one shell word: as it is when it needs no quoting, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:@=+,%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// `… trust approve …` as `… trust forget …`.
fn forget_command(approve: &str) -> String {
    approve.replacen("trust approve", "trust forget", 1)
}
