//! Integrity at every start: a server installed by `mcp-router add` runs from a package whose
//! digest was recorded then (`ServerConfig::integrity`); before each start (and restart) the
//! package is read again, and a package that no longer has that digest — a file changed, added,
//! removed or made executable — refuses the start before anything of it runs.

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

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
        entries.sort();
        let mut tree = Sha256::new();
        for entry in entries {
            tree.update(entry.as_bytes());
            tree.update(b"\n");
        }
        tree.finalize()
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

/// `server`'s package checked against what was recorded (read off the runtime's threads); the
/// reason it is refused, as the failure says it.
pub(crate) async fn check(server: &str, integrity: &PackageIntegrity) -> Result<(), String> {
    let path = integrity.path.clone();
    let found = tokio::task::spawn_blocking(move || package_digest(&path)).await;
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
