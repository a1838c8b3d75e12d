//! `soak` (not part of `all`): a long mixed run through the router while its servers are
//! killed at random — reads, lists, big tool results, searches, skill loads, cancelled calls
//! and tasks over six demo servers, 16 calls in flight — and what a host needs of it: every
//! call answered exactly once (none waits past a minute), every begin event with its end,
//! resident memory and open file descriptors flat after the warm-up, and no server process and
//! no zombie left after shutdown (this process adopts orphans for the count, as an agent that
//! is PID 1 in a container does). `mcp-router-bench soak [CALLS]` (20,000 by default) prints
//! the figures and exits 1 when one of them fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::options::manager_options;
use futures::StreamExt as _;
use mcp_connection_manager::{McpConnectionManager, ServerConfig};
use router_protocol::{EventMsg, event_channel};
use tool_router::{
    CallContext, RouterSettings, ToolArguments, ToolCall, ToolRouter, ToolSearchMode,
};

/// Servers, calls in flight, and the longest a call may take before it counts as unanswered.
const SERVERS: usize = 6;
const IN_FLIGHT: usize = 16;
const UNANSWERED_AFTER: Duration = Duration::from_secs(60);
/// How often a random server is killed (SIGKILL to its process).
const KILL_EVERY: Duration = Duration::from_millis(700);

/// What the run saw.
#[derive(Debug, Default)]
struct Figures {
    calls: usize,
    answered: usize,
    unanswered: usize,
    failed: usize,
    begins: u64,
    ends: u64,
    kills: u64,
    rss_warm_kib: u64,
    rss_end_kib: u64,
    fds_warm: usize,
    fds_end: usize,
    left_processes: Vec<u32>,
    zombies: Vec<u32>,
    elapsed: Duration,
}

/// Runs the soak with `calls` calls; whether every figure holds.
pub(crate) async fn run(calls: usize) -> anyhow::Result<bool> {
    // SAFETY: prctl with these arguments only sets a flag of this process.
    #[allow(unsafe_code)]
    let adopted = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0;
    anyhow::ensure!(adopted, "cannot adopt orphans (PR_SET_CHILD_SUBREAPER)");
    let marker = format!("soak-{}", std::process::id());
    let (events, mut rx) = event_channel();
    let (begins, ends) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let counting = {
        let (begins, ends) = (begins.clone(), ends.clone());
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                match event {
                    EventMsg::McpToolCallBegin(_) => begins.fetch_add(1, Ordering::Relaxed),
                    EventMsg::McpToolCallEnd(_) => ends.fetch_add(1, Ordering::Relaxed),
                    _ => 0,
                };
            }
        })
    };
    // Killed servers are restarted by the next call however often it happens.
    let mut config = router_config::ConfigFile::from_servers(servers(&marker)?);
    config.manager = manager_options().with(|o| o.lifecycle.max_restarts = u32::MAX);
    config.settings = RouterSettings::default().with(|s| s.search.mode = ToolSearchMode::On);
    config.tool_cache = false;
    // The host's assembly, as the binary starts it.
    let running = mcp_host::Assembly::new(config).events(events.clone()).start()?;
    let (manager, router) = (running.manager.clone(), running.router.clone());
    manager.wait_until_started().await;
    let kills = Arc::new(AtomicU64::new(0));
    let killer = tokio::spawn(kill_at_random(manager.clone(), kills.clone()));
    let mut figures = drive(&router, &events, calls).await;
    killer.abort();
    manager.shutdown().await;
    drop((router, manager, events));
    let _ = tokio::time::timeout(Duration::from_secs(5), counting).await;
    figures.begins = begins.load(Ordering::Relaxed);
    figures.ends = ends.load(Ordering::Relaxed);
    figures.kills = kills.load(Ordering::Relaxed);
    figures.left_processes = processes(|_, cmdline, _| cmdline.contains(&marker));
    let me = std::process::id().to_string();
    let zombie = |fields: &[&str]| fields.first() == Some(&"Z") && fields.get(1) == Some(&&*me);
    figures.zombies = processes(|_, _, fields| zombie(fields));
    Ok(report(&figures))
}

/// Six demo servers (this binary's `serve-demo`, the first with skills), each carrying
/// `marker` in its command line.
fn servers(marker: &str) -> anyhow::Result<Vec<ServerConfig>> {
    let exe = std::env::current_exe()?.to_string_lossy().to_string();
    Ok((0..SERVERS)
        .map(|i| {
            let mut args = vec!["serve-demo".to_string(), format!("--{marker}")];
            if i == 0 {
                args.push("--skills".to_string());
            }
            ServerConfig::stdio(format!("s{i}"), exe.clone(), args)
        })
        .collect())
}

/// `calls` calls, [`IN_FLIGHT`] at a time: how they ended, and memory and descriptors after
/// the warm-up (a tenth of the calls) and at the end.
async fn drive(
    router: &Arc<ToolRouter>,
    events: &router_protocol::EventSender,
    calls: usize,
) -> Figures {
    let started = Instant::now();
    let mut figures = Figures { calls, ..Figures::default() };
    let mut results = futures::stream::iter(0..calls)
        .map(|i| {
            let (router, ctx) = (router.clone(), CallContext::new(events.clone()));
            async move { one_call(&router, &ctx, i).await }
        })
        .buffer_unordered(IN_FLIGHT);
    let mut done = 0;
    while let Some(outcome) = results.next().await {
        match outcome {
            Outcome::Answered { ok } => {
                figures.answered += 1;
                figures.failed += usize::from(!ok);
            }
            Outcome::Unanswered => figures.unanswered += 1,
        }
        done += 1;
        if done == calls / 10 {
            figures.rss_warm_kib = rss_kib();
            figures.fds_warm = open_fds();
        }
    }
    figures.elapsed = started.elapsed();
    figures.rss_end_kib = rss_kib();
    figures.fds_end = open_fds();
    figures
}

enum Outcome {
    Answered { ok: bool },
    Unanswered,
}

/// Call `i` of the mix, on server `i % 6`: what it is depends on `i % 8`.
async fn one_call(router: &ToolRouter, ctx: &CallContext, i: usize) -> Outcome {
    let server = format!("s{}", i % SERVERS);
    let (name, arguments) = match i % 8 {
        0 => (
            "read_mcp_resource".to_string(),
            serde_json::json!({"server": server, "uri": "demo://notes/welcome"}),
        ),
        1 => ("list_mcp_resources".to_string(), serde_json::json!({"server": server})),
        2 => (format!("mcp__{server}__huge"), serde_json::json!({"mb": 1})),
        3 => ("search_mcp_tools".to_string(), serde_json::json!({"query": "echo some text back"})),
        4 => (
            "load_mcp_skill".to_string(),
            serde_json::json!({"server": "s0", "name": "release-notes"}),
        ),
        5 => (format!("mcp__{server}__sleep"), serde_json::json!({"ms": 10_000})),
        6 => (format!("mcp__{server}__job"), serde_json::json!({"seconds": 0.05})),
        _ => (format!("mcp__{server}__echo"), serde_json::json!({"text": format!("call {i}")})),
    };
    let call =
        ToolCall { call_id: format!("c{i}"), name, arguments: ToolArguments::Json(arguments) };
    let dispatched = router.dispatch_to_output(ctx, call);
    // Call 5 of every 8 is given up after 20 ms, as a host cancels: the future is dropped.
    if i % 8 == 5 {
        return match tokio::time::timeout(Duration::from_millis(20), dispatched).await {
            Ok(output) => Outcome::Answered { ok: output.is_ok_and(|o| o.is_success()) },
            Err(_) => Outcome::Answered { ok: true },
        };
    }
    match tokio::time::timeout(UNANSWERED_AFTER, dispatched).await {
        Ok(output) => Outcome::Answered { ok: output.is_ok_and(|o| o.is_success()) },
        Err(_) => Outcome::Unanswered,
    }
}

/// Every [`KILL_EVERY`], SIGKILL to one server process (a child of a guard), at random.
async fn kill_at_random(manager: Arc<McpConnectionManager>, kills: Arc<AtomicU64>) {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    loop {
        tokio::time::sleep(KILL_EVERY).await;
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let servers: Vec<u32> = manager.child_pids().into_iter().map(|(_, pid)| pid).collect();
        if servers.is_empty() {
            continue;
        }
        let pid = servers[(seed % servers.len() as u64) as usize];
        // SAFETY: kill has no memory-safety preconditions.
        #[allow(unsafe_code)]
        if unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) } == 0 {
            kills.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Pids of processes for which `keep(pid, cmdline, stat fields after the name)` holds.
fn processes(keep: impl Fn(u32, &str, &[&str]) -> bool) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let fields: Vec<&str> =
                stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            !fields.is_empty()
                && keep(*pid, &String::from_utf8_lossy(&cmdline).replace('\0', " "), &fields)
        })
        .collect()
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// Prints the figures; whether each holds.
fn report(f: &Figures) -> bool {
    let rss_growth = f.rss_end_kib as f64 / f.rss_warm_kib.max(1) as f64;
    let checks = [
        ("every call answered once", f.answered == f.calls && f.unanswered == 0),
        ("every begin has its end", f.begins == f.ends),
        ("resident memory flat after warm-up (≤ 1.25×)", rss_growth <= 1.25),
        ("open descriptors flat after warm-up (≤ +16)", f.fds_end <= f.fds_warm + 16),
        ("no server process left", f.left_processes.is_empty()),
        ("no zombie", f.zombies.is_empty()),
    ];
    println!(
        "soak: {} calls, {} in flight, six servers, a server killed every {KILL_EVERY:?}",
        f.calls, IN_FLIGHT
    );
    println!(
        "  {:.1} s, {} answered ({} failed: cancelled, killed or refused), {} unanswered, {} servers killed",
        f.elapsed.as_secs_f64(),
        f.answered,
        f.failed,
        f.unanswered,
        f.kills
    );
    println!("  events: {} begins, {} ends", f.begins, f.ends);
    println!(
        "  RSS {} KiB after warm-up, {} KiB at the end ({rss_growth:.3}×); descriptors {} → {}",
        f.rss_warm_kib, f.rss_end_kib, f.fds_warm, f.fds_end
    );
    println!(
        "  after shutdown: {} server processes, {} zombies",
        f.left_processes.len(),
        f.zombies.len()
    );
    let mut all = true;
    for (what, held) in checks {
        println!("  {} {what}", if held { "ok " } else { "NO " });
        all &= held;
    }
    all
}
