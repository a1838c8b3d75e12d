//! The places a sandbox profile names: what is protected, where a server may write.

use std::path::{Path, PathBuf};

/// Credentials and browser profiles under the home directory, never readable by a sandboxed
/// server.
pub(crate) const CREDENTIALS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".config/gh",
    ".config/hub",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".vault-token",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
];

/// Package managers' caches under the home directory: `npx` and `uvx` write there. The first
/// two are made when missing, so a first `npx -y` or `uvx` can fill them.
const CACHES: &[&str] = &[
    ".npm",
    ".cache/uv",
    ".cache/pip",
    ".cache/pypoetry",
    ".cache/node",
    ".cache/pnpm",
    ".cache/ms-playwright",
    ".cache/deno",
    ".local/share/uv",
    ".local/share/pnpm",
    ".bun",
    ".yarn",
];

/// Temp directories: writable by every server that may write — `$TMPDIR` (else `/tmp`),
/// `/var/tmp`, `/dev/shm`. `/tmp` is one of them only when `$TMPDIR` does not point elsewhere.
pub(crate) fn temp_dirs() -> Vec<PathBuf> {
    let temp = [std::env::temp_dir(), "/var/tmp".into(), "/dev/shm".into()];
    temp.iter().filter_map(|d| d.canonicalize().ok()).collect()
}

/// The router's own state: its cache (tool catalogs, pins, spilled results) and its config
/// directory (sign-in tokens), as the router finds them.
pub(crate) fn router_state() -> Vec<PathBuf> {
    let cache = router_protocol::dirs::cache_dir();
    // The token store's directory, found as the token store finds it.
    let config = crate::auth::token_store::config_dir();
    cache.into_iter().chain(config).collect()
}

/// Where the default profile lets a server write, of those that exist: its working directory
/// (`cwd`) and the router's, temp, `/dev`, the package caches under `home` (`.npm` and
/// `.cache/uv` made when missing). A working directory
/// that is `/` or holds the home directory is not a workspace (a server started from `/` would
/// otherwise write anywhere) and is left out.
pub(crate) fn writable(cwd: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let home_real = home.and_then(|h| h.canonicalize().ok());
    let workspace = |dir: &Path| {
        let dir = dir.canonicalize().ok()?;
        let too_wide =
            dir == Path::new("/") || home_real.as_ref().is_some_and(|h| h.starts_with(&dir));
        (!too_wide).then_some(dir)
    };
    let mut out: Vec<PathBuf> = Vec::new();
    out.extend(cwd.and_then(workspace));
    out.extend(std::env::current_dir().ok().as_deref().and_then(workspace));
    out.extend(temp_dirs());
    out.push(PathBuf::from("/dev"));
    if let Some(home) = home.filter(|h| h.is_dir()) {
        for cache in &CACHES[..2] {
            let _ = std::fs::create_dir_all(home.join(cache));
        }
        out.extend(CACHES.iter().filter_map(|c| home.join(c).canonicalize().ok()));
    }
    out.sort();
    out.dedup();
    out
}

/// The directories a server's arguments name — an absolute path (or `~/…`), alone or after
/// `=` (`--root=/srv/data`) — that exist: what the user gave it to work in (a filesystem
/// server's folders), writable as its workspace is. `/` is not one.
pub(crate) fn named_dirs(args: &[String], home: Option<&Path>) -> Vec<PathBuf> {
    let path = |arg: &str| -> Option<PathBuf> {
        let value = arg.rsplit_once('=').map_or(arg, |(_, value)| value);
        let path = match (value.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ if value.starts_with('/') => PathBuf::from(value),
            _ => return None,
        };
        let dir = path.canonicalize().ok().filter(|p| p.is_dir())?;
        (dir != Path::new("/")).then_some(dir)
    };
    args.iter().filter_map(|a| path(a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folders_a_servers_arguments_name_are_its_to_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).expect("a");
        std::fs::create_dir_all(&b).expect("b");
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").expect("a file");
        let args: Vec<String> = [
            "-y".to_string(),
            "@modelcontextprotocol/server-filesystem".to_string(),
            a.display().to_string(),
            format!("--root={}", b.display()),
            file.display().to_string(),
            "/".to_string(),
            "/no/such/dir".to_string(),
            "~/x".to_string(),
        ]
        .into();
        let real = |p: &Path| p.canonicalize().expect("real");
        assert_eq!(named_dirs(&args, None), [real(&a), real(&b)]);
        std::fs::create_dir_all(dir.path().join("x")).expect("x");
        assert_eq!(
            named_dirs(&args, Some(dir.path())),
            [real(&a), real(&b), real(&dir.path().join("x"))]
        );
    }
}
