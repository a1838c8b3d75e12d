//! The pins files as a running router holds them: read on first use, written merged with what
//! another writer wrote, watched for what another process writes, read again when they change.

use std::sync::Weak;
use std::sync::atomic::Ordering;

use mcp_connection::ServerConfig;
use router_protocol::DefinitionKind;

use crate::trust::pins::ServerPins;
use crate::trust::store::{PinKey, PinStore, PinsError, UnusablePins};
use crate::trust::{ServerTrust, Trust};

/// A server's pins as this router holds them.
#[expect(clippy::large_enum_variant, reason = "one per server, held in place")]
pub(crate) enum Loaded {
    /// `now`, and `base`: the file as last read or written, which a save merges against.
    Usable { now: ServerPins, base: ServerPins },
    /// The file cannot be used: everything of the server is held.
    Unusable(UnusablePins),
}

impl Loaded {
    pub(crate) fn read(store: &PinStore, key: &PinKey) -> Self {
        match store.load(key) {
            Ok(pins) => {
                let pins = pins.unwrap_or_default();
                Self::Usable { now: pins.clone(), base: pins }
            }
            Err(unusable) => {
                tracing::warn!(server = %key.server, "{unusable}: its definitions are held");
                Self::Unusable(unusable)
            }
        }
    }

    /// Whether `other` holds what this one read.
    fn same_as(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Usable { base, .. }, Self::Usable { base: other, .. }) => base == other,
            (Self::Unusable(a), Self::Unusable(b)) => a == b,
            _ => false,
        }
    }
}

impl Trust {
    /// The server of identity `key` (its name, or a scoped instance's identity), configured
    /// by `config`, keeps the pins of its identity (see [`PinKey::of`]); a server whose
    /// identity changed (a config edit) starts afresh. `approve_in`: the directory its held
    /// definitions are approved from (a scoped instance's: its pins are that directory's).
    pub(crate) fn identify(
        &self,
        key: &str,
        config: &ServerConfig,
        approve_in: Option<std::path::PathBuf>,
    ) {
        let pins = PinKey::of(config);
        let Ok(mut servers) = self.servers.lock() else { return };
        let state = servers.entry(key.to_string()).or_default();
        if state.key.as_ref() != Some(&pins) {
            *state = ServerTrust { key: Some(pins), approve_in, ..ServerTrust::default() };
            drop(servers);
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Read every known server's pins file again; whether any changed (then every list is
    /// admitted again). What another process approved or forgot is taken; a file that became
    /// unusable holds its server.
    pub(crate) fn refresh(&self) -> bool {
        let Some(store) = &self.store else { return false };
        let Ok(mut servers) = self.servers.lock() else { return false };
        let mut changed = false;
        for (server, state) in servers.iter_mut() {
            let Some(loaded) = &state.pins else { continue };
            let fresh = Loaded::read(store, &state.key(server));
            if fresh.same_as(loaded) {
                continue;
            }
            // A held prompt, template or skill stays held while the file still holds it.
            let still = |kind: &DefinitionKind, name: &String| match &fresh {
                Loaded::Usable { now, .. } => {
                    now.held.get(kind).is_some_and(|h| h.contains_key(name))
                }
                Loaded::Unusable(_) => true,
            };
            state.held.retain(|(kind, name), _| still(kind, name));
            state.pins = Some(fresh);
            state.last = None;
            changed = true;
        }
        drop(servers);
        if changed {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        changed
    }

    /// Write `loaded`'s pins, merged with what the file holds now (see
    /// [`PinStore::save_merged`]); what another writer added is taken in (and every list
    /// admitted again). A file that became unusable holds the server from now on.
    pub(crate) fn save(&self, store: &PinStore, key: &PinKey, loaded: &mut Loaded) {
        let Loaded::Usable { now, base } = loaded else { return };
        match store.save_merged(key, base, now) {
            Ok(written) => {
                // Another writer's change came in (the format field aside): admit again.
                if written != (ServerPins { format: written.format, ..now.clone() }) {
                    self.generation.fetch_add(1, Ordering::SeqCst);
                }
                *now = written.clone();
                *base = written;
            }
            Err(PinsError::Unusable(unusable)) => {
                tracing::warn!(server = %key.server, "{unusable}: its definitions are held");
                *loaded = Loaded::Unusable(unusable);
                self.generation.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => {
                tracing::warn!(server = %key.server, dir = %store.dir().display(), error = %e, "cannot save the pins");
            }
        }
    }
}

/// Watch `store`'s directory: a pins file written by anyone (another process too) is read
/// again by `trust`. `None` when the directory cannot be made or watched (the files are then
/// read again only when a held definition is called).
pub(crate) fn watch(store: &PinStore, trust: Weak<Trust>) -> Option<notify::RecommendedWatcher> {
    use notify::{EventKind, Watcher as _};
    let made = {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(store.dir())
    };
    let handler = move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        let written = matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
        );
        let pins = event.paths.iter().any(|p| p.extension().is_some_and(|e| e == "json"));
        if written
            && pins
            && let Some(trust) = trust.upgrade()
        {
            trust.refresh();
        }
    };
    let watched = made.map_err(notify::Error::io).and_then(|()| {
        let mut watcher = notify::recommended_watcher(handler)?;
        watcher.watch(store.dir(), notify::RecursiveMode::NonRecursive)?;
        Ok(watcher)
    });
    watched
        .inspect_err(|e| {
            tracing::warn!(dir = %store.dir().display(), error = %e, "the pins are not watched: another process's approvals are seen when a held definition is called")
        })
        .ok()
}
