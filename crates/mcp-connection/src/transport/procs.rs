//! The processes a stdio server started, found through `/proc`: every descendant of the guard,
//! whichever session or process group it moved to (a launcher that calls `setsid` leaves the
//! group, not the family). Shutdown signals them by pid and waits until each has exited.
#![allow(unsafe_code)] // kill has no safe wrapper in std.

use std::collections::HashMap;
use std::time::Duration;

/// A process, identified by pid and start time (so a reused pid is not mistaken for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Process {
    pub pid: libc::pid_t,
    start_time: u64,
}

/// What `/proc/PID/stat` says of one process: parent, state, start time.
struct Stat {
    ppid: libc::pid_t,
    state: char,
    start_time: u64,
}

fn stat(pid: libc::pid_t) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields start after the last ')'.
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// Every live descendant of `root` (children, their children, …), oldest generation first.
pub(crate) fn descendants(root: libc::pid_t) -> Vec<Process> {
    family(root).into_iter().filter(|m| !m.zombie).map(|m| m.process).collect()
}

impl Process {
    /// Still running: the same process (same start time), not yet a zombie.
    pub(crate) fn is_alive(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.state != 'Z' && s.start_time == self.start_time)
    }

    /// Send `signal` if it is still the same process.
    pub(crate) fn signal(&self, signal: libc::c_int) {
        if self.is_alive() {
            // SAFETY: kill has no memory-safety preconditions; checked to be the same process.
            unsafe {
                libc::kill(self.pid, signal);
            }
        }
    }
}

/// Wait until none of `processes` is alive, at most `limit`; returns those still alive.
pub(crate) async fn wait_exited(processes: &[Process], limit: Duration) -> Vec<Process> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let alive: Vec<Process> = processes.iter().copied().filter(Process::is_alive).collect();
        if alive.is_empty() || tokio::time::Instant::now() >= deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One process of a server's family as the ending steps see it: a zombie is still there (its
/// parent has not reaped it yet), and ending its parent now would hand it to whoever adopts
/// orphans.
struct Member {
    process: Process,
    ppid: libc::pid_t,
    zombie: bool,
}

/// Every descendant of `root`, zombies included.
fn family(root: libc::pid_t) -> Vec<Member> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<libc::pid_t, Vec<Member>> = HashMap::new();
    for pid in entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok()) {
        if let Some(stat) = stat(pid) {
            let process = Process { pid, start_time: stat.start_time };
            let member = Member { process, ppid: stat.ppid, zombie: stat.state == 'Z' };
            children.entry(stat.ppid).or_default().push(member);
        }
    }
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for child in children.remove(&parent).unwrap_or_default() {
            next.push(child.process.pid);
            found.push(child);
        }
    }
    found
}

/// The live members without children (a zombie child still counts: its parent has yet to
/// reap it).
fn leaves(members: &[Member]) -> impl Iterator<Item = Process> + '_ {
    let parents: std::collections::HashSet<libc::pid_t> = members.iter().map(|m| m.ppid).collect();
    members
        .iter()
        .filter(move |m| !m.zombie && !parents.contains(&m.process.pid))
        .map(|m| m.process)
}

/// Waits (a few milliseconds at most) until each of `processes` is stopped or gone: a signal
/// is delivered after `kill` returns.
fn wait_stopped(processes: &[Process]) {
    let deadline = std::time::Instant::now() + Duration::from_millis(50);
    let stopped = |p: &Process| match stat(p.pid) {
        Some(s) if s.start_time == p.start_time => matches!(s.state, 'T' | 't' | 'Z' | 'X'),
        _ => true,
    };
    while !processes.iter().all(stopped) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Ends `root`'s descendants from the bottom up, so none outlives its parent and is handed to
/// whoever adopts orphans (PID 1 in a container, an agent that is a subreaper): `signal` goes
/// to each live process without children, once; its parent reaps it; then the parent has none.
/// Returns when no descendant is left (`true`) or at `deadline` (`false`).
pub(crate) struct BottomUp {
    root: libc::pid_t,
    signal: libc::c_int,
    sent: std::collections::HashSet<(libc::pid_t, u64)>,
}

impl BottomUp {
    pub(crate) fn new(root: libc::pid_t, signal: libc::c_int) -> Self {
        Self { root, signal, sent: Default::default() }
    }

    /// One step: signals the leaves not signalled yet; `true` when no descendant is left.
    /// A leaf is stopped first and looked at again: one that started a child meanwhile goes
    /// on (its child is a leaf of the next step), so no child is left without its parent.
    pub(crate) fn step(&mut self) -> bool {
        let members = family(self.root);
        if members.is_empty() {
            return true;
        }
        let fresh: Vec<Process> =
            leaves(&members).filter(|p| !self.sent.contains(&(p.pid, p.start_time))).collect();
        if fresh.is_empty() {
            return false;
        }
        fresh.iter().for_each(|p| p.signal(libc::SIGSTOP));
        wait_stopped(&fresh);
        let still: std::collections::HashSet<Process> = leaves(&family(self.root)).collect();
        for leaf in &fresh {
            if still.contains(leaf) {
                self.sent.insert((leaf.pid, leaf.start_time));
                leaf.signal(self.signal);
            }
            // A pending SIGTERM is handled once it runs again; SIGKILL needs no waking.
            leaf.signal(libc::SIGCONT);
        }
        false
    }

    /// Steps until nothing is left or `limit` has passed; `true` when nothing is left.
    pub(crate) async fn run(mut self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.step() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// [`BottomUp::run`] on this thread, for a drop outside async code.
    pub(crate) fn run_blocking(mut self, limit: Duration) -> bool {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if self.step() {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_grandchildren_and_reads_this_process() {
        let me = std::process::id() as libc::pid_t;
        let mine = stat(me).expect("own stat");
        assert_ne!(mine.state, 'Z');
        assert!(mine.ppid > 0);
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .expect("spawn sh");
        let sh = child.id() as libc::pid_t;
        // The grandchild may take a moment to appear.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let found = loop {
            let found = descendants(sh);
            if !found.is_empty() || std::time::Instant::now() > deadline {
                break found;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(descendants(me).iter().any(|p| p.pid == sh));
        found[0].signal(libc::SIGKILL);
        let _ = child.kill();
        let _ = child.wait();
    }

    /// A three-deep family (sh → sh → sleep) ended from the bottom up: each level is reaped by
    /// its parent, so the middle `sh` exits on its own (its `wait` returns 0) and the top one,
    /// which exits with the middle's status, sees it end normally: never a process signalled
    /// while it had a child, never one reparented away.
    #[test]
    fn bottom_up_ends_the_leaves_first_and_parents_reap_them() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sh -c 'sleep 30 & wait'; exit $?"])
            .spawn()
            .expect("spawn sh");
        let top = child.id() as libc::pid_t;
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while descendants(top).len() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let before = descendants(top);
        assert_eq!(before.len(), 2, "{before:?}");
        let (middle, sleep) = (before[0], before[1]);
        let mut ending = BottomUp::new(top, libc::SIGTERM);
        assert!(!ending.step(), "the first step only signals the leaf");
        let sent: Vec<libc::pid_t> = ending.sent.iter().map(|(pid, _)| *pid).collect();
        assert_eq!(
            sent,
            vec![sleep.pid],
            "only the leaf is signalled; the middle sh is {middle:?}"
        );
        assert!(ending.run_blocking(Duration::from_secs(5)), "{:?}", descendants(top));
        let status = child.wait().expect("wait");
        assert!(status.success(), "the middle sh ended normally, not by a signal: {status:?}");
    }
}
