//! How far one server's start has come — the process spawned, `server/discover` or
//! `initialize` sent, the first `tools/list` sent — so a start that runs out of time names the
//! phase it stopped in and quotes what the server printed on stderr.

#![allow(unsafe_code)] // ioctl has no safe wrapper in std.

use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::transport::stdio::StderrTail;

/// A start's phases, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Phase {
    /// Nothing sent yet: the process is being started (or the HTTP server reached).
    Spawn = 0,
    /// `server/discover` sent, its answer awaited.
    Discover = 1,
    /// `initialize` sent, its answer awaited.
    Initialize = 2,
    /// The first `tools/list` sent, its answer awaited.
    Tools = 3,
    /// Started: later requests are no longer a start's.
    Done = 4,
}

impl Phase {
    fn from_u8(n: u8) -> Self {
        [Self::Spawn, Self::Discover, Self::Initialize, Self::Tools]
            .into_iter()
            .find(|p| *p as u8 == n)
            .unwrap_or(Self::Done)
    }

    /// The phase a request of `method` begins, during a start.
    fn of_method(method: &str) -> Option<Self> {
        match method {
            "server/discover" => Some(Self::Discover),
            "initialize" => Some(Self::Initialize),
            "tools/list" => Some(Self::Tools),
            _ => None,
        }
    }

    /// What the start was waiting for, in words.
    fn waiting_for(self) -> &'static str {
        match self {
            Self::Spawn => "while starting the server (nothing was sent to it yet)",
            Self::Discover => "waiting for the answer to server/discover",
            Self::Initialize => "waiting for the answer to initialize",
            Self::Tools => "waiting for the answer to its first tools/list",
            Self::Done => "after the server had started",
        }
    }
}

/// One connection attempt's progress, shared by the transport (which notes each request it
/// sends) and the manager (which reads it when the start runs out of time).
pub(crate) struct StartupPhase {
    phase: AtomicU8,
    stderr: Mutex<Option<Arc<StderrTail>>>,
    /// The write end of a stdio server's input while its start runs (-1: none).
    stdin: AtomicI32,
}

impl Default for StartupPhase {
    fn default() -> Self {
        Self { phase: AtomicU8::new(0), stderr: Mutex::new(None), stdin: AtomicI32::new(-1) }
    }
}

impl StartupPhase {
    /// Notes that a request of `method` is being sent; only requests that begin a later phase
    /// of a start move it on.
    pub(crate) fn sent(&self, method: &str) {
        let now = Phase::from_u8(self.phase.load(Ordering::Relaxed));
        if now == Phase::Done {
            return;
        }
        if let Some(next) = Phase::of_method(method).filter(|next| *next > now) {
            self.phase.store(next as u8, Ordering::Relaxed);
        }
    }

    /// The process runs: its stderr is quoted by a timeout from now on; `stdin` (the write
    /// end of its input, open as long as the start runs) tells whether it has read what was
    /// sent ([`StartupPhase::read_all_sent`]).
    pub(crate) fn spawned(&self, stderr: Arc<StderrTail>, stdin: Option<i32>) {
        if let Ok(mut slot) = self.stderr.lock() {
            *slot = Some(stderr);
        }
        self.stdin.store(stdin.unwrap_or(-1), Ordering::SeqCst);
    }

    /// Whether a stdio server has read every byte sent to it so far: a server that has read
    /// `server/discover` and not answered ignores it, while one that has not read it yet is
    /// still starting. `None` for a server without a pipe.
    pub(crate) fn read_all_sent(&self) -> Option<bool> {
        let fd = self.stdin.load(Ordering::SeqCst);
        (fd >= 0).then(|| unread_bytes(fd) == Some(0))
    }

    /// A new attempt of the same start (the probe given up): back to the beginning.
    pub(crate) fn restart(&self) {
        self.phase.store(Phase::Spawn as u8, Ordering::Relaxed);
        self.stdin.store(-1, Ordering::SeqCst);
    }

    /// The start is over; later requests are not noted.
    pub(crate) fn done(&self) {
        self.phase.store(Phase::Done as u8, Ordering::Relaxed);
        self.stdin.store(-1, Ordering::SeqCst);
    }

    pub(crate) fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Relaxed))
    }

    /// Why a start that ran out of time after `after` failed: the phase it was in and what the
    /// server printed on stderr (a stdio server), e.g. `startup timed out after 10s waiting
    /// for the answer to initialize; the server printed nothing on stderr`.
    pub(crate) fn timed_out(&self, after: Duration) -> String {
        let phase = self.phase();
        let read = match (phase, self.read_all_sent()) {
            (Phase::Spawn | Phase::Done, _) | (_, None) => "",
            (_, Some(false)) => " (the server has not read it yet: it is still starting)",
            (_, Some(true)) => " (the server read it and has not answered)",
        };
        let phase = phase.waiting_for();
        let lines =
            self.stderr.lock().ok().and_then(|slot| slot.as_ref().map(|tail| tail.lines())).map(
                |lines| match lines.as_slice() {
                    [] => "; the server printed nothing on stderr".to_string(),
                    lines => format!("; its last stderr lines: {}", lines.join(" | ")),
                },
            );
        format!("startup timed out after {after:?} {phase}{read}{}", lines.unwrap_or_default())
    }
}

/// How many bytes written to a pipe (either end, `fd`) are not read yet; `None` when the
/// kernel does not say (not a pipe, closed).
fn unread_bytes(fd: i32) -> Option<usize> {
    let mut unread: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which points at a live local.
    let status = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut unread as *mut libc::c_int) };
    (status == 0).then_some(unread.max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe's unread bytes, seen from its write end: what a server has not read yet.
    #[test]
    fn unread_bytes_of_a_pipe_are_seen_from_its_write_end() {
        use std::io::{Read as _, Write as _};
        use std::os::fd::AsRawFd as _;
        let (mut read, mut write) = std::io::pipe().expect("pipe");
        let fd = write.as_raw_fd();
        assert_eq!(unread_bytes(fd), Some(0));
        write.write_all(b"{\"method\":\"server/discover\"}\n").expect("write");
        assert_eq!(unread_bytes(fd), Some(29));
        let mut buf = [0u8; 29];
        read.read_exact(&mut buf).expect("read");
        assert_eq!(unread_bytes(fd), Some(0));
        assert_eq!(unread_bytes(-1), None);
    }

    #[test]
    fn phases_only_move_forward_and_stop_when_done() {
        let startup = StartupPhase::default();
        let check = |method: &str, expect: Phase| {
            startup.sent(method);
            assert_eq!(startup.phase(), expect, "after {method}");
        };
        check("ping", Phase::Spawn);
        check("server/discover", Phase::Discover);
        check("initialize", Phase::Initialize);
        check("server/discover", Phase::Initialize);
        check("tools/list", Phase::Tools);
        startup.done();
        check("initialize", Phase::Done);
        startup.restart();
        check("initialize", Phase::Initialize);
    }

    #[test]
    fn a_timeout_names_the_phase_and_what_the_server_printed() {
        let startup = StartupPhase::default();
        let after = Duration::from_secs(10);
        assert_eq!(
            startup.timed_out(after),
            "startup timed out after 10s while starting the server (nothing was sent to it yet)"
        );
        startup.sent("server/discover");
        let tail = Arc::new(StderrTail::default());
        startup.spawned(tail.clone(), None);
        assert_eq!(startup.read_all_sent(), None);
        assert_eq!(
            startup.timed_out(after),
            "startup timed out after 10s waiting for the answer to server/discover; the server printed nothing on stderr"
        );
        tail.push("loading");
        tail.push("\u{1b}[1mstill loading\u{1b}[0m");
        startup.sent("initialize");
        assert_eq!(
            startup.timed_out(after),
            "startup timed out after 10s waiting for the answer to initialize; its last stderr lines: loading | still loading"
        );
    }
}
