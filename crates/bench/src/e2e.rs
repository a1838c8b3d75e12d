//! End-to-end rows (`e2e`): the router's whole path as an embedding agent uses it —
//! `ToolRouter::dispatch` → manager → rmcp → the server, with a consumer draining the events —
//! against what that agent would use instead: a separate bare rmcp client on its own copy of
//! the same bench server binary. Beside wall time, the CPU time this process spends per call
//! (user + sys from `getrusage`, all threads; the servers are other processes), which a busy
//! 2-core machine does not blur the way it blurs wall time.
//!
//! Both sides speak the router's revision with the bench server, 2026-07-28, whose client
//! context rmcp's server parses from every request: the diagnostics against bare clients in
//! 2025-11-25 show that share. E3 and E4 are in `everything`, E7 and E8 in `results`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::service::Peer;
use router_protocol::EventSender;
use tool_router::{CallContext, ToolCall};

use crate::everything::Target;
use crate::row::Row;
use crate::server::Options;
use crate::workloads::{
    Routed, bare_read, bench_server, draining, manager_read, median, ratio, read_call,
    read_options, routed, router_read, show,
};

/// What this process has spent so far (every thread): CPU time (user + sys) and context
/// switches (voluntary and not), from `getrusage`.
#[derive(Clone, Copy, Default)]
pub(crate) struct Usage {
    pub(crate) cpu: Duration,
    pub(crate) switches: u64,
}

pub(crate) fn usage() -> Usage {
    // SAFETY: getrusage writes into the struct we own; RUSAGE_SELF is always valid.
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Usage {
        cpu: Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime)),
        switches: (usage.ru_nvcsw + usage.ru_nivcsw) as u64,
    }
}

impl std::ops::Sub for Usage {
    type Output = Usage;
    fn sub(self, before: Usage) -> Usage {
        Usage {
            cpu: self.cpu.saturating_sub(before.cpu),
            switches: self.switches.saturating_sub(before.switches),
        }
    }
}

/// Wall samples per call and CPU time per call of one side.
#[derive(Default)]
pub(crate) struct Side {
    pub(crate) wall: Vec<Duration>,
    cpu: Duration,
    switches: u64,
    calls: u32,
}

impl Side {
    pub(crate) fn cpu_per_call(&self) -> Duration {
        self.cpu / self.calls.max(1)
    }

    /// This process's context switches per call.
    pub(crate) fn switches_per_call(&self) -> f64 {
        self.switches as f64 / f64::from(self.calls.max(1))
    }

    pub(crate) fn add(&mut self, spent: Usage, calls: u32) {
        self.cpu += spent.cpu;
        self.switches += spent.switches;
        self.calls += calls;
    }
}

/// How E1's router side is set up: the row itself, or a diagnostic that takes one cost away.
#[derive(Clone, Copy, PartialEq)]
enum E1 {
    /// The era the router chooses (2026-07-28 here), a consumer task draining the events.
    Agent,
    /// Pinned to 2025-11-25, against a bare client in 2025-11-25 too.
    Legacy,
    /// Nobody listening: no events are built.
    Quiet,
    /// The events handed to a callback on the emitting thread (`EventSender::inline`): built,
    /// no task woken.
    Inline,
    /// The connection manager alone (`McpBackend::read_resource` and the JSON of its result),
    /// without the router's handler, both sides in 2025-11-25: what the manager itself adds.
    Manager,
    /// The row's router against a bare client in 2025-11-25 (rmcp's `initialize` era).
    LegacyBare,
    /// No router: a second bare client on its own server against the first (what the row's
    /// ratios read for equal work).
    Calibration,
}

/// `blocks` pairs of blocks of `per_block` timed calls, `call(0)` and `call(1)` alternating,
/// and which goes first alternating too (CPU time needs a side to run alone for a while):
/// each side's wall time per call and CPU time over its blocks.
pub(crate) async fn alternate<F>(
    blocks: usize,
    per_block: u32,
    mut call: impl FnMut(usize) -> F,
) -> anyhow::Result<[Side; 2]>
where
    F: Future<Output = anyhow::Result<()>>,
{
    let mut sides = [Side::default(), Side::default()];
    for block in 0..blocks {
        for k in 0..2 {
            let which = (block + k) % 2;
            let side = &mut sides[which];
            let before = usage();
            for _ in 0..per_block {
                let started = Instant::now();
                call(which).await?;
                side.wall.push(started.elapsed());
            }
            side.add(usage() - before, per_block);
        }
    }
    Ok(sides)
}

/// E1: one read at a time, in blocks that alternate between the router and the bare client
/// (CPU time needs a side to run alone for a while).
async fn sequential(quick: bool, setup: E1) -> anyhow::Result<Vec<Row>> {
    let _one_cpu = crate::pin::one_cpu();
    let options = read_options(1024);
    let mut config = bench_server("s", &options)?;
    if matches!(setup, E1::Legacy | E1::Manager) {
        config.protocol = mcp_connection_manager::ProtocolChoice::Legacy;
    }
    let r = routed(vec![config], EventSender::discard()).await;
    let legacy_bare = matches!(setup, E1::LegacyBare | E1::Legacy | E1::Manager);
    let (bench, calibrated) = (Target::Bench, setup == E1::Calibration);
    let b = bench.bare(&options, !legacy_bare).await?;
    let peer = b.client.peer().clone();
    let other = if calibrated { Some(bench.bare(&options, true).await?) } else { None };
    let other_peer = other.as_ref().map(|o| o.client.peer().clone());
    let (drained, consumer) = draining();
    let ctx = match setup {
        E1::Quiet => CallContext::new(EventSender::discard()),
        E1::Inline => CallContext::new(EventSender::inline(drop)),
        E1::Agent | E1::Legacy | E1::Manager | E1::LegacyBare | E1::Calibration => drained,
    };
    let call = read_call("s", "bench://r/1");
    let (blocks, per_block) = if quick { (10, 100) } else { (30, 200) };
    for _ in 0..300 {
        router_read(&r.router, &ctx, &call).await?;
        bare_read(&peer, "bench://r/1").await?;
    }
    let (r, ctx, call, peer, other_peer) = (&r, &ctx, &call, &peer, &other_peer);
    let sides = alternate(blocks, per_block, |which| async move {
        if let (0, Some(other)) = (which, other_peer) {
            bare_read(other, "bench://r/1").await?;
        } else if which == 0 && setup == E1::Manager {
            manager_read(&r.manager, "s", "bench://r/1").await?;
        } else if which == 0 {
            router_read(&r.router, ctx, call).await?;
        } else {
            bare_read(peer, "bench://r/1").await?;
        }
        Ok(())
    })
    .await?;
    consumer.abort();
    r.manager.shutdown().await;
    let [router, baseline] = sides;
    Ok(e1_rows(setup, router, baseline))
}

/// CPU per call, with the context switches per call beside it.
pub(crate) fn with_switches(cpu: Duration, side: &Side) -> String {
    format!("{} ({:.1} switches)", show(cpu), side.switches_per_call())
}

/// E1's rows: the row itself (wall and CPU), or one diagnostic (CPU).
fn e1_rows(setup: E1, router: Side, baseline: Side) -> Vec<Row> {
    let (router_cpu, bare_cpu) = (router.cpu_per_call(), baseline.cpu_per_call());
    let (router_wall, bare_wall) = (median(router.wall.clone()), median(baseline.wall.clone()));
    let wall = ratio(router_wall, bare_wall);
    let diagnostic = |name: &'static str| vec![cpu_row(&router, &baseline, name, "(diagnostic)")];
    match setup {
        E1::Legacy => {
            return diagnostic(
                "E1 diagnostic, CPU per call: the router pinned to 2025-11-25, against a bare rmcp client in 2025-11-25",
            );
        }
        E1::Quiet => {
            return diagnostic("E1 diagnostic, CPU per call: nobody listening (no events built)");
        }
        E1::Inline => {
            return diagnostic(
                "E1 diagnostic, CPU per call: events to a callback on the emitting thread (EventSender::inline: built, no consumer task woken)",
            );
        }
        E1::Manager => {
            return diagnostic(
                "E1 diagnostic, CPU per call: the connection manager alone (read_resource and its JSON), no router, both sides in 2025-11-25",
            );
        }
        E1::Calibration => {
            return vec![Row {
                name: "E1 calibration, wall median (CPU per call in the next columns' brackets): a second bare rmcp client on its own server vs the first (no router either side)",
                baseline: format!("{} ({})", show(bare_wall), show(bare_cpu)),
                router: format!("{} ({})", show(router_wall), show(router_cpu)),
                ratio: wall,
                target: "(calibration)",
                met: None,
            }];
        }
        E1::LegacyBare => {
            return diagnostic(
                "E1 diagnostic, CPU per call: the row's router against a bare rmcp client in 2025-11-25",
            );
        }
        E1::Agent => {}
    }
    rows(
        (router, baseline),
        "E1 sequential read, end to end (one CPU): router (draining consumer) vs a separate bare rmcp client on its own server, both in 2026-07-28, wall median",
        "E1 sequential read, end to end, CPU time of this process per call (and its context switches per call)",
    )
}

/// What one concurrent round reads: the router's calls, or the bare clients' URIs.
pub(crate) struct Reads {
    calls: Arc<Vec<ToolCall>>,
    uris: Arc<Vec<(usize, String)>>,
}

impl Reads {
    /// `n` reads spread over `servers`, of `distinct` URIs (`bench://r/{i}`).
    pub(crate) fn new(servers: usize, n: usize, distinct: usize) -> Self {
        Self::on(&Target::Bench, servers, n, distinct)
    }

    /// The same, of `target`'s URIs.
    pub(crate) fn on(target: &Target, servers: usize, n: usize, distinct: usize) -> Self {
        let uri = |i: usize| target.uri(i % distinct);
        let calls = (0..n).map(|i| read_call(&format!("s{}", i % servers), &uri(i))).collect();
        let uris = (0..n).map(|i| (i % servers, uri(i))).collect();
        Self { calls: Arc::new(calls), uris: Arc::new(uris) }
    }
}

/// Who reads in a concurrent round.
#[derive(Clone)]
enum Reader {
    /// The router, with this context (its events drained, or nobody listening).
    Router(CallContext),
    /// The connection manager alone (`read_resource` and its JSON), no router.
    Manager,
    /// Bare clients: the row's, or others each on its own copy of the server (the calibration).
    Bare(Arc<Vec<Peer<RoleClient>>>),
}

/// The router's side of a concurrent workload: the row itself or a diagnostic.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Spread {
    /// A draining consumer, against bare clients in 2026-07-28 (the row).
    Agent,
    /// The same against bare clients in 2025-11-25 (rmcp's `initialize` era).
    LegacyBaseline,
    /// Nobody listening (no events built).
    Quiet,
    /// The events to a callback on the emitting thread (`EventSender::inline`, dropping them).
    Inline,
    /// The connection manager alone.
    Manager,
    /// No router: a second set of bare clients, each on its own server, against the first
    /// (what the row's wall ratio reads when both sides do the same work).
    Calibration,
}

/// Every read of `reads` at once, by `reader`.
async fn all_at_once(r: &Routed, reads: &Reads, reader: &Reader) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let tasks: Vec<crate::workloads::Task> = (0..reads.calls.len())
        .map(|i| {
            let (router, manager) = (r.router.clone(), r.manager.clone());
            let (calls, uris) = (reads.calls.clone(), reads.uris.clone());
            let s = uris[i].0;
            match reader.clone() {
                Reader::Router(c) => {
                    tokio::spawn(async move { router_read(&router, &c, &calls[i]).await })
                }
                Reader::Manager => tokio::spawn(async move {
                    manager_read(&manager, &format!("s{s}"), &uris[i].1).await
                }),
                Reader::Bare(peers) => {
                    tokio::spawn(async move { bare_read(&peers[s], &uris[i].1).await.map(drop) })
                }
            }
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok(started.elapsed())
}

/// One concurrent workload: `servers` copies of `target`'s server with `options` behind the
/// router (default options: watching on) and as many bare clients on their own copies; rounds
/// of `reads` alternate between them after a warm-up round each.
pub(crate) async fn concurrent(
    target: &Target,
    quick: bool,
    servers: usize,
    options: &Options,
    reads: &Reads,
    spread: Spread,
) -> anyhow::Result<(Side, Side)> {
    let configs = (0..servers)
        .map(|i| target.config(&format!("s{i}"), options))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let r = routed(configs, EventSender::discard()).await;
    let mut clients = Vec::new();
    for _ in 0..servers {
        clients.push(target.bare(options, spread != Spread::LegacyBaseline).await?);
    }
    let peers = Arc::new(clients.iter().map(|b| b.client.peer().clone()).collect::<Vec<_>>());
    let (ctx, consumer) = draining();
    let mut others = Vec::new();
    if spread == Spread::Calibration {
        for _ in 0..servers {
            others.push(target.bare(options, true).await?);
        }
    }
    let bare_side = Reader::Bare(peers);
    let router_side = match spread {
        Spread::Agent | Spread::LegacyBaseline => Reader::Router(ctx),
        Spread::Quiet => Reader::Router(CallContext::new(EventSender::discard())),
        Spread::Inline => Reader::Router(CallContext::new(EventSender::inline(drop))),
        Spread::Manager => Reader::Manager,
        Spread::Calibration => {
            Reader::Bare(Arc::new(others.iter().map(|b| b.client.peer().clone()).collect()))
        }
    };
    // A round's wall time swings 30–150 ms from one round to the next on this 2-core VM (the
    // server, a client and the kernel share two cores), on both sides: 25 rounds a side, so
    // the medians settle.
    let reps = if quick { 3 } else { 25 };
    let mut sides = [Side::default(), Side::default()];
    for rep in 0..=reps {
        for k in 0..2 {
            let which = (rep + k) % 2;
            let reader = if which == 0 { &router_side } else { &bare_side };
            let before = usage();
            let elapsed = all_at_once(&r, reads, reader).await?;
            if rep > 0 {
                let side = &mut sides[which];
                side.add(usage() - before, reads.calls.len() as u32);
                side.wall.push(elapsed);
            }
        }
    }
    consumer.abort();
    r.manager.shutdown().await;
    let [router, baseline] = sides;
    Ok((router, baseline))
}

/// The rows of one concurrent workload: wall median of a round, CPU per call.
pub(crate) fn rows(
    (router, baseline): (Side, Side),
    wall_name: &'static str,
    cpu_name: &'static str,
) -> Vec<Row> {
    let (router_cpu, bare_cpu) = (router.cpu_per_call(), baseline.cpu_per_call());
    let cpu = ratio(router_cpu, bare_cpu);
    let (router_wall, bare_wall) = (median(router.wall.clone()), median(baseline.wall.clone()));
    let wall = ratio(router_wall, bare_wall);
    vec![
        Row {
            name: wall_name,
            baseline: show(bare_wall),
            router: show(router_wall),
            ratio: wall,
            target: "≤ 1.10",
            met: Some(wall <= 1.10),
        },
        Row {
            name: cpu_name,
            baseline: with_switches(bare_cpu, &baseline),
            router: with_switches(router_cpu, &router),
            ratio: cpu,
            target: "≤ 1.15",
            met: Some(cpu <= 1.15),
        },
    ]
}

/// A row that only reports (`target`: a diagnostic or a calibration): each side's wall median.
pub(crate) fn wall_row(
    router: &Side,
    baseline: &Side,
    name: &'static str,
    target: &'static str,
) -> Row {
    let (router_wall, bare_wall) = (median(router.wall.clone()), median(baseline.wall.clone()));
    let ratio = ratio(router_wall, bare_wall);
    Row { name, baseline: show(bare_wall), router: show(router_wall), ratio, target, met: None }
}

/// The same for each side's CPU time per call (with its context switches).
pub(crate) fn cpu_row(
    router: &Side,
    baseline: &Side,
    name: &'static str,
    target: &'static str,
) -> Row {
    let (router_cpu, bare_cpu) = (router.cpu_per_call(), baseline.cpu_per_call());
    let (baseline, router, ratio) = (
        with_switches(bare_cpu, baseline),
        with_switches(router_cpu, router),
        ratio(router_cpu, bare_cpu),
    );
    Row { name, baseline, router, ratio, target, met: None }
}

/// E1's rows and its diagnostics alone (`mcp-router-bench e1`, for profiling the read path).
pub(crate) async fn rows_e1(quick: bool) -> anyhow::Result<Vec<Row>> {
    let mut out = sequential(quick, E1::Agent).await?;
    use E1::{Calibration, Inline, Legacy, LegacyBare, Manager, Quiet};
    for diagnostic in [LegacyBare, Legacy, Quiet, Inline, Manager, Calibration] {
        out.extend(sequential(quick, diagnostic).await?);
    }
    Ok(out)
}

/// E2's rows alone (`mcp-router-bench e2`, for profiling concurrent reads).
pub(crate) async fn rows_e2(quick: bool) -> anyhow::Result<Vec<Row>> {
    let plain = read_options(1024);
    let spread = Reads::new(4, 1_000, 1);
    let mut out = rows(
        concurrent(&Target::Bench, quick, 4, &plain, &spread, Spread::Agent).await?,
        "E2 1,000 concurrent reads, 4 stdio servers, end to end (vs 4 separate bare rmcp clients, both in 2026-07-28), wall per round",
        "E2 same, CPU time of this process per read (and its context switches per read)",
    );
    let diagnostics: [(Spread, Option<&'static str>, &'static str); 5] = [
        (
            Spread::LegacyBaseline,
            Some(
                "E2 diagnostic, wall per round: the same against bare rmcp clients in 2025-11-25 (the servers parse no client context)",
            ),
            "E2 diagnostic, CPU per read: the same against bare rmcp clients in 2025-11-25",
        ),
        (Spread::Quiet, None, "E2 diagnostic, CPU per read: nobody listening (no events built)"),
        (
            Spread::Inline,
            Some(
                "E2 diagnostic, wall per round: the events to a callback on the emitting thread (EventSender::inline, no consumer task woken)",
            ),
            "E2 diagnostic, CPU per read: the same, inline",
        ),
        (
            Spread::Manager,
            None,
            "E2 diagnostic, CPU per read: the connection manager alone (read_resource and its JSON), no router",
        ),
        (
            Spread::Calibration,
            Some(
                "E2 calibration, wall per round: 4 more bare rmcp clients, each on its own server, vs the first 4 (no router either side: what the row's ratio reads for equal work)",
            ),
            "E2 calibration, CPU per read: the same",
        ),
    ];
    for (setup, wall_name, name) in diagnostics {
        let (router, baseline) =
            concurrent(&Target::Bench, quick, 4, &plain, &spread, setup).await?;
        let target = if setup == Spread::Calibration { "(calibration)" } else { "(diagnostic)" };
        if let Some(wall_name) = wall_name {
            out.push(wall_row(&router, &baseline, wall_name, target));
        }
        out.push(cpu_row(&router, &baseline, name, target));
    }
    Ok(out)
}
