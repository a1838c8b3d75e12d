//! `docs/architecture.md` tells the truth about what exists: every crate of the workspace has a
//! section, every section names a crate that exists, and every path the document names (in
//! backticks: a file such as `manager.rs` or `src/bin/mcp-demo-server.rs`, or a folder such as
//! `handlers/`) exists, looked up in the section's crate or at the repository's top.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The backticked spans of `line`.
fn spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// Whether a span names a path: a file with a known extension, or a folder (ending in `/`).
fn is_path(span: &str) -> bool {
    let charset = span.chars().all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
    let file = [".rs", ".md", ".txt", ".cjs"].iter().any(|ext| span.ends_with(ext));
    charset && (file || (span.ends_with('/') && span.len() > 1))
}

/// Every file and folder below `dir`, relative to it.
fn walk(dir: &Path, prefix: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == "target" || name == "node_modules" || name == ".venv" || name == ".git" {
            continue;
        }
        let relative = prefix.join(&name);
        out.push(relative.clone());
        if entry.path().is_dir() {
            walk(&entry.path(), &relative, out);
        }
    }
}

/// `span` exists at the top, in the crate, in its `src/`, or as the tail of a path in the crate.
fn exists(span: &str, krate: Option<&Path>) -> bool {
    let span = span.trim_end_matches('/');
    let root = root();
    if root.join(span).exists() {
        return true;
    }
    let Some(krate) = krate else { return false };
    if krate.join(span).exists() || krate.join("src").join(span).exists() {
        return true;
    }
    let mut files = Vec::new();
    walk(krate, Path::new(""), &mut files);
    files.iter().any(|f| f.ends_with(span))
}

#[test]
fn every_path_and_crate_the_code_map_names_exists() {
    let root = root();
    let text = std::fs::read_to_string(root.join("docs/architecture.md")).expect("the code map");
    let mut krate: Option<PathBuf> = None;
    let mut sections = Vec::new();
    let mut missing = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            let name = spans(heading).first().map(|s| s.to_string()).unwrap_or_default();
            assert!(root.join(&name).join("Cargo.toml").exists(), "no crate at {name}");
            sections.push(name.clone());
            krate = Some(root.join(name));
            continue;
        }
        for span in spans(line).into_iter().filter(|s| is_path(s)) {
            if !exists(span, krate.as_deref()) {
                missing.push(format!("{span} (in the section of {:?})", krate.as_deref()));
            }
        }
    }
    assert_eq!(missing, Vec::<String>::new(), "named in docs/architecture.md but missing");
    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .expect("crates")
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| format!("crates/{}", e.file_name().to_string_lossy()))
        .collect();
    crates.sort();
    sections.sort();
    assert_eq!(sections, crates, "one section per crate");
}

#[test]
fn the_check_notices_a_missing_path() {
    let krate = root().join("crates/tool-router");
    assert!(exists("router.rs", Some(&krate)));
    assert!(exists("handlers/", Some(&krate)));
    assert!(exists("docs/architecture.md", Some(&krate)));
    assert!(!exists("no_such_module.rs", Some(&krate)));
    assert!(!exists("manager.rs", Some(&krate)), "a file of another crate is not found here");
    assert!(is_path("src/bin/mcp-demo-server.rs") && is_path("tests/vectors/"));
    assert!(!is_path("resources/read failed: …") && !is_path("ServerConfig"));
}
