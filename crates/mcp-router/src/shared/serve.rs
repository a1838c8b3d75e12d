//! `mcp-router serve`: one router for every agent of this user and config. Sessions come over
//! the Unix socket (what `connect` bridges to) and, when asked, streamable HTTP on a loopback
//! address; each gets a router of its own over the servers they all share.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use mcp_host::McpBackend as _;
use rmcp::ServiceExt as _;
use tokio::net::{UnixListener, UnixStream};

use super::host::CallOwners;
use super::host::SharedHost;
use super::own::OwnServers;
use super::place::{Place, current_uid, lock};
use super::session::{Shared, same_tools};
use crate::setup::ConfigArg;

/// `mcp-router serve`'s options.
#[derive(clap::Args, Default)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    /// Also serve streamable HTTP on this loopback address (`127.0.0.1:0` picks a port); its
    /// bearer secret and URL are written beside the socket. Other addresses are refused.
    #[arg(long)]
    pub(crate) listen: Option<SocketAddr>,
    /// Stop once no session has been open for this many seconds (0: run until stopped).
    #[arg(long, default_value_t = 0)]
    pub(crate) idle_timeout: u64,
}

/// Run the shared router until a signal, or until it has been idle for the idle timeout.
pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<i32> {
    if let Some(addr) = args.listen {
        super::http::check_loopback(addr)?;
    }
    let place = Place::for_config(args.config.config.as_deref())?;
    let Some(held) = lock(&place.serve_lock(), false)? else {
        bail!("a shared router already runs for this config (socket {})", place.socket().display());
    };
    let signals = Signals::new()?;
    let mut config = crate::setup::config(&args.config)?;
    let own = super::own::split_off(&mut config);
    let settings = config.settings.clone();
    let calls = Arc::new(CallOwners::default());
    let host = Arc::new(SharedHost { calls: calls.clone(), client: None });
    let mut running = mcp_host::Assembly::new(config).host_handler(host).start()?;
    // The router's own tasks, each woken by what it waits for and ended with the router.
    let mut tasks = tokio::task::JoinSet::new();
    let watchers = super::events::Watchers::default();
    if let Some(events) = running.take_events() {
        tasks.spawn(watchers.clone().fan_out(events));
    }
    let events = running.event_sender().clone();
    let own = OwnServers::new(own, events.clone(), calls.clone());
    let moved = watchers.moved.clone();
    let shared = Shared::new(running.manager.clone(), settings, events, calls, own, moved.clone());
    let sessions = bind_private(&place.socket())?;
    let status = bind_private(&place.status_socket())?;
    tasks.spawn(watchers.clone().serve(bind_private(&place.events_socket())?));
    let http = match args.listen {
        Some(addr) => {
            let idle = (args.idle_timeout > 0).then(|| Duration::from_secs(args.idle_timeout));
            Some(super::http::start(shared.clone(), addr, &place, idle).await?)
        }
        None => None,
    };
    tasks.spawn(announce_tool_changes(shared.clone(), moved.tools.subscribe()));
    tasks.spawn(deliver_updates(shared.clone(), moved.resources.subscribe()));
    if let Some(path) = args.config.config.clone() {
        let edits = ConfigEdits::watch(&path)?;
        tasks.spawn(follow_config(shared.clone(), args.config.clone(), edits));
    }
    eprintln!(
        "mcp-router: shared router (pid {}) on {}{}",
        std::process::id(),
        place.socket().display(),
        http.as_ref().map(|url| format!(" and {url}")).unwrap_or_default()
    );
    let info = RouterInfo { socket: place.socket(), events: place.events_socket(), http };
    serve_until_done(&shared, &sessions, &status, &info, args.idle_timeout, signals).await;
    tasks.shutdown().await;
    shared.own.shutdown().await;
    running.shutdown().await;
    let files = [place.socket(), place.status_socket(), place.events_socket()];
    // A clean end leaves nothing: the log (kept when the router fails at its start, for the
    // `connect` that started it to quote) goes too.
    for file in files.into_iter().chain([place.secret(), place.address(), place.log()]) {
        let _ = std::fs::remove_file(file);
    }
    super::place::unlock_and_remove(&place.serve_lock(), held);
    Ok(0)
}

/// What the status answer says of the router itself.
pub(crate) struct RouterInfo {
    pub(crate) socket: PathBuf,
    pub(crate) events: PathBuf,
    pub(crate) http: Option<String>,
}

/// Accept sessions and status questions until a signal or the idle timeout (woken when the
/// number of open sessions reaches or leaves zero, never on a tick).
async fn serve_until_done(
    shared: &Arc<Shared>,
    sessions: &UnixListener,
    status: &UnixListener,
    info: &RouterInfo,
    idle_timeout: u64,
    mut signals: Signals,
) {
    let mut idle = shared.idle_since();
    let limit = (idle_timeout > 0).then(|| Duration::from_secs(idle_timeout));
    loop {
        let since = *idle.borrow_and_update();
        let deadline = since.zip(limit).map(|(since, limit)| since + limit);
        tokio::select! {
            accepted = sessions.accept() => match accepted {
                Ok((stream, _)) => { tokio::spawn(unix_session(shared.clone(), stream)); }
                Err(e) => tracing::warn!("cannot accept a session: {e}"),
            },
            accepted = status.accept() => if let Ok((stream, _)) = accepted {
                let answer = super::status::answer(shared, info);
                tokio::spawn(super::status::send(stream, answer));
            },
            _ = idle.changed() => {}
            () = sleep_until(deadline) => {
                eprintln!("mcp-router: no session for {idle_timeout} s; the shared router stops");
                return;
            }
            _ = signals.interrupt.recv() => return,
            _ = signals.terminate.recv() => return,
        }
    }
}

/// SIGINT and SIGTERM, which stop the router as its idle timeout does.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("no SIGINT handler")?,
            terminate: signal(SignalKind::terminate()).context("no SIGTERM handler")?,
        })
    }
}

/// Until `deadline`; forever without one.
async fn sleep_until(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
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
/// A file that no longer reads is named on stderr and the servers stay as they are.
async fn follow_config(shared: Arc<Shared>, config: ConfigArg, mut edits: ConfigEdits) {
    let Some(path) = config.config.clone() else { return };
    let mut last = std::fs::read(&path).ok();
    while edits.next().await.is_some() {
        let now = std::fs::read(&path).ok();
        // A file being replaced may be missing for a moment: wait for its new text.
        if now.is_none() || now == last {
            continue;
        }
        last = now;
        match crate::setup::config(&config) {
            Ok(mut file) => {
                shared.own.reconfigure(super::own::split_off(&mut file));
                let done = shared.manager.reconfigure(file.servers);
                eprintln!(
                    "mcp-router: {} changed: added {:?}, restarted {:?}, removed {:?}",
                    path.display(),
                    done.added,
                    done.restarted,
                    done.removed
                );
            }
            Err(e) => eprintln!("mcp-router: {} changed but cannot be used: {e:#}", path.display()),
        }
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
        for (manager, hub) in shared.hubs() {
            hub.pump(&manager);
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
