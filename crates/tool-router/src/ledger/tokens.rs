//! Tokens, counted with OpenAI's `o200k_base` (the `tokens` feature: `tiktoken-rs`, its
//! vocabulary built in) or estimated as bytes / 4 and labelled so. Counting a large result
//! takes milliseconds, so a router counts on one thread of its own (`Counter`), off the
//! call path; a report waits for the counts queued before it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use router_protocol::ToolOutput;
use std::time::Duration;

/// The tokenizer the counts come from, as reports name it.
#[cfg(feature = "tokens")]
pub const TOKENIZER: &str = "o200k_base";
/// The tokenizer the counts come from, as reports name it.
#[cfg(not(feature = "tokens"))]
pub const TOKENIZER: &str = router_protocol::TOKENS_ESTIMATED;

/// The most bytes of one text counted token by token (what the default budgets let reach the
/// model, 64 KiB); a longer text is counted on its first [`EXACT_BYTES`] and scaled by its
/// length, so that a huge payload (an unlimited budget) costs the counting thread at most
/// that much work.
pub const EXACT_BYTES: usize = 64 * 1024;

/// The tokens of `text` (see [`TOKENIZER`]): exact up to [`EXACT_BYTES`], scaled from its
/// beginning past it.
pub fn count(text: &str) -> u64 {
    if text.len() <= EXACT_BYTES {
        return count_all(text);
    }
    let mut end = EXACT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let sample = count_all(&text[..end]);
    (sample as u128 * text.len() as u128 / end.max(1) as u128) as u64
}

/// Every token of `text`.
fn count_all(text: &str) -> u64 {
    #[cfg(feature = "tokens")]
    {
        tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len() as u64
    }
    #[cfg(not(feature = "tokens"))]
    {
        text.len().div_ceil(4) as u64
    }
}

/// Loads the tokenizer's vocabulary on a thread of its own, once per process (it takes a
/// moment, longest in a debug build), so that the first counts do not wait for it.
pub(crate) fn warm() {
    #[cfg(feature = "tokens")]
    {
        static WARMED: std::sync::Once = std::sync::Once::new();
        WARMED.call_once(|| {
            let load = || {
                tiktoken_rs::o200k_base_singleton();
            };
            let _ = std::thread::Builder::new().name("mcp-router-tokenizer".into()).spawn(load);
        });
    }
}

/// What the counting thread counts.
enum Job {
    /// A text, and what to do with its count (a tool list's spec).
    Text { text: String, apply: Box<dyn FnOnce(u64) + Send> },
    /// What the model reads of a call's output (shared with the caller: nothing copied on the
    /// call path), added to `into`.
    Output { output: ToolOutput, into: Arc<AtomicU64> },
}

impl Job {
    fn run(self) {
        match self {
            Job::Text { text, apply } => apply(count(&text)),
            Job::Output { output, into } => {
                let tokens = match &output {
                    // A function's text (a list, a read) is counted where it is, not copied.
                    ToolOutput::Function { content, content_items, .. }
                        if content_items.as_ref().is_none_or(Vec::is_empty) =>
                    {
                        count(content)
                    }
                    _ => count(&output.model_text().0),
                };
                into.fetch_add(tokens, Ordering::Relaxed);
            }
        }
    }
}

/// Counts texts on a thread of its own (started with the first text, ended when the counter
/// is dropped); [`Counter::flush`] waits for what was queued.
#[derive(Default)]
pub(crate) struct Counter {
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    pending: Arc<(Mutex<u64>, Condvar)>,
}

impl Counter {
    /// Count `text`, then `apply` the count (on the counting thread). With no tokenizer the
    /// estimate is applied at once.
    pub(crate) fn count(&self, text: String, apply: impl FnOnce(u64) + Send + 'static) {
        if !cfg!(feature = "tokens") || text.is_empty() {
            apply(count(&text));
            return;
        }
        self.queue(Job::Text { text, apply: Box::new(apply) });
    }

    /// Count what the model reads of `output` into `into` (on the counting thread; with no
    /// tokenizer, the estimate at once).
    pub(crate) fn count_output(&self, output: &ToolOutput, into: Arc<AtomicU64>) {
        let job = Job::Output { output: output.clone(), into };
        match cfg!(feature = "tokens") {
            true => self.queue(job),
            false => job.run(),
        }
    }

    fn queue(&self, job: Job) {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let sender = queue.get_or_insert_with(|| self.start());
        *self.pending.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        if let Err(mpsc::SendError(job)) = sender.send(job) {
            // The thread is gone (it could not start): count here.
            *queue = None;
            self.done();
            job.run();
        }
    }

    fn start(&self) -> mpsc::Sender<Job> {
        let (tx, rx) = mpsc::channel::<Job>();
        let pending = self.pending.clone();
        let started =
            std::thread::Builder::new().name("mcp-router-tokens".into()).spawn(move || {
                for job in rx {
                    job.run();
                    let (left, changed) = &*pending;
                    *left.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
                    changed.notify_all();
                }
            });
        if started.is_err() {
            // No thread: the receiver is gone, so every send fails and counts in place.
            let (dead, _) = mpsc::channel();
            return dead;
        }
        tx
    }

    fn done(&self) {
        let (left, changed) = &*self.pending;
        let mut left = left.lock().unwrap_or_else(|e| e.into_inner());
        *left = left.saturating_sub(1);
        changed.notify_all();
    }

    /// Wait until every text queued so far is counted (at most `limit`: a report never
    /// hangs; it says what was counted by then).
    pub(crate) fn flush(&self, limit: Duration) {
        let (left, changed) = &*self.pending;
        let left = left.lock().unwrap_or_else(|e| e.into_inner());
        let _ = changed.wait_timeout_while(left, limit, |left| *left > 0);
    }
}
