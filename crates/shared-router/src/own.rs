//! The servers the shared router does not share across sessions: an entry with
//! `shared = false` runs once per session, one with `shared = "cwd"` once per working directory
//! of the sessions' agents (a session from `connect` has its agent's directory: the bridge's
//! own). Both run in that directory unless their entry names a `cwd`, and end with the last
//! session that uses them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use mcp_connection_manager::{ServerConfig, TransportConfig};
use mcp_host::{EventSender, McpConnectionManager};
use router_config::{ConfigFile, Sharing};

use super::backend::ChangeHub;
use super::host::{CallOwners, Owner, SharedHost};
use super::lock::locked;

/// One manager of servers not shared by every session, and the changes to what its sessions
/// read. Its servers end when the last session holding it ends.
pub(crate) struct Group {
    pub(crate) manager: Arc<McpConnectionManager>,
    pub(crate) hub: Arc<ChangeHub>,
    /// The session whose servers these are (`None`: a working directory's, shared by the
    /// sessions there).
    pub(crate) session: Option<u64>,
    /// The directory its servers run in (unless an entry names one).
    pub(crate) cwd: Option<PathBuf>,
    /// The session's client, once it is initialized: asked when no call of it is known to
    /// ask (a server's roots request at its start).
    pub(crate) client: Arc<Mutex<Option<Owner>>>,
    /// Where its shutdown is registered, for [`OwnServers::shutdown`] to wait for.
    closing: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Drop for Group {
    fn drop(&mut self) {
        let manager = self.manager.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let closing = runtime.spawn(async move { manager.shutdown().await });
            let mut handles = locked(&self.closing);
            handles.retain(|handle| !handle.is_finished());
            handles.push(closing);
        }
    }
}

/// The entries not shared by every session, and the groups running them now.
pub(crate) struct OwnServers {
    /// The config as last read, its servers only the ones of this kind.
    config: Mutex<ConfigFile>,
    events: EventSender,
    calls: Arc<CallOwners>,
    by_cwd: Mutex<HashMap<Option<PathBuf>, Weak<Group>>>,
    by_session: Mutex<BTreeMap<u64, Weak<Group>>>,
    closing: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl OwnServers {
    /// The entries of `config` that are not shared by every session (see [`split_off`]).
    pub(crate) fn new(own: ConfigFile, events: EventSender, calls: Arc<CallOwners>) -> Self {
        Self {
            config: Mutex::new(own),
            events,
            calls,
            by_cwd: Mutex::default(),
            by_session: Mutex::default(),
            closing: Arc::default(),
        }
    }

    /// The groups session `id` (in `cwd`) uses: its own servers' and its directory's, each only
    /// when the config has such entries.
    pub(crate) fn groups_for(&self, id: u64, cwd: Option<&Path>) -> Vec<Arc<Group>> {
        let config = locked(&self.config).clone();
        let mut groups = Vec::new();
        let per_session = entries(&config, Sharing::Session, cwd);
        if !per_session.is_empty()
            && let Some(group) = self.start(&config, per_session, Some(id), cwd)
        {
            locked(&self.by_session).insert(id, Arc::downgrade(&group));
            groups.push(group);
        }
        let per_cwd = entries(&config, Sharing::WorkingDirectory, cwd);
        if !per_cwd.is_empty() {
            let mut by_cwd = locked(&self.by_cwd);
            let key = cwd.map(Path::to_path_buf);
            let group = match by_cwd.get(&key).and_then(Weak::upgrade) {
                Some(group) => Some(group),
                None => {
                    let group = self.start(&config, per_cwd, None, cwd);
                    if let Some(group) = &group {
                        by_cwd.insert(key, Arc::downgrade(group));
                    }
                    group
                }
            };
            groups.extend(group);
        }
        groups
    }

    fn start(
        &self,
        config: &ConfigFile,
        servers: Vec<ServerConfig>,
        session: Option<u64>,
        cwd: Option<&Path>,
    ) -> Option<Arc<Group>> {
        let mut config = config.clone();
        config.servers = servers;
        if config.pin_tools {
            // Its servers keep the pins of their agents' directory.
            config.manager.trust.pins = pins_for(config.manager.trust.pins.clone(), cwd);
            // Their pins are the directory's: approved from there.
            if let (Some(cwd), Some(approve)) = (cwd, &config.manager.trust.approve_command) {
                let cd = crate::shell::shell_word(&cwd.to_string_lossy());
                config.manager.trust.approve_command = Some(format!("cd {cd} && {approve}"));
            }
        }
        let client = Arc::new(Mutex::new(None));
        let host = Arc::new(SharedHost { calls: self.calls.clone(), client: Some(client.clone()) });
        let assembly = mcp_host::Assembly::new(config).host_handler(host);
        let manager = match assembly.events(self.events.clone()).start_servers() {
            Ok(manager) => manager,
            Err(e) => {
                tracing::warn!(?session, "the session's own servers cannot start: {e}");
                return None;
            }
        };
        tracing::info!(?session, cwd = ?cwd, servers = ?manager.server_names(), "own servers started");
        Some(Arc::new(Group {
            manager,
            hub: Arc::default(),
            session,
            cwd: cwd.map(Path::to_path_buf),
            client,
            closing: self.closing.clone(),
        }))
    }

    /// The config changed: new sessions get its entries, and the groups running now add,
    /// restart and remove servers as the manager's `reconfigure` does.
    pub(crate) fn reconfigure(&self, own: ConfigFile) {
        let groups: Vec<Arc<Group>> = {
            let by_session = locked(&self.by_session);
            let by_cwd = locked(&self.by_cwd);
            by_session.values().chain(by_cwd.values()).filter_map(Weak::upgrade).collect()
        };
        for group in groups {
            let kind = match group.session {
                Some(_) => Sharing::Session,
                None => Sharing::WorkingDirectory,
            };
            group.manager.reconfigure(entries(&own, kind, group.cwd.as_deref()));
        }
        *locked(&self.config) = own;
    }

    /// Session `id` ended.
    pub(crate) fn forget(&self, id: u64) {
        locked(&self.by_session).remove(&id);
        locked(&self.by_cwd).retain(|_, group| group.strong_count() > 0);
    }

    /// The router stops: every group's servers end (those of sessions still open too), and
    /// this returns once they have.
    pub(crate) async fn shutdown(&self) {
        for group in self.groups() {
            group.manager.shutdown().await;
        }
        let closing = std::mem::take(&mut *locked(&self.closing));
        for handle in closing {
            let _ = handle.await;
        }
    }

    /// Every group running now (for `status`).
    pub(crate) fn groups(&self) -> Vec<Arc<Group>> {
        let by_session = locked(&self.by_session);
        let by_cwd = locked(&self.by_cwd);
        by_session.values().chain(by_cwd.values()).filter_map(Weak::upgrade).collect()
    }
}

/// Splits `config`: it keeps the entries every session shares, and the config returned has
/// the others.
pub(crate) fn split_off(config: &mut ConfigFile) -> ConfigFile {
    let mut own = config.clone();
    own.servers.retain(|server| config.sharing.contains_key(&server.name));
    let sharing = &config.sharing;
    config.servers.retain(|server| !sharing.contains_key(&server.name));
    own
}

/// The pins of the servers run for the agents working in `cwd` (the router's own directory
/// for a session that has none), under `base` (the router's pins; the default place when it
/// names none).
fn pins_for(
    base: Option<mcp_connection_manager::PinStore>,
    cwd: Option<&Path>,
) -> Option<mcp_connection_manager::PinStore> {
    let base = base.or_else(mcp_connection_manager::PinStore::default_location)?;
    let dir = cwd.map(Path::to_path_buf).or_else(|| std::env::current_dir().ok())?;
    Some(base.for_directory(&dir))
}

/// `server` of `config` as the shared router runs it for an agent working in `cwd`, with the
/// pins it keeps: an entry not shared by every session runs there (unless it names its own
/// `cwd`) and keeps the pins of the agent's directory; every other entry keeps `pins`.
pub fn as_run_in(
    config: &ConfigFile,
    server: ServerConfig,
    cwd: &Path,
    pins: &mcp_connection_manager::PinStore,
) -> (ServerConfig, mcp_connection_manager::PinStore) {
    if !config.sharing.contains_key(&server.name) {
        return (server, pins.clone());
    }
    let mut server = server;
    if let TransportConfig::Stdio { cwd: entry_cwd, .. } = &mut server.transport
        && entry_cwd.is_none()
    {
        *entry_cwd = Some(cwd.to_path_buf());
    }
    (server, pins.for_directory(cwd))
}

/// The entries of `kind`, to run in `cwd` (an entry that names its own `cwd` keeps it).
fn entries(config: &ConfigFile, kind: Sharing, cwd: Option<&Path>) -> Vec<ServerConfig> {
    let of_kind = config.servers.iter().filter(|s| config.sharing.get(&s.name) == Some(&kind));
    of_kind
        .cloned()
        .map(|mut server| {
            if let TransportConfig::Stdio { cwd: entry_cwd, .. } = &mut server.transport
                && entry_cwd.is_none()
            {
                *entry_cwd = cwd.map(Path::to_path_buf);
            }
            server
        })
        .collect()
}
