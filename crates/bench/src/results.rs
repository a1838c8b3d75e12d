//! Tool results end to end: E7, one small tool call at a time (see `rows_e7`); and E5, one
//! 20 MiB tool result, end to end — `ToolRouter::dispatch` (the result cut to the
//! 64 KiB budget, the whole kept for reading back; a consumer draining the events) against a
//! separate bare rmcp client on its own copy of the bench server, which gets the result and
//! turns it into the JSON it would hand the model. Beside the wall time, the peak of this
//! process's live heap over each call (the counting allocator) and what stays live after it,
//! as multiples of the payload. Calls go on past the kept results' memory cap (64 MiB): from
//! the fourth call on, the oldest kept result is written to the private directory (on a thread
//! of its own), which the wall time sees. Diagnostics: `E5_MEM=<bytes>` sets the kept results'
//! memory cap and `E5_MAX=<n>` their count (`E5_MEM=0 E5_MAX=0`: nothing kept).

use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::Peer;
use router_protocol::EventSender;
use tool_router::{CallContext, ToolCall, ToolOutput, ToolRouter};

use crate::e2e::alternate;
use crate::row::Row;
use crate::server::Options;
use crate::workloads::{
    bare_lines_up_to, bare_modern, bench_server, draining, median, ratio, read_options, routed,
    show,
};

const PAYLOAD: usize = 20 * 1024 * 1024;

/// One call's wall time, peak heap over it and heap still live after it (bytes).
struct Sample {
    wall: Duration,
    peak: usize,
    kept: usize,
}

async fn measured<F: std::future::Future<Output = anyhow::Result<()>>>(
    call: F,
) -> anyhow::Result<Sample> {
    let live = crate::alloc::reset_peak();
    let started = Instant::now();
    call.await?;
    let wall = started.elapsed();
    let peak = crate::alloc::peak().saturating_sub(live);
    Ok(Sample { wall, peak, kept: crate::alloc::live().saturating_sub(live) })
}

async fn routed_call(router: &ToolRouter, ctx: &CallContext, rep: usize) -> anyhow::Result<()> {
    let call = ToolCall {
        call_id: format!("e5-{rep}"),
        name: "mcp__s__big".into(),
        arguments: serde_json::json!({"bytes": PAYLOAD}).to_string().into(),
    };
    let output = router.dispatch(ctx, call).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let text = serde_json::to_string(&output)?;
    anyhow::ensure!(
        matches!(output, ToolOutput::Mcp { result: Ok(_) }) && text.len() < 70_000,
        "the router's output is {} bytes",
        text.len()
    );
    Ok(())
}

async fn bare_call(peer: &Peer<RoleClient>) -> anyhow::Result<()> {
    let arguments = serde_json::json!({"bytes": PAYLOAD});
    let params = CallToolRequestParams::new("big")
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let result = peer.call_tool(params).await?;
    let text = serde_json::to_string(&result)?;
    anyhow::ensure!(text.len() > PAYLOAD, "the bare result is {} bytes", text.len());
    Ok(())
}

pub(crate) async fn big_result(quick: bool) -> anyhow::Result<Vec<Row>> {
    let options = Options { tools: 1, ..read_options(100) };
    let mut r = routed(vec![bench_server("s", &options)?], EventSender::discard()).await;
    if let Ok(mem) = std::env::var("E5_MEM") {
        let mut settings = tool_router::RouterSettings::default();
        settings.results.kept.memory_bytes = mem.parse()?;
        settings.results.kept.max_results =
            std::env::var("E5_MAX").map_or(Ok(100), |m| m.parse())?;
        r.router =
            std::sync::Arc::new(ToolRouter::with_mcp_settings(r.manager.clone(), &settings)?);
    }
    // A user of bare rmcp who expects 20 MiB results raises its 16 MiB line limit (longer
    // lines are dropped and the call waits for ever).
    let b = bare_lines_up_to(&options, usize::MAX).await?;
    let peer = b.client.peer().clone();
    let (ctx, consumer) = draining();
    let reps = if quick { 4 } else { 10 };
    let (mut router, mut bare) = (Vec::new(), Vec::new());
    for rep in 0..=reps {
        for side in [rep % 2, 1 - rep % 2] {
            let sample = if side == 0 {
                measured(routed_call(&r.router, &ctx, rep)).await?
            } else {
                measured(bare_call(&peer)).await?
            };
            if rep > 0 {
                if side == 0 { router.push(sample) } else { bare.push(sample) }
            }
        }
    }
    consumer.abort();
    r.manager.shutdown().await;
    Ok(e5_rows(&router, &bare))
}

fn e5_rows(router: &[Sample], bare: &[Sample]) -> Vec<Row> {
    let wall = |s: &[Sample]| median(s.iter().map(|s| s.wall).collect());
    let most = |s: &[Sample], f: fn(&Sample) -> usize| s.iter().map(f).max().unwrap_or(0);
    let times = |bytes: usize| bytes as f64 / PAYLOAD as f64;
    let (router_wall, bare_wall) = (wall(router), wall(bare));
    let (router_peak, bare_peak) = (most(router, |s| s.peak), most(bare, |s| s.peak));
    let router_kept = most(router, |s| s.kept);
    let by_bare = router_peak as f64 / bare_peak.max(1) as f64;
    vec![
        Row {
            name: "E5 one 20 MiB tool result, end to end (cut to 64 KiB, the rest kept; past the 64 MiB memory cap from the 4th call), wall per call",
            baseline: show(bare_wall),
            router: show(router_wall),
            ratio: ratio(router_wall, bare_wall),
            target: "≤ 1.10",
            met: Some(ratio(router_wall, bare_wall) <= 1.10),
        },
        Row {
            name: "E5 same, peak live heap over the call, router vs bare rmcp (× the payload)",
            baseline: format!("{:.2}×", times(bare_peak)),
            router: format!("{:.2}×", times(router_peak)),
            ratio: by_bare,
            target: "≤ 1.10",
            met: Some(by_bare <= 1.10),
        },
        Row {
            name: "E5 same, peak live heap over the call as a multiple of the payload (rmcp's line buffer and serde's string building are in both)",
            baseline: format!("{:.2}×", times(bare_peak)),
            router: format!("{:.2}×", times(router_peak)),
            ratio: times(router_peak),
            target: "≤ 1.5",
            met: Some(times(router_peak) <= 1.5),
        },
        Row {
            name: "E5 same, heap still live after a call (the kept result, in memory until the cap), × the payload",
            baseline: "—".into(),
            router: format!("{:.2}×", times(router_kept)),
            ratio: times(router_kept),
            target: "≤ 1.5",
            met: Some(times(router_kept) <= 1.5),
        },
    ]
}

/// E7: one tool call at a time (a tool that answers 1 KiB of text), the router (a consumer
/// draining its events) against a separate bare rmcp client on its own server, both in
/// 2026-07-28, which turns the result into its JSON as the router does.
pub(crate) async fn rows_e7(quick: bool) -> anyhow::Result<Vec<Row>> {
    let _one_cpu = crate::pin::one_cpu();
    let options = read_options(1024);
    let r = routed(vec![bench_server("s", &options)?], EventSender::discard()).await;
    let b = bare_modern(&options).await?;
    let peer = b.client.peer().clone();
    let (ctx, consumer) = draining();
    let arguments = serde_json::json!({"bytes": 1024});
    let call = tool_router::ToolCall {
        call_id: "e7".into(),
        name: "mcp__s__big".into(),
        arguments: arguments.to_string().into(),
    };
    let params = rmcp::model::CallToolRequestParams::new("big")
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let routed_call = || async {
        let output = r.router.dispatch(&ctx, call.clone()).await;
        let output = output.map_err(|e| anyhow::anyhow!("{e}"))?;
        anyhow::ensure!(output.is_success(), "the call failed: {output:?}");
        Ok(())
    };
    let bare_call = || async {
        let result = peer.call_tool(params.clone()).await?;
        anyhow::ensure!(serde_json::to_string(&result)?.len() > 1024, "a short result");
        Ok(())
    };
    for _ in 0..300 {
        routed_call().await?;
        bare_call().await?;
    }
    let (blocks, per_block) = if quick { (10, 100) } else { (30, 200) };
    let [router, baseline] = alternate(blocks, per_block, |which| async move {
        if which == 0 { routed_call().await } else { bare_call().await }
    })
    .await?;
    consumer.abort();
    r.manager.shutdown().await;
    Ok(crate::e2e::rows(
        (router, baseline),
        "E7 sequential tool call (1 KiB text result), end to end (one CPU): router (draining consumer) vs a separate bare rmcp client on its own server, both in 2026-07-28, wall median",
        "E7 same, CPU time of this process per call (and its context switches per call)",
    ))
}

/// E8: 1,000 tool calls at once over 4 stdio servers (1 KiB of text back each), the router (a
/// consumer draining the events) against 4 separate bare rmcp clients on their own servers:
/// rounds alternate between the two after a warm-up round each, as E2's reads do; both sides
/// in 2026-07-28. Then the same against bare clients in 2025-11-25 (a diagnostic: what the
/// era costs the servers).
pub(crate) async fn rows_e8(quick: bool) -> anyhow::Result<Vec<Row>> {
    let mut out = crate::e2e::rows(
        e8(quick, true).await?,
        "E8 1,000 concurrent tool calls (1 KiB text results), 4 stdio servers, end to end (vs 4 separate bare rmcp clients, both in 2026-07-28), wall per round",
        "E8 same, CPU time of this process per call (and its context switches per call)",
    );
    let (router, baseline) = e8(quick, false).await?;
    out.push(crate::e2e::wall_row(
        &router,
        &baseline,
        "E8 diagnostic, wall per round: the same against bare rmcp clients in 2025-11-25",
        "(diagnostic)",
    ));
    Ok(out)
}

/// E8's `i`th call through the router: `big` on server `s{server}`.
async fn big_call(
    router: &ToolRouter,
    ctx: &CallContext,
    (i, server): (usize, usize),
    arguments: String,
) -> anyhow::Result<()> {
    let call = ToolCall {
        call_id: format!("e8-{i}"),
        name: format!("mcp__s{server}__big"),
        arguments: arguments.into(),
    };
    let output = router.dispatch(ctx, call).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    anyhow::ensure!(output.is_success(), "the call failed: {output:?}");
    Ok(())
}

/// One E8 workload: the router's rounds and the bare clients' (in 2026-07-28 if `modern`).
async fn e8(quick: bool, modern: bool) -> anyhow::Result<(crate::e2e::Side, crate::e2e::Side)> {
    use std::sync::Arc;
    const SERVERS: usize = 4;
    const AT_ONCE: usize = 1_000;
    let options = read_options(1024);
    let configs = (0..SERVERS)
        .map(|i| bench_server(&format!("s{i}"), &options))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let r = routed(configs, EventSender::discard()).await;
    let mut clients = Vec::new();
    for _ in 0..SERVERS {
        clients.push(crate::everything::Target::Bench.bare(&options, modern).await?);
    }
    let peers: Arc<Vec<Peer<RoleClient>>> =
        Arc::new(clients.iter().map(|b| b.client.peer().clone()).collect());
    let (ctx, consumer) = draining();
    let arguments = serde_json::json!({"bytes": 1024});
    let params = CallToolRequestParams::new("big")
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let round = |router_side: bool| {
        let tasks: Vec<crate::workloads::Task> = (0..AT_ONCE)
            .map(|i| {
                let (router, ctx, peers) = (r.router.clone(), ctx.clone(), peers.clone());
                let (arguments, params) = (arguments.to_string(), params.clone());
                // Each side spawns a future of its own (`workloads::Task`).
                if router_side {
                    tokio::spawn(async move {
                        big_call(&router, &ctx, (i, i % SERVERS), arguments).await
                    })
                } else {
                    tokio::spawn(async move {
                        let result = peers[i % SERVERS].call_tool(params).await?;
                        anyhow::ensure!(serde_json::to_string(&result)?.len() > 1024, "short");
                        Ok(())
                    })
                }
            })
            .collect();
        async move {
            let started = Instant::now();
            for task in tasks {
                task.await??;
            }
            anyhow::Ok(started.elapsed())
        }
    };
    let reps = if quick { 3 } else { 25 };
    let mut sides = [crate::e2e::Side::default(), crate::e2e::Side::default()];
    for rep in 0..=reps {
        for k in 0..2 {
            let which = (rep + k) % 2;
            let before = crate::e2e::usage();
            let elapsed = round(which == 0).await?;
            if rep > 0 {
                sides[which].add(crate::e2e::usage() - before, AT_ONCE as u32);
                sides[which].wall.push(elapsed);
            }
        }
    }
    consumer.abort();
    r.manager.shutdown().await;
    let [router, baseline] = sides;
    Ok((router, baseline))
}
