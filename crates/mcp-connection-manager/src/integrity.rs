//! Integrity at every start: a server installed by `mcp-router add` runs from a package whose
//! digest was recorded then (`ServerConfig::integrity`); before each start (and restart) the
//! package is read again, and a package that no longer has that digest — a file changed, added,
//! removed or made executable — refuses the start before anything of it runs. A package read
//! whole once is read again only when its files' metadata moved (see [`fingerprint`]): the
//! shared router's per-session servers start from it again and again.

use std::collections::HashMap;
use std::io::Read as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use router_protocol::PackageIntegrity;
use sha2::{Digest as _, Sha256};

/// The digest of the package at `path` (lower-case hex SHA-256): of a file, its bytes; of a
/// folder, every entry under it in path order — each folder's path, each link's path and
/// target, each file's path, whether it is executable and its bytes' SHA-256. Links are not
/// followed.
pub fn package_digest(path: &Path) -> std::io::Result<String> {
    let meta = std::fs::symlink_metadata(path)?;
    let digest = if meta.is_dir() {
        let mut entries = Vec::new();
        walk(path, Path::new(""), &mut entries)?;
        lines_digest(entries)
    } else {
        file_digest(path)?
    };
    Ok(hex(&digest))
}

/// Each entry under `dir` (its path relative to the package as `relative`) as one line.
fn walk(dir: &Path, relative: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let (path, name) = (entry.path(), relative.join(entry.file_name()));
        let shown = name.to_string_lossy();
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            let target = std::fs::read_link(&path)?;
            out.push(format!("l {shown}\0{}", target.to_string_lossy()));
        } else if kind.is_dir() {
            out.push(format!("d {shown}"));
            walk(&path, &name, out)?;
        } else {
            let executable = entry.metadata()?.permissions().mode() & 0o111 != 0;
            out.push(format!("f {shown}\0{executable}\0{}", hex(&file_digest(&path)?)));
        }
    }
    Ok(())
}

fn file_digest(path: &Path) -> std::io::Result<sha2::digest::Output<Sha256>> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            return Ok(hasher.finalize());
        }
        hasher.update(&buffer[..n]);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What every entry under `path` is, as the file system keeps it: its path, kind, device and
/// inode, size, mode, and modification and change times (the change time is the kernel's, set
/// on any write, chmod, link or rename and not settable by a process). Two equal fingerprints
/// mean the same files with the same bytes, without reading them.
fn fingerprint(path: &Path) -> std::io::Result<String> {
    fn visit(path: &Path, relative: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
        let meta = std::fs::symlink_metadata(path)?;
        out.push(format!(
            "{}\0{:?}\0{} {} {} {:o} {}.{} {}.{}",
            relative.to_string_lossy(),
            meta.file_type(),
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mode(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec()
        ));
        if meta.is_dir() {
            for entry in std::fs::read_dir(path)? {
                let entry = entry?;
                visit(&entry.path(), &relative.join(entry.file_name()), out)?;
            }
        }
        Ok(())
    }
    let mut entries = Vec::new();
    visit(path, Path::new(""), &mut entries)?;
    Ok(hex(&lines_digest(entries)))
}

/// The SHA-256 of `lines` in sorted order, one per line: a tree's digest whatever order the
/// file system lists it in.
fn lines_digest(mut lines: Vec<String>) -> sha2::digest::Output<Sha256> {
    lines.sort();
    let mut all = Sha256::new();
    for line in lines {
        all.update(line.as_bytes());
        all.update(b"\n");
    }
    all.finalize()
}

/// Packages read whole in this process: path → (fingerprint then, digest).
static READ: Mutex<Option<HashMap<PathBuf, (String, String)>>> = Mutex::new(None);

/// The digest of the package at `path`: read whole, unless its fingerprint is the one it had
/// when this process last read it whole.
fn current_digest(path: &Path) -> std::io::Result<String> {
    let before = fingerprint(path)?;
    let read = |cache: &mut Option<HashMap<PathBuf, (String, String)>>| {
        cache
            .get_or_insert_with(HashMap::new)
            .get(path)
            .filter(|(seen, _)| *seen == before)
            .map(|(_, d)| d.clone())
    };
    // A poisoned lock is taken as it is: the map holds whole entries or none.
    if let Some(digest) = read(&mut READ.lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(digest);
    }
    let digest = package_digest(path)?;
    // Kept only when nothing moved while it was read.
    if fingerprint(path)? == before {
        let mut cache = READ.lock().unwrap_or_else(|e| e.into_inner());
        cache.get_or_insert_with(HashMap::new).insert(path.to_path_buf(), (before, digest.clone()));
    }
    Ok(digest)
}

/// `server`'s package checked against what was recorded (read off the runtime's threads); the
/// reason it is refused, as the failure says it.
pub(crate) async fn check(server: &str, integrity: &PackageIntegrity) -> Result<(), String> {
    let path = integrity.path.clone();
    let found = tokio::task::spawn_blocking(move || current_digest(&path)).await;
    let shown = integrity.path.display();
    let refused = "refused before anything of it ran";
    let again = format!(
        "install it again with `mcp-router update {server}` (a new consent) or `mcp-router remove {server}`"
    );
    match found {
        Ok(Ok(found)) if found == integrity.sha256 => Ok(()),
        Ok(Ok(found)) => Err(format!(
            "its package {shown} is not what was installed (SHA-256 {} recorded, {} now): {refused}; {again}",
            short(&integrity.sha256),
            short(&found)
        )),
        Ok(Err(e)) => Err(format!("its package {shown} cannot be read ({e}): {refused}; {again}")),
        Err(e) => Err(format!("its package {shown} could not be checked ({e}): {refused}")),
    }
}

fn short(digest: &str) -> &str {
    digest.get(..16).unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("lib/empty")).expect("dirs");
        std::fs::write(dir.path().join("server.js"), "console.log('hi')").expect("file");
        std::fs::write(dir.path().join("lib/util.js"), "exports.x = 1").expect("file");
        std::os::unix::fs::symlink("../server.js", dir.path().join("lib/link")).expect("link");
        dir
    }

    /// One change made to a package.
    type Change = dyn Fn(&Path);

    #[test]
    fn any_change_to_a_package_changes_its_digest_and_nothing_else_does() {
        let dir = package();
        let first = package_digest(dir.path()).expect("digest");
        assert_eq!(first.len(), 64);
        assert_eq!(package_digest(dir.path()).expect("again"), first, "the same files");
        assert_eq!(package_digest(package().path()).expect("a copy"), first, "wherever it is");
        let changes: [(&str, &Change); 6] = [
            ("a byte", &|p| std::fs::write(p.join("lib/util.js"), "exports.x = 2").expect("w")),
            ("a file added", &|p| std::fs::write(p.join("lib/evil.js"), "").expect("w")),
            ("a file removed", &|p| std::fs::remove_file(p.join("lib/util.js")).expect("rm")),
            ("a folder added", &|p| std::fs::create_dir(p.join("more")).expect("mkdir")),
            ("a link's target", &|p| {
                std::fs::remove_file(p.join("lib/link")).expect("rm");
                std::os::unix::fs::symlink("/etc/passwd", p.join("lib/link")).expect("link");
            }),
            ("made executable", &|p| {
                let file = p.join("server.js");
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755))
                    .expect("chmod");
            }),
        ];
        for (what, change) in changes {
            let dir = package();
            change(dir.path());
            assert_ne!(package_digest(dir.path()).expect("digest"), first, "{what}");
        }
    }

    #[test]
    fn a_package_read_before_is_read_again_when_anything_of_it_moved() {
        let dir = package();
        let first = current_digest(dir.path()).expect("read whole");
        assert_eq!(current_digest(dir.path()).expect("from what was read"), first);
        // Same length, same modification time: the change time still moves. (The kernel's file
        // times are coarse, a few milliseconds: the change must not fall in the tick in which
        // the file was made, as no later tampering with an installed package does.)
        std::thread::sleep(std::time::Duration::from_millis(20));
        let file = dir.path().join("lib/util.js");
        let mtime = std::fs::metadata(&file).expect("meta").modified().expect("mtime");
        std::fs::write(&file, "exports.x = 9").expect("tamper");
        std::fs::File::options()
            .write(true)
            .open(&file)
            .expect("open")
            .set_modified(mtime)
            .expect("mtime");
        let after = current_digest(dir.path()).expect("read again");
        assert_ne!(after, first, "the change is seen");
        assert_eq!(after, package_digest(dir.path()).expect("whole"));
    }

    #[tokio::test]
    async fn a_changed_package_is_refused_with_what_to_do() {
        let dir = package();
        let sha256 = package_digest(dir.path()).expect("digest");
        let integrity = PackageIntegrity { path: dir.path().to_path_buf(), sha256 };
        assert_eq!(check("notes", &integrity).await, Ok(()));
        std::fs::write(dir.path().join("server.js"), "steal()").expect("tamper");
        let why = check("notes", &integrity).await.expect_err("refused");
        assert!(why.contains("is not what was installed"), "{why}");
        assert!(why.contains("refused before anything of it ran"), "{why}");
        assert!(why.contains("`mcp-router update notes`"), "{why}");
        let gone = PackageIntegrity { path: dir.path().join("nothing"), ..integrity };
        let why = check("notes", &gone).await.expect_err("refused");
        assert!(why.contains("cannot be read"), "{why}");
    }
}
