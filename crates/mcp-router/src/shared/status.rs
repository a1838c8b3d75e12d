//! `mcp-router status`: what the shared router for a config runs — its sessions, its servers
//! (state, process, memory) and the calls in flight — asked over its status socket.

use std::sync::Arc;

use anyhow::Context as _;
use mcp_connection_manager::{McpConnectionManager, ServerStatus};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::UnixStream;

use super::place::{Place, current_uid};
use super::serve::RouterInfo;
use super::session::Shared;
use crate::setup::ConfigArg;

/// The status answer: the router, its sessions and its servers (the shared ones, then the
/// ones run per session or per working directory).
pub(crate) fn answer(shared: &Arc<Shared>, info: &RouterInfo) -> Value {
    let mut servers = servers_of(&shared.manager, &json!({ "shared": true }));
    for group in shared.own.groups() {
        let whose = match group.session {
            Some(session) => json!({ "shared": false, "session": session }),
            None => json!({ "shared": "cwd", "cwd": group.cwd }),
        };
        servers.extend(servers_of(&group.manager, &whose));
    }
    json!({
        "pid": std::process::id(),
        "rss_kib": resident_kib(std::process::id()),
        "started": shared.started(),
        "socket": info.socket,
        "events": info.events,
        "http": info.http,
        "sessions": shared.sessions(),
        "servers": servers,
    })
}

/// `manager`'s servers: name, state, process and memory, with `whose` (how it is shared).
fn servers_of(manager: &McpConnectionManager, whose: &Value) -> Vec<Value> {
    let pids: std::collections::BTreeMap<String, u32> = manager.child_pids().into_iter().collect();
    let names = manager.server_names().into_iter();
    names
        .map(|name| {
            let pid = pids.get(&name).copied();
            let state = match manager.status(&name) {
                Some(ServerStatus::Ready) => "ready".to_string(),
                Some(ServerStatus::Starting) => "starting".to_string(),
                Some(ServerStatus::NotStarted) => "idle".to_string(),
                Some(ServerStatus::SignInRequired(_)) => "sign-in required".to_string(),
                Some(ServerStatus::Failed(why)) => format!("failed: {why}"),
                Some(_) | None => "unknown".to_string(),
            };
            let mut server = json!({
                "name": name,
                "state": state,
                "pid": pid,
                "rss_kib": pid.and_then(resident_kib),
            });
            if let (Some(server), Some(whose)) = (server.as_object_mut(), whose.as_object()) {
                server.extend(whose.clone());
            }
            server
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
pub(crate) async fn send(mut stream: UnixStream, answer: Value) {
    if stream.peer_cred().map(|c| c.uid()).ok() != Some(current_uid()) {
        return;
    }
    let line = format!("{answer}\n");
    let _ = stream.write_all(line.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// `mcp-router status [--config FILE] [--json]`.
pub(crate) async fn run(config: &ConfigArg, as_json: bool) -> anyhow::Result<i32> {
    let place = Place::for_config(config.config.as_deref())?;
    let Ok(mut stream) = UnixStream::connect(place.status_socket()).await else {
        eprintln!("mcp-router: no shared router runs for this config");
        return Ok(1);
    };
    let mut text = String::new();
    stream.read_to_string(&mut text).await.context("cannot read the router's status")?;
    let status: Value =
        serde_json::from_str(text.trim()).context("the router's status is not JSON")?;
    if as_json {
        outln!("{status}");
        return Ok(0);
    }
    for line in describe(&status) {
        outln!("{line}");
    }
    Ok(0)
}

/// The status as lines for a person.
fn describe(status: &Value) -> Vec<String> {
    let mut lines = vec![format!(
        "shared router pid {} ({} KiB) on {}{}",
        status["pid"],
        status["rss_kib"],
        status["socket"].as_str().unwrap_or_default(),
        status["http"].as_str().map(|url| format!(" and {url}")).unwrap_or_default()
    )];
    let sessions = status["sessions"].as_array().cloned().unwrap_or_default();
    lines.push(format!("sessions: {}", sessions.len()));
    for s in &sessions {
        lines.push(format!(
            "  #{} {} {} calls, {} in flight",
            s["id"],
            s["client"].as_str().unwrap_or(s["transport"].as_str().unwrap_or_default()),
            s["calls"],
            s["calls_in_flight"]
        ));
    }
    lines.push("servers:".to_string());
    for s in status["servers"].as_array().into_iter().flatten() {
        let process = match (s["pid"].as_u64(), s["rss_kib"].as_u64()) {
            (Some(pid), Some(kib)) => format!(" pid {pid}, {kib} KiB"),
            (Some(pid), None) => format!(" pid {pid}"),
            _ => String::new(),
        };
        let whose = match (&s["session"], s["cwd"].as_str()) {
            (Value::Number(session), _) => format!("session #{session}"),
            (_, Some(cwd)) => format!("for {cwd}"),
            _ => "shared".to_string(),
        };
        lines.push(format!(
            "  {} ({whose}) {}{process}",
            s["name"].as_str().unwrap_or_default(),
            s["state"].as_str().unwrap_or_default()
        ));
    }
    lines
}
