//! The client side of the shared router, what an agent lists as an ordinary stdio server
//! (`mcp-router connect`): [`join`] the router for this user and config — starting it when
//! none runs; two racing start one — then [`bridge`] the agent's MCP messages to it and back
//! until either side ends.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::net::UnixStream;

use super::place::{Place, lock};

/// How long [`join`] waits for a router it started to take sessions.
const START_WAIT: Duration = Duration::from_secs(30);

/// A session with the router of `place`: connected to the one running, else to one `start`
/// starts (a process that serves `place`, its stderr in `Place::log`), under the place's
/// start lock (a `join` that waited for the lock finds the router its racer started).
pub async fn join(
    place: &Place,
    start: impl FnOnce(&Place) -> anyhow::Result<std::process::Child>,
) -> anyhow::Result<UnixStream> {
    if let Ok(stream) = UnixStream::connect(place.socket()).await {
        return Ok(stream);
    }
    let start_lock = place.start_lock();
    let held = tokio::task::spawn_blocking(move || lock(&start_lock, true))
        .await
        .context("the start lock's task failed")??;
    if let Ok(stream) = UnixStream::connect(place.socket()).await {
        if let Some(held) = held {
            super::place::unlock_and_remove(&place.start_lock(), held);
        }
        return Ok(stream);
    }
    let mut child = start(place)?;
    let deadline = Instant::now() + START_WAIT;
    let stream = loop {
        if let Ok(stream) = UnixStream::connect(place.socket()).await {
            break stream;
        }
        if let Some(status) = child.try_wait()? {
            bail!(
                "the shared router exited at its start ({status}); its log: {}",
                log_tail(&place.log())
            );
        }
        if Instant::now() > deadline {
            bail!(
                "the shared router did not take sessions within {} s; its log: {}",
                START_WAIT.as_secs(),
                place.log().display()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    if let Some(held) = held {
        super::place::unlock_and_remove(&place.start_lock(), held);
    }
    Ok(stream)
}

/// The last lines of the log, for an error message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// Carry stdin to the router and the router's answers to stdout, on two threads blocked in
/// plain reads (one wake-up per message each way, nothing scheduled in between). Ends when
/// the router closes the session, or soon after the agent closes stdin (what the router still
/// sends for it is written first).
pub async fn bridge(stream: UnixStream) {
    let Ok(stream) = stream.into_std().and_then(|s| {
        s.set_nonblocking(false)?;
        Ok(s)
    }) else {
        return;
    };
    let Ok(mut to_router) = stream.try_clone() else { return };
    let mut from_router = stream;
    let (done, ended) = std::sync::mpsc::channel::<bool>();
    let down_done = done.clone();
    std::thread::spawn(move || {
        pump(&mut from_router, &mut std::io::stdout().lock());
        let _ = down_done.send(true);
    });
    std::thread::spawn(move || {
        pump(&mut std::io::stdin().lock(), &mut to_router);
        let _ = to_router.shutdown(std::net::Shutdown::Write);
        let _ = done.send(false);
    });
    let _ = tokio::task::spawn_blocking(move || {
        // The router closed the session: done. The agent closed stdin: the router's last
        // words, for at most 2 s.
        if ended.recv() == Ok(false) {
            let _ = ended.recv_timeout(Duration::from_secs(2));
        }
    })
    .await;
}

/// Copy `from` to `to` until either ends, each read written (and flushed) at once. Not
/// `std::io::copy`: on Linux it splices between a pipe and a socket, which waits to fill its
/// whole length before a message gets through.
fn pump(from: &mut impl std::io::Read, to: &mut impl std::io::Write) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => {
                if to.write_all(&buffer[..n]).and_then(|()| to.flush()).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
