//! The retrieval model's signal (feature `e5`): multilingual-e5-small (`e5_small`) embeds the
//! query and each tool — its name, title and description's start as a whole, and each of its
//! first sentences on its own (a long description otherwise drowns the one sentence that
//! matters) — and a tool's scores are the cosines of the query with its whole and with its
//! best sentence. Both sides take e5's `query: ` prefix (chosen on the tuning half of the
//! development set).
//!
//! The model file is looked for once per process (`global`), on a thread of its own, in
//! `$MCP_ROUTER_MODELS`, else `$XDG_DATA_HOME/mcp-router/models`, else
//! `~/.local/share/mcp-router/models` (`scripts/install-search-model` puts it there); without
//! it the router logs once how to get it and ranks without it. Tools are embedded on that
//! thread too, in the background, each text once per process (by its SHA-256) and kept on
//! disk (in the cache folder's `embeddings`, or the host's state folder), so a restart or
//! another session of the shared router finds them; a search never waits: until every tool of
//! its catalog is embedded, the words rank alone (`fusion`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use e5_small::{Model, Role};
use mcp_backend::QualifiedTool;
use sha2::Digest as _;

/// The model file (the English-pruned 4-bit multilingual-e5-small).
pub(crate) const MODEL_FILE: &str = "e5-small-enpt-q4.bin";
/// A description's first characters that the whole-tool text takes.
const WHOLE_CHARS: usize = 600;
/// Sentences of a description embedded on their own, at most.
const SENTENCES: usize = 6;

/// A text's key: the SHA-256 of what is embedded.
pub(crate) type Key = [u8; 32];

/// The texts a tool is embedded as: its whole first, then its sentences.
pub(crate) fn texts_of(tool: &QualifiedTool) -> Vec<String> {
    let t = &tool.tool;
    let description = t.description.as_deref().unwrap_or_default();
    let start: String = description.chars().take(WHOLE_CHARS).collect();
    let whole = match &t.title {
        Some(title) => format!("{}: {title}. {start}", t.name),
        None => format!("{}: {start}", t.name),
    };
    let sentences = description
        .split(['\n', '.'])
        .map(str::trim)
        .filter(|s| s.len() > 12)
        .take(SENTENCES)
        .map(|s| format!("{}: {s}", t.name));
    std::iter::once(whole).chain(sentences).collect()
}

/// `text`'s key.
pub(crate) fn key(text: &str) -> Key {
    sha2::Sha256::digest(text.as_bytes()).into()
}

/// The model once loaded, the embeddings made, and the texts waiting.
pub(crate) struct Semantic {
    model: OnceLock<Model>,
    embedded: Mutex<HashMap<Key, Arc<[f32]>>>,
    waiting: Mutex<Waiting>,
    wake: Condvar,
    /// Threads embedding.
    working: std::sync::atomic::AtomicUsize,
}

/// A text to embed, its key, and the folder its embedding is kept in (none: not kept).
type Wanted = (Key, String, Option<Arc<Path>>);

#[derive(Default)]
struct Waiting {
    queue: VecDeque<Wanted>,
    queued: HashSet<Key>,
    /// No model: nothing is queued.
    absent: bool,
}

/// The process's one (none in unit tests, whose rankings must not depend on a file or a
/// thread's progress: they start their own with [`Semantic::start`]).
pub(crate) fn global() -> Option<Arc<Semantic>> {
    if cfg!(test) {
        return None;
    }
    static SEMANTIC: OnceLock<Arc<Semantic>> = OnceLock::new();
    let path = || model_dir().map(|dir| dir.join(MODEL_FILE));
    Some(SEMANTIC.get_or_init(|| Semantic::start(path())).clone())
}

/// Threads that embed in the background: every core but one (so that a search or a call
/// always finds one), at least one and at most four.
fn workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    cores.saturating_sub(1).clamp(1, 4)
}

/// Where the model file is looked for.
pub(crate) fn model_dir() -> Option<PathBuf> {
    router_protocol::dirs::data_dir("MCP_ROUTER_MODELS", "models")
}

/// Where embeddings are kept when the host names no folder: `embeddings/<model>/` in the
/// router's cache folder.
pub(crate) fn default_keep() -> Option<PathBuf> {
    Some(
        router_protocol::dirs::cache_dir()?
            .join("embeddings")
            .join(MODEL_FILE.trim_end_matches(".bin")),
    )
}

impl Semantic {
    /// A model from `path` (`None`: said to be missing), loaded on a thread of its own that
    /// then embeds what searches queue, with [`workers`]` - 1` threads more.
    pub(crate) fn start(path: Option<PathBuf>) -> Arc<Self> {
        Self::start_with(path, workers())
    }

    /// [`Semantic::start`] with `workers` threads embedding (at least one).
    pub(crate) fn start_with(path: Option<PathBuf>, workers: usize) -> Arc<Self> {
        let semantic = Arc::new(Self {
            model: OnceLock::new(),
            embedded: Mutex::default(),
            waiting: Mutex::default(),
            wake: Condvar::new(),
            working: std::sync::atomic::AtomicUsize::new(0),
        });
        let worker = semantic.clone();
        let spawned = std::thread::Builder::new()
            .name("tool-search-model".into())
            .spawn(move || worker.run(path, workers));
        if let Err(e) = spawned {
            tracing::warn!("tool search cannot start its model's thread: {e}");
            semantic.lock_waiting().absent = true;
        }
        semantic
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        // What only caches: a panicking holder's state is taken as it is.
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_embedded(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<[f32]>>> {
        self.embedded.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The model, once loaded (`None` before, and for good without one).
    pub(crate) fn model(&self) -> Option<&Model> {
        self.model.get()
    }

    /// Queues those of `texts` not embedded yet for the model's thread (unless there is no
    /// model), their embeddings to be kept in `keep` (and read from it when kept already).
    pub(crate) fn want(&self, texts: Vec<(Key, String)>, keep: Option<&Path>) {
        let keep: Option<Arc<Path>> = keep.map(Arc::from);
        let missing: Vec<(Key, String)> = {
            let embedded = self.lock_embedded();
            texts.into_iter().filter(|(key, _)| !embedded.contains_key(key)).collect()
        };
        let mut waiting = self.lock_waiting();
        if waiting.absent {
            return;
        }
        let before = waiting.queue.len();
        for (key, text) in missing {
            if waiting.queued.insert(key) {
                waiting.queue.push_back((key, text, keep.clone()));
            }
        }
        let added = waiting.queue.len() > before;
        drop(waiting);
        if added {
            self.wake.notify_all();
        }
    }

    /// The embedding of each of `keys` made so far.
    pub(crate) fn embedded(&self, keys: &[Key]) -> Vec<Option<Arc<[f32]>>> {
        let embedded = self.lock_embedded();
        keys.iter().map(|key| embedded.get(key).cloned()).collect()
    }

    /// `query`'s embedding, when the model is loaded.
    pub(crate) fn query(&self, query: &str) -> Option<Vec<f32>> {
        Some(self.model()?.embed(query, Role::Query))
    }

    /// Until the model has loaded (or was found missing) and nothing is waiting.
    pub(crate) fn settle(&self) {
        let mut waiting = self.lock_waiting();
        while !waiting.absent && (!waiting.queued.is_empty() || self.model.get().is_none()) {
            waiting = self.wake.wait(waiting).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The model's thread: load it (or say once that it is not there), then embed what is
    /// queued, for the life of the process, with `workers - 1` threads more.
    fn run(self: Arc<Self>, path: Option<PathBuf>, workers: usize) {
        let Some(model) = load(path) else {
            let mut waiting = self.lock_waiting();
            (waiting.absent, waiting.queue) = (true, VecDeque::new());
            drop(waiting);
            self.wake.notify_all();
            return;
        };
        let _ = self.model.set(model);
        self.wake.notify_all();
        for n in 1..workers {
            let more = self.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("tool-search-model-{n}"))
                .spawn(move || more.work());
            if let Err(e) = spawned {
                tracing::debug!("tool search embeds on fewer threads: {e}");
                break;
            }
        }
        self.work();
    }

    /// Embed what is queued, for the life of the process.
    fn work(&self) {
        self.working.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        loop {
            let next = {
                let mut waiting = self.lock_waiting();
                loop {
                    match waiting.queue.pop_front() {
                        Some(next) => break next,
                        None => {
                            self.wake.notify_all();
                            waiting = self.wake.wait(waiting).unwrap_or_else(|p| p.into_inner());
                        }
                    }
                }
            };
            // A text the engine fails on counts as unlike any query (an empty embedding): the
            // thread goes on, the catalog is still embedded whole, and `settle` still returns.
            let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.embed(&next)));
            let embedding = made.unwrap_or_else(|_| {
                tracing::warn!(
                    "tool search's model failed on a text of {} characters; it ranks by the words",
                    next.1.chars().count()
                );
                Arc::from([])
            });
            self.lock_embedded().insert(next.0, embedding);
            self.lock_waiting().queued.remove(&next.0);
        }
    }

    /// `text`'s embedding: from its folder when kept there, else made (and kept).
    fn embed(&self, (key, text, keep): &Wanted) -> Arc<[f32]> {
        #[cfg(test)]
        assert!(!text.starts_with(FAILS), "a text the engine fails on");
        let file = keep.as_ref().map(|dir| dir.join(hex(key)));
        if let Some(kept) = file.as_ref().and_then(|f| std::fs::read(f).ok())
            && let Some(model) = self.model()
            && kept.len() == model.dim() * 4
        {
            return kept
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
        }
        let Some(model) = self.model() else { return Arc::from([]) };
        let embedding: Arc<[f32]> = model.embed(text, Role::Query).into();
        if let (Some(file), Some(dir)) = (&file, keep) {
            let bytes: Vec<u8> = embedding.iter().flat_map(|v| v.to_le_bytes()).collect();
            let partial = file.with_extension("partial");
            let kept = std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(&partial, bytes))
                .and_then(|()| std::fs::rename(&partial, file));
            if let Err(e) = kept {
                tracing::debug!("cannot keep an embedding in {}: {e}", dir.display());
            }
        }
        embedding
    }
}

/// The model at `path`; `None` (said once: one thread loads it) when it is not there or
/// cannot be read.
fn load(path: Option<PathBuf>) -> Option<Model> {
    let Some(path) = path.filter(|p| p.exists()) else {
        // A warning, so that the default log shows it: a user who has not installed the model
        // is told, once, how (or how to stop asking for it).
        tracing::warn!(
            "tool search ranks without its retrieval model ({MODEL_FILE} is not in {}): install it with scripts/install-search-model, or set tool_search_model = false",
            model_dir()
                .map_or_else(|| "$MCP_ROUTER_MODELS".to_string(), |d| d.display().to_string())
        );
        return None;
    };
    match Model::load(&path) {
        Ok(model) => {
            tracing::info!(path = %path.display(), "tool search's retrieval model loaded");
            Some(model)
        }
        Err(e) => {
            tracing::warn!("tool search ranks without its retrieval model: {e}");
            None
        }
    }
}

/// The model the test harness installs (`tests/harness/install`).
#[cfg(test)]
pub(crate) fn harness_model() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/harness/models").join(MODEL_FILE)
}

fn hex(key: &Key) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// A text `embed` fails on, in unit tests.
#[cfg(test)]
const FAILS: &str = "\u{1}fails";

#[cfg(test)]
mod tests {
    use super::*;

    /// A text the engine fails on leaves an empty embedding; the thread goes on with the rest.
    #[test]
    fn a_text_the_engine_fails_on_stops_nothing() {
        let texts: Vec<(Key, String)> = [FAILS, "read a file", "list a folder"]
            .iter()
            .map(|t| (key(t), t.to_string()))
            .collect();
        let keys: Vec<Key> = texts.iter().map(|(key, _)| *key).collect();
        let semantic = Semantic::start_with(Some(harness_model()), 1);
        semantic.want(texts, None);
        semantic.settle();
        let made = semantic.embedded(&keys);
        assert_eq!(made[0].as_deref().map(<[f32]>::len), Some(0), "empty: unlike any query");
        assert_eq!(made[1].as_deref().map(<[f32]>::len), Some(384));
        assert_eq!(made[2].as_deref().map(<[f32]>::len), Some(384));
        // And later texts too.
        semantic.want(vec![(key("search the web"), "search the web".into())], None);
        semantic.settle();
        assert!(semantic.embedded(&[key("search the web")])[0].is_some());
    }

    /// Three threads embed every text queued, as one thread does.
    #[test]
    fn several_threads_embed_what_one_does() {
        let texts: Vec<(Key, String)> = (0..12)
            .map(|i| format!("tool_{i}: Reads the file number {i} and lists folder {i}."))
            .map(|t| (key(&t), t))
            .collect();
        let keys: Vec<Key> = texts.iter().map(|(key, _)| *key).collect();
        let (one, three) = (
            Semantic::start_with(Some(harness_model()), 1),
            Semantic::start_with(Some(harness_model()), 3),
        );
        for semantic in [&one, &three] {
            semantic.want(texts.clone(), None);
            semantic.settle();
        }
        assert!(three.model().is_some(), "no retrieval model: run tests/harness/install");
        let (alone, together) = (one.embedded(&keys), three.embedded(&keys));
        for (a, b) in alone.iter().zip(&together) {
            let (a, b) = (a.as_ref().expect("embedded by one"), b.as_ref().expect("by three"));
            assert_eq!(a.len(), 384);
            let cosine: f32 = a.iter().zip(b.iter()).map(|(x, y)| x * y).sum();
            assert!(cosine > 0.9999, "{cosine}");
        }
        // Each thread counts itself when it starts (it may start after the queue is empty).
        let working = |s: &Semantic| s.working.load(std::sync::atomic::Ordering::Relaxed);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while working(&three) < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!((working(&one), working(&three)), (1, 3));
    }
}
