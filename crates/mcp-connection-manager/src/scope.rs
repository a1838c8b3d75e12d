//! Scopes: a server entry runs once for everyone (the manager's own servers), once per session
//! (`Scope::Session`) or once per working directory (`Scope::Directory`). The scoped ones run
//! in the same manager as instances — a session's, or a directory's shared by the sessions
//! there — each under its own identity (its name and scope: `identity::instance_key`), with
//! the one trust store. A session sees them through a view ([`crate::ScopedView`]): while a
//! request of the view runs, the name of a server it runs resolves to its instance, every
//! other name to the shared server (`Servers::get`), and what spans servers covers the shared
//! servers and the view's instances. Nothing routes by a name's prefix.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use mcp_backend::KeptListings;
use mcp_connection::{HostHandler, ServerConfig, TransportConfig};
use router_protocol::{EventMsg, McpServerStoppedEvent};

use crate::catalog::ToolCatalog;
use crate::lifecycle::{ManagedServer, Placed, ServerState, Servers};
use crate::server_map::{ServerMap, Snapshot};

/// Where an entry that is not shared by everyone runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Once per session (`shared = false`), ending with it.
    Session,
    /// Once per working directory of the sessions' agents (`shared = "cwd"`), ending with the
    /// last session there.
    Directory,
}

/// The instances of the scoped entries for one session or one directory; they end (each
/// after its calls in flight) when the last view holding them is dropped.
pub(crate) struct Instances {
    pub(crate) kind: Scope,
    /// `session N`, or the directory.
    pub(crate) tag: String,
    /// The session (for `Scope::Session`).
    pub(crate) session: Option<u64>,
    /// The directory its servers run in (unless an entry names its own `cwd`).
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) map: ServerMap<ManagedServer>,
    /// Answers its servers' requests (elicitation, sampling, roots).
    pub(crate) host: Arc<dyn HostHandler>,
    pub(crate) servers: Weak<Servers>,
    /// Where its end is kept for the manager's shutdown to await.
    pub(crate) closing: Arc<Closing>,
}

impl Instances {
    /// `configs` (the entries of its kind) as they run here: in `cwd`, unless an entry names
    /// its own.
    pub(crate) fn entries(&self, configs: &[(ServerConfig, Scope)]) -> Vec<ServerConfig> {
        let of_kind = configs.iter().filter(|(_, scope)| *scope == self.kind);
        of_kind.map(|(config, _)| run_in(config.clone(), self.cwd.as_deref())).collect()
    }

    /// Where its instance of `name` runs: its identity, host and the directory its held
    /// definitions are approved from.
    pub(crate) fn placed(&self, name: &str) -> Placed {
        Placed {
            key: crate::identity::instance_key(name, &self.tag),
            host: self.host.clone(),
            approve_in: self.cwd.clone(),
        }
    }
}

impl Drop for Instances {
    fn drop(&mut self) {
        let Some(servers) = self.servers.upgrade() else { return };
        let instances = self.map.snapshot();
        retire_all(&servers, &self.closing, instances.values().cloned().collect());
    }
}

/// `config` run in `cwd` unless it names its own.
pub(crate) fn run_in(mut config: ServerConfig, cwd: Option<&Path>) -> ServerConfig {
    if let TransportConfig::Stdio { cwd: entry_cwd, .. } = &mut config.transport
        && entry_cwd.is_none()
    {
        *entry_cwd = cwd.map(Path::to_path_buf);
    }
    config
}

/// The scoped entries, and the instances running now.
#[derive(Default)]
pub(crate) struct ScopedEntries {
    pub(crate) entries: Vec<(ServerConfig, Scope)>,
    pub(crate) by_session: std::collections::BTreeMap<u64, Weak<Instances>>,
    pub(crate) by_directory: std::collections::HashMap<Option<PathBuf>, Weak<Instances>>,
}

impl ScopedEntries {
    /// Every instance set alive now.
    pub(crate) fn live(&self) -> Vec<Arc<Instances>> {
        let sessions = self.by_session.values();
        sessions.chain(self.by_directory.values()).filter_map(Weak::upgrade).collect()
    }
}

/// What one view holds: its instances (the session's, then its directory's) and what it
/// keeps of its own (the complete listings, which name servers by name, and the qualified
/// tools).
pub(crate) struct ViewState {
    pub(crate) own: Vec<Arc<Instances>>,
    pub(crate) kept: KeptListings,
    pub(crate) catalog: ToolCatalog,
}

impl ViewState {
    /// A view of `own` (none: the manager's own state), keeping what `options` allow.
    pub(crate) fn new(own: Vec<Arc<Instances>>, options: &crate::ManagerOptions) -> Self {
        Self {
            own,
            kept: KeptListings::new(options.lists.cache, options.lists.cache_bytes),
            catalog: ToolCatalog::default(),
        }
    }
}

tokio::task_local! {
    /// The view a request runs for (none: the manager's own, shared servers only).
    static VIEW: Arc<ViewState>;
}

/// The view the current request runs for.
pub(crate) fn current() -> Option<Arc<ViewState>> {
    VIEW.try_with(Arc::clone).ok()
}

/// `future`, run for `view`.
pub(crate) async fn within<F: Future>(view: &Arc<ViewState>, future: F) -> F::Output {
    VIEW.scope(view.clone(), future).await
}

/// `f`, run for `view`.
pub(crate) fn within_sync<R>(view: &Arc<ViewState>, f: impl FnOnce() -> R) -> R {
    VIEW.sync_scope(view.clone(), f)
}

/// `future` spawned on `runtime` for the current view (a task the request starts keeps
/// resolving names as the request did).
pub(crate) fn spawn<F>(runtime: &tokio::runtime::Handle, future: F) -> tokio::task::JoinHandle<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    match current() {
        Some(view) => runtime.spawn(VIEW.scope(view, future)),
        None => runtime.spawn(future),
    }
}

/// Where one instance set's shutdowns are kept for the manager's shutdown to await.
pub(crate) type Closing = Mutex<Vec<tokio::task::JoinHandle<()>>>;

impl Servers {
    /// The server `name` names for the current request: its view's instance when the view
    /// runs one of that name, else the shared server.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<ManagedServer>> {
        if let Some(view) = current() {
            let own = view.own.iter().find_map(|instances| instances.map.get(name));
            if own.is_some() {
                return own;
            }
        }
        self.base.get(name)
    }

    /// Every server the current request sees, by name: the shared ones and its view's
    /// instances (an instance over a shared server of the same name).
    pub(crate) fn snapshot(&self) -> Snapshot<ManagedServer> {
        let base = self.base.snapshot();
        let Some(view) = current().filter(|view| !view.own.is_empty()) else {
            return base;
        };
        let mut all = (*base).clone();
        for instances in view.own.iter().rev() {
            all.extend(instances.map.snapshot().iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        Arc::new(all)
    }

    /// Every server name the current request sees, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        self.snapshot().keys().cloned().collect()
    }

    /// The identity of the server `name` names for the current request (its name when it
    /// runs no instance of it).
    pub(crate) fn key(&self, name: &str) -> String {
        self.get(name).map_or_else(|| name.to_string(), |managed| managed.key.clone())
    }
}

/// What the servers of `all` report changed of the resources the model read, each once
/// (taking clears them), in name order, with the identity of the server each is of.
pub(crate) fn take_changes(
    all: &Snapshot<ManagedServer>,
) -> Vec<(String, router_protocol::ResourceChange)> {
    let mut changes = Vec::new();
    for (server, managed) in all.iter() {
        for (uri, detected_at) in managed.watched.take() {
            let change =
                router_protocol::ResourceChange { server: server.clone(), uri, detected_at };
            changes.push((managed.key.clone(), change));
        }
    }
    changes
}

/// Scoped instances no view holds any more: each ends after its calls in flight (see
/// `retire`), announced; `closing` keeps the ends for the manager's shutdown.
pub(crate) fn retire_all(servers: &Servers, closing: &Closing, instances: Vec<Arc<ManagedServer>>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let grace = servers.options.lifecycle.shutdown_grace;
    let ending = instances.into_iter().map(|managed| {
        let events = servers.events.clone();
        runtime.spawn(retire(managed, grace, Some(events)))
    });
    let mut closing = closing.lock().unwrap_or_else(|p| p.into_inner());
    closing.retain(|handle| !handle.is_finished());
    closing.extend(ending);
}

/// End a server the config no longer has (or has anew): no request starts it again; once it
/// is no longer starting and the calls holding its connection are done (at most its tool
/// timeout), the connection is closed. A removed server's end is announced.
pub(crate) async fn retire(
    old: Arc<ManagedServer>,
    grace: Duration,
    announce: Option<router_protocol::EventSender>,
) {
    old.retired.store(true, Ordering::SeqCst);
    let startup = old.config.startup_timeout + Duration::from_secs(1);
    let conn = settled_connection(&old, startup).await;
    let was_running = conn.is_some();
    if let Some(conn) = conn {
        // The state holds one reference and this task one; a call in flight holds another.
        let deadline = tokio::time::Instant::now() + old.config.tool_timeout;
        while Arc::strong_count(&conn) > 2 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        conn.close(grace).await;
    }
    if let Some(events) = announce {
        events.send(EventMsg::McpServerStopped(McpServerStoppedEvent {
            server: old.config.name.clone(),
            was_running,
        }));
    }
}

/// The server's connection once it is no longer starting (waiting at most `limit`), if it is
/// ready then.
async fn settled_connection(
    old: &ManagedServer,
    limit: Duration,
) -> Option<mcp_connection::SharedConnection> {
    let mut state = old.state.subscribe();
    let waited = tokio::time::timeout(limit, async {
        let settled = state.wait_for(|s| !matches!(s, ServerState::Starting)).await.ok()?;
        match &*settled {
            ServerState::Ready { conn, .. } => Some(conn.clone()),
            _ => None,
        }
    })
    .await;
    waited.ok().flatten()
}
