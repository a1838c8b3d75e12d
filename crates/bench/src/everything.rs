//! The issue's own setup (issue 25): server-everything 2026.8.31 over stdio, from the pinned
//! harness (`tests/harness/install`, which `./scripts/test` runs first), against a bare rmcp
//! client on its own copy of it; and the watching rows on the bench server: E3 (1,000 reads at
//! once, with a calibration that puts a second bare client against the first) and E4, the
//! working-set row, which runs on server-everything too. Without the harness, the
//! server-everything rows say how to get it.
//!
//! server-everything answers `demo://resource/dynamic/text/{id}` for any positive id and takes
//! subscriptions, so a host can read 5,000 different resources of it, past the watched cap.

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_connection_manager::ServerConfig;
use router_protocol::EventSender;

use crate::e2e::{self, Reads, Spread, alternate};
use crate::row::Row;
use crate::server::Options;
use crate::workloads::{
    Bare, bare, bare_command, bare_modern, bare_read, bench_server, draining, median, ratio,
    read_call, read_options, routed, router_read, show,
};

/// The installed harness's node and server-everything 2026.8.31.
#[derive(Clone)]
pub(crate) struct Everything {
    node: String,
    script: String,
    /// `tests/harness/ts/read_timer.mjs`, the TypeScript SDK clients' timer.
    timer: String,
}

impl Everything {
    /// The harness's server-everything, if `tests/harness/install` has run.
    pub(crate) fn find() -> Option<Self> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/harness");
        let node = dir.join("node_modules/.bin/node");
        let script = dir.join("node_modules/server-everything-2026/dist/index.js");
        let timer = dir.join("ts/read_timer.mjs");
        if !(node.exists() && script.exists() && timer.exists()) {
            return None;
        }
        let text = |p: &Path| p.to_string_lossy().into_owned();
        Some(Self { node: text(&node), script: text(&script), timer: text(&timer) })
    }

    fn args(&self) -> Vec<String> {
        vec![self.script.clone(), "stdio".to_string()]
    }
}

/// The working-set row's names, on the bench server and on server-everything.
const E4: &str = "E4 sequential read latency (one CPU) of a host that read 5,000 different resources vs one that read 5 (watching on, cap 256)";
const EV4: &str = "EV4 sequential read latency (one CPU) on server-everything 2026.8.31: a host that read 5,000 different resources vs one that read 5 (watching on, cap 256)";

/// The server a watching row reads from.
pub(crate) enum Target {
    /// The bench server (`mcp-router-bench serve`) with the row's options.
    Bench,
    /// server-everything 2026.8.31 (its own options: subscriptions on, any id readable).
    Everything(Everything),
}

impl Target {
    pub(crate) fn config(&self, name: &str, options: &Options) -> anyhow::Result<ServerConfig> {
        match self {
            Self::Bench => bench_server(name, options),
            Self::Everything(e) => Ok(ServerConfig::stdio(name, e.node.clone(), e.args())),
        }
    }

    /// A bare rmcp client on its own copy of the server (in 2026-07-28 if `modern`; the
    /// server-everything rows compare with rmcp's `initialize` era, 2025-11-25, only).
    pub(crate) async fn bare(&self, options: &Options, modern: bool) -> anyhow::Result<Bare> {
        match self {
            Self::Bench if modern => bare_modern(options).await,
            Self::Bench => bare(options).await,
            Self::Everything(e) => bare_command(&e.node, &e.args()).await,
        }
    }

    /// The `i`th resource (from 0).
    pub(crate) fn uri(&self, i: usize) -> String {
        match self {
            Self::Bench => format!("bench://r/{i}"),
            Self::Everything(_) => format!("demo://resource/dynamic/text/{}", i + 1),
        }
    }
}

/// A row that could not run: the harness is not installed.
fn skipped(name: &'static str) -> Row {
    Row {
        name,
        baseline: "—".into(),
        router: "not run: tests/harness/install first".into(),
        ratio: f64::NAN,
        target: "(needs the harness)",
        met: None,
    }
}

/// The server-everything rows (`mcp-router-bench everything`, and with `e2e`).
pub(crate) async fn rows(quick: bool) -> anyhow::Result<Vec<Row>> {
    const SEQUENTIAL: [&str; 2] = [
        "EV1 sequential read on server-everything 2026.8.31, end to end (one CPU): router (draining consumer) vs a separate bare rmcp client on its own server, wall median",
        "EV1 same, CPU time of this process per call",
    ];
    const TYPESCRIPT: [(&str, &str); 2] = [
        (
            "sdk",
            "EV1 reference, wall median (CPU per read): the TypeScript SDK's client (@modelcontextprotocol/sdk, right) against bare rmcp (left), each on its own server-everything",
        ),
        (
            "client",
            "EV1 reference, the same with the TypeScript SDK's 2.x client (@modelcontextprotocol/client, right)",
        ),
    ];
    const DISTINCT: [&str; 2] = [
        "EV3 1,000 concurrent reads of 1,000 distinct URIs on server-everything 2026.8.31 (takes subscriptions), watching on (cap 256), wall per round",
        "EV3 same, CPU time of this process per read",
    ];
    const INLINE: [&str; 2] = [
        "EV3 diagnostic, wall per round: the events to a callback on the emitting thread (EventSender::inline, no consumer task woken)",
        "EV3 diagnostic, CPU per read: the same, inline",
    ];
    let Some(everything) = Everything::find() else {
        return Ok([SEQUENTIAL[0], DISTINCT[0], EV4].map(skipped).into());
    };
    let target = Target::Everything(everything.clone());
    let (mut out, bare) = sequential(quick, &target, SEQUENTIAL).await?;
    for (which, name) in TYPESCRIPT {
        out.push(typescript(quick, &everything, which, name, bare).await?);
    }
    let distinct = Reads::on(&target, 1, 1_000, 1_000);
    let options = read_options(1024);
    let round = e2e::concurrent(&target, quick, 1, &options, &distinct, Spread::Agent).await?;
    out.extend(e2e::rows(round, DISTINCT[0], DISTINCT[1]));
    let (router, baseline) =
        e2e::concurrent(&target, quick, 1, &options, &distinct, Spread::Inline).await?;
    out.push(e2e::wall_row(&router, &baseline, INLINE[0], "(diagnostic)"));
    out.push(e2e::cpu_row(&router, &baseline, INLINE[1], "(diagnostic)"));
    out.push(working_set(quick, &target).await?);
    Ok(out)
}

/// EV1 (on `target`): one read at a time, in blocks that alternate between the router and the
/// bare client; also bare rmcp's wall median and CPU per call, for the TypeScript reference.
async fn sequential(
    quick: bool,
    target: &Target,
    [wall_name, cpu_name]: [&'static str; 2],
) -> anyhow::Result<(Vec<Row>, (Duration, Duration))> {
    let _one_cpu = crate::pin::one_cpu();
    let options = read_options(1024);
    let r = routed(vec![target.config("s", &options)?], EventSender::discard()).await;
    let b = target.bare(&options, false).await?;
    let peer = b.client.peer().clone();
    let (ctx, consumer) = draining();
    let uri = target.uri(0);
    let call = read_call("s", &uri);
    for _ in 0..200 {
        router_read(&r.router, &ctx, &call).await?;
        bare_read(&peer, &uri).await?;
    }
    let (blocks, per_block) = if quick { (10, 100) } else { (20, 200) };
    let (r, ctx, call, peer, uri) = (&r, &ctx, &call, &peer, &uri);
    let sides = alternate(blocks, per_block, |which| async move {
        match which {
            0 => router_read(&r.router, ctx, call).await,
            _ => bare_read(peer, uri).await.map(|_| ()),
        }
    })
    .await?;
    consumer.abort();
    r.manager.shutdown().await;
    let [router, baseline] = sides;
    let bare = (median(baseline.wall.clone()), baseline.cpu_per_call());
    Ok((e2e::rows((router, baseline), wall_name, cpu_name), bare))
}

/// What a TypeScript SDK client's own process measured (`tests/harness/ts/read_timer.mjs`).
#[derive(serde::Deserialize)]
struct Timed {
    version: String,
    median_us: f64,
    cpu_us_per_read: f64,
}

/// EV1's reference: `which` TypeScript SDK client (`sdk`, 1.x, or `client`, 2.x) reading the
/// same resource on its own server-everything, sequentially, against bare rmcp's EV1 figures
/// (`bare`); the client times itself in its own process, after EV1's blocks.
async fn typescript(
    quick: bool,
    everything: &Everything,
    which: &str,
    name: &'static str,
    (bare_wall, bare_cpu): (Duration, Duration),
) -> anyhow::Result<Row> {
    let _one_cpu = crate::pin::one_cpu();
    let reads = if quick { "1000" } else { "4000" };
    let output = tokio::process::Command::new(&everything.node)
        .arg(&everything.timer)
        .args([which, &everything.script, "demo://resource/dynamic/text/1", "200", reads])
        .stderr(std::process::Stdio::inherit())
        .output()
        .await?;
    anyhow::ensure!(output.status.success(), "read_timer.mjs {which}: {}", output.status);
    let timed: Timed = serde_json::from_slice(&output.stdout)?;
    let micros = |us: f64| Duration::from_secs_f64(us / 1e6);
    let (wall, cpu) = (micros(timed.median_us), micros(timed.cpu_us_per_read));
    Ok(Row {
        name,
        baseline: format!("{} ({} CPU)", show(bare_wall), show(bare_cpu)),
        router: format!("{}: {} ({} CPU)", timed.version, show(wall), show(cpu)),
        ratio: ratio(wall, bare_wall),
        target: "(reference)",
        met: None,
    })
}

/// E4 (EV4 on server-everything): a host that reads 5,000 different resources against one that
/// reads 5, one read at a time on the same kind of server (one that takes subscriptions,
/// watching on): the first's reads must not slow down as its working set grows past the
/// watched cap. Two routers, each on its own server, alternate in blocks; the 5,000-URI router
/// reads each URI once before the measured blocks begin, so every measured read is of a URI it
/// read before.
pub(crate) async fn working_set(quick: bool, target: &Target) -> anyhow::Result<Row> {
    let _one_cpu = crate::pin::one_cpu();
    let options = Options { subscribe: true, resources: 5_000, ..read_options(1024) };
    let small = routed(vec![target.config("s", &options)?], EventSender::discard()).await;
    let large = routed(vec![target.config("s", &options)?], EventSender::discard()).await;
    let (ctx, consumer) = draining();
    let calls = |n: usize| (0..n).map(|i| read_call("s", &target.uri(i))).collect::<Vec<_>>();
    let (few, many) = (calls(5), calls(5_000));
    for call in &many {
        router_read(&large.router, &ctx, call).await?;
    }
    for call in few.iter().cycle().take(500) {
        router_read(&small.router, &ctx, call).await?;
    }
    let (blocks, per_block) = if quick { (10, 200) } else { (30, 400) };
    let mut samples: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let mut next = [0usize, 0usize];
    for block in 0..blocks {
        for k in 0..2 {
            let which = (block + k) % 2;
            let (router, calls) =
                if which == 0 { (&large.router, &many) } else { (&small.router, &few) };
            for _ in 0..per_block {
                let call = &calls[next[which] % calls.len()];
                next[which] += 1;
                let started = Instant::now();
                router_read(router, &ctx, call).await?;
                samples[which].push(started.elapsed());
            }
        }
    }
    consumer.abort();
    small.manager.shutdown().await;
    large.manager.shutdown().await;
    let [large_t, small_t] = samples.map(median);
    let r = ratio(large_t, small_t);
    Ok(Row {
        name: match target {
            Target::Bench => E4,
            Target::Everything(_) => EV4,
        },
        baseline: show(small_t),
        router: show(large_t),
        ratio: r,
        target: "≤ 1.10",
        met: Some(r <= 1.10),
    })
}

/// The watching rows (E3) and the working-set row (E4) alone (`mcp-router-bench e3`): 1,000
/// distinct URIs read at once from a server that takes subscriptions (more than the 256
/// watched per server), from one that does not, and 100 URIs again and again (all watched).
pub(crate) async fn rows_e3(quick: bool) -> anyhow::Result<Vec<Row>> {
    let mut out = Vec::new();
    let watched = Options { subscribe: true, resources: 1_000, ..read_options(1024) };
    let distinct = Reads::new(1, 1_000, 1_000);
    out.extend(e2e::rows(
        e2e::concurrent(&Target::Bench, quick, 1, &watched, &distinct, Spread::Agent).await?,
        "E3 1,000 concurrent reads of 1,000 distinct URIs, a server that takes subscriptions, watching on (cap 256), both sides in 2026-07-28, wall per round",
        "E3 same, CPU time of this process per read",
    ));
    let (other, first) =
        e2e::concurrent(&Target::Bench, quick, 1, &watched, &distinct, Spread::Calibration).await?;
    out.push(e2e::wall_row(
        &other,
        &first,
        "E3 calibration, wall per round: a second bare rmcp client on its own server vs the first (no router either side: what the ratio reads for equal work)",
        "(calibration)",
    ));
    let unwatched = Options { resources: 1_000, ..read_options(1024) };
    out.extend(e2e::rows(
        e2e::concurrent(&Target::Bench, quick, 1, &unwatched, &distinct, Spread::Agent).await?,
        "E3 1,000 concurrent reads of 1,000 distinct URIs, a server without subscriptions, wall per round",
        "E3 same (no subscriptions), CPU time of this process per read",
    ));
    // Against a bare client in 2025-11-25, whose requests carry no client context for the
    // server to parse: the era's cost to the server shows.
    let (router, legacy) =
        e2e::concurrent(&Target::Bench, quick, 1, &unwatched, &distinct, Spread::LegacyBaseline)
            .await?;
    out.push(e2e::wall_row(
        &router,
        &legacy,
        "E3 diagnostic, wall per round: the same (no subscriptions) against a bare rmcp client in 2025-11-25",
        "(diagnostic)",
    ));
    out.push(working_set(quick, &Target::Bench).await?);
    let hundred = Reads::new(1, 1_000, 100);
    out.extend(e2e::rows(
        e2e::concurrent(&Target::Bench, quick, 1, &watched, &hundred, Spread::Agent).await?,
        "E3 1,000 concurrent reads of 100 URIs read again and again (all watched), wall per round",
        "E3 same (100 URIs), CPU time of this process per read",
    ));
    Ok(out)
}
