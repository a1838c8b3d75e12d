//! One CPU for the sequential rows (E1, E4, E7, EV1 and its TypeScript reference, EV4).
//!
//! One read at a time is a ping-pong between the client's threads and the server's. On this
//! 2-core VM a wake-up that crosses to the other CPU costs tens of microseconds (an IPI, and a
//! halted vCPU the host must run again), and the scheduler keeps a connection's placement for
//! the whole workload: a round trip took about 30 µs on a connection whose client and server
//! shared a CPU and about 110 µs on one whose did not, whichever client it was. E4, two routers
//! doing the same thing, read 0.24 in one run and 3.79 in the next. With the bench process and
//! the servers it starts on one CPU, every connection pays the same, and the rows compare the
//! clients (docs/benchmarks.md, 2026-11-27). `MCP_ROUTER_BENCH_UNPINNED=1` runs them unpinned.
#![allow(unsafe_code)] // sched_getaffinity and sched_setaffinity have no safe wrappers in std.

use std::io;
use std::mem::size_of;

/// Every thread of this process on one CPU while it lives — and so every process started
/// meanwhile, which inherits it; then every thread back on the CPUs the process had.
pub(crate) struct OneCpu {
    before: libc::cpu_set_t,
}

/// This process on the first CPU it may use, unless `MCP_ROUTER_BENCH_UNPINNED=1`; `None` (the
/// rows then run unpinned, said on standard error) when that fails.
pub(crate) fn one_cpu() -> Option<OneCpu> {
    if crate::workloads::env_flag("MCP_ROUTER_BENCH_UNPINNED") {
        return None;
    }
    match OneCpu::pin() {
        Ok(pinned) => Some(pinned),
        Err(e) => {
            eprintln!("mcp-router-bench: sequential rows unpinned: {e}");
            None
        }
    }
}

impl OneCpu {
    fn pin() -> io::Result<Self> {
        let before = affinity()?;
        let first = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `cpu` is below CPU_SETSIZE, the set's size.
            .find(|&cpu| unsafe { libc::CPU_ISSET(cpu, &before) })
            .ok_or_else(|| io::Error::other("no CPU in this process's affinity"))?;
        let mut one = empty();
        // SAFETY: as above.
        unsafe { libc::CPU_SET(first, &mut one) };
        set_every_thread(&one)?;
        Ok(Self { before })
    }
}

impl Drop for OneCpu {
    fn drop(&mut self) {
        if let Err(e) = set_every_thread(&self.before) {
            eprintln!("mcp-router-bench: could not unpin: {e}");
        }
    }
}

fn empty() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all zeros is the empty set.
    unsafe { std::mem::zeroed() }
}

/// The calling thread's CPUs (the process's, as no thread of the bench sets its own).
fn affinity() -> io::Result<libc::cpu_set_t> {
    let mut set = empty();
    // SAFETY: `set` is a valid cpu_set_t of the size given.
    let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
    if rc == 0 { Ok(set) } else { Err(io::Error::last_os_error()) }
}

/// `set` for every thread of this process. Twice over, so a thread started during the first
/// pass by a thread not yet set is set too (a thread inherits its starter's CPUs).
fn set_every_thread(set: &libc::cpu_set_t) -> io::Result<()> {
    for _ in 0..2 {
        for entry in std::fs::read_dir("/proc/self/task")? {
            let name = entry?.file_name();
            let Some(tid) = name.to_str().and_then(|t| t.parse::<libc::pid_t>().ok()) else {
                continue;
            };
            // SAFETY: `set` is a valid cpu_set_t of the size given.
            let rc = unsafe { libc::sched_setaffinity(tid, size_of::<libc::cpu_set_t>(), set) };
            let e = io::Error::last_os_error();
            // A thread that ended meanwhile is no longer there to pin.
            if rc != 0 && e.raw_os_error() != Some(libc::ESRCH) {
                return Err(e);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPUs of every thread of this process, as `/proc` lists them.
    fn allowed() -> Vec<String> {
        let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
        tasks
            .map(|t| {
                let status = std::fs::read_to_string(t.expect("a task").path().join("status"));
                let status = status.expect("its status");
                let line = status.lines().find(|l| l.starts_with("Cpus_allowed_list:"));
                line.expect("Cpus_allowed_list").to_string()
            })
            .collect()
    }

    #[test]
    fn every_thread_is_on_one_cpu_until_dropped_then_back() {
        let helper = std::thread::spawn(std::thread::park);
        let before = allowed();
        let pinned = match OneCpu::pin() {
            Ok(pinned) => pinned,
            // A sandbox that forbids setting affinity: the rows then run unpinned.
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => return,
            Err(e) => panic!("pinning failed: {e}"),
        };
        let during = allowed();
        assert!(during.len() >= 2, "{during:?}");
        let one = &during[0];
        assert!(!one.contains([',', '-']), "not a single CPU: {one}");
        assert!(during.iter().all(|a| a == one), "{during:?}");
        // A thread started while pinned is pinned too.
        let child = std::thread::spawn(allowed).join().expect("the child");
        assert!(child.iter().all(|a| a == one), "{child:?}");
        drop(pinned);
        assert_eq!(allowed(), before);
        helper.thread().unpark();
        helper.join().expect("the helper");
    }
}
