//! Landlock rules and a seccomp filter, built in the router (where allocating and reading
//! directories is safe) and applied in the child between `fork` and `exec` with three system
//! calls: `no_new_privs`, `landlock_restrict_self`, `seccomp`.
#![allow(unsafe_code)] // the raw system calls between fork and exec have no safe wrappers.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible as _, NetPort,
    PathBeneath, PathFd, Ruleset, RulesetAttr as _, RulesetCreatedAttr as _,
};
use seccompiler::BpfProgram;

use super::Sandbox;
use super::userns::{self, Namespaces};

/// What the child applies before it runs the server, and the tier that makes.
pub(crate) struct Prepared {
    landlock: Option<OwnedFd>,
    seccomp: Option<BpfProgram>,
    namespaces: Option<Namespaces>,
    /// The sandbox in force, in words.
    pub(crate) tier: String,
}

/// The kernel's Landlock ABI version (0: none), asked once.
fn landlock_abi() -> i32 {
    static ABI: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *ABI.get_or_init(|| {
        const VERSION: libc::c_uint = 1; // LANDLOCK_CREATE_RULESET_VERSION
        // SAFETY: a query: no ruleset pointer, size 0, the version flag.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                VERSION,
            )
        };
        i32::try_from(abi).unwrap_or(0).max(0)
    })
}

/// What a sandbox comes to for one server, computed in the router (whose environment names
/// its state): the profile, the places kept unreadable, the places it may write. A helper
/// process gets it as JSON.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Plan {
    sandbox: Sandbox,
    denied: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    /// Put the server in namespaces of its own first (the router found the kernel allows it).
    #[serde(default)]
    namespaces: bool,
    /// The router's state that lies in temp: hidden by the namespaces tier, not by Landlock.
    #[serde(default)]
    hidden: Vec<PathBuf>,
}

/// The plan of `sandbox` for a server run in `cwd` (`None`: the router's directory) with
/// `args` (the folders they name are its to write, with its workspace).
pub(crate) fn plan(sandbox: &Sandbox, cwd: Option<&Path>, args: &[String]) -> Plan {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    // The router's folders are made now if they are not there yet, so they are protected
    // from the start (a folder made later under a granted one would be readable).
    let mut state = super::router_state();
    if sandbox.enabled {
        for dir in &state {
            let _ = private_dir(dir);
        }
    }
    state.extend(sandbox.deny.iter().cloned());
    let denied = super::protected(home.as_ref(), &state);
    // The router's state in temp (which stays writable, so Landlock cannot take it out) can
    // still be hidden by the namespaces tier.
    let temp = super::paths::temp_dirs();
    let in_temp = state.iter().filter_map(|p| p.canonicalize().ok());
    let hidden = in_temp.filter(|p| temp.iter().any(|t| p.starts_with(t) && p != t)).collect();
    let mut writable = if sandbox.write {
        let mut writable = super::writable(cwd, home.as_deref());
        writable.extend(super::named_dirs(args, home.as_deref()));
        writable
    } else {
        vec![PathBuf::from("/dev")]
    };
    writable.extend(sandbox.allow_write.iter().filter_map(|p| p.canonicalize().ok()));
    let namespaces = sandbox.enabled && landlock_abi() > 0 && userns::available(!sandbox.network);
    Plan { sandbox: sandbox.clone(), denied, writable, namespaces, hidden }
}

/// `dir` and its missing parents, made private to this user.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

impl Plan {
    /// Whether anything would be applied (a sandbox that is on, and a kernel that can).
    pub(crate) fn applies(&self) -> bool {
        self.sandbox.enabled && (landlock_abi() > 0 || !self.sandbox.network)
    }

    /// The tier this plan comes to where every part the kernel offers is made.
    pub(crate) fn expected_tier(&self) -> String {
        if !self.sandbox.enabled {
            return "off (sandbox = \"off\")".to_string();
        }
        let abi = landlock_abi();
        describe(&self.sandbox, abi, abi > 0, !self.sandbox.network, self.namespaces)
    }

    /// The ruleset and filter, made here.
    pub(crate) fn prepare(&self) -> Prepared {
        let sandbox = &self.sandbox;
        if !sandbox.enabled {
            let tier = "off (sandbox = \"off\")".to_string();
            return Prepared { landlock: None, seccomp: None, namespaces: None, tier };
        }
        let seccomp = (!sandbox.network)
            .then(|| {
                no_ip_sockets()
                    .inspect_err(
                        |e| tracing::warn!(error = %e, "no seccomp filter for network off"),
                    )
                    .ok()
            })
            .flatten();
        let abi = landlock_abi();
        let landlock = if abi > 0 {
            self.landlock_rules(abi)
                .inspect_err(|e| tracing::warn!(error = %e, "the Landlock rules could not be made"))
                .ok()
        } else {
            None
        };
        // Namespaces only in front of Landlock: alone they would leave writing open.
        let namespaces = (self.namespaces && landlock.is_some())
            .then(|| Namespaces::new(&self.denied, &self.hidden, !sandbox.network));
        let spaces = namespaces.is_some();
        let tier = describe(sandbox, abi, landlock.is_some(), seccomp.is_some(), spaces);
        Prepared { landlock, seccomp, namespaces, tier }
    }
}

/// The tier in words: what is enforced, and what the kernel could not.
fn describe(sandbox: &Sandbox, abi: i32, landlock: bool, seccomp: bool, spaces: bool) -> String {
    let netns = spaces && !sandbox.network;
    let network = match (sandbox.network, sandbox.ports.as_slice()) {
        (true, []) => "network on".to_string(),
        (false, _) if netns && seccomp => "network off (network namespace, seccomp)".to_string(),
        (false, _) if seccomp => "network off (seccomp)".to_string(),
        (false, _) if netns => "network off (network namespace)".to_string(),
        (false, _) => "network NOT restricted (no seccomp filter)".to_string(),
        (true, ports) if landlock && abi >= 4 => {
            let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
            format!("TCP to ports {} only", ports.join(", "))
        }
        (true, _) => "network NOT restricted (ports need Landlock ABI 4)".to_string(),
    };
    if !landlock {
        let why = if abi > 0 {
            "the Landlock rules could not be made"
        } else {
            "this kernel has no Landlock"
        };
        return format!("none: {why}, the server runs unsandboxed; {network}");
    }
    let writes = if sandbox.write {
        "writes to its workspace, temp and package caches"
    } else {
        "read-only"
    };
    if spaces {
        return format!(
            "namespaces + landlock ABI {abi}: credentials and router state hidden and unreadable, {writes}; {network}"
        );
    }
    format!("landlock ABI {abi}: credentials and router state unreadable, {writes}; {network}")
}

impl Plan {
    /// The Landlock ruleset: every file readable but the protected ones, writable where the
    /// plan says, TCP ports if it names them.
    fn landlock_rules(&self, abi: i32) -> Result<OwnedFd, String> {
        let sandbox = &self.sandbox;
        let version = ABI::from(abi);
        let (read, all) = (AccessFs::from_read(version), AccessFs::from_all(version));
        let ports =
            (sandbox.network && !sandbox.ports.is_empty() && abi >= 4).then_some(&sandbox.ports);
        let error = |e: landlock::RulesetError| e.to_string();
        let ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
        let mut ruleset = ruleset.handle_access(all).map_err(error)?;
        if ports.is_some() {
            ruleset = ruleset.handle_access(AccessNet::ConnectTcp).map_err(error)?;
        }
        let mut created = ruleset.create().map_err(error)?;
        let mut rules = Vec::new();
        let scope = Scope { denied: &self.denied, writable: &self.writable, read, all };
        expand(Path::new("/"), &scope, &mut rules);
        for (path, access) in rules {
            let Ok(fd) = PathFd::new(&path) else { continue };
            let access = if path.is_dir() { access } else { access & AccessFs::from_file(version) };
            created = created.add_rule(PathBeneath::new(fd, access)).map_err(error)?;
        }
        for port in ports.into_iter().flatten() {
            let rule = NetPort::new(*port, AccessNet::ConnectTcp);
            created = created.add_rule(rule).map_err(error)?;
        }
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| "Landlock is not enabled".to_string())
    }
}

/// What [`expand`] grants.
struct Scope<'a> {
    denied: &'a [PathBuf],
    writable: &'a [PathBuf],
    read: BitFlags<AccessFs>,
    all: BitFlags<AccessFs>,
}

/// The rules under `dir`: one for `dir` when nothing below it is protected (or writable while it
/// is not), else one per entry, recursively — a Landlock rule covers everything beneath it, so
/// a protected place is left out by granting its siblings. Symbolic links get no rule: what
/// they point to has its own.
fn expand(dir: &Path, scope: &Scope<'_>, out: &mut Vec<(PathBuf, BitFlags<AccessFs>)>) {
    if scope.denied.iter().any(|d| d == dir) {
        return;
    }
    let in_writable = scope.writable.iter().any(|w| dir.starts_with(w));
    let below = |set: &[PathBuf]| set.iter().any(|p| p != dir && p.starts_with(dir));
    if !below(scope.denied) && (in_writable || !below(scope.writable)) {
        out.push((dir.to_path_buf(), if in_writable { scope.all } else { scope.read }));
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| !t.is_symlink()) {
            expand(&entry.path(), scope, out);
        }
    }
}

/// A filter that refuses IPv4, IPv6 and packet sockets (`EACCES`), and io_uring (which could
/// make them without `socket`).
fn no_ip_sockets() -> Result<BpfProgram, seccompiler::BackendError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let family = |family: libc::c_int| {
        let family = u64::try_from(family).unwrap_or_default();
        let condition =
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family)?;
        SeccompRule::new(vec![condition])
    };
    let socket = vec![family(libc::AF_INET)?, family(libc::AF_INET6)?, family(libc::AF_PACKET)?];
    let rules = [(libc::SYS_socket, socket), (libc::SYS_io_uring_setup, Vec::new())];
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let refuse = SeccompAction::Errno(libc::EACCES.unsigned_abs());
    let filter =
        SeccompFilter::new(rules.into_iter().collect(), SeccompAction::Allow, refuse, arch)?;
    filter.try_into()
}

impl Prepared {
    /// Whether anything is applied in the child (else no pre-exec step is needed).
    pub(crate) fn applies(&self) -> bool {
        self.landlock.is_some() || self.seccomp.is_some()
    }

    /// The parts the child applies: the namespaces, the ruleset's descriptor (-1: none) and
    /// the filter.
    pub(crate) fn parts(&self) -> InChild {
        InChild {
            namespaces: self.namespaces.clone(),
            landlock: self.landlock.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
            seccomp: self.seccomp.clone(),
        }
    }
}

/// What the child applies, made before the fork.
pub(crate) struct InChild {
    namespaces: Option<Namespaces>,
    landlock: libc::c_int,
    seccomp: Option<BpfProgram>,
}

impl InChild {
    /// In the child, between `fork` and `exec`: the namespaces (if any), `no_new_privs`, the
    /// Landlock ruleset (if any), the seccomp filter (if any). Only async-signal-safe system
    /// calls.
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        if let Some(namespaces) = &self.namespaces {
            namespaces.enter()?;
        }
        // SAFETY: plain system calls on values prepared before the fork.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = self.landlock;
            if fd >= 0 && libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some(filter) = &self.seccomp {
            seccompiler::apply_filter(filter)
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
        }
        Ok(())
    }
}

/// `__sandbox-exec PLAN -- PROGRAM ARGS…` in a helper process the router started: make the
/// plan's rules here, apply them to this process, and become PROGRAM. Returns only on failure
/// (nothing is run unsandboxed).
pub(crate) fn exec(args: &[std::ffi::OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt as _;
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, what.to_string());
    let [plan, dashes, program, rest @ ..] = args else {
        return invalid("usage: __sandbox-exec PLAN -- PROGRAM [ARGS…]");
    };
    if dashes != "--" {
        return invalid("usage: __sandbox-exec PLAN -- PROGRAM [ARGS…]");
    }
    let Some(plan) = plan.to_str().and_then(|p| serde_json::from_str::<Plan>(p).ok()) else {
        return invalid("the sandbox plan is not valid JSON");
    };
    let prepared = plan.prepare();
    let abi = landlock_abi();
    if plan.sandbox.enabled && abi > 0 && prepared.landlock.is_none() {
        return std::io::Error::other(format!("the sandbox could not be made: {}", prepared.tier));
    }
    if let Err(e) = prepared.parts().apply() {
        return std::io::Error::other(format!("the sandbox could not be applied: {e}"));
    }
    drop(prepared);
    std::process::Command::new(program).args(rest).exec()
}
