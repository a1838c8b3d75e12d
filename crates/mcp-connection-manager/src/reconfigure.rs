//! A config change applied to running servers: a server whose entry is the same keeps its
//! connection; one whose entry changed is started anew beside the old one, which ends once the
//! calls in flight on it have finished (bounded by its tool timeout); one removed ends the
//! same way; one added starts.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::lifecycle::{ManagedServer, Servers, chosen};
use crate::manager::McpConnectionManager;
use crate::scope::Instances;
use crate::server_map::{ServerMap, Snapshot};
use mcp_connection::ServerConfig;

/// What [`McpConnectionManager::reconfigure`] did, each list sorted by server name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconfigured {
    /// New servers, started (or idle, as at start).
    pub added: Vec<String>,
    /// Servers whose entry changed: a new connection serves them; the old one ends after its
    /// calls in flight.
    pub restarted: Vec<String>,
    /// Servers no longer configured (or now disabled): they end after their calls in flight.
    pub removed: Vec<String>,
    /// Servers whose entry is the same: untouched.
    pub kept: Vec<String>,
}

impl Reconfigured {
    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        !(self.added.is_empty() && self.restarted.is_empty() && self.removed.is_empty())
    }
}

impl McpConnectionManager {
    /// Apply `configs` (every server's entry, as a new config file gives them) to the running
    /// servers: only the servers whose entry changed (command, args, env, url, headers,
    /// credentials' variables, timeouts, filters — any field) are restarted; the others keep
    /// their connection, and nothing is asked of them. Calls in flight finish on the
    /// connection they started on. After a shutdown it does nothing.
    pub fn reconfigure(&self, configs: Vec<ServerConfig>) -> Reconfigured {
        let done = self.servers.apply(&self.servers.base, configs, None);
        tracing::info!(?done, "configuration applied");
        done
    }
}

impl Servers {
    /// `configs` applied to the servers of `map` (the shared ones, or `scope`'s instances):
    /// see [`McpConnectionManager::reconfigure`].
    pub(crate) fn apply(
        &self,
        map: &ServerMap<ManagedServer>,
        configs: Vec<ServerConfig>,
        scope: Option<&Instances>,
    ) -> Reconfigured {
        let mut done = Reconfigured::default();
        if self.is_shut_down() {
            return done;
        }
        let current = map.snapshot();
        let wanted = chosen(configs, &self.options);
        let idle = crate::idle::idle_servers(&self.options, wanted.iter().map(|(c, s)| (c, s)));
        let mut launched = Vec::new();
        for (config, catalog) in wanted {
            let name = config.name.clone();
            let lazy = idle.contains(&name);
            // Compared as it runs (`launch` fills in the same defaults once).
            let runs_as = self.with_defaults(config.clone());
            let placed = scope.map(|s| s.placed(&name));
            match current.get(&name) {
                Some(old) if old.config == runs_as => done.kept.push(name),
                Some(old) => {
                    // Lists kept of the old one are not the new one's.
                    old.list_generation.fetch_add(1, Ordering::SeqCst);
                    let generation = old.list_generation.clone();
                    launched.push(self.launch(config, catalog, lazy, generation, placed));
                    done.restarted.push(name);
                }
                None => {
                    launched.push(self.launch(config, catalog, lazy, Arc::default(), placed));
                    done.added.push(name);
                }
            }
        }
        done.removed = current
            .keys()
            .filter(|name| !done.kept.contains(name) && !done.restarted.contains(name))
            .filter(|name| !launched.iter().any(|m| &m.config.name == *name))
            .cloned()
            .collect();
        map.update(|map| {
            for name in &done.removed {
                map.remove(name);
            }
            for managed in &launched {
                map.insert(managed.config.name.clone(), managed.clone());
            }
        });
        self.retire_replaced(&current, &done);
        for list in [&mut done.added, &mut done.restarted, &mut done.removed, &mut done.kept] {
            list.sort();
        }
        done
    }
}

impl Servers {
    /// The servers `done` restarted or removed end (see `scope::retire`); a removed one's end
    /// is announced.
    fn retire_replaced(&self, current: &Snapshot<ManagedServer>, done: &Reconfigured) {
        let grace = self.options.lifecycle.shutdown_grace;
        for name in done.restarted.iter().chain(&done.removed) {
            if let Some(old) = current.get(name) {
                let announce = done.removed.contains(name).then(|| self.events.clone());
                tokio::spawn(crate::scope::retire(old.clone(), grace, announce));
            }
        }
    }
}
