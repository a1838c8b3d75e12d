//! P13: what the event stream costs a host and how late its events arrive. Sequential calls,
//! each a begin event, a round trip to a "server" thread (a reply after a few microseconds of
//! work, as a stdio server's answer wakes its reader) and an end event, with a consumer
//! draining the events on another task: the router's stream (`event_channel`) against tokio's
//! bare unbounded channel — what a host would write by hand — and the router's inline sender
//! (`EventSender::inline`), whose callback runs on the emitting thread. (A stream that woke its consumer
//! once per 1 ms window instead of per event was tried and measured worse: see
//! docs/benchmarks.md.)

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use router_protocol::{EventMsg, EventSender, McpServerStoppedEvent, event_channel};
use tokio::sync::{mpsc, oneshot};

use crate::e2e::usage;
use crate::row::Row;

/// Microseconds of work the server does per call.
const SERVER_WORK: Duration = Duration::from_micros(20);

/// An event that says which it is (`server` holds its number).
fn numbered(i: usize) -> EventMsg {
    EventMsg::McpServerStopped(McpServerStoppedEvent { server: i.to_string(), was_running: true })
}

fn number(event: &EventMsg) -> Option<usize> {
    match event {
        EventMsg::McpServerStopped(e) => e.server.parse().ok(),
        _ => None,
    }
}

/// A thread that answers each request after [`SERVER_WORK`] of spinning.
fn server() -> std::sync::mpsc::Sender<oneshot::Sender<()>> {
    let (tx, rx) = std::sync::mpsc::channel::<oneshot::Sender<()>>();
    std::thread::spawn(move || {
        for reply in rx {
            let until = Instant::now() + SERVER_WORK;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            let _ = reply.send(());
        }
    });
    tx
}

/// What one run measured: CPU and context switches per call, and each event's delay.
struct Run {
    cpu: Duration,
    switches: f64,
    delays: Vec<Duration>,
}

/// `calls` sequential calls sending their events through `send`, drained by a consumer on
/// another task that notes when each arrived (`arrived`).
async fn run(
    calls: usize,
    send: impl Fn(usize),
    arrived: Arc<Mutex<Vec<Option<Instant>>>>,
    consumer: tokio::task::JoinHandle<()>,
) -> anyhow::Result<Run> {
    let server = server();
    let mut sent = Vec::with_capacity(2 * calls);
    let before = usage();
    for call in 0..calls {
        sent.push(Instant::now());
        send(2 * call);
        let (reply, answered) = oneshot::channel();
        server.send(reply)?;
        answered.await?;
        sent.push(Instant::now());
        send(2 * call + 1);
    }
    let spent = usage() - before;
    drop(send);
    consumer.await?;
    let arrived = arrived.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    let delays = sent
        .iter()
        .zip(arrived.iter())
        .map(|(sent, got)| got.map_or(Duration::MAX, |got| got.saturating_duration_since(*sent)))
        .collect();
    Ok(Run {
        cpu: spent.cpu / calls as u32,
        switches: spent.switches as f64 / calls as f64,
        delays,
    })
}

/// Note when `event` arrived.
fn note(arrived: &Mutex<Vec<Option<Instant>>>, event: &EventMsg) {
    if let (Some(i), Ok(mut arrived)) = (number(event), arrived.lock()) {
        arrived[i] = Some(Instant::now());
    }
}

/// The router's stream.
async fn routed(calls: usize) -> anyhow::Result<Run> {
    let (events, mut rx) = event_channel();
    let arrived = Arc::new(Mutex::new(vec![None; 2 * calls]));
    let noted = arrived.clone();
    let consumer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            note(&noted, &event);
        }
    });
    run(calls, move |i| events.send(numbered(i)), arrived, consumer).await
}

/// The router's inline sender: the callback notes each event on the emitting thread.
async fn inline(calls: usize) -> anyhow::Result<Run> {
    let arrived = Arc::new(Mutex::new(vec![None; 2 * calls]));
    let noted = arrived.clone();
    let events = EventSender::inline(move |event| note(&noted, &event));
    run(calls, move |i| events.send(numbered(i)), arrived, tokio::spawn(async {})).await
}

/// Tokio's bare unbounded channel.
async fn bare_channel(calls: usize) -> anyhow::Result<Run> {
    let (tx, mut rx) = mpsc::unbounded_channel::<EventMsg>();
    let arrived = Arc::new(Mutex::new(vec![None; 2 * calls]));
    let noted = arrived.clone();
    let consumer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            note(&noted, &event);
        }
    });
    run(calls, move |i| drop(tx.send(numbered(i))), arrived, consumer).await
}

fn percentile(delays: &[Duration], p: f64) -> Duration {
    let mut sorted = delays.to_vec();
    sorted.sort();
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// P13, on a runtime worker: rounds of sequential calls, alternating the two streams.
pub(crate) async fn rows(quick: bool) -> anyhow::Result<Vec<Row>> {
    let (rounds, calls) = if quick { (3, 2_000) } else { (7, 5_000) };
    let (mut ours, mut theirs, mut inlined) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        theirs.push(bare_channel(calls).await?);
        ours.push(routed(calls).await?);
        inlined.push(inline(calls).await?);
    }
    let median_run = |runs: &mut Vec<Run>| -> Run {
        runs.sort_by_key(|r| r.cpu);
        runs.remove(runs.len() / 2)
    };
    let theirs = median_run(&mut theirs);
    let mut rows = Vec::from(pair(
        &median_run(&mut ours),
        &theirs,
        [
            "P13 events of sequential calls (begin, a server round trip, end), a consumer draining on another task: CPU per call, the router's stream vs tokio's bare channel",
            "P13 same, each event's delay from send to the consumer: p99 (p50)",
        ],
        (1.10, "≤ 1.10"),
    ));
    rows.extend(pair(
        &median_run(&mut inlined),
        &theirs,
        [
            "P13 same, the consumer a callback on the emitting thread (EventSender::inline, no task woken): CPU per call vs tokio's bare channel",
            "P13 same, inline: each event's delay from send to the callback, p99 (p50)",
        ],
        (1.0, "≤ 1.00"),
    ));
    Ok(rows)
}

/// One stream's two rows against tokio's bare channel (`theirs`): CPU per call (within
/// `limit`), and each event's delay, p99 within 1 ms.
fn pair(
    ours: &Run,
    theirs: &Run,
    [cpu_name, delay_name]: [&'static str; 2],
    (limit, target): (f64, &'static str),
) -> [Row; 2] {
    let cpu = ours.cpu.as_secs_f64() / theirs.cpu.as_secs_f64();
    let delays = |run: &Run| {
        let (p50, p99) = (percentile(&run.delays, 0.5), percentile(&run.delays, 0.99));
        (p99, format!("{} ({})", micros(p99), micros(p50)))
    };
    let (p99, router) = delays(ours);
    let bound = Duration::from_millis(1);
    [
        Row {
            name: cpu_name,
            baseline: format!("{} ({:.2} switches)", micros(theirs.cpu), theirs.switches),
            router: format!("{} ({:.2} switches)", micros(ours.cpu), ours.switches),
            ratio: cpu,
            target,
            met: Some(cpu <= limit),
        },
        Row {
            name: delay_name,
            baseline: delays(theirs).1,
            router,
            ratio: p99.as_secs_f64() / bound.as_secs_f64(),
            target: "p99 ≤ 1 ms (ratio to it)",
            met: Some(p99 <= bound),
        },
    ]
}
