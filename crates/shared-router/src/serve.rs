//! The shared router: one for every agent of this user and config. Sessions come over the
//! Unix socket (what `connect` bridges to) and, when asked, streamable HTTP on a loopback
//! address; each gets a router of its own over the servers they all share.

use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use mcp_host::McpBackend as _;
use rmcp::ServiceExt as _;
use router_config::ConfigFile;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::host::CallOwners;
use super::host::SharedHost;
use super::place::{Place, current_uid, take_serve_lock};
use super::session::{Shared, same_tools};

/// What a shared router serves, and how.
pub struct ServeOptions {
    /// Where its sockets, locks and secret live (one router per place).
    pub place: Place,
    /// The config, as read.
    pub config: ConfigFile,
    /// The config file to follow: its edits are applied to the running servers.
    pub follow: Option<ConfigSource>,
    /// Also serve streamable HTTP on this loopback address (`127.0.0.1:0` picks a port); its
    /// bearer secret and URL are written to the place. Other addresses are refused.
    pub listen: Option<SocketAddr>,
    /// Stop once no session has been open this long (`None`: run until stopped).
    pub idle_timeout: Option<Duration>,
    /// Where the router keeps its state (catalogs, pins, tokens, the ledger), as
    /// `mcp_host::Assembly::state_dir` says; `None`: the default places it names.
    pub state_dir: Option<PathBuf>,
}

/// A config file and how to read it (the caller's rules: strictness, defaults).
#[derive(Clone)]
pub struct ConfigSource {
    /// The file watched for edits.
    pub path: PathBuf,
    /// Reads it again after an edit.
    pub read: Arc<dyn Fn() -> anyhow::Result<ConfigFile> + Send + Sync>,
}

/// What the router did on its own, for whoever runs it to tell (`mcp-router serve` writes
/// each to stderr, its log).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// The config file changed and its servers were changed to match (only those whose entry
    /// changed).
    ConfigApplied {
        /// The file.
        path: PathBuf,
        /// Servers started.
        added: Vec<String>,
        /// Servers restarted with their new entry.
        restarted: Vec<String>,
        /// Servers stopped.
        removed: Vec<String>,
    },
    /// The config file changed but cannot be used: the servers stay as they were.
    ConfigUnusable {
        /// The file.
        path: PathBuf,
        /// Why.
        error: String,
    },
}

/// Why [`SharedRouter::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// No session was open for the idle timeout.
    Idle,
    /// The caller's stop future completed.
    Stopped,
}

/// A shared router taking sessions: made by [`SharedRouter::start`], run by
/// [`SharedRouter::run`] until it is stopped or idle; then its servers, tasks, sessions and
/// files are gone.
pub struct SharedRouter {
    place: Place,
    held: std::fs::File,
    running: mcp_host::Running,
    shared: Arc<Shared>,
    /// The router's own tasks, each woken by what it waits for and ended with the router.
    tasks: JoinSet<()>,
    sessions: UnixListener,
    status: UnixListener,
    info: RouterInfo,
    idle_timeout: Option<Duration>,
    notices: Option<mpsc::UnboundedReceiver<Notice>>,
}

impl SharedRouter {
    /// Takes the place (refused when a router already runs there; a lock held while nobody
    /// takes sessions — a router killed a moment ago — is waited for, 5 s at most), starts the
    /// config's shared servers and listens. Must be called inside a tokio runtime.
    pub async fn start(options: ServeOptions) -> anyhow::Result<Self> {
        let ServeOptions { place, config, follow, listen, idle_timeout, state_dir } = options;
        if let Some(addr) = listen {
            super::http::check_loopback(addr)?;
        }
        let Some(held) = take_serve_lock(&place).await? else {
            bail!(
                "a shared router already runs for this config (socket {})",
                place.socket().display()
            );
        };
        let Assembled { running, shared, watchers, mut tasks } = assemble(config, state_dir)?;
        let moved = watchers.moved.clone();
        let sessions = bind_private(&place.socket())?;
        let status = bind_private(&place.status_socket())?;
        tasks.spawn(watchers.clone().serve(bind_private(&place.events_socket())?));
        let http = match listen {
            Some(addr) => {
                let (url, accept) =
                    super::http::start(shared.clone(), addr, &place, idle_timeout).await?;
                tasks.spawn(accept);
                Some(url)
            }
            None => None,
        };
        tasks.spawn(announce_tool_changes(shared.clone(), moved.tools.subscribe()));
        tasks.spawn(deliver_updates(shared.clone(), moved.resources.subscribe()));
        let (tell, notices) = mpsc::unbounded_channel();
        if let Some(source) = follow {
            let edits = ConfigEdits::watch(&source.path)?;
            tasks.spawn(follow_config(shared.clone(), source, edits, tell));
        }
        let info = RouterInfo { socket: place.socket(), events: place.events_socket(), http };
        Ok(Self {
            place,
            held,
            running,
            shared,
            tasks,
            sessions,
            status,
            info,
            idle_timeout,
            notices: Some(notices),
        })
    }

    /// The Unix socket sessions connect to.
    pub fn socket(&self) -> &Path {
        &self.info.socket
    }

    /// The streamable HTTP URL, when it listens on one.
    pub fn http_url(&self) -> Option<&str> {
        self.info.http.as_deref()
    }

    /// What the router does on its own, as it happens (once: later calls get `None`).
    pub fn take_notices(&mut self) -> Option<mpsc::UnboundedReceiver<Notice>> {
        self.notices.take()
    }

    /// What `mcp-router status` is answered now.
    pub fn status(&self) -> router_protocol::RouterStatus {
        super::status::answer(&self.shared, &self.info)
    }

    /// Take sessions and status questions until `stop` completes or no session has been open
    /// for the idle timeout; then end every session, task and server, and remove the place's
    /// files (its log too: a clean end leaves nothing).
    pub async fn run(mut self, stop: impl Future<Output = ()>) -> Ended {
        let mut sessions = JoinSet::new();
        let ended = serve_until_done(&self, &mut sessions, stop).await;
        sessions.shutdown().await;
        self.tasks.shutdown().await;
        self.running.shutdown().await;
        let place = &self.place;
        let files = [place.socket(), place.status_socket(), place.events_socket()];
        for file in files.into_iter().chain([place.secret(), place.address(), place.log()]) {
            let _ = std::fs::remove_file(file);
        }
        super::place::unlock_and_remove(&place.serve_lock(), self.held);
        ended
    }
}

/// What the status answer says of the router itself.
pub(crate) struct RouterInfo {
    pub(crate) socket: PathBuf,
    pub(crate) events: PathBuf,
    pub(crate) http: Option<String>,
}

/// The shared servers started, what every session shares, and the router's first task.
struct Assembled {
    running: mcp_host::Running,
    shared: Arc<Shared>,
    watchers: super::events::Watchers,
    tasks: JoinSet<()>,
}

/// `config`'s shared servers started (its others kept for the sessions that will run them),
/// their events fanned out to the watchers.
fn assemble(config: ConfigFile, state_dir: Option<PathBuf>) -> anyhow::Result<Assembled> {
    let mut assembly = mcp_host::Assembly::new(config);
    if let Some(dir) = state_dir {
        assembly = assembly.state_dir(dir);
    }
    // The servers run per session or directory keep their state where the shared ones do.
    let own = super::own::split_off(assembly.config_mut());
    let settings = assembly.config().settings.clone();
    let calls = Arc::new(CallOwners::default());
    let host = Arc::new(SharedHost { calls: calls.clone(), client: None });
    let mut running = assembly.host_handler(host).start()?;
    let mut tasks = JoinSet::new();
    let watchers = super::events::Watchers::default();
    if let Some(events) = running.take_events() {
        tasks.spawn(watchers.clone().fan_out(events));
    }
    let events = running.event_sender().clone();
    running.manager.set_scoped(own);
    let kept = running.ledger_dir().map(Path::to_path_buf);
    let manager = running.manager.clone();
    let moved = watchers.moved.clone();
    let shared = Shared::new(manager, settings, events, calls, moved, kept);
    Ok(Assembled { running, shared, watchers, tasks })
}

/// Accept sessions (each a task of `sessions`) and status questions until `stop` or the idle
/// timeout (woken when the number of open sessions reaches or leaves zero, never on a tick).
async fn serve_until_done(
    router: &SharedRouter,
    sessions: &mut JoinSet<()>,
    stop: impl Future<Output = ()>,
) -> Ended {
    let shared = &router.shared;
    let mut idle = shared.idle_since();
    let mut status_answers = JoinSet::new();
    tokio::pin!(stop);
    loop {
        let since = *idle.borrow_and_update();
        let deadline = since.zip(router.idle_timeout).map(|(since, limit)| since + limit);
        tokio::select! {
            accepted = router.sessions.accept() => match accepted {
                Ok((stream, _)) => { sessions.spawn(unix_session(shared.clone(), stream)); }
                Err(e) => tracing::warn!("cannot accept a session: {e}"),
            },
            accepted = router.status.accept() => if let Ok((stream, _)) = accepted {
                let answer = super::status::answer(shared, &router.info);
                status_answers.spawn(super::status::send(stream, answer));
            },
            Some(_) = sessions.join_next() => {}
            Some(_) = status_answers.join_next() => {}
            _ = idle.changed() => {}
            () = sleep_until(deadline) => return Ended::Idle,
            () = &mut stop => return Ended::Stopped,
        }
    }
}

/// Until `deadline`; forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// A Unix socket at `path` only this user may connect to (a stale file from a router that
/// died is replaced: the caller holds the serve lock).
fn bind_private(path: &Path) -> anyhow::Result<UnixListener> {
    let _ = std::fs::remove_file(path);
    let listener =
        UnixListener::bind(path).with_context(|| format!("cannot listen on {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// One session over a Unix socket, from a process of this user only.
async fn unix_session(shared: Arc<Shared>, stream: UnixStream) {
    let cwd = match stream.peer_cred() {
        Ok(cred) if cred.uid() == current_uid() => cred.pid().and_then(working_directory),
        Ok(cred) => {
            tracing::warn!(uid = cred.uid(), "a session of another user is refused");
            return;
        }
        Err(e) => {
            tracing::warn!("a session whose user cannot be told is refused: {e}");
            return;
        }
    };
    let server = match shared.open_session("unix", cwd.as_deref()) {
        Ok(server) => server,
        Err(e) => return tracing::warn!("cannot open a session: {e:#}"),
    };
    let id = server.id();
    let (read, write) = stream.into_split();
    let read = super::ending::Watched::new(read, server.ended());
    match tokio::time::timeout(HANDSHAKE, server.serve((read, write))).await {
        Ok(Ok(service)) => {
            let _ = service.waiting().await;
        }
        Ok(Err(e)) => tracing::info!(session = id, "a session ended before its handshake: {e}"),
        Err(_) => tracing::info!(session = id, "a session sent no handshake in time; closed"),
    }
}

/// How long a connection may take to `initialize` before it is closed (so that one that never
/// does cannot keep the router from its idle timeout).
const HANDSHAKE: Duration = Duration::from_secs(5);

/// The working directory of process `pid` (the bridge's: its agent's), if it can be told.
fn working_directory(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// The edits of a config file, as the file system reports them (inotify), not looked for on
/// a timer. The file's directory is watched, so a file saved by renaming a new one over it (as
/// editors save) is seen too.
pub(crate) struct ConfigEdits {
    _watcher: notify::RecommendedWatcher,
    events: tokio::sync::mpsc::UnboundedReceiver<()>,
}

impl ConfigEdits {
    pub(crate) fn watch(path: &Path) -> anyhow::Result<Self> {
        use notify::Watcher as _;
        let name = path.file_name().map(ToOwned::to_owned);
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Reading the file is an event too (inotify's open, access, close): no edit.
                let ours = event.is_ok_and(|e| {
                    !matches!(e.kind, notify::EventKind::Access(_))
                        && e.paths.iter().any(|p| p.file_name() == name.as_deref())
                });
                if ours {
                    let _ = tx.send(());
                }
            })
            .context("cannot watch the config file")?;
        watcher
            .watch(&dir, notify::RecursiveMode::NonRecursive)
            .with_context(|| format!("cannot watch {}", dir.display()))?;
        Ok(Self { _watcher: watcher, events })
    }

    /// The next edit: a burst of events (a write, then a rename) is one edit, taken once the
    /// file has been quiet for [`EDIT_SETTLES`].
    async fn next(&mut self) -> Option<()> {
        self.events.recv().await?;
        while let Ok(Some(())) = tokio::time::timeout(EDIT_SETTLES, self.events.recv()).await {}
        Some(())
    }
}

/// How long a config file is quiet before an edit is read.
const EDIT_SETTLES: Duration = Duration::from_millis(50);

/// Applies edits of the config file to the running servers (see
/// `McpConnectionManager::reconfigure`): only the servers whose entry changed are touched.
/// Each edit is told on `tell`; a file that no longer reads leaves the servers as they are.
async fn follow_config(
    shared: Arc<Shared>,
    source: ConfigSource,
    mut edits: ConfigEdits,
    tell: mpsc::UnboundedSender<Notice>,
) {
    let path = source.path.clone();
    let mut last = std::fs::read(&path).ok();
    while edits.next().await.is_some() {
        let now = std::fs::read(&path).ok();
        // A file being replaced may be missing for a moment: wait for its new text.
        if now.is_none() || now == last {
            continue;
        }
        last = now;
        let notice = match (source.read)() {
            Ok(mut file) => {
                shared.manager.set_scoped(super::own::split_off(&mut file));
                let done = shared.manager.reconfigure(file.servers);
                tracing::info!(?done, "the config file changed");
                Notice::ConfigApplied {
                    path: path.clone(),
                    added: done.added,
                    restarted: done.restarted,
                    removed: done.removed,
                }
            }
            Err(e) => Notice::ConfigUnusable { path: path.clone(), error: format!("{e:#}") },
        };
        let _ = tell.send(notice);
    }
}

/// Tells every session when the servers' tools change (a server's `tools/list_changed`, a
/// server started, restarted or stopped): looked at when an event says a server's tools may
/// have moved, and only then.
async fn announce_tool_changes(shared: Arc<Shared>, mut moved: tokio::sync::watch::Receiver<u64>) {
    let mut last = shared.manager.known_tools().await;
    while moved.changed().await.is_ok() {
        // A burst of events (every server ready at start) is looked at once.
        tokio::time::sleep(Duration::from_millis(50)).await;
        moved.borrow_and_update();
        let now = shared.manager.known_tools().await;
        let changed = !Arc::ptr_eq(&now.tools, &last.tools) || now.unknown != last.unknown;
        if changed {
            let same = same_tools(&now, &last);
            tracing::info!(same, "the servers' tools changed");
            if !same {
                for peer in shared.peers() {
                    let _ = peer.notify_tool_list_changed().await;
                }
                for sink in shared.all_listeners() {
                    let changed = rmcp::model::ServerNotification::ToolListChangedNotification(
                        rmcp::model::ToolListChangedNotification::default(),
                    );
                    let _ = sink.send(changed).await;
                }
            }
            last = now;
        }
    }
}

/// Sends each session `notifications/resources/updated` for the resources it subscribed to
/// that changed (the servers' changes, looked at when one is reported).
async fn deliver_updates(shared: Arc<Shared>, mut moved: tokio::sync::watch::Receiver<u64>) {
    while moved.changed().await.is_ok() {
        moved.borrow_and_update();
        let hub = shared.changes();
        hub.pump(&shared.manager);
        {
            for (session, uri) in hub.take_updates() {
                let update = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                // A listen stream takes it when it subscribed to it (the sink filters).
                let mut heard = false;
                for sink in shared.listeners(session) {
                    let notification = rmcp::model::ServerNotification::ResourceUpdatedNotification(
                        rmcp::model::ResourceUpdatedNotification::new(update.clone()),
                    );
                    heard |= sink.send(notification).await.is_ok();
                }
                if !heard && let Some(peer) = shared.peer(session) {
                    let _ = peer.notify_resource_updated(update).await;
                }
            }
        }
    }
}
