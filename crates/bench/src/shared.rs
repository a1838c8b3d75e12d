//! S1–S4: the shared router. N sessions (1, 8, 32) each configured with the same 10 servers
//! (the demo server): through `mcp-router serve` (each session an `mcp-router connect` with an
//! rmcp client on its stdio) against N embedded routers (`mcp-router exec`, one per session, as
//! every agent runs today) — server processes and their memory, and the router's memory per
//! extra session; then one read's and one tool call's latency through `connect` against the
//! embedded router (an `Assembly` in this process). Memory is proportional set size (PSS:
//! pages shared between processes counted once in all), summed over the processes.
//!
//! Needs the `mcp-router` binary beside this one (`cargo build --release -p mcp-router`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::row::Row;
use crate::workloads::median;

/// Servers every session is configured with.
const SERVERS: usize = 10;

/// A config of [`SERVERS`] demo servers (this binary's `serve-demo`), each tagged `marker`.
fn write_config(dir: &Path, marker: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let mut text = String::new();
    for k in 0..SERVERS {
        text.push_str(&format!(
            "[mcp_servers.s{k}]\ncommand = \"{}\"\nargs = [\"serve-demo\", \"{marker}\"]\n\n",
            exe.display()
        ));
    }
    // A file per marker: a shared router follows its config file's edits.
    let path = dir.join(format!("{marker}.toml"));
    std::fs::write(&path, text)?;
    Ok(path)
}

/// The `mcp-router` binary beside this one.
fn router_binary() -> anyhow::Result<PathBuf> {
    let path = std::env::current_exe()?.with_file_name("mcp-router");
    anyhow::ensure!(
        path.exists(),
        "{} is missing: cargo build --release -p mcp-router",
        path.display()
    );
    Ok(path)
}

/// Live processes whose command line satisfies `keep`, with their PSS in KiB.
fn processes(keep: impl Fn(&str) -> bool) -> Vec<(u32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            keep(&String::from_utf8_lossy(&cmdline)).then(|| (pid, pss_kib(pid)))
        })
        .filter(|(_, pss)| *pss > 0)
        .collect()
}

fn pss_kib(pid: u32) -> u64 {
    rollup_kib(pid, &["Pss:"])
}

/// Unique set size: the pages only this process has (what its end would free).
fn uss_kib(pid: u32) -> u64 {
    rollup_kib(pid, &["Private_Clean:", "Private_Dirty:"])
}

/// The sum of `fields` of the process's `smaps_rollup`, in KiB.
fn rollup_kib(pid: u32, fields: &[&str]) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let value = |line: &str| line.split_whitespace().nth(1)?.parse::<u64>().ok();
    text.lines().filter(|l| fields.iter().any(|f| l.starts_with(f))).filter_map(value).sum()
}

/// The demo servers tagged `marker` (not their guards): count and PSS in KiB.
fn servers(marker: &str) -> (usize, u64) {
    let exe = std::env::current_exe().map(|e| e.display().to_string()).unwrap_or_default();
    let found = processes(|cmd| cmd.starts_with(&exe) && cmd.contains(marker));
    (found.len(), found.iter().map(|(_, pss)| pss).sum())
}

/// Poll `check` until it holds (at most 60 s).
async fn until(what: &str, check: impl Fn() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        anyhow::ensure!(Instant::now() < deadline, "{what} did not happen within 60 s");
        if std::env::var_os("BENCH_DEBUG").is_some() {
            eprintln!("waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// What N sessions cost one way: server processes and their PSS; the routers' memory.
struct Cost {
    server_processes: usize,
    server_kib: u64,
    /// Embedded: the routers' USS, in all. Shared: what one session more costs (the
    /// router's USS growth per session after the first, and a bridge's USS).
    router_kib: u64,
}

/// N embedded routers: `mcp-router exec` each, every server started.
async fn embedded(n: usize, dir: &Path) -> anyhow::Result<Cost> {
    let marker = format!("embedded-{}-n{n}", std::process::id());
    let config = write_config(dir, &marker)?;
    let mut children = Vec::new();
    for _ in 0..n {
        let child = tokio::process::Command::new(router_binary()?)
            .args(["exec", "--config"])
            .arg(&config)
            // A cache of its own: with another's tool catalogs its servers would stay idle
            // until used (as they do for a second session of one agent).
            .env("MCP_ROUTER_CACHE_DIR", dir.join(format!("cache-{marker}-{}", children.len())))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        children.push(child);
        // One session after another, as agents start (all at once, 320 servers on two cores
        // outlast their startup timeout).
        let started = children.len() * SERVERS;
        let what = format!("{started} servers of {} embedded routers", children.len());
        until(&what, || servers(&marker).0 == started).await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pids: Vec<u32> = children.iter().filter_map(|c| c.id()).collect();
    let router_kib = pids.iter().map(|pid| uss_kib(*pid)).sum();
    let (server_processes, server_kib) = servers(&marker);
    drop(children);
    until("the embedded routers' servers ended", || servers(&marker).0 == 0).await?;
    Ok(Cost { server_processes, server_kib, router_kib })
}

/// An rmcp client over one `connect`'s stdio.
struct Session {
    client: RunningService<RoleClient, ()>,
    _bridge: tokio::process::Child,
}

async fn connect(runtime: &Path, config: &Path, cache: &Path) -> anyhow::Result<Session> {
    let mut bridge = tokio::process::Command::new(router_binary()?)
        .args(["connect", "--idle-timeout", "1", "--config"])
        .arg(config)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("MCP_ROUTER_CACHE_DIR", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let (stdout, stdin) = (bridge.stdout.take(), bridge.stdin.take());
    let io = (
        stdout.ok_or_else(|| anyhow::anyhow!("stdout"))?,
        stdin.ok_or_else(|| anyhow::anyhow!("stdin"))?,
    );
    let client = ().serve(io).await?;
    Ok(Session { client, _bridge: bridge })
}

async fn call(session: &Session, name: &str, arguments: Value) -> anyhow::Result<String> {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = arguments.as_object().cloned();
    let result = session.client.call_tool(params).await?;
    anyhow::ensure!(result.is_error != Some(true), "{name} failed: {:?}", result.content);
    let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone());
    Ok(text.unwrap_or_default())
}

/// N sessions through one shared router: its PSS, and the servers'.
async fn shared(n: usize, dir: &Path) -> anyhow::Result<(Cost, Vec<Session>)> {
    let marker = format!("shared-{}-n{n}", std::process::id());
    let config = write_config(dir, &marker)?;
    let runtime = dir.join(format!("run-{n}"));
    std::fs::create_dir_all(&runtime)?;
    let config_text = config.display().to_string();
    let router_uss = || {
        let router = processes(|cmd| cmd.contains("serve\0") && cmd.contains(&config_text));
        router.iter().map(|(pid, _)| uss_kib(*pid)).sum::<u64>()
    };
    let mut sessions = Vec::new();
    let mut first = 0;
    for k in 0..n {
        let session = connect(&runtime, &config, &dir.join("cache")).await?;
        call(&session, "list_mcp_resources", json!({})).await?;
        sessions.push(session);
        if k == 0 {
            until("the shared router's servers", || servers(&marker).0 == SERVERS).await?;
            tokio::time::sleep(Duration::from_millis(500)).await;
            first = router_uss();
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let bridges = processes(|cmd| cmd.contains("connect\0") && cmd.contains(&config_text));
    let bridge = bridges.iter().map(|(pid, _)| uss_kib(*pid)).sum::<u64>() / n as u64;
    let growth = router_uss().saturating_sub(first) / (n as u64 - 1).max(1);
    let (server_processes, server_kib) = servers(&marker);
    Ok((Cost { server_processes, server_kib, router_kib: growth + bridge }, sessions))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// S1 (per N) and S2: processes and memory, embedded against shared.
async fn memory_rows(counts: &[usize], dir: &Path) -> anyhow::Result<(Vec<Row>, Vec<Session>)> {
    let mut rows = Vec::new();
    let mut router_per_n = Vec::new();
    let mut kept = Vec::new();
    for &n in counts {
        let base = embedded(n, dir).await?;
        let (ours, sessions) = shared(n, dir).await?;
        rows.push(Row {
            name: match n {
                1 => "S1 servers' processes and memory, 1 session × 10 servers: N embedded routers vs one shared",
                8 => "S1 … 8 sessions",
                32 => "S1 … 32 sessions",
                _ => "S1 … N sessions (quick)",
            },
            baseline: format!("{} processes, {}", base.server_processes, mib(base.server_kib)),
            router: format!("{} processes, {}", ours.server_processes, mib(ours.server_kib)),
            ratio: ours.server_kib as f64 / base.server_kib.max(1) as f64,
            target: "10 processes whatever N",
            met: Some(ours.server_processes == SERVERS),
        });
        router_per_n.push((n, base.router_kib, ours.router_kib));
        if n == counts[0] {
            kept = sessions;
        } else {
            drop(sessions);
        }
    }
    if let Some(&(n, embedded, per_session)) = router_per_n.last()
        && n > 1
    {
        let per_router = embedded / n as u64;
        rows.push(Row {
            name: "S2 router memory (USS) per extra session: an embedded router vs the shared router's growth plus a connect bridge",
            baseline: mib(per_router),
            router: mib(per_session),
            ratio: per_session as f64 / per_router.max(1) as f64,
            target: "≤ 2 MiB",
            met: Some(per_session <= 2 * 1024),
        });
    }
    Ok((rows, kept))
}

/// S3 and S4: one read's and one tool call's median latency through `connect` against the
/// embedded router (an Assembly in this process over a config of the same servers).
async fn latency_rows(session: &Session, dir: &Path, calls: usize) -> anyhow::Result<Vec<Row>> {
    let config = write_config(dir, &format!("latency-{}", std::process::id()))?;
    let assembly = mcp_host::Assembly::from_file(&config)?;
    let mut running = assembly.start()?;
    let mut events = running.take_events().ok_or_else(|| anyhow::anyhow!("events"))?;
    tokio::spawn(async move { while events.recv().await.is_some() {} });
    let ctx = running.call_context();
    let listed: Value =
        serde_json::from_str(&call(session, "list_mcp_resources", json!({"server": "s0"})).await?)?;
    let uri = listed["resources"][0]["uri"].as_str().unwrap_or_default().to_string();
    let cases = [
        (
            "S3 one read through connect (read_mcp_resource) vs the embedded router",
            "read_mcp_resource",
            json!({"server": "s0", "uri": uri}),
        ),
        (
            "S4 one tool call through connect (mcp__s0__echo) vs the embedded router",
            "mcp__s0__echo",
            json!({"text": "hello"}),
        ),
    ];
    let mut rows = Vec::new();
    for (name, tool, arguments) in cases {
        let (mut embedded, mut through) = (Vec::new(), Vec::new());
        for i in 0..calls {
            let started = Instant::now();
            let tool_call = mcp_host::ToolCall {
                call_id: i.to_string(),
                name: tool.to_string(),
                arguments: arguments.clone().into(),
            };
            let output = running.router.dispatch_to_output(&ctx, tool_call).await?;
            anyhow::ensure!(output.is_success(), "{tool} failed in the embedded router");
            embedded.push(started.elapsed());
            let started = Instant::now();
            call(session, tool, arguments.clone()).await?;
            through.push(started.elapsed());
        }
        let (base, ours) = (median(embedded), median(through));
        let bound = base.mul_f64(1.5) + Duration::from_micros(200);
        rows.push(Row {
            name,
            baseline: format!("{:.1} µs", base.as_secs_f64() * 1e6),
            router: format!("{:.1} µs", ours.as_secs_f64() * 1e6),
            ratio: ours.as_secs_f64() / base.as_secs_f64(),
            target: "≤ 1.5× + 200 µs",
            met: Some(ours <= bound),
        });
    }
    running.shutdown().await;
    Ok(rows)
}

/// Every shared-router row.
pub(crate) async fn rows(quick: bool) -> anyhow::Result<Vec<Row>> {
    let dir = std::env::temp_dir().join(format!("mcp-router-bench-shared-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let counts: &[usize] = if quick { &[1, 4] } else { &[1, 8, 32] };
    let result = async {
        let (mut rows, sessions) = memory_rows(counts, &dir).await?;
        let session = sessions.first().ok_or_else(|| anyhow::anyhow!("no session"))?;
        rows.extend(latency_rows(session, &dir, if quick { 50 } else { 300 }).await?);
        Ok(rows)
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}
