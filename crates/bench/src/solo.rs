//! `mcp-router-bench solo <side> [reads] [at-once] [servers]`: one side of E1 (or, with
//! `at-once` above 1, of E2: rounds of that many reads at once over `servers`, 4 unless given)
//! alone in this process, for profiling it (`perf record` of this run sees one side's work
//! only) and for a ladder of what each layer costs. Sides: `agent` (the router, a consumer task
//! draining its events), `inline` (the router, its events dropped on the emitting thread), `quiet` (the router, nobody listening), `legacy` (the router pinned to
//! 2025-11-25, nobody listening), `manager` (the connection manager alone, 2025-11-25), `bare`
//! and `bare-modern` (bare rmcp clients in 2025-11-25 or 2026-07-28, each on its own server).
//! Prints CPU time, context switches and wall time per read.

use std::sync::Arc;
use std::time::Instant;

use rmcp::RoleClient;
use rmcp::service::Peer;
use router_protocol::EventSender;
use tool_router::CallContext;

use crate::e2e::{Side, usage};
use crate::workloads::{
    Bare, Routed, bare, bare_modern, bare_read, bench_server, draining, manager_read, read_call,
    read_options, routed, router_read,
};

const URI: &str = "bench://r/1";

/// Who reads, and over how many servers (the `i`th read goes to server `i % servers`).
#[derive(Clone)]
enum Reader {
    Router(Arc<Routed>, CallContext, Arc<Vec<tool_router::ToolCall>>),
    Manager(Arc<Routed>, usize),
    Bare(Arc<Vec<Peer<RoleClient>>>),
}

impl Reader {
    /// The `i`th read.
    async fn read(&self, i: usize) -> anyhow::Result<()> {
        match self {
            Self::Router(r, ctx, calls) => {
                router_read(&r.router, ctx, &calls[i % calls.len()]).await
            }
            Self::Manager(r, servers) => {
                manager_read(&r.manager, &format!("s{}", i % servers), URI).await
            }
            Self::Bare(peers) => bare_read(&peers[i % peers.len()], URI).await.map(|_| ()),
        }
    }

    /// The `i`th read as a task of its own, each side spawning its own future (one block with
    /// every arm would make every task as large as rmcp's read, 5 KB).
    fn spawn(self, i: usize) -> tokio::task::JoinHandle<anyhow::Result<()>> {
        match self {
            Self::Router(r, ctx, calls) => {
                tokio::spawn(
                    async move { router_read(&r.router, &ctx, &calls[i % calls.len()]).await },
                )
            }
            Self::Manager(r, servers) => tokio::spawn(async move {
                manager_read(&r.manager, &format!("s{}", i % servers), URI).await
            }),
            Self::Bare(peers) => {
                tokio::spawn(
                    async move { bare_read(&peers[i % peers.len()], URI).await.map(|_| ()) },
                )
            }
        }
    }

    /// `n` reads from `first` on, `at_once` at a time (spawned tasks when more than one).
    async fn reads(&self, first: usize, n: usize, at_once: usize) -> anyhow::Result<()> {
        if at_once <= 1 {
            for i in first..first + n {
                self.read(i).await?;
            }
            return Ok(());
        }
        for round in (first..first + n).step_by(at_once) {
            let tasks: Vec<_> =
                (round..(round + at_once).min(first + n)).map(|i| self.clone().spawn(i)).collect();
            for task in tasks {
                task.await??;
            }
        }
        Ok(())
    }
}

/// Servers the reads at once are spread over unless told (sequential reads use one).
const SERVERS: usize = 4;

/// Runs `reads` reads (after 1,000 to warm up), `at_once` at a time, on `side`, and prints what
/// they cost.
pub(crate) async fn run(
    side: &str,
    reads: usize,
    at_once: usize,
    servers: Option<usize>,
) -> anyhow::Result<()> {
    let options = read_options(1024);
    let servers = servers.unwrap_or(if at_once > 1 { SERVERS } else { 1 }).max(1);
    let legacy = matches!(side, "legacy" | "manager");
    let mut configs = Vec::new();
    for i in 0..servers {
        let mut config = bench_server(&format!("s{i}"), &options)?;
        if legacy {
            config.protocol = mcp_connection_manager::ProtocolChoice::Legacy;
        }
        configs.push(config);
    }
    let calls = Arc::new((0..servers).map(|i| read_call(&format!("s{i}"), URI)).collect());
    let (drained, consumer) = draining();
    let mut kept: Vec<Bare> = Vec::new();
    let reader = match side {
        "agent" | "inline" | "quiet" | "legacy" | "manager" => {
            let r = Arc::new(routed(configs, EventSender::discard()).await);
            match side {
                "manager" => Reader::Manager(r, servers),
                "agent" => Reader::Router(r, drained, calls),
                "inline" => Reader::Router(r, CallContext::new(EventSender::inline(drop)), calls),
                _ => Reader::Router(r, CallContext::new(EventSender::discard()), calls),
            }
        }
        "bare" | "bare-modern" => {
            for _ in 0..servers {
                kept.push(if side == "bare" {
                    bare(&options).await?
                } else {
                    bare_modern(&options).await?
                });
            }
            Reader::Bare(Arc::new(kept.iter().map(|b| b.client.peer().clone()).collect()))
        }
        other => anyhow::bail!(
            "unknown side {other:?}: agent, inline, quiet, legacy, manager, bare or bare-modern"
        ),
    };
    reader.reads(0, 1_000, at_once).await?;
    let (before, started) = (usage(), Instant::now());
    reader.reads(0, reads, at_once).await?;
    let mut spent = Side::default();
    spent.add(usage() - before, u32::try_from(reads).unwrap_or(u32::MAX));
    let wall = started.elapsed().as_secs_f64() / reads.max(1) as f64;
    consumer.abort();
    if let Reader::Router(r, ..) | Reader::Manager(r, _) = &reader {
        r.manager.shutdown().await;
    }
    println!(
        "{side}: {reads} reads, {at_once} at once over {servers} servers: CPU {:.1} µs a read, {:.2} switches a read, wall {:.1} µs a read",
        spent.cpu_per_call().as_secs_f64() * 1e6,
        spent.switches_per_call(),
        wall * 1e6,
    );
    Ok(())
}
