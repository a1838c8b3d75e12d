//! `mcp-router status`: what the shared router for a config runs — its sessions, its servers
//! (state, process, memory) and the calls in flight — asked over its status socket.

use std::sync::Arc;

use anyhow::Context as _;
use mcp_connection_manager::{McpConnectionManager, ServerStatus};
use router_protocol::{RouterStatus, Scope, ServerEntry};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::UnixStream;

use super::place::{Place, current_uid};
use super::serve::RouterInfo;
use super::session::Shared;
use crate::setup::ConfigArg;

/// The status answer: the router, its sessions and its servers (the shared ones, then the
/// ones run per session or per working directory).
pub(crate) fn answer(shared: &Arc<Shared>, info: &RouterInfo) -> RouterStatus {
    let mut servers = servers_of(&shared.manager, &Scope::everyone());
    for group in shared.own.groups() {
        let scope = match group.session {
            Some(session) => Scope::session(session),
            None => Scope::working_directory(group.cwd.clone()),
        };
        servers.extend(servers_of(&group.manager, &scope));
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

/// `manager`'s servers: name, state, process and memory, run for `scope`.
fn servers_of(manager: &McpConnectionManager, scope: &Scope) -> Vec<ServerEntry> {
    let pids: std::collections::BTreeMap<String, u32> = manager.child_pids().into_iter().collect();
    let mut sandboxes: std::collections::BTreeMap<String, String> =
        manager.sandboxes().into_iter().collect();
    let mut held: std::collections::BTreeMap<String, usize> = Default::default();
    for (server, _, _) in manager.held_definitions() {
        *held.entry(server).or_default() += 1;
    }
    let names = manager.server_names().into_iter();
    names
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

/// The status answer of the shared router for `config`, as it wrote it; `None` (said on
/// stderr) when none runs.
async fn status_text(config: &ConfigArg) -> anyhow::Result<Option<String>> {
    let place = Place::for_config(config.config.as_deref())?;
    let Ok(mut stream) = UnixStream::connect(place.status_socket()).await else {
        eprintln!("mcp-router: no shared router runs for this config");
        return Ok(None);
    };
    let mut text = String::new();
    stream.read_to_string(&mut text).await.context("cannot read the router's status")?;
    Ok(Some(text))
}

/// `mcp-router stop [--config FILE]`: the shared router named by its status answer (which it
/// gives only to its own user) is sent SIGTERM, and its exit awaited (at most 30 s). Exit 1 when
/// none runs.
pub(crate) async fn stop(config: &ConfigArg) -> anyhow::Result<i32> {
    let Some(text) = status_text(config).await? else { return Ok(1) };
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
    outln!("stopped the shared router (pid {pid})");
    Ok(0)
}

/// `mcp-router status [--config FILE] [--json]`.
pub(crate) async fn run(config: &ConfigArg, as_json: bool) -> anyhow::Result<i32> {
    let Some(text) = status_text(config).await? else { return Ok(1) };
    if as_json {
        outln!("{}", text.trim());
        return Ok(0);
    }
    let status: RouterStatus =
        serde_json::from_str(text.trim()).context("the router's status is not its JSON")?;
    for line in describe(&status, &crate::setup::approve_command(config)) {
        outln!("{line}");
    }
    Ok(0)
}

/// The status as lines for a person; `approve` is the command that approves held definitions.
fn describe(status: &RouterStatus, approve: &str) -> Vec<String> {
    let mut lines = vec![format!(
        "shared router pid {} ({} KiB) on {}{}",
        status.pid,
        status.rss_kib.map_or_else(|| "?".to_string(), |kib| kib.to_string()),
        status.socket.display(),
        status.http.as_ref().map(|url| format!(" and {url}")).unwrap_or_default()
    )];
    lines.push(format!("sessions: {}", status.sessions.len()));
    for s in &status.sessions {
        lines.push(format!(
            "  #{} {} {} calls, {} in flight; {} spec tokens, {} tokens of outputs ({:.0}% of the sessions')",
            s.id,
            s.client.as_deref().unwrap_or(&s.transport),
            s.calls,
            s.calls_in_flight,
            s.spec_tokens,
            s.tokens_to_model,
            100.0 * s.share
        ));
    }
    lines.push("servers:".to_string());
    for s in &status.servers {
        let process = match (s.pid, s.rss_kib) {
            (Some(pid), Some(kib)) => format!(" pid {pid}, {kib} KiB"),
            (Some(pid), None) => format!(" pid {pid}"),
            _ => String::new(),
        };
        let whose = match &s.scope {
            Scope::Session { session, .. } => format!("session #{session}"),
            Scope::WorkingDirectory { cwd: Some(cwd), .. } => format!("for {}", cwd.display()),
            Scope::WorkingDirectory { cwd: None, .. } => "for the router's directory".to_string(),
            Scope::Everyone { .. } => "shared".to_string(),
        };
        lines.push(format!("  {} ({whose}) {}{process}", s.name, s.state));
        if let Some(sandbox) = &s.sandbox {
            lines.push(format!("    sandbox: {sandbox}"));
        }
        if s.held > 0 {
            // A directory's server is approved where its agents work.
            let cd = match &s.scope {
                Scope::WorkingDirectory { cwd: Some(cwd), .. } => {
                    format!("cd {} && ", crate::setup::shell_word(&cwd.to_string_lossy()))
                }
                _ => String::new(),
            };
            lines.push(format!(
                "    held from the model: {} (`{cd}{approve} {}` lets them in)",
                s.held, s.name
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_reads_each_servers_sandbox_and_what_is_held_with_the_command_that_works() {
        let status: RouterStatus = serde_json::from_value(serde_json::json!({
            "pid": 7, "rss_kib": 100, "started": 0, "socket": "/run/r.sock", "events": "/run/r.events",
            "sessions": [],
            "servers": [
                {"name": "calc", "state": "ready", "pid": 8, "rss_kib": 50,
                 "sandbox": "landlock ABI 7: …", "held": 2, "shared": true},
                {"name": "git", "state": "ready", "held": 1, "shared": "cwd", "cwd": "/home/ada/my proj"},
                {"name": "time", "state": "idle", "shared": true}
            ]
        }))
        .expect("a status");
        let lines = describe(&status, "mcp-router trust approve --config /c.toml");
        let text = lines.join("\n");
        assert!(text.contains("  calc (shared) ready pid 8, 50 KiB\n    sandbox: landlock ABI 7: …\n    held from the model: 2 (`mcp-router trust approve --config /c.toml calc` lets them in)"), "{text}");
        assert!(text.contains("    held from the model: 1 (`cd '/home/ada/my proj' && mcp-router trust approve --config /c.toml git` lets them in)"), "{text}");
        assert!(text.ends_with("  time (shared) idle"), "{text}");
    }
}
