//! Child processes for stdio servers. Each runs in its own process group with a parent-death
//! signal, so wrappers (`sh`, `npx`) cannot leave grandchildren behind: shutdown and drop kill the
//! whole group, and if the router itself is killed the kernel kills the direct child.
//!
//! The environment is cleared except for a short list of variables a program needs to run
//! (Codex's rule) plus the configured `env`: the router's own secrets do not leak to servers.
#![allow(unsafe_code)] // killpg and prctl have no safe wrappers in std.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Variables passed through from the router's environment.
const INHERITED_ENV: &[&str] =
    &["HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"];
/// Longest stderr line kept in the log.
const MAX_STDERR_LINE: usize = 2_000;

/// A spawned server: its pipes and the guard that owns its process group.
pub(crate) struct Spawned {
    pub(crate) stdout: ChildStdout,
    pub(crate) stdin: ChildStdin,
    pub(crate) group: ChildGroup,
}

/// What to run.
pub(crate) struct Launch<'a> {
    pub(crate) server: &'a str,
    pub(crate) command: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) env: &'a BTreeMap<String, String>,
    pub(crate) cwd: Option<&'a PathBuf>,
}

pub(crate) fn spawn(launch: Launch<'_>) -> std::io::Result<Spawned> {
    let mut command = Command::new(launch.command);
    command
        .args(launch.args)
        .env_clear()
        .envs(INHERITED_ENV.iter().filter_map(|k| std::env::var_os(k).map(|v| (*k, v))))
        .envs(launch.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    if let Some(cwd) = launch.cwd {
        command.current_dir(cwd);
    }
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls (prctl, getppid) run between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The router may have died between fork and prctl: then nobody would kill us.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("parent exited during spawn"));
            }
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    let pid = child.id().map(|id| id as libc::pid_t);
    let (Some(stdin), Some(stdout), Some(stderr), Some(pid)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take(), pid)
    else {
        return Err(std::io::Error::other("child process has no pipes"));
    };
    let server = launch.server.to_string();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(mut line)) = lines.next_line().await {
            if line.len() > MAX_STDERR_LINE {
                let mut cut = MAX_STDERR_LINE;
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                line.truncate(cut);
            }
            tracing::info!(target: "mcp_server_stderr", server = %server, "{line}");
        }
    });
    Ok(Spawned {
        stdout,
        stdin,
        group: ChildGroup {
            pgid: pid,
            child: Mutex::new(Some(child)),
            done: AtomicBool::new(false),
        },
    })
}

/// Owns a server's process group: [`ChildGroup::terminate`] ends it politely, drop ends it hard.
pub(crate) struct ChildGroup {
    pgid: libc::pid_t,
    child: Mutex<Option<Child>>,
    done: AtomicBool,
}

impl ChildGroup {
    /// SIGTERM to the group, wait up to `grace` for the server to exit, then SIGKILL the group.
    pub(crate) async fn terminate(&self, grace: Duration) {
        if self.done.load(Ordering::SeqCst) {
            return;
        }
        self.signal(libc::SIGTERM);
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut child) = child {
            let _ = tokio::time::timeout(grace, child.wait()).await;
            // Whatever is left of the group (children that ignore SIGTERM) goes now, before the
            // leader's handle is dropped and its pid may be reused.
            self.signal(libc::SIGKILL);
            drop(child);
        }
        self.done.store(true, Ordering::SeqCst);
    }

    /// The process id of the group leader (the spawned command).
    pub(crate) fn pid(&self) -> u32 {
        self.pgid as u32
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: killpg has no memory-safety preconditions; a stale group only yields ESRCH.
        unsafe {
            libc::killpg(self.pgid, signal);
        }
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        if !self.done.load(Ordering::SeqCst) {
            self.signal(libc::SIGKILL);
        }
    }
}
