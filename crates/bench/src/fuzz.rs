//! `mcp-router-bench fuzz [--cases N] [--live-cases M] [--workers W] [--seed S]`: a campaign of
//! the dispatch fuzzer (`tool_router::fuzz`) — N cases (default 1,000,000) against the fake
//! backend, then M (default N) against a live demo server (this binary's `serve-demo`, a
//! child process over stdio). Reports cases/s, panics, fatal errors and unpaired events; exits
//! non-zero if any of those is not 0. CI runs the small run in the unit tests (2,000 cases).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::options::manager_options;
use mcp_backend::McpBackend as _;
use mcp_connection_manager::ServerConfig;
use router_protocol::EventSender;
use tool_router::ToolRouter;
use tool_router::fuzz::{
    BoxedStrategy, Case, CaseStream, FAKE_SERVER, Verdict, cases, fake_router, run_case,
};

struct Options {
    cases: u64,
    live_cases: u64,
    workers: usize,
    seed: u64,
}

impl Options {
    fn parse(args: &[String]) -> anyhow::Result<Self> {
        let mut options = Self { cases: 1_000_000, live_cases: u64::MAX, workers: 8, seed: 1 };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value: u64 =
                it.next().ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))?.parse()?;
            match flag.as_str() {
                "--cases" => options.cases = value,
                "--live-cases" => options.live_cases = value,
                "--workers" => options.workers = usize::try_from(value)?.max(1),
                "--seed" => options.seed = value,
                other => {
                    anyhow::bail!("unknown flag {other} (--cases, --live-cases, --workers, --seed)")
                }
            }
        }
        if options.live_cases == u64::MAX {
            options.live_cases = options.cases;
        }
        Ok(options)
    }
}

/// What a run saw.
#[derive(Default)]
struct Stats {
    cases: AtomicU64,
    panics: AtomicU64,
    fatal: AtomicU64,
    unpaired: AtomicU64,
    /// The first few failing cases, to reproduce.
    examples: Mutex<Vec<String>>,
}

impl Stats {
    fn failed(&self, what: &str, case: &Case) {
        if let Ok(mut examples) = self.examples.lock()
            && examples.len() < 5
        {
            examples
                .push(format!("{what}: name {:?} arguments {:.200?}", case.name, case.arguments));
        }
    }
}

/// Run `total` cases of the strategy `make` builds through `router` on `workers` concurrent
/// tasks. Cases are generated on one thread per worker (proptest's strategies stay on the thread
/// that built them); each case runs on its own task, so a panic is counted, not fatal to the
/// campaign.
async fn run(
    router: Arc<ToolRouter>,
    make: impl Fn() -> BoxedStrategy<Case> + Clone + Send + 'static,
    total: u64,
    workers: usize,
    seed: u64,
) -> (Arc<Stats>, Duration) {
    let stats = Arc::new(Stats::default());
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..workers {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Case>(256);
        let (make, next_gen) = (make.clone(), next.clone());
        let worker_seed = seed.wrapping_mul(1_000).wrapping_add(w as u64);
        std::thread::spawn(move || {
            let mut stream = CaseStream::new(make(), worker_seed);
            while next_gen.fetch_add(1, Ordering::SeqCst) < total {
                let Some(case) = stream.next_case() else { break };
                if tx.blocking_send(case).is_err() {
                    break;
                }
            }
        });
        let (router, stats) = (router.clone(), stats.clone());
        tasks.spawn(async move {
            while let Some(case) = rx.recv().await {
                let router = router.clone();
                let kept = case.clone();
                let verdict = tokio::spawn(async move { run_case(&router, case).await }).await;
                stats.cases.fetch_add(1, Ordering::Relaxed);
                match verdict {
                    Ok(Verdict::Answered) => {}
                    Ok(Verdict::Fatal(message)) => {
                        stats.fatal.fetch_add(1, Ordering::Relaxed);
                        stats.failed(&format!("fatal {message}"), &kept);
                    }
                    Ok(Verdict::Unpaired { begins, ends }) => {
                        stats.unpaired.fetch_add(1, Ordering::Relaxed);
                        stats.failed(&format!("{begins} begins, {ends} ends"), &kept);
                    }
                    Err(_) => {
                        stats.panics.fetch_add(1, Ordering::Relaxed);
                        stats.failed("panic", &kept);
                    }
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    (stats, started.elapsed())
}

fn report(target: &str, stats: &Stats, elapsed: Duration) -> bool {
    let cases = stats.cases.load(Ordering::SeqCst);
    let (panics, fatal, unpaired) = (
        stats.panics.load(Ordering::SeqCst),
        stats.fatal.load(Ordering::SeqCst),
        stats.unpaired.load(Ordering::SeqCst),
    );
    println!(
        "| {target} | {cases} | {:.1} s | {:.0} | {panics} | {fatal} | {unpaired} |",
        elapsed.as_secs_f64(),
        cases as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    if let Ok(examples) = stats.examples.lock() {
        for example in examples.iter() {
            eprintln!("  {example}");
        }
    }
    panics == 0 && fatal == 0 && unpaired == 0
}

/// The campaign; `Ok(false)` when the oracle was violated.
pub(crate) async fn campaign(args: &[String]) -> anyhow::Result<bool> {
    let options = Options::parse(args)?;
    // Panics are counted; their messages would drown the report.
    std::panic::set_hook(Box::new(|_| {}));
    println!("| target | cases | time | cases/s | panics | fatal | unpaired events |");
    println!("|---|---|---|---|---|---|---|");
    let fake = Arc::new(fake_router());
    let strategy = || cases(FAKE_SERVER, &["echo".to_string(), "fail".to_string()], "memo://1");
    let (stats, elapsed) = run(fake, strategy, options.cases, options.workers, options.seed).await;
    let mut clean = report("fake backend", &stats, elapsed);

    if options.live_cases > 0 {
        let exe = std::env::current_exe()?.to_string_lossy().to_string();
        let mut demo = ServerConfig::stdio("demo", exe, vec!["serve-demo".to_string()]);
        // A generated `sleep` may ask for minutes: bound every request.
        demo.tool_timeout = Duration::from_secs(5);
        let running = crate::workloads::assembled(
            vec![demo],
            manager_options(),
            tool_router::RouterSettings::default(),
            EventSender::discard(),
        )?;
        let manager = running.manager.clone();
        manager.wait_until_started().await;
        let tools: Vec<String> =
            manager.list_tools().await.into_iter().map(|t| t.tool.name.to_string()).collect();
        anyhow::ensure!(!tools.is_empty(), "the demo server did not start");
        let router = running.router.clone();
        let strategy = move || cases("demo", &tools, "demo://notes/welcome");
        let (stats, elapsed) =
            run(router, strategy, options.live_cases, options.workers, options.seed + 1).await;
        clean &= report("live demo server (stdio)", &stats, elapsed);
        manager.shutdown().await;
    }
    let _ = std::panic::take_hook();
    Ok(clean)
}
