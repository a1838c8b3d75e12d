//! What the shared router for a config runs — its sessions, its servers (state, process,
//! memory) and the calls in flight — answered on its status socket; and stopping it.

use std::sync::Arc;

use anyhow::Context as _;
use mcp_connection_manager::{McpConnectionManager, ServerStatus};
use router_protocol::{RouterStatus, Scope, ServerEntry};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::UnixStream;

use super::place::{Place, current_uid};
use super::serve::RouterInfo;
use super::session::Shared;

/// The status answer: the router, its sessions and its servers (the shared ones, then the
/// ones run per session or per working directory).
pub(crate) fn answer(shared: &Arc<Shared>, info: &RouterInfo) -> RouterStatus {
    let manager = &shared.manager;
    let mut servers = servers_of(manager, manager.server_names(), &Scope::everyone());
    for instances in manager.scoped_instances() {
        let scope = match (instances.scope, instances.session) {
            (mcp_connection_manager::Scope::Session, Some(session)) => Scope::session(session),
            _ => Scope::working_directory(instances.cwd.clone()),
        };
        let names = instances.names.clone();
        servers.extend(instances.ask(manager, |manager| servers_of(manager, names, &scope)));
    }
    RouterStatus {
        pid: std::process::id(),
        rss_kib: resident_kib(std::process::id()),
        started: shared.started(),
        socket: info.socket.clone(),
        events: info.events.clone(),
        http: info.http.clone(),
        sessions: shared.sessions(),
        servers,
        alive_tasks: tokio::runtime::Handle::try_current()
            .map(|runtime| runtime.metrics().num_alive_tasks())
            .unwrap_or(0),
    }
}

/// `manager`'s servers `names` (as the current request sees them): name, state, process and
/// memory, run for `scope`.
fn servers_of(
    manager: &McpConnectionManager,
    names: Vec<String>,
    scope: &Scope,
) -> Vec<ServerEntry> {
    let pids: std::collections::BTreeMap<String, u32> = manager.child_pids().into_iter().collect();
    let mut sandboxes: std::collections::BTreeMap<String, String> =
        manager.sandboxes().into_iter().collect();
    let mut held: std::collections::BTreeMap<String, usize> = Default::default();
    for (server, _, _) in manager.held_definitions() {
        *held.entry(server).or_default() += 1;
    }
    names
        .into_iter()
        .map(|name| {
            let (pid, sandbox) = (pids.get(&name).copied(), sandboxes.remove(&name));
            let held = held.remove(&name).unwrap_or_default();
            let state = match manager.status(&name) {
                Some(ServerStatus::Ready) => "ready".to_string(),
                Some(ServerStatus::Starting) => "starting".to_string(),
                Some(ServerStatus::NotStarted) => "idle".to_string(),
                Some(ServerStatus::SignInRequired(_)) => "sign-in required".to_string(),
                Some(ServerStatus::Failed(why)) => format!("failed: {why}"),
                Some(_) | None => "unknown".to_string(),
            };
            ServerEntry {
                name,
                state,
                pid,
                rss_kib: pid.and_then(resident_kib),
                sandbox,
                held,
                scope: scope.clone(),
            }
        })
        .collect()
}

/// Resident memory of process `pid` in KiB (Linux `/proc`), if it can be read.
fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Write `answer` to a status client of this user, one JSON line.
pub(crate) async fn send(mut stream: UnixStream, answer: RouterStatus) {
    if stream.peer_cred().map(|c| c.uid()).ok() != Some(current_uid()) {
        return;
    }
    let Ok(line) = serde_json::to_string(&answer) else { return };
    let line = line + "\n";
    let _ = stream.write_all(line.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The status answer of the shared router of `place`, as it wrote it (a
/// `router_protocol::RouterStatus`, one JSON line); `None` when none runs there.
pub async fn status_text(place: &Place) -> anyhow::Result<Option<String>> {
    let Ok(mut stream) = UnixStream::connect(place.status_socket()).await else {
        return Ok(None);
    };
    let mut text = String::new();
    stream.read_to_string(&mut text).await.context("cannot read the router's status")?;
    Ok(Some(text))
}

/// Stops the shared router of `place`: the process its status answer names (it gives that only
/// to its own user) is sent SIGTERM, and its exit awaited (at most 30 s). Its pid; `None` when
/// none runs.
pub async fn stop(place: &Place) -> anyhow::Result<Option<u32>> {
    let Some(text) = status_text(place).await? else { return Ok(None) };
    let status: RouterStatus = serde_json::from_str(text.trim())
        .context("the router's status is not what this version reads")?;
    let pid = libc::pid_t::try_from(status.pid).context("a process id out of range")?;
    // Its exit, awaited (a pidfd turns readable when the process ends), not polled.
    // SAFETY: pidfd_open and kill take no pointers; the pid is the router's own answer.
    #[allow(unsafe_code)]
    let (pidfd, sent) = unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0);
        let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0);
        let fd = fd.map(|fd| <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd));
        (fd, libc::kill(pid, libc::SIGTERM) == 0)
    };
    let why = std::io::Error::last_os_error();
    anyhow::ensure!(sent, "cannot signal the shared router (pid {pid}): {why}");
    if let Some(pidfd) = pidfd {
        use tokio::io::{Interest, unix::AsyncFd};
        // SAFETY: the AsyncFd owns the pidfd, open until it is dropped.
        #[allow(unsafe_code)]
        let ended = unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) };
        let ended = ended.map_err(|e| anyhow::anyhow!("cannot watch the router: {e}"))?;
        let gone = tokio::time::timeout(std::time::Duration::from_secs(30), ended.readable());
        anyhow::ensure!(
            gone.await.is_ok(),
            "the shared router (pid {pid}) did not stop within 30 s"
        );
    }
    Ok(Some(status.pid))
}
