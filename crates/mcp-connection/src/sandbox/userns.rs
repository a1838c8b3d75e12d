//! The strongest tier, where the kernel lets an unprivileged process make namespaces: before
//! Landlock, the server is put in a user and mount namespace of its own (and, with the network
//! off, a network namespace with nothing but a loopback that is down), and every protected
//! folder is covered by an empty read-only tmpfs, so it is not there at all for the server (a
//! protected file keeps Landlock's refusal). The user and group are mapped to themselves, so
//! files keep their owners. Whether the kernel allows it is tried once, in a forked child
//! (container runtimes refuse `unshare(CLONE_NEWUSER)` with a seccomp filter; some distributions
//! refuse the mounts through AppArmor): where it is refused, the tier is Landlock and seccomp
//! alone. Everything in the child between fork and exec is a plain system call on bytes made
//! here.
#![allow(unsafe_code)] // the raw system calls between fork and exec have no safe wrappers.

use std::ffi::CString;
use std::path::PathBuf;

/// The namespaces a server is put in, prepared in the router.
#[derive(Debug, Clone)]
pub(crate) struct Namespaces {
    flags: libc::c_int,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// The folders covered by an empty tmpfs.
    hide: Vec<CString>,
    /// How many of `hide`, from the start, must be covered (only the namespaces keep them from
    /// the server); a mount on one of the others may fail (Landlock refuses it anyway).
    required: usize,
}

const SETGROUPS: &std::ffi::CStr = c"/proc/self/setgroups";
const UID_MAP: &std::ffi::CStr = c"/proc/self/uid_map";
const GID_MAP: &std::ffi::CStr = c"/proc/self/gid_map";
const TMPFS: &std::ffi::CStr = c"tmpfs";
const HIDDEN: &std::ffi::CStr = c"size=4k,mode=000";
const ROOT: &std::ffi::CStr = c"/";

/// Whether namespaces can be made here (with a network namespace when `network_off`), tried
/// once each way.
pub(crate) fn available(network_off: bool) -> bool {
    static WITH_NETWORK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    static WITHOUT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let cell = if network_off { &WITHOUT } else { &WITH_NETWORK };
    *cell.get_or_init(|| {
        let trial = Namespaces::new(&[], &[], network_off);
        let ok = trial.try_in_a_child();
        if !ok {
            tracing::debug!(network_off, "no user namespace here: the sandbox is Landlock's alone");
        }
        ok
    })
}

impl Namespaces {
    /// The namespaces that hide the folders among `denied` (which Landlock refuses too) and
    /// `required` (which only they keep from the server: the router's state in temp); files
    /// keep Landlock's refusal. A network namespace too when `network_off`.
    pub(crate) fn new(denied: &[PathBuf], required: &[PathBuf], network_off: bool) -> Self {
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
        if network_off {
            flags |= libc::CLONE_NEWNET;
        }
        // SAFETY: getuid and getgid have no preconditions and cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        // A folder under another one hidden is hidden with it (and could not be mounted on
        // once its parent is covered).
        let dirs: Vec<&PathBuf> = denied.iter().chain(required).filter(|p| p.is_dir()).collect();
        let outermost = |p: &&&PathBuf| !dirs.iter().any(|d| *d != **p && p.starts_with(d));
        let mut chosen: Vec<&PathBuf> = dirs.iter().copied().filter(|p| outermost(&p)).collect();
        chosen.dedup();
        // Those that cover a required folder first.
        let needed = |p: &&PathBuf| required.iter().any(|r| r.starts_with(p));
        chosen.sort_by_key(|p| !needed(p));
        let required = chosen.iter().filter(|p| needed(p)).count();
        let cstring = |p: &&PathBuf| CString::new(p.as_os_str().as_encoded_bytes()).ok();
        let hide: Vec<CString> = chosen.iter().filter_map(cstring).collect();
        Self {
            flags,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            required: required.min(hide.len()),
            hide,
        }
    }

    /// In the child, between `fork` and `exec` (or in the helper before it becomes the server;
    /// one thread either way): into the namespaces, the ids mapped, the folders hidden. Only
    /// async-signal-safe system calls.
    pub(crate) fn enter(&self) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        // SAFETY: system calls on values made before the fork, which outlive them.
        unsafe {
            if libc::unshare(self.flags) != 0 {
                return fail();
            }
            // Without this, an unprivileged process may not write its gid map (ENOENT on
            // kernels before 3.19, where the map needs no such step).
            if let Err(e) = write_file(SETGROUPS, b"deny")
                && e.raw_os_error() != Some(libc::ENOENT)
            {
                return Err(e);
            }
            write_file(UID_MAP, &self.uid_map)?;
            write_file(GID_MAP, &self.gid_map)?;
            // Nothing mounted here reaches the router's namespace.
            let private = libc::MS_REC | libc::MS_PRIVATE;
            if libc::mount(
                std::ptr::null(),
                ROOT.as_ptr(),
                std::ptr::null(),
                private,
                std::ptr::null(),
            ) != 0
            {
                return fail();
            }
            let hidden = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            for (i, dir) in self.hide.iter().enumerate() {
                let options = HIDDEN.as_ptr().cast::<libc::c_void>();
                let covered =
                    libc::mount(TMPFS.as_ptr(), dir.as_ptr(), TMPFS.as_ptr(), hidden, options);
                // A folder Landlock refuses too stays refused if it cannot be covered (an
                // automount, a FUSE mount); one only this keeps away fails the start.
                if covered != 0 && i < self.required {
                    return fail();
                }
            }
        }
        Ok(())
    }

    /// Whether `enter` works here: tried in a forked child that covers `/` with a tmpfs (what
    /// hiding a folder takes) and exits.
    fn try_in_a_child(&self) -> bool {
        let trial = Self { hide: vec![ROOT.to_owned()], required: 1, ..self.clone() };
        // SAFETY: the child runs only async-signal-safe system calls, then `_exit`.
        unsafe {
            let pid = libc::fork();
            if pid < 0 {
                return false;
            }
            if pid == 0 {
                let code = if trial.enter().is_ok() { 0 } else { 1 };
                libc::_exit(code);
            }
            let mut status = 0;
            while libc::waitpid(pid, &mut status, 0) < 0 {
                if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    return false;
                }
            }
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
    }
}

/// Write `bytes` to the file at `path` in one `write` (what the `/proc` maps require).
///
/// # Safety
/// Async-signal-safe: `open`, `write`, `close` only.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: `path` is a C string and `bytes` a live buffer of its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let error = std::io::Error::last_os_error();
        libc::close(fd);
        if usize::try_from(written).ok() != Some(bytes.len()) {
            return Err(error);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the outermost of nested protected folders is covered (the inner ones are hidden
    /// with it; a mount on them would fail once the outer one is covered); files are left to
    /// Landlock.
    #[test]
    fn nested_folders_are_covered_once() {
        let dir = tempfile::tempdir().expect("a folder");
        let state = dir.path().join("state");
        for sub in ["pins", "tools"] {
            std::fs::create_dir_all(state.join(sub)).expect("dirs");
        }
        std::fs::write(dir.path().join("file"), "x").expect("a file");
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).expect("a dir");
        let denied = [
            state.join("pins"),
            state.clone(),
            state.join("tools"),
            dir.path().join("file"),
            other.clone(),
        ];
        let spaces = Namespaces::new(&denied, &[], false);
        let hidden: Vec<String> =
            spaces.hide.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        let expected = [state.display().to_string(), other.display().to_string()];
        assert_eq!(hidden, expected);
        assert_eq!(spaces.flags & libc::CLONE_NEWNET, 0);
        assert_ne!(Namespaces::new(&[], &[], true).flags & libc::CLONE_NEWNET, 0);
        assert_eq!(spaces.required, 0);
        // The folder only the namespaces keep away comes first and must be covered.
        let spaces = Namespaces::new(std::slice::from_ref(&other), &[state.join("pins")], false);
        let hidden: Vec<String> =
            spaces.hide.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        assert_eq!(hidden, [state.join("pins").display().to_string(), other.display().to_string()]);
        assert_eq!(spaces.required, 1);
    }
}
