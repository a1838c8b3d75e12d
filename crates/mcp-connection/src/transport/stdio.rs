//! Child processes for stdio servers. Each runs in its own process group with a parent-death
//! signal, so wrappers (`sh`, `npx`) cannot leave grandchildren behind: shutdown and drop kill the
//! whole group, and if the router itself is killed the kernel kills the direct child.
//!
//! The environment is cleared except for a short list of variables a program needs to run
//! (Codex's rule) plus the configured `env`: the router's own secrets do not leak to servers.
//!
//! Even SIGKILL of the router leaves nothing behind: the parent-death signal reaches only the
//! direct child, so the direct child is a small `sh` guard at the head of the process group. It
//! runs the server (stdin passed through explicitly) and, when the parent-death SIGTERM arrives,
//! kills the whole group — servers behind `npx` or `sh` wrappers, and servers that ignore the end
//! of their stdin, included.
//!
//! The parent-death signal is set by util-linux's `setpriv --pdeathsig` in front of the guard,
//! so the router starts the child the way std does without a pre-exec step: `posix_spawn`,
//! whose cost does not grow with the router's memory. `fork` copies the parent's page tables
//! and makes every written page copy-on-write: 16 servers took 639 ms to be ready instead of 239
//! while the process held 2 GiB it had written (`mcp-router-bench p5`). Where no `setpriv` can
//! set it, a pre-exec step (and so `fork`) sets it instead. Either way the guard starts the
//! server only if the router is still its parent.
//!
//! Configured env values are secrets: a server stderr line containing one is logged with the
//! value replaced by `[redacted]`.
#![allow(unsafe_code)] // killpg and prctl have no safe wrappers in std.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::transport::procs;
pub(crate) use crate::transport::stderr::StderrTail;
use crate::transport::stderr::log_stderr;

/// Longest a failed request on a broken stdio connection waits to see its server's exit status.
pub(crate) const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Variables passed through from the router's environment.
const INHERITED_ENV: &[&str] =
    &["HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"];
/// How long shutdown waits for processes to be gone after SIGKILL (the kernel needs moments).
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How long a drop waits for each step of ending a group (its processes, then its guard).
const DROP_WAIT: Duration = Duration::from_millis(500);

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
    /// What the server may reach.
    pub(crate) sandbox: &'a crate::sandbox::Sandbox,
}

/// The guard: run the server in the background with our stdin, wait for it, and on SIGTERM (the
/// parent-death signal, or shutdown) kill the server and the whole process group. Stdin goes through fd 3
/// because `sh` gives background jobs `/dev/null` before explicit redirections apply.
/// The server's own pid is killed too: it may have left the group (`setsid`).
///
/// The trap first *ignores* further SIGTERMs: when a multi-threaded router dies, the parent-death
/// signal comes once per exiting thread that the guard is reparented through (the kernel resends
/// it on each reparenting), and a second one arriving mid-trap must not kill the guard before it
/// has killed the group.
///
/// Its first argument is the router's pid: a router that died before the parent-death signal
/// was set would never send it, so the guard then exits without starting anything.
///
/// Once the server runs, the guard lets go of the server's pipes (`0</dev/null 1>/dev/null
/// 2>&1`): a request written to a server that exited then fails at once (`EPIPE`) instead of
/// filling a pipe the guard still holds open, and a server that closes its stdout while it
/// runs is seen at once (the stream ends: its requests fail, the next one restarts it).
const GUARD: &str = concat!(
    "[ \"$PPID\" = \"$1\" ] || exit 125; shift; exec 3<&0; trap 'trap \"\" TERM; [ -n \"$pid\" ] && kill -KILL $pid 2>/dev/null; kill -KILL 0' TERM; ",
    r#""$@" <&3 3<&- & pid=$!; exec 3<&- 0</dev/null 1>/dev/null 2>&1; wait $pid; status=$?; exit $status"#,
);

pub(crate) fn spawn(launch: Launch<'_>) -> std::io::Result<Spawned> {
    spawn_with(launch, setpriv(), std::process::id() as libc::pid_t)
}

/// [`spawn`] with the parent-death signal set by `setpriv` (`None`: by a pre-exec step), for a
/// guard told that `parent` is the router.
fn spawn_with(
    launch: Launch<'_>,
    setpriv: Option<&std::path::Path>,
    parent: libc::pid_t,
) -> std::io::Result<Spawned> {
    // Resolve the program first, so a missing one is reported as such (not as a guard failure).
    let path = std::env::var_os("PATH");
    let program = resolve(
        launch.command,
        launch.env.get("PATH").map(|p| p.as_ref()).or(path.as_deref()),
        launch.cwd,
    )?;
    let sandbox = crate::sandbox::start(launch.sandbox, launch.cwd, launch.args);
    let mut command = shell(setpriv, &sandbox.prefix);
    command
        .arg("-c")
        .arg(GUARD)
        .arg("mcp-server-guard")
        .arg(parent.to_string())
        .arg(&program)
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
    if setpriv.is_none() {
        set_parent_death_signal_by_fork(&mut command, parent);
    }
    // Without a helper the sandbox's ruleset stays open until the child has it.
    sandbox.pre_exec(&mut command);
    let (mut child, sandbox) = (command.spawn()?, sandbox.tier);
    let pid = child.id().map(|id| id as libc::pid_t);
    let (Some(stdin), Some(stdout), Some(stderr), Some(pid)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take(), pid)
    else {
        return Err(std::io::Error::other("child process has no pipes"));
    };
    let secrets: Vec<String> = launch.env.values().filter(|v| v.len() >= 4).cloned().collect();
    let tail = std::sync::Arc::new(StderrTail::default());
    tokio::spawn(log_stderr(launch.server.to_string(), stderr, secrets, tail.clone()));
    Ok(Spawned {
        stdout,
        stdin,
        group: ChildGroup {
            pgid: pid,
            child: Mutex::new(Some(child)),
            done: AtomicBool::new(false),
            stderr: tail,
            sandbox,
        },
    })
}

/// `/bin/sh`, behind the sandbox's helper (`prefix`) and `setpriv --pdeathsig TERM`, when
/// there are.
fn shell(setpriv: Option<&std::path::Path>, prefix: &[std::ffi::OsString]) -> Command {
    let mut words: Vec<std::ffi::OsString> = Vec::new();
    if let Some(setpriv) = setpriv {
        words.extend([setpriv.into(), "--pdeathsig".into(), "TERM".into(), "--".into()]);
    }
    words.extend(prefix.iter().cloned());
    words.push("/bin/sh".into());
    let mut command = Command::new(&words[0]);
    command.args(&words[1..]);
    command
}

/// The `setpriv` that can set a parent-death signal (util-linux 2.33 or later), found once:
/// tried on `/bin/sh -c 'exit 0'`, so one that lacks `--pdeathsig` (or cannot run) is not used.
fn setpriv() -> Option<&'static std::path::Path> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            ["/usr/bin/setpriv", "/bin/setpriv"].into_iter().map(PathBuf::from).find(|setpriv| {
                std::process::Command::new(setpriv)
                    .args(["--pdeathsig", "TERM", "--", "/bin/sh", "-c", "exit 0"])
                    .env_clear()
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success())
            })
        })
        .as_deref()
}

/// Without `setpriv`: set the parent-death signal between fork and exec (std then forks).
fn set_parent_death_signal_by_fork(command: &mut Command, parent: libc::pid_t) {
    // SAFETY: only async-signal-safe calls (prctl, getppid) run between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The router may have died between fork and prctl: then nobody would kill us. (std
            // passes only an errno from here to the parent.)
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Find `command` as `Command` would: a path with a `/` as is (relative to `cwd`), else the
/// first executable file of that name in `path`.
fn resolve(
    command: &str,
    path: Option<&std::ffi::OsStr>,
    cwd: Option<&PathBuf>,
) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let not_found = || std::io::Error::from_raw_os_error(libc::ENOENT);
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.is_empty() {
        return Err(not_found());
    }
    if command.contains('/') {
        let candidate = match cwd {
            Some(dir) if !command.starts_with('/') => dir.join(command),
            _ => PathBuf::from(command),
        };
        return match std::fs::metadata(&candidate) {
            Err(_) => Err(not_found()),
            Ok(_) if executable(&candidate) => Ok(candidate),
            Ok(_) => Err(std::io::Error::from_raw_os_error(libc::EACCES)),
        };
    }
    let path = path.ok_or_else(not_found)?;
    std::env::split_paths(path)
        .map(|dir| dir.join(command))
        .find(|p| executable(p))
        .ok_or_else(not_found)
}

/// Owns a server's process group: [`ChildGroup::terminate`] ends it politely, drop ends it hard.
pub struct ChildGroup {
    pgid: libc::pid_t,
    child: Mutex<Option<Child>>,
    done: AtomicBool,
    stderr: std::sync::Arc<StderrTail>,
    sandbox: String,
}

impl ChildGroup {
    /// The sandbox the server runs in, in words: `landlock ABI N: …` (what is enforced),
    /// `off (sandbox = "off")`, or `none: …` (the system cannot; it runs unsandboxed).
    pub fn sandbox(&self) -> &str {
        &self.sandbox
    }

    /// Ends the server and every process it started (found by descent, so one that left the
    /// group is reached too) from the bottom up — each process's children before it, each
    /// reaped by its own parent — so none is handed to whoever adopts orphans: SIGTERM for up
    /// to `grace`, then SIGKILL the same way; the guard, which waits for the server, exits
    /// last and is reaped here. Returns only once every one of them has exited.
    pub(crate) async fn terminate(&self, grace: Duration) {
        if self.done.load(Ordering::SeqCst) {
            return;
        }
        // Before any signal: once the guard is gone, orphans lose their link to it.
        let family = procs::descendants(self.pgid);
        let started = tokio::time::Instant::now();
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut child) = child {
            if !procs::BottomUp::new(self.pgid, libc::SIGTERM).run(grace).await {
                procs::BottomUp::new(self.pgid, libc::SIGKILL).run(KILL_WAIT).await;
            }
            let rest = grace.saturating_sub(started.elapsed()).max(EXIT_GRACE);
            if tokio::time::timeout(rest, child.wait()).await.is_err() {
                // The guard's trap kills the group at once.
                self.signal(libc::SIGTERM);
                let _ = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
            }
            // Whatever is left (a process that moved away from its parent) goes now, before
            // the leader's handle is dropped and its pid may be reused.
            self.signal(libc::SIGKILL);
            family.iter().for_each(|p| p.signal(libc::SIGKILL));
            let _ = tokio::time::timeout(KILL_WAIT, child.wait()).await;
        }
        let left = procs::wait_exited(&family, KILL_WAIT).await;
        if !left.is_empty() {
            tracing::warn!(pids = ?left.iter().map(|p| p.pid).collect::<Vec<_>>(), "server processes still running after SIGKILL");
        }
        self.done.store(true, Ordering::SeqCst);
    }

    /// How the server ended, once it has: `status 1`, `killed by signal 9` (the guard exits
    /// with the server's status, a shell's 128 + n for a signal). `None` while it runs.
    pub fn exit_status(&self) -> Option<String> {
        use std::os::unix::process::ExitStatusExt as _;
        let mut child = self.child.lock().ok()?;
        let status = child.as_mut()?.try_wait().ok()??;
        Some(match (status.code(), status.signal()) {
            (Some(code), _) if code > 128 && code < 160 => {
                format!("killed by signal {}", code - 128)
            }
            (Some(code), _) => format!("status {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "status unknown".to_string(),
        })
    }

    /// [`ChildGroup::exit_status`], waited for up to `grace` (checked every few milliseconds);
    /// `None` if the server still runs then.
    pub async fn exited_within(&self, grace: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            if let Some(status) = self.exit_status() {
                return Some(status);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Why the server is gone, for a failure to say: `the server exited (status 3); its last
    /// stderr lines: …`, once its exit status is known (waited for up to `grace`), with its
    /// last stderr lines (see [`StderrTail`]). `None` while it still runs after `grace`.
    pub async fn why_ended(&self, grace: Duration) -> Option<String> {
        let started = tokio::time::Instant::now();
        let status = self.exited_within(grace).await?;
        let lines = self.stderr.wait(grace.saturating_sub(started.elapsed())).await;
        Some(match lines.as_slice() {
            [] => format!("the server exited ({status})"),
            lines => format!(
                "the server exited ({status}); its last stderr lines: {}",
                lines.join(" | ")
            ),
        })
    }

    /// The server's own process id: the guard's child (`None` before the guard has started
    /// it, or once it is gone). Found through `/proc`.
    pub fn server_pid(&self) -> Option<u32> {
        let first = procs::descendants(self.pgid).into_iter().next()?;
        Some(first.pid as u32)
    }

    /// The server's last stderr lines, as they come.
    pub(crate) fn stderr_tail(&self) -> std::sync::Arc<StderrTail> {
        self.stderr.clone()
    }

    /// The process id of the group leader (the spawned command).
    pub fn pid(&self) -> u32 {
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
    /// A group dropped without [`ChildGroup::terminate`] (a start given up, a connection
    /// dropped) is ended hard here, still from the bottom up and its guard reaped, before the
    /// drop returns: a host that exits right after (a start abandoned at shutdown) leaves
    /// nothing behind. SIGKILLed processes end in moments; the wait is bounded.
    fn drop(&mut self) {
        if self.done.load(Ordering::SeqCst) {
            return;
        }
        let family = procs::descendants(self.pgid);
        procs::BottomUp::new(self.pgid, libc::SIGKILL).run_blocking(DROP_WAIT);
        self.signal(libc::SIGKILL);
        family.iter().for_each(|p| p.signal(libc::SIGKILL));
        if let Some(mut child) = self.child.get_mut().ok().and_then(Option::take) {
            let deadline = std::time::Instant::now() + DROP_WAIT;
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::stderr::{TAIL_BYTES, plain};

    /// A burst of SIGTERMs at the guard (what a dying multi-threaded router sends: one per thread
    /// the guard is reparented through) still ends with the whole group killed.
    #[tokio::test]
    async fn repeated_parent_death_signals_still_kill_the_group() {
        for _ in 0..20 {
            let env = BTreeMap::new();
            let args = ["300".to_string()];
            let spawned = spawn(Launch {
                server: "burst",
                command: "sleep",
                args: &args,
                env: &env,
                cwd: None,
                sandbox: &crate::sandbox::Sandbox::default(),
            })
            .expect("spawn");
            let guard = spawned.group.pgid;
            // The server is forked only after the trap is set.
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            let family = loop {
                let family = procs::descendants(guard);
                if !family.is_empty() {
                    break family;
                }
                assert!(std::time::Instant::now() < deadline, "the server never started");
                tokio::time::sleep(Duration::from_millis(5)).await;
            };
            for _ in 0..200 {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(guard, libc::SIGTERM) };
                std::thread::sleep(Duration::from_micros(20));
            }
            let left = procs::wait_exited(&family, Duration::from_secs(3)).await;
            assert!(left.is_empty(), "orphaned server processes: {left:?}");
            spawned.group.done.store(true, Ordering::SeqCst);
        }
    }

    /// Each way of setting the parent-death signal this machine has: the pre-exec step always,
    /// `setpriv` where one can set it.
    fn ways() -> Vec<Option<&'static std::path::Path>> {
        std::iter::once(None).chain(setpriv().map(Some)).collect()
    }

    /// The parent-death signal is set either way: it comes when the thread that started the
    /// server exits (Linux ties it to that thread), and the guard then kills the group.
    #[tokio::test]
    async fn the_parent_death_signal_is_set_either_way() {
        for way in ways() {
            let runtime = tokio::runtime::Handle::current();
            let spawned = std::thread::spawn(move || {
                let _entered = runtime.enter();
                let (env, args) = (BTreeMap::new(), ["300".to_string()]);
                let launch = Launch {
                    server: "orphan",
                    command: "sleep",
                    args: &args,
                    env: &env,
                    cwd: None,
                    sandbox: &crate::sandbox::Sandbox::default(),
                };
                let spawned =
                    spawn_with(launch, way, std::process::id() as libc::pid_t).expect("spawn");
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                while procs::descendants(spawned.group.pgid).is_empty() {
                    assert!(std::time::Instant::now() < deadline, "the server never started");
                    std::thread::sleep(Duration::from_millis(5));
                }
                spawned
            })
            .join()
            .expect("the spawning thread");
            spawned.group.done.store(true, Ordering::SeqCst);
            let family = procs::descendants(spawned.group.pgid);
            let left = procs::wait_exited(&family, Duration::from_secs(3)).await;
            assert!(left.is_empty(), "{way:?}: still running after the thread exited: {left:?}");
            let deadline = std::time::Instant::now() + Duration::from_secs(3);
            while spawned.group.exit_status().is_none() {
                assert!(std::time::Instant::now() < deadline, "{way:?}: the guard still runs");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }

    /// A guard whose parent is not the router it was told of (the router died before the
    /// parent-death signal was set, so none would come) starts nothing.
    #[tokio::test]
    async fn a_guard_without_its_router_starts_nothing() {
        for way in ways() {
            let (env, args) = (BTreeMap::new(), ["-c".to_string(), "exit 7".to_string()]);
            let launch = Launch {
                server: "late",
                command: "sh",
                args: &args,
                env: &env,
                cwd: None,
                sandbox: &crate::sandbox::Sandbox::default(),
            };
            let spawned = match spawn_with(launch, way, 1) {
                Err(e) if way.is_none() => {
                    assert_eq!(e.raw_os_error(), Some(libc::ESRCH), "{e}");
                    continue;
                }
                spawned => spawned.expect("spawn"),
            };
            assert_eq!(ended(&spawned.group).await, "status 125", "{way:?}");
        }
    }

    /// How the group's server ended, once it has (within 5 s).
    async fn ended(group: &ChildGroup) -> String {
        group.exited_within(Duration::from_secs(5)).await.expect("ended within 5 s")
    }

    /// A failure on a broken connection waits a moment for the server's status (the guard exits
    /// a moment after its output ends), but not past the grace a server that still runs gets.
    #[tokio::test]
    async fn the_exit_status_is_waited_for_a_moment_and_no_longer() {
        let env = BTreeMap::new();
        let args = ["-c".to_string(), "sleep 0.2; exit 3".to_string()];
        let launch = Launch {
            server: "slow",
            command: "sh",
            args: &args,
            env: &env,
            cwd: None,
            sandbox: &crate::sandbox::Sandbox::default(),
        };
        let spawned = spawn(launch).expect("spawn");
        assert_eq!(spawned.group.exit_status(), None, "still running");
        let status = spawned.group.exited_within(EXIT_GRACE).await;
        assert_eq!(status.as_deref(), Some("status 3"));

        let args = ["-c".to_string(), "sleep 5".to_string()];
        let launch = Launch {
            server: "runs",
            command: "sh",
            args: &args,
            env: &env,
            cwd: None,
            sandbox: &crate::sandbox::Sandbox::default(),
        };
        let spawned = spawn(launch).expect("spawn");
        let started = std::time::Instant::now();
        assert_eq!(spawned.group.exited_within(Duration::from_millis(50)).await, None);
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }

    /// A server that fails to start is named with its status and its last stderr lines: at
    /// most a few, without terminal escapes, bounded in bytes.
    #[tokio::test]
    async fn why_a_server_ended_quotes_its_last_stderr_lines() {
        let env = BTreeMap::new();
        let script =
            r#"for i in 1 2 3 4 5 6 7; do printf '\033[31mline %s\033[0m\n' $i >&2; done; exit 3"#;
        let args = ["-c".to_string(), script.to_string()];
        let launch = Launch {
            server: "boom",
            command: "sh",
            args: &args,
            env: &env,
            cwd: None,
            sandbox: &crate::sandbox::Sandbox::default(),
        };
        let spawned = spawn(launch).expect("spawn");
        let why = spawned.group.why_ended(Duration::from_secs(5)).await.expect("ended");
        assert_eq!(
            why,
            "the server exited (status 3); its last stderr lines: line 3 | line 4 | line 5 | line 6 | line 7"
        );

        let script = "head -c 5000 /dev/zero | tr '\\0' y >&2; echo >&2; exit 1";
        let args = ["-c".to_string(), script.to_string()];
        let launch = Launch {
            server: "long",
            command: "sh",
            args: &args,
            env: &env,
            cwd: None,
            sandbox: &crate::sandbox::Sandbox::default(),
        };
        let spawned = spawn(launch).expect("spawn");
        let why = spawned.group.why_ended(Duration::from_secs(5)).await.expect("ended");
        assert!(why.len() <= TAIL_BYTES + 80, "{} bytes", why.len());
        assert!(why.ends_with("yyyy"), "{why}");
    }

    #[test]
    fn plain_text_has_no_escapes_or_control_characters() {
        assert_eq!(plain("\u{1b}[1;31merror\u{1b}[0m:\tbad\u{7}"), "error: bad");
        assert_eq!(plain("\u{1b}]0;title\u{7}after"), "after");
        assert_eq!(plain("\u{1b}]8;;http://x\u{1b}\\link"), "link");
    }

    /// How a server ended, as failures name it.
    #[tokio::test]
    async fn the_exit_status_says_how_the_server_ended() {
        for (script, said) in [("exit 3", "status 3"), ("kill -9 $$", "killed by signal 9")] {
            let env = BTreeMap::new();
            let args = ["-c".to_string(), script.to_string()];
            let launch = Launch {
                server: "ends",
                command: "sh",
                args: &args,
                env: &env,
                cwd: None,
                sandbox: &crate::sandbox::Sandbox::default(),
            };
            let spawned = spawn(launch).expect("spawn");
            assert_eq!(ended(&spawned.group).await, said, "{script}");
        }
    }
}
