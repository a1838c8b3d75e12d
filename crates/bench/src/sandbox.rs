//! Row `sandbox`: what the default sandbox costs a stdio server — start-up, start-up while the
//! host holds a large heap (with the helper, as the binary runs, and without one, where the
//! child is forked to apply it), and a tool call — against the same demo server with
//! `sandbox = "off"`, in the same run, the sides alternating.

use std::time::{Duration, Instant};

use mcp_backend::McpBackend as _;
use mcp_connection_manager::{
    ManagerOptions, McpConnectionManager, Sandbox, ServerConfig, ServerStatus,
};
use rmcp::model::JsonObject;
use router_protocol::EventSender;

use crate::row::Row;
use crate::workloads::{median, ratio, show};

/// The demo server (this binary's `serve-demo`) as `name`, in `sandbox`.
fn demo(name: &str, sandbox: &Sandbox) -> anyhow::Result<ServerConfig> {
    let exe = std::env::current_exe()?.to_string_lossy().to_string();
    let mut config = ServerConfig::stdio(name, exe, vec!["serve-demo".to_string()]);
    config.sandbox = Some(sandbox.clone());
    Ok(config)
}

/// `servers` started, waited for (every one ready), and the time that took.
async fn started(n: usize, sandbox: &Sandbox) -> anyhow::Result<(McpConnectionManager, Duration)> {
    let servers = (0..n).map(|i| demo(&format!("s{i:02}"), sandbox)).collect::<Result<_, _>>()?;
    let begun = Instant::now();
    // The servers' own sandbox names its helper (or none: applied between fork and exec).
    let options = ManagerOptions::default();
    let manager = McpConnectionManager::start(servers, EventSender::discard(), options);
    manager.wait_until_started().await;
    let elapsed = begun.elapsed();
    for i in 0..n {
        let status = manager.status(&format!("s{i:02}"));
        anyhow::ensure!(status == Some(ServerStatus::Ready), "s{i:02} is not ready: {status:?}");
    }
    Ok((manager, elapsed))
}

async fn start_time(n: usize, sandbox: &Sandbox) -> anyhow::Result<Duration> {
    let (manager, elapsed) = started(n, sandbox).await?;
    manager.shutdown().await;
    Ok(elapsed)
}

/// The mean time of `count` echo calls, one after another, on one server in `sandbox`.
async fn call_time(count: u32, sandbox: &Sandbox) -> anyhow::Result<Duration> {
    let (manager, _) = started(1, sandbox).await?;
    let arguments: JsonObject = serde_json::from_value(serde_json::json!({"text": "hi"}))?;
    let begun = Instant::now();
    for _ in 0..count {
        manager.call_tool("s00", "echo", Some(arguments.clone())).await?;
    }
    let elapsed = begun.elapsed() / count;
    manager.shutdown().await;
    Ok(elapsed)
}

/// The rows: each side measured `reps` times in turn, medians compared.
pub(crate) async fn rows(quick: bool) -> anyhow::Result<Vec<Row>> {
    let reps = if quick { 3 } else { 7 };
    let helper = std::env::current_exe().ok();
    let on = Sandbox { helper: helper.clone(), ..Sandbox::default() };
    let (off, forked) = (Sandbox::off(), Sandbox::default());
    let (mut start_on, mut start_off, mut call_on, mut call_off) = (vec![], vec![], vec![], vec![]);
    for _ in 0..reps {
        start_on.push(start_time(16, &on).await?);
        start_off.push(start_time(16, &off).await?);
        call_on.push(call_time(200, &on).await?);
        call_off.push(call_time(200, &off).await?);
    }
    let heap = vec![1u8; 2 << 30];
    let (mut heavy_on, mut heavy_off, mut heavy_forked) = (vec![], vec![], vec![]);
    for _ in 0..reps {
        heavy_on.push(start_time(16, &on).await?);
        heavy_off.push(start_time(16, &off).await?);
        heavy_forked.push(start_time(16, &forked).await?);
    }
    drop(std::hint::black_box(heap));
    let row = |name, off: Vec<Duration>, on: Vec<Duration>, target, limit: Option<f64>| {
        let (off, on) = (median(off), median(on));
        let r = ratio(on, off);
        let met = limit.map(|limit| r <= limit);
        Row { name, baseline: show(off), router: show(on), ratio: r, target, met }
    };
    Ok(vec![
        row(
            "SB1 sandbox: 16 demo servers ready, default sandbox vs sandbox = \"off\"",
            start_off,
            start_on,
            "≤ 1.5",
            Some(1.5),
        ),
        row(
            "SB2 sandbox: the same while the host holds 2 GiB it has written (the helper: posix_spawn)",
            heavy_off.clone(),
            heavy_on,
            "≤ 1.5",
            Some(1.5),
        ),
        row(
            "SB2f sandbox: the same, a host that names no helper (forked to apply it)",
            heavy_off,
            heavy_forked,
            "(reported)",
            None,
        ),
        row(
            "SB3 sandbox: an echo tool call, sandboxed vs not",
            call_off,
            call_on,
            "≤ 1.1",
            Some(1.1),
        ),
    ])
}
