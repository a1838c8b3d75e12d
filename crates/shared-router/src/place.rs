//! Where a shared router lives: a directory only this user may enter, and in it, per config,
//! the socket, the locks, the TCP secret and the log.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use sha2::Digest as _;

/// The files of one shared router: one per user and config.
#[derive(Debug, Clone)]
pub struct Place {
    dir: PathBuf,
    key: String,
}

impl Place {
    /// The place for `config` (its canonical path; `None`: the bundled demo servers) in the
    /// user's runtime directory (`$XDG_RUNTIME_DIR/mcp-router`, else `/tmp/mcp-router-UID`),
    /// created 0700 and refused when another user owns it or others may enter it.
    pub fn for_config(config: Option<&Path>) -> anyhow::Result<Self> {
        let base = match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
            Some(runtime) => PathBuf::from(runtime).join("mcp-router"),
            None => std::env::temp_dir().join(format!("mcp-router-{}", current_uid())),
        };
        Self::in_dir(base, config)
    }

    /// The place for `config` under `dir` (created 0700 and checked as above).
    pub fn in_dir(dir: PathBuf, config: Option<&Path>) -> anyhow::Result<Self> {
        private_dir(&dir)?;
        let key = match config {
            None => "demo".to_string(),
            Some(path) => {
                let canonical = std::fs::canonicalize(path)
                    .with_context(|| format!("cannot read the config file {}", path.display()))?;
                let digest = sha2::Sha256::digest(canonical.as_os_str().as_encoded_bytes());
                let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
                format!("config-{hex}")
            }
        };
        Ok(Self { dir, key })
    }

    /// The Unix socket sessions connect to.
    pub fn socket(&self) -> PathBuf {
        self.file("sock")
    }

    /// The socket `mcp-router status` asks.
    pub fn status_socket(&self) -> PathBuf {
        self.file("status.sock")
    }

    /// The socket the router's events stream from (JSON lines, what `mcp-router watch`
    /// reads).
    pub fn events_socket(&self) -> PathBuf {
        self.file("events.sock")
    }

    /// The lock a running router holds for its whole life (one router per place).
    pub fn serve_lock(&self) -> PathBuf {
        self.file("serve.lock")
    }

    /// The lock `connect`s take while one of them starts the router (two racing start one).
    pub fn start_lock(&self) -> PathBuf {
        self.file("start.lock")
    }

    /// The bearer secret of the TCP listener (0600).
    pub fn secret(&self) -> PathBuf {
        self.file("secret")
    }

    /// Where the router writes its address and pid when it listens on TCP.
    pub fn address(&self) -> PathBuf {
        self.file("http")
    }

    /// The log of a router `connect` started.
    pub fn log(&self) -> PathBuf {
        self.file("log")
    }

    fn file(&self, suffix: &str) -> PathBuf {
        self.dir.join(format!("{}.{suffix}", self.key))
    }
}

/// This process's user id.
pub(crate) fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    #[allow(unsafe_code)]
    unsafe {
        libc::getuid()
    }
}

/// `dir`, created 0700 if missing; refused when it is not a directory this user owns that
/// nobody else may enter.
fn private_dir(dir: &Path) -> anyhow::Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let meta =
        std::fs::symlink_metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != current_uid() {
        bail!(
            "{} is not a directory of this user; the shared router will not use it",
            dir.display()
        );
    }
    if meta.mode() & 0o077 != 0 {
        bail!(
            "{} may be entered by other users (mode {:o}); the shared router needs it 0700",
            dir.display(),
            meta.mode() & 0o777
        );
    }
    Ok(())
}

/// An exclusive `flock` on `path` (created 0600), held until the file is dropped. `wait`:
/// block until it is free; otherwise `None` when another process holds it. A lock taken on a
/// file its holder removed as it let go ([`unlock_and_remove`]) guards nothing: the path is
/// opened and locked again.
pub(crate) fn lock(path: &Path, wait: bool) -> anyhow::Result<Option<File>> {
    loop {
        let Some(file) = lock_once(path, wait)? else { return Ok(None) };
        let same = |held: &File| -> Option<bool> {
            let (now, ours) = (std::fs::metadata(path).ok()?, held.metadata().ok()?);
            Some(now.ino() == ours.ino() && now.dev() == ours.dev())
        };
        if same(&file) == Some(true) {
            return Ok(Some(file));
        }
    }
}

/// How long a router that finds the serve lock held, and no router taking sessions on the
/// socket, waits for the lock: one killed a moment ago still holds it while the kernel lets go
/// of its files (its socket may already refuse), and one starting holds it before it listens.
const LET_GO: std::time::Duration = std::time::Duration::from_secs(5);

/// The serve lock of `place`, for a router about to serve it: `None` when a router runs there
/// — one that takes sessions, or one that holds the lock past [`LET_GO`].
pub(crate) async fn take_serve_lock(place: &Place) -> anyhow::Result<Option<File>> {
    let deadline = tokio::time::Instant::now() + LET_GO;
    loop {
        if let Some(held) = lock(&place.serve_lock(), false)? {
            return Ok(Some(held));
        }
        let serving = std::os::unix::net::UnixStream::connect(place.socket()).is_ok();
        if serving || tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Removes the lock file `path` while `held` still holds it, then lets go: nothing is left
/// behind, and a process waiting on the old file locks again ([`lock`]).
pub(crate) fn unlock_and_remove(path: &Path, held: File) {
    let _ = std::fs::remove_file(path);
    drop(held);
}

fn lock_once(path: &Path, wait: bool) -> anyhow::Result<Option<File>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let flags = if wait { libc::LOCK_EX } else { libc::LOCK_EX | libc::LOCK_NB };
    use std::os::fd::AsRawFd as _;
    loop {
        // SAFETY: the descriptor is open for the call's duration.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::flock(file.as_raw_fd(), flags) };
        if rc == 0 {
            return Ok(Some(file));
        }
        let error = std::io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) if !wait => return Ok(None),
            _ => return Err(error).with_context(|| format!("cannot lock {}", path.display())),
        }
    }
}

/// A new random secret (32 bytes from the kernel, hex), written to `path` readable by this
/// user only.
pub(crate) fn new_secret(path: &Path) -> anyhow::Result<String> {
    use std::io::{Read as _, Write as _};
    let mut bytes = [0u8; 32];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for the shared router's secret")?;
    let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let _ = std::fs::remove_file(path);
    let mut file = OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(secret.as_bytes())?;
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_others_may_enter_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = dir.path().join("open");
        std::fs::DirBuilder::new().mode(0o755).create(&open).expect("mkdir");
        let error = Place::in_dir(open, None).expect_err("0755 is refused").to_string();
        assert!(error.contains("needs it 0700"), "{error}");
        let fresh = dir.path().join("fresh");
        let place = Place::in_dir(fresh.clone(), None).expect("created 0700");
        assert_eq!(std::fs::metadata(&fresh).expect("meta").mode() & 0o777, 0o700);
        assert_eq!(place.socket(), fresh.join("demo.sock"));
    }

    #[test]
    fn one_config_one_place_and_a_lock_held_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, "").expect("write");
        let runtime = dir.path().join("run");
        let a = Place::in_dir(runtime.clone(), Some(&config)).expect("place");
        let relative = dir.path().join(".").join("config.toml");
        let b = Place::in_dir(runtime, Some(&relative)).expect("place");
        assert_eq!(a.socket(), b.socket(), "the same file is the same router");
        let held = lock(&a.serve_lock(), false).expect("lock").expect("free");
        assert!(lock(&b.serve_lock(), false).expect("lock").is_none(), "held elsewhere");
        drop(held);
        assert!(lock(&b.serve_lock(), false).expect("lock").is_some(), "free again");
    }

    /// A lock let go with its file removed leaves nothing, and a waiter that opened the old
    /// file locks the new one: never two holders.
    #[test]
    fn a_lock_removed_as_it_is_let_go_is_taken_anew_by_its_waiter() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("serve.lock");
        let held = lock(&path, false).expect("lock").expect("free");
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || lock(&path, true).expect("lock").expect("taken"))
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        unlock_and_remove(&path, held);
        let taken = waiter.join().expect("waiter");
        let (now, ours) =
            (std::fs::metadata(&path).expect("the file"), taken.metadata().expect("meta"));
        assert_eq!(now.ino(), ours.ino(), "the waiter holds the file the path names");
        assert!(lock(&path, false).expect("lock").is_none(), "held once");
        unlock_and_remove(&path, taken);
        assert!(!path.exists(), "nothing left");
    }

    #[test]
    fn the_secret_is_for_this_user_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("secret");
        let secret = new_secret(&path).expect("secret");
        assert_eq!(secret.len(), 64);
        assert_eq!(std::fs::metadata(&path).expect("meta").mode() & 0o777, 0o600);
        assert_ne!(new_secret(&path).expect("again"), secret, "a new one each start");
    }
}
