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
    real.filter(|p| !temp.iter().any(|t| p.starts_with(t))).collect()
}

pub(crate) use paths::{router_state, writable};

/// Where no sandbox can be applied (not Linux): the tier says so.
#[cfg(not(target_os = "linux"))]
pub(crate) struct Unapplied {
    pub(crate) tier: String,
}

#[cfg(not(target_os = "linux"))]
impl Unapplied {
    pub(crate) fn new(sandbox: &Sandbox) -> Self {
        let words = if sandbox.enabled {
            "none: no sandbox on this system, the server runs unsandboxed"
        } else {
            "off (sandbox = \"off\")"
        };
        Self { tier: words.to_string() }
    }
}

/// Apply `sandbox` to `command`: in the child before it runs anything (a pre-exec step, so the
/// child is forked rather than spawned). What is returned must live until the spawn; its
/// `tier` says what is in force.
#[cfg(target_os = "linux")]
pub(crate) fn apply(
    command: &mut tokio::process::Command,
    sandbox: &Sandbox,
    cwd: Option<&PathBuf>,
) -> linux::Prepared {
    let prepared = linux::prepare(sandbox, cwd.map(PathBuf::as_path));
    if prepared.applies() {
        let (fd, filter) = prepared.parts();
        // SAFETY: only async-signal-safe system calls run between fork and exec.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || linux::apply_in_child(fd, filter.as_deref()));
        }
    }
    prepared
}

/// Elsewhere nothing is applied (macOS would put `sandbox-exec -p PROFILE` in front of the
/// guard): the server runs unsandboxed, and says so.
#[cfg(not(target_os = "linux"))]
pub(crate) fn apply(
    _: &mut tokio::process::Command,
    sandbox: &Sandbox,
    _: Option<&PathBuf>,
) -> Unapplied {
    Unapplied::new(sandbox)
}
