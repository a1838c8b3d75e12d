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
    let mut config = crate::setup::config(&args.config)?;
    let own = super::own::split_off(&mut config);
    let settings = config.settings.clone();
    let calls = Arc::new(CallOwners::default());
    let host = Arc::new(SharedHost { calls: calls.clone(), client: None });
    let mut running = mcp_host::Assembly::new(config).host_handler(host).start()?;
    let watchers = super::events::Watchers::default();
    if let Some(events) = running.take_events() {
        tokio::spawn(watchers.clone().fan_out(events));
    }
    let events = running.event_sender().clone();
    let own = OwnServers::new(own, events.clone(), calls.clone());
    let shared = Shared::new(running.manager.clone(), settings, events, calls, own);
    let sessions = bind_private(&place.socket())?;
    let status = bind_private(&place.status_socket())?;
    tokio::spawn(watchers.clone().serve(bind_private(&place.events_socket())?));
    let http = match args.listen {
        Some(addr) => Some(super::http::start(shared.clone(), addr, &place).await?),
        None => None,
    };
    tokio::spawn(announce_tool_changes(shared.clone(), watchers.tools_moved.clone()));
    tokio::spawn(deliver_updates(shared.clone()));
    tokio::spawn(follow_config(shared.clone(), args.config.clone()));
    eprintln!(
        "mcp-router: shared router (pid {}) on {}{}",
        std::process::id(),
        place.socket().display(),
        http.as_ref().map(|url| format!(" and {url}")).unwrap_or_default()
    );
    let info = RouterInfo { socket: place.socket(), events: place.events_socket(), http };
    serve_until_done(&shared, &sessions, &status, &info, args.idle_timeout).await;
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

/// Accept sessions and status questions until a signal or the idle timeout.
async fn serve_until_done(
    shared: &Arc<Shared>,
    sessions: &UnixListener,
    status: &UnixListener,
    info: &RouterInfo,
    idle_timeout: u64,
) {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler");
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            accepted = sessions.accept() => match accepted {
                Ok((stream, _)) => { tokio::spawn(unix_session(shared.clone(), stream)); }
                Err(e) => tracing::warn!("cannot accept a session: {e}"),
            },
            accepted = status.accept() => if let Ok((stream, _)) = accepted {
                let answer = super::status::answer(shared, info);
                tokio::spawn(super::status::send(stream, answer));
            },
            _ = tick.tick() => {
                let idle = shared.idle_for();
                if idle_timeout > 0 && idle.is_some_and(|d| d >= Duration::from_secs(idle_timeout)) {
                    eprintln!("mcp-router: no session for {idle_timeout} s; the shared router stops");
                    return;
                }
            }
            _ = tokio::signal::ctrl_c() => return,
            _ = terminate.recv() => return,
        }
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

/// Applies edits of the config file to the running servers (see
/// `McpConnectionManager::reconfigure`): only the servers whose entry changed are touched.
/// A file that no longer reads is named on stderr and the servers stay as they are.
async fn follow_config(shared: Arc<Shared>, config: ConfigArg) {
    let Some(path) = config.config.clone() else { return };
    let mut last = std::fs::read(&path).ok();
    loop {
        tokio::time::sleep(CONFIG_POLL).await;
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

/// How often the config file is looked at.
const CONFIG_POLL: Duration = Duration::from_millis(300);

/// Tells every session when the servers' tools change (a server's `tools/list_changed`, a
/// server started, restarted or stopped): looked at when an event says a server's tools may
/// have moved, and every 2 s besides.
async fn announce_tool_changes(shared: Arc<Shared>, moved: Arc<tokio::sync::Notify>) {
    let mut last = shared.manager.known_tools().await;
    loop {
        tokio::select! {
            // A burst of events (every server ready at start) is looked at once.
            () = moved.notified() => tokio::time::sleep(Duration::from_millis(50)).await,
            () = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
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
/// that changed (the servers' changes, looked at every 250 ms).
async fn deliver_updates(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
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
