//! Scopes: a server entry runs once for everyone (the manager's own servers), once per session
//! (`Scope::Session`) or once per working directory (`Scope::Directory`). The scoped ones run
//! in the same manager as instances — a session's, or a directory's shared by the sessions
//! there — each under its own identity (its name and scope: `instance_key`), with the one
//! trust store. A session sees them through a view ([`crate::ScopedView`]): while a request of
//! the view runs, the name of a server it runs resolves to its instance, every other name to
//! the shared server (`Servers::get`), and what spans servers covers the shared servers and
//! the view's instances. Nothing routes by a name's prefix.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use mcp_backend::KeptListings;
use mcp_connection::{HostHandler, ServerConfig, TransportConfig};

use crate::catalog::ToolCatalog;
use crate::lifecycle::{ManagedServer, Servers};
use crate::server_map::ServerMap;

/// Where an entry that is not shared by everyone runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Once per session (`shared = false`), ending with it.
    Session,
    /// Once per working directory of the sessions' agents (`shared = "cwd"`), ending with the
    /// last session there.
    Directory,
}

/// What separates a scoped instance's name from its scope in its identity (no server name
/// has it: names are `[A-Za-z0-9_-]`).
const SEPARATOR: char = '\u{1f}';

/// The identity of `name`'s instance tagged `tag` (a session's or a directory's).
pub(crate) fn instance_key(name: &str, tag: &str) -> String {
    format!("{name}{SEPARATOR}{tag}")
}

/// The server name of an identity (`instance_key`'s, or a shared server's name).
pub(crate) fn name_of(key: &str) -> &str {
    key.split(SEPARATOR).next().unwrap_or(key)
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
}

impl Instances {
    /// `configs` (the entries of its kind) as they run here: in `cwd`, unless an entry names
    /// its own.
    pub(crate) fn entries(&self, configs: &[(ServerConfig, Scope)]) -> Vec<ServerConfig> {
        let of_kind = configs.iter().filter(|(_, scope)| *scope == self.kind);
        of_kind.map(|(config, _)| run_in(config.clone(), self.cwd.as_deref())).collect()
    }
}

impl Drop for Instances {
    fn drop(&mut self) {
        let Some(servers) = self.servers.upgrade() else { return };
        let instances = self.map.snapshot();
        servers.retire_all(instances.values().cloned().collect());
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
/// keeps of its own (listings, the qualified tools, skills, backgrounded tasks).
pub(crate) struct ViewState {
    pub(crate) own: Vec<Arc<Instances>>,
    pub(crate) kept: KeptListings,
    pub(crate) catalog: ToolCatalog,
    pub(crate) skill_cache: crate::skills::cache::SkillCache,
    pub(crate) backgrounded: crate::tasks::follow::Backgrounded,
}

impl ViewState {
    /// A view of `own` (none: the manager's own state), keeping what `options` allow.
    pub(crate) fn new(own: Vec<Arc<Instances>>, options: &crate::ManagerOptions) -> Self {
        Self {
            own,
            kept: KeptListings::new(options.lists.cache, options.lists.cache_bytes),
            catalog: ToolCatalog::default(),
            skill_cache: Default::default(),
            backgrounded: Default::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_names_its_server_and_is_never_a_name() {
        let key = instance_key("notes", "/home/ada/project");
        assert_eq!(name_of(&key), "notes");
        assert_eq!(name_of("notes"), "notes");
        assert!(!crate::is_valid_server_name(&key), "no configured name is an identity");
    }
}
