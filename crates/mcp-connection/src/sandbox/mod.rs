//! What a stdio server may reach (`sandbox`): by default it reads everything but the user's
//! credentials and the router's own state, writes only where its work is (its working
//! directory and the router's, temp, the package managers' caches), and keeps the network;
//! stricter profiles take writing or the network away. On Linux the rules are Landlock's
//! (filesystem; TCP ports from its ABI 4) and a seccomp filter (no IP sockets with the network
//! off), applied in the child before it runs the server, so the server and every process it
//! starts keep them, in the binary and in an embedded host alike. Where the kernel has neither,
//! the server runs unsandboxed and its ready event says so. (macOS would take a Seatbelt
//! profile, `sandbox-exec -p`, in front of the guard: not built.)

#[cfg(target_os = "linux")]
pub(crate) mod linux;
mod paths;
#[cfg(target_os = "linux")]
mod userns;

use std::path::PathBuf;

pub(crate) use router_protocol::Sandbox;

/// What the default profile keeps a server from reading, of those that exist: the user's
/// credentials and browser profiles under `home`, and the router's own state (`state`) — but
/// not what lies in a temp directory, which every server may write (a rule cannot take a
/// place out of a directory and still let new files be made in it).
pub(crate) fn protected(home: Option<&PathBuf>, state: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = home
        .map(|home| paths::CREDENTIALS.iter().map(|p| home.join(p)).collect())
        .unwrap_or_default();
    out.extend(state.iter().cloned());
    let temp = paths::temp_dirs();
    let real = out.iter().filter_map(|p| p.canonicalize().ok());
    let mut out: Vec<PathBuf> = real.filter(|p| !temp.iter().any(|t| p.starts_with(t))).collect();
    out.sort();
    out.dedup();
    out
}

pub(crate) use paths::{named_dirs, router_state, writable};

/// How a server's process gets its sandbox: a helper program in front of it (`prefix`,
/// started by `posix_spawn`), or a pre-exec step (the child is forked); and the tier in words.
pub(crate) struct Start {
    /// Put before the program (the helper and its arguments); empty without a helper.
    pub(crate) prefix: Vec<std::ffi::OsString>,
    #[cfg(target_os = "linux")]
    prepared: Option<linux::Prepared>,
    /// The sandbox in force, in words.
    pub(crate) tier: String,
}

/// Below this resident size the router forks to apply a sandbox, past it the helper is
/// started (when there is one).
#[cfg(target_os = "linux")]
const FORK_BELOW_BYTES: u64 = 256 << 20;

/// This process's resident memory (`/proc/self/statm`); 0 when it cannot be read.
#[cfg(target_os = "linux")]
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages = statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok());
    // SAFETY: sysconf has no preconditions.
    #[allow(unsafe_code)]
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages.unwrap_or(0) * u64::try_from(page).unwrap_or(4096)
}

/// How `sandbox` is put on a server run in `cwd`: by its helper when there is one and this
/// process is large, else between fork and exec.
#[cfg(target_os = "linux")]
pub(crate) fn start(sandbox: &Sandbox, cwd: Option<&PathBuf>, args: &[String]) -> Start {
    let plan = linux::plan(sandbox, cwd.map(PathBuf::as_path), args);
    // Forking a small process costs less than starting the helper (about 2 ms); forking a large
    // one costs more (its page tables are copied): the helper is used past the threshold.
    let helper = sandbox.helper.as_ref().filter(|_| resident_bytes() >= FORK_BELOW_BYTES);
    match (helper, plan.applies()) {
        (_, false) => Start { prefix: Vec::new(), prepared: None, tier: plan.expected_tier() },
        (Some(helper), true) => {
            let json = serde_json::to_string(&plan).unwrap_or_default();
            let prefix = vec![helper.into(), "__sandbox-exec".into(), json.into(), "--".into()];
            Start { prefix, prepared: None, tier: plan.expected_tier() }
        }
        (None, true) => {
            let prepared = plan.prepare();
            let tier = prepared.tier.clone();
            Start { prefix: Vec::new(), prepared: Some(prepared), tier }
        }
    }
}

/// Elsewhere nothing is applied (macOS would put `sandbox-exec -p PROFILE` in front of the
/// guard): the server runs unsandboxed, and says so.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start(sandbox: &Sandbox, _: Option<&PathBuf>, _: &[String]) -> Start {
    let tier = if sandbox.enabled {
        "none: no sandbox on this system, the server runs unsandboxed"
    } else {
        "off (sandbox = \"off\")"
    };
    Start { prefix: Vec::new(), tier: tier.to_string() }
}

impl Start {
    /// Without a helper: the step that applies the sandbox in the child before it runs
    /// anything. What `self` holds must live until the spawn.
    pub(crate) fn pre_exec(&self, command: &mut tokio::process::Command) {
        #[cfg(target_os = "linux")]
        if let Some(prepared) = self.prepared.as_ref().filter(|p| p.applies()) {
            let parts = prepared.parts();
            // SAFETY: only async-signal-safe system calls run between fork and exec.
            #[allow(unsafe_code)]
            unsafe {
                command.pre_exec(move || parts.apply());
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = command;
    }
}

/// `PROGRAM __sandbox-exec PLAN -- COMMAND…`, the helper's side (see `Sandbox::helper`): a
/// binary that serves as the helper calls this when its first argument is `__sandbox-exec`,
/// with the arguments after it. It makes the plan's rules, applies them to its own process and
/// becomes COMMAND; it returns only on failure, having run nothing.
pub fn sandbox_exec(args: &[std::ffi::OsString]) -> std::io::Error {
    #[cfg(target_os = "linux")]
    return linux::exec(args);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = args;
        std::io::Error::other("__sandbox-exec: no sandbox on this system")
    }
}
