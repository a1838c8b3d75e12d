//! The ledger across runs: `ledger.jsonl` in the router's state folder, one run a line
//! (appended when a router shuts down), bounded: past [`MAX_BYTES`] it becomes
//! `ledger.1.jsonl` (the older one dropped), so both together stay under twice that. A file
//! with a line that cannot be read is set aside (`….corrupt-SECONDS`) with a warning and its
//! readable runs written back: never fatal, nothing readable lost.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use router_protocol::LedgerRun;

/// The ledger file's name in its folder.
pub const FILE: &str = "ledger.jsonl";
/// The one older file kept.
pub const OLDER: &str = "ledger.1.jsonl";
/// The size past which the file is rotated.
pub const MAX_BYTES: u64 = 1 << 20;

/// Append `run` to the ledger in `dir` (made 0700 if missing), rotating first when the file
/// would pass [`MAX_BYTES`].
pub fn append(dir: &Path, run: &LedgerRun) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut line = serde_json::to_string(run).map_err(std::io::Error::other)?;
    line.push('\n');
    let path = dir.join(FILE);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if size > 0 && size + line.len() as u64 > MAX_BYTES {
        std::fs::rename(&path, dir.join(OLDER))?;
    }
    let mut file = OpenOptions::new().create(true).append(true).mode(0o600).open(&path)?;
    // One write of the whole line: routers ending at once do not interleave their lines.
    file.write_all(line.as_bytes())
}

/// `ledger`'s run added to the ledger in `dir` (nothing when it recorded nothing); blocks
/// while the run's token counts finish (call it off an async runtime's threads).
pub fn keep(ledger: &super::Ledger, dir: &Path) -> std::io::Result<()> {
    if ledger.is_empty() {
        return Ok(());
    }
    append(dir, &ledger.run())
}

/// The runs read back, oldest first, and what could not be read.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The runs that ended at or after the `since` asked for.
    pub runs: Vec<LedgerRun>,
    /// A sentence per file set aside.
    pub warnings: Vec<String>,
}

/// The runs of the ledger in `dir` that ended at or after `since` (seconds since the Unix
/// epoch). A missing ledger is no run.
pub fn load(dir: &Path, since: Option<u64>) -> Loaded {
    let mut loaded = Loaded::default();
    for name in [OLDER, FILE] {
        let path = dir.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let mut runs = Vec::new();
        let mut bad = None;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            match serde_json::from_str::<LedgerRun>(line) {
                Ok(run) => runs.push(run),
                Err(e) => {
                    bad.get_or_insert((i + 1, e.to_string()));
                }
            }
        }
        if let Some((line, error)) = bad {
            loaded.warnings.push(set_aside(&path, &runs, line, &error));
        }
        loaded.runs.extend(runs.into_iter().filter(|r| since.is_none_or(|s| r.at >= s)));
    }
    loaded
}

/// Moves the unreadable `path` aside and writes its readable `runs` back; the warning.
fn set_aside(path: &Path, runs: &[LedgerRun], line: usize, error: &str) -> String {
    let aside = PathBuf::from(format!("{}.corrupt-{}", path.display(), super::now_unix()));
    let moved = std::fs::rename(path, &aside);
    let text: String = runs
        .iter()
        .filter_map(|run| serde_json::to_string(run).ok())
        .map(|line| line + "\n")
        .collect();
    let written = moved.is_ok() && std::fs::write(path, text).is_ok();
    match (moved, written) {
        (Ok(()), true) => format!(
            "the ledger file {} could not be read (line {line}: {error}); it was set aside as {} and its {} readable runs kept",
            path.display(),
            aside.display(),
            runs.len()
        ),
        _ => format!(
            "the ledger file {} could not be read (line {line}: {error}) nor set aside; its {} readable runs are counted",
            path.display(),
            runs.len()
        ),
    }
}
