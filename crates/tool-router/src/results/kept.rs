//! Tool results cut to the result budget, kept whole so the model can page through the rest
//! with `read_mcp_resource` on the reserved server `mcp-router`
//! (`mcp-router://results/{id}/content/{i}`, `…/structuredContent`). Kept in memory (sharing
//! the server's result with the call's end event, no copy) up to `kept_results_memory_bytes`,
//! beyond that in a private temporary directory (0700, files 0600) removed when the router is
//! dropped. The newest `kept_results_max` results and `kept_results_bytes` in all are kept,
//! the oldest go first; a read of one that went says it expired. Kept results are never listed
//! and never sent to any server.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::CallToolResult;

use crate::results::content::Paging;
pub(crate) use crate::results::parts::PartSource;
use crate::results::parts::{Source, memory_source, results_dir};

/// The server name under which the router serves kept results.
pub const RESULTS_SERVER: &str = "mcp-router";
/// Where kept results' URIs start.
pub const RESULTS_PREFIX: &str = "mcp-router://results/";

/// How many kept results, and how many bytes of them, the router holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptLimits {
    /// `kept_results_max`: most results kept (default 100; 0 keeps none).
    pub max_results: usize,
    /// `kept_results_bytes`: most bytes kept in all (default 1 GiB); a larger result is not kept.
    pub max_bytes: usize,
    /// `kept_results_memory_bytes`: most bytes kept in memory (default 64 MiB); older results
    /// beyond it move to the temporary directory.
    pub memory_bytes: usize,
}

impl Default for KeptLimits {
    fn default() -> Self {
        Self { max_results: 100, max_bytes: 1 << 30, memory_bytes: 64 << 20 }
    }
}

/// A part of a result the model did not get whole.
#[derive(Debug, Clone)]
pub(crate) struct PartSpec {
    pub(crate) source: PartSource,
    /// Text parts are paged by offset; blob parts (base64) are shaped as reads shape blobs.
    pub(crate) text: bool,
    pub(crate) mime: String,
    /// Bytes of its text (or of its base64).
    pub(crate) bytes: usize,
}

/// The URI of part `source` of the kept result `base`.
pub(crate) fn part_uri(base: &str, source: PartSource) -> String {
    format!("{base}/{}", source.name())
}

/// What a read of a kept part gives.
pub(crate) enum KeptRead {
    /// A page of a text part.
    Text { mime: String, text: String, paging: Option<Paging> },
    /// A whole blob part, as the server sent it (base64).
    Blob { mime: String, blob: String },
}

/// The kept results of one router.
pub struct KeptResults {
    limits: KeptLimits,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Oldest first.
    entries: VecDeque<Entry>,
    /// Ids handed out (kept, going, or gone), so a reused call id gets a new one.
    used: HashSet<String>,
    /// Why an id is not (or no longer) kept.
    gone: HashMap<String, String>,
    memory: usize,
    total: usize,
    dir: Option<PathBuf>,
    next_file: u64,
    /// Results being written to the directory (off the call's path), and their bytes.
    spilling: HashSet<String>,
    spilling_bytes: usize,
    writers: Vec<std::thread::JoinHandle<()>>,
}

struct Entry {
    id: String,
    origin: String,
    parts: Vec<PartSpec>,
    bytes: usize,
    body: Body,
}

enum Body {
    /// The server's result, shared; texts decoded or serialized on first read.
    Memory { result: Arc<CallToolResult>, texts: HashMap<PartSource, Arc<str>> },
    /// One file per part, in `parts` order.
    Disk(Vec<PathBuf>),
}

impl KeptResults {
    /// An empty store.
    pub fn new(limits: KeptLimits) -> Self {
        Self { limits, state: Arc::new(Mutex::new(State::default())) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether results are never kept (`kept_results_max = 0`).
    pub(crate) fn is_off(&self) -> bool {
        self.limits.max_results == 0
    }

    /// Why a result of `bytes` would not be kept, or `None` when it would.
    pub(crate) fn refusal(&self, bytes: usize) -> Option<String> {
        (bytes > self.limits.max_bytes).then(|| {
            format!(
                "the result ({bytes} bytes) is larger than kept_results_bytes ({})",
                self.limits.max_bytes
            )
        })
    }

    /// A new id (and base URI) for a result of call `call_id`: the call id, percent-encoded,
    /// with `~2`, `~3`… when a call id comes back.
    pub(crate) fn reserve(&self, call_id: &str) -> String {
        let encoded = encode(call_id);
        let mut state = self.state();
        let mut id = encoded.clone();
        let mut n = 1;
        while state.used.contains(&id) {
            n += 1;
            id = format!("{encoded}~{n}");
        }
        state.used.insert(id.clone());
        format!("{RESULTS_PREFIX}{id}")
    }

    /// Keep `parts` of `result` under `base` (from [`KeptResults::reserve`]); `bytes` is the
    /// result's measured size. Older results go to disk or expire to make room.
    pub(crate) fn keep(
        &self,
        base: &str,
        origin: String,
        result: Arc<CallToolResult>,
        parts: Vec<PartSpec>,
        bytes: usize,
    ) {
        let id = base.trim_start_matches(RESULTS_PREFIX).to_string();
        let body = Body::Memory { result, texts: HashMap::new() };
        let mut state = self.state();
        state.memory += bytes;
        state.total += bytes;
        state.entries.push_back(Entry { id, origin, parts, bytes, body });
        self.make_room(&mut state);
    }

    /// Expire the oldest beyond the count and byte caps; move the oldest in memory to disk
    /// beyond the memory cap.
    fn make_room(&self, state: &mut State) {
        while state.entries.len() > self.limits.max_results
            || (state.total > self.limits.max_bytes && state.entries.len() > 1)
        {
            let Some(old) = state.entries.pop_front() else { break };
            state.total -= old.bytes;
            if let Body::Disk(files) = &old.body {
                files.iter().for_each(|f| drop(fs::remove_file(f)));
            } else {
                state.memory -= old.bytes;
            }
            let why = format!(
                "it expired: the router keeps the newest {} results and {} bytes in all; call the tool again",
                self.limits.max_results, self.limits.max_bytes
            );
            state.gone.insert(old.id, why);
        }
        self.spill_oldest(state);
    }

    /// Beyond the memory cap, write the oldest results in memory to the directory: on a thread
    /// of its own, so the call that went over the cap does not wait for the disk. Until a
    /// result is written it is read from memory.
    fn spill_oldest(&self, state: &mut State) {
        let mut jobs = Vec::new();
        for i in 0..state.entries.len() {
            if state.memory.saturating_sub(state.spilling_bytes) <= self.limits.memory_bytes {
                break;
            }
            let entry = &state.entries[i];
            let Body::Memory { result, texts } = &entry.body else { continue };
            if state.spilling.contains(&entry.id) {
                continue;
            }
            let job = SpillJob {
                id: entry.id.clone(),
                result: result.clone(),
                texts: texts.clone(),
                parts: entry.parts.clone(),
                bytes: entry.bytes,
                file: state.next_file,
            };
            let Ok(dir) = results_dir(&mut state.dir) else { return };
            state.spilling.insert(job.id.clone());
            state.spilling_bytes += job.bytes;
            state.next_file += 1;
            jobs.push((dir, job));
        }
        if jobs.is_empty() {
            return;
        }
        state.writers.retain(|w| !w.is_finished());
        let shared = self.state.clone();
        let writer = std::thread::spawn(move || {
            for (dir, job) in jobs {
                job.run(&dir, &shared);
            }
        });
        state.writers.push(writer);
    }

    /// Wait for the results being written to the directory.
    pub(crate) fn settle(&self) {
        let writers = std::mem::take(&mut self.state().writers);
        writers.into_iter().for_each(|w| drop(w.join()));
    }

    /// Read `uri` (a part of a kept result) from `offset`, at most `budget` bytes of text.
    pub(crate) fn read(&self, uri: &str, offset: usize, budget: usize) -> Result<KeptRead, String> {
        let rest = uri.strip_prefix(RESULTS_PREFIX).unwrap_or(uri);
        let (id, part) = rest.split_once('/').unwrap_or((rest, ""));
        let state = self.state();
        let Some(entry) = state.entries.iter().find(|e| e.id == id) else {
            let base = format!("{RESULTS_PREFIX}{id}");
            return Err(match state.gone.get(id) {
                Some(why) => format!("the kept result {base} is not available: {why}"),
                None => format!("{base} is not a tool result this router kept"),
            });
        };
        let Some(index) = entry.parts.iter().position(|p| p.source.name() == part) else {
            return Err(entry.index(&format!("{RESULTS_PREFIX}{id}")));
        };
        let spec = entry.parts[index].clone();
        let source = entry.source(index);
        drop(state);
        let source = source.map_err(|e| format!("the kept result {uri} cannot be read: {e}"))?;
        if spec.text {
            let (text, paging) = source.page(offset, budget)?;
            Ok(KeptRead::Text { mime: spec.mime, text, paging })
        } else {
            Ok(KeptRead::Blob { mime: spec.mime, blob: source.whole()? })
        }
    }
}

impl Default for KeptResults {
    fn default() -> Self {
        Self::new(KeptLimits::default())
    }
}

impl Drop for KeptResults {
    fn drop(&mut self) {
        self.settle();
        if let Some(dir) = self.state().dir.take() {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

impl Entry {
    /// What the model reads for the kept result itself (or a part it does not have).
    fn index(&self, base: &str) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|p| {
                let kind = if p.text { "text" } else { "base64" };
                format!("{} ({}, {kind}, {} bytes)", part_uri(base, p.source), p.mime, p.bytes)
            })
            .collect();
        format!(
            "{base} is a kept result of {}; read one of its parts: {}",
            self.origin,
            parts.join(", ")
        )
    }

    /// Where part `index`'s text (or base64) is.
    fn source(&self, index: usize) -> Result<Source, String> {
        let spec = &self.parts[index];
        match &self.body {
            Body::Disk(files) => Ok(Source::File(files[index].clone(), spec.bytes)),
            Body::Memory { result, texts } => memory_source(result, texts, spec.source),
        }
    }
}

/// A result in memory to be written to the directory.
struct SpillJob {
    id: String,
    result: Arc<CallToolResult>,
    texts: HashMap<PartSource, Arc<str>>,
    parts: Vec<PartSpec>,
    bytes: usize,
    file: u64,
}

impl SpillJob {
    /// Write every part to a file of its own, then switch the entry to them; on failure (or
    /// when the result expired meanwhile) the files go and the entry stays as it was.
    fn run(self, dir: &Path, state: &Mutex<State>) {
        let mut files = Vec::with_capacity(self.parts.len());
        let mut ok = true;
        for (index, spec) in self.parts.iter().enumerate() {
            let path = dir.join(format!("{}-{index}", self.file));
            ok = memory_source(&self.result, &self.texts, spec.source)
                .and_then(|s| s.write_to(&path))
                .is_ok();
            files.push(path);
            if !ok {
                break;
            }
        }
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        state.spilling.remove(&self.id);
        state.spilling_bytes -= self.bytes;
        let entry = state.entries.iter_mut().find(|e| e.id == self.id);
        match entry {
            Some(entry) if ok && matches!(entry.body, Body::Memory { .. }) => {
                entry.body = Body::Disk(files);
                state.memory -= self.bytes;
            }
            _ => files.iter().for_each(|f| drop(fs::remove_file(f))),
        }
    }
}

/// `call_id` with every byte but ASCII letters, digits, `-`, `_` and `.` percent-encoded.
fn encode(call_id: &str) -> String {
    let mut out = String::with_capacity(call_id.len());
    for b in call_id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() { "result".to_string() } else { out }
}

#[cfg(test)]
#[path = "kept_tests.rs"]
mod tests;
