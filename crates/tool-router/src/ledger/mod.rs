//! What MCP costs, added up: per server, the context its tool specs take (loaded, and what
//! the tools behind search would take — from the last tool list the model was given), and per
//! tool its calls, errors by kind, latency, what its outputs gave the model and what the
//! server sent. The router records every call it dispatches and every tool list it makes;
//! [`Ledger::run`] is the run as the ledger file keeps it, [`report`] adds runs up.
//! Tokens are counted off the call path ([`tokens`]).

mod report;
pub mod store;
pub mod tokens;

#[cfg(test)]
pub(crate) use report::percentiles;
pub use report::report;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::settings::LedgerSettings;
use router_protocol::{LedgerReport, LedgerRun, ServerSpecs, ToolCalls, ToolOutput};

/// The server name of the router's own tools and of calls that name no server.
pub const ROUTER: &str = "(router)";

/// How long a report waits for the token counts queued before it.
const FLUSH_LIMIT: Duration = Duration::from_secs(10);

/// One router's ledger, shared by its calls (cheap to record into: a short lock; tokens are
/// counted on a thread of its own).
#[derive(Default)]
pub struct Ledger {
    book: Arc<Mutex<Book>>,
    counter: tokens::Counter,
    settings: LedgerSettings,
}

#[derive(Default)]
struct Book {
    /// By server, then tool: found by name without making a key (a call records without
    /// allocating once its row exists).
    tools: BTreeMap<String, BTreeMap<String, Row>>,
    specs: BTreeMap<String, ServerSpecs>,
    /// Bumped by every tool list recorded: a count queued for an older list is dropped.
    specs_generation: u64,
    /// What the last tool list held (see [`fingerprint`]): the same list is not counted again.
    specs_fingerprint: Option<u64>,
    /// Each server's restarts and held definitions, as the manager last told them.
    facts: BTreeMap<String, (u64, u64)>,
    /// Each tool's calls when the last turn ended ([`Ledger::turn`]).
    turn_mark: BTreeMap<(String, String), ToolCalls>,
}

/// One tool's calls, and its tokens (added by the counting thread).
struct Row {
    calls: ToolCalls,
    tokens: Arc<AtomicU64>,
}

/// One spec the model was given (or would be, for a tool behind search).
pub(crate) struct SpecSeen {
    pub(crate) server: String,
    pub(crate) loaded: bool,
    pub(crate) text: String,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::with_settings(&LedgerSettings::default())
    }

    /// An empty ledger whose reports warn as `settings` say. The tokenizer starts loading (once
    /// per process, on a thread of its own).
    pub fn with_settings(settings: &LedgerSettings) -> Self {
        tokens::warm();
        Self { settings: settings.clone(), ..Self::default() }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call of `tool` on `server` ended after `duration` with `output` (what the model
    /// reads); the server sent `from_server` bytes for it.
    pub(crate) fn call(
        &self,
        server: &str,
        tool: &str,
        duration: Duration,
        output: &ToolOutput,
        from_server: u64,
    ) {
        let error = error_kind(output);
        let tokens = {
            let mut book = self.book();
            if !book.tools.contains_key(server) {
                book.tools.insert(server.to_string(), BTreeMap::new());
            }
            let Some(by_tool) = book.tools.get_mut(server) else { return };
            if !by_tool.contains_key(tool) {
                let calls =
                    ToolCalls { server: server.into(), tool: tool.into(), ..Default::default() };
                by_tool.insert(tool.to_string(), Row { calls, tokens: Arc::default() });
            }
            let Some(row) = by_tool.get_mut(tool) else { return };
            let calls = &mut row.calls;
            calls.calls += 1;
            if let Some(kind) = error {
                *calls.errors.entry(kind.to_string()).or_default() += 1;
            }
            if calls.durations_us.len() == LedgerRun::DURATIONS_KEPT {
                calls.durations_us.remove(0);
            }
            calls.durations_us.push(duration.as_micros().min(u128::from(u64::MAX)) as u64);
            calls.bytes_to_model += output.model_bytes() as u64;
            calls.bytes_from_server += from_server;
            row.tokens.clone()
        };
        self.counter.count_output(output, tokens);
    }

    /// The model was given a tool list: `seen` are its MCP specs by server (and the router's
    /// own), with the specs of the tools behind search (`loaded: false`). Replaces the specs
    /// of the list before.
    pub(crate) fn specs(&self, seen: Vec<SpecSeen>) {
        let generation = {
            let mut book = self.book();
            // The same list as last time (a host asks every turn): counted already.
            let fingerprint = fingerprint(&seen);
            if book.specs_fingerprint == Some(fingerprint) {
                return;
            }
            book.specs_fingerprint = Some(fingerprint);
            book.specs_generation += 1;
            book.specs.clear();
            for spec in &seen {
                let row = book.specs.entry(spec.server.clone()).or_insert_with(|| ServerSpecs {
                    server: spec.server.clone(),
                    ..ServerSpecs::default()
                });
                let bytes = spec.text.len() as u64;
                if spec.loaded {
                    row.tools_loaded += 1;
                    row.spec_bytes_loaded += bytes;
                } else {
                    row.tools_deferred += 1;
                    row.spec_bytes_deferred += bytes;
                }
            }
            book.specs_generation
        };
        for SpecSeen { server, loaded, text } in seen {
            let book = self.book.clone();
            self.counter.count(text, move |tokens| {
                let mut book = book.lock().unwrap_or_else(|e| e.into_inner());
                if book.specs_generation != generation {
                    return;
                }
                if let Some(row) = book.specs.get_mut(&server) {
                    match loaded {
                        true => row.spec_tokens_loaded += tokens,
                        false => row.spec_tokens_deferred += tokens,
                    }
                }
            });
        }
    }

    /// What the connection manager knows of each server: its restarts so far and its
    /// definitions held from the model now (replacing what it said before).
    pub fn server_facts(&self, facts: impl IntoIterator<Item = (String, u64, u64)>) {
        let mut book = self.book();
        book.facts =
            facts.into_iter().map(|(server, restarts, held)| (server, (restarts, held))).collect();
    }

    /// This run so far, as the ledger file keeps it (waits for the token counts queued).
    pub fn run(&self) -> LedgerRun {
        self.counter.flush(FLUSH_LIMIT);
        self.run_now()
    }

    /// This run as counted so far, without waiting for the token counts still queued (for a
    /// status that must not wait).
    pub fn run_now(&self) -> LedgerRun {
        let book = self.book();
        let mut servers = book.specs.clone();
        for (server, (restarts, held)) in &book.facts {
            if *restarts == 0 && *held == 0 {
                continue;
            }
            let row = servers.entry(server.clone()).or_insert_with(|| ServerSpecs {
                server: server.clone(),
                ..ServerSpecs::default()
            });
            (row.restarts, row.held) = (*restarts, *held);
        }
        LedgerRun {
            at: now_unix(),
            tokenizer: tokens::TOKENIZER.to_string(),
            servers: servers.into_values().collect(),
            tools: book.tools.values().flat_map(BTreeMap::values).map(Row::counted).collect(),
        }
    }

    /// The turn that ends now: the calls since the last turn ended (or since the start), with
    /// the specs as they are now — what the host's turn cost (waits for its token counts).
    pub fn turn(&self) -> LedgerReport {
        self.counter.flush(FLUSH_LIMIT);
        let mut now = self.run_now();
        let mark = {
            let mut book = self.book();
            let marked = now.tools.iter().map(|t| ((t.server.clone(), t.tool.clone()), t.clone()));
            std::mem::replace(&mut book.turn_mark, marked.collect())
        };
        now.tools = now
            .tools
            .into_iter()
            .filter_map(|row| {
                let before = mark.get(&(row.server.clone(), row.tool.clone()));
                since(row, before)
            })
            .collect();
        report(&[now], &self.settings)
    }

    /// This run so far, added up.
    pub fn report(&self) -> LedgerReport {
        report(&[self.run()], &self.settings)
    }

    /// Whether anything was recorded (a run with nothing is not kept).
    pub fn is_empty(&self) -> bool {
        let book = self.book();
        book.tools.is_empty() && book.specs.is_empty()
    }
}

impl Row {
    /// Its calls with the tokens counted so far.
    fn counted(&self) -> ToolCalls {
        let tokens_to_model = self.tokens.load(std::sync::atomic::Ordering::Relaxed);
        ToolCalls { tokens_to_model, ..self.calls.clone() }
    }
}

/// What the handlers learn of the call being dispatched: the bytes its server sent, and its
/// duration as its end event tells it (so the ledger's latency is the events').
#[derive(Default)]
pub(crate) struct Measured {
    from_server: std::cell::Cell<u64>,
    /// Microseconds plus one (0: no end event measured it).
    duration_us: std::cell::Cell<u64>,
}

tokio::task_local! {
    /// Set by the router around each call it dispatches.
    static MEASURED: Measured;
}

/// The server sent `bytes()` bytes for the call being dispatched (measured only when a
/// dispatch counts them).
pub(crate) fn from_server(bytes: impl FnOnce() -> usize) {
    let _ = MEASURED.try_with(|m| m.from_server.set(m.from_server.get() + bytes() as u64));
}

/// The call being dispatched took `duration`, as its end event says.
pub(crate) fn ended_after(duration: Duration) {
    let _ = MEASURED.try_with(|m| {
        let micros = duration.as_micros().min(u128::from(u64::MAX - 1)) as u64;
        m.duration_us.set(micros + 1);
    });
}

/// `work` measured: its output, the bytes its server sent, and its end event's duration.
pub(crate) async fn measuring<T>(
    work: impl std::future::Future<Output = T>,
) -> (T, u64, Option<Duration>) {
    let mut scoped = std::pin::pin!(MEASURED.scope(Measured::default(), work));
    let out = scoped.as_mut().await;
    let measured = scoped.as_mut().take_value().unwrap_or_default();
    let duration = match measured.duration_us.get() {
        0 => None,
        micros => Some(Duration::from_micros(micros - 1)),
    };
    (out, measured.from_server.get(), duration)
}

/// A hash of a tool list's specs, servers and whether each was loaded.
fn fingerprint(seen: &[SpecSeen]) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for spec in seen {
        (spec.server.as_str(), spec.loaded, spec.text.as_str()).hash(&mut hasher);
    }
    hasher.finish()
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The kind of failure `output` is (`None`: a success), by what the model reads of it.
fn error_kind(output: &ToolOutput) -> Option<&'static str> {
    if output.is_success() {
        return None;
    }
    if let ToolOutput::Mcp { result: Ok(_) } = output {
        return Some("tool_error");
    }
    let text = output.model_text().0.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    Some(if has(&["timed out", "timeout"]) {
        "timeout"
    } else if has(&["unsupported call", "unknown mcp server", "unknown server", "unknown tool"]) {
        "unknown"
    } else if has(&["refused", "not approved", "held from the model", "did not approve"]) {
        "refused"
    } else if has(&[
        "failed to parse function arguments",
        "err: tool arguments",
        "must be provided",
    ]) {
        "arguments"
    } else {
        "failed"
    })
}

/// `row`'s calls since `before` (`None`: there were none then); `None` when there are none.
fn since(mut row: ToolCalls, before: Option<&ToolCalls>) -> Option<ToolCalls> {
    let Some(before) = before else { return Some(row) };
    let calls = row.calls.saturating_sub(before.calls);
    if calls == 0 {
        return None;
    }
    for (kind, n) in &before.errors {
        if let Some(now) = row.errors.get_mut(kind) {
            *now = now.saturating_sub(*n);
        }
    }
    row.errors.retain(|_, n| *n > 0);
    // The latest durations are the turn's (as many as it made calls, within what is kept).
    let kept = row.durations_us.len();
    row.durations_us.drain(..kept.saturating_sub(calls as usize));
    row.calls = calls;
    row.bytes_to_model = row.bytes_to_model.saturating_sub(before.bytes_to_model);
    row.tokens_to_model = row.tokens_to_model.saturating_sub(before.tokens_to_model);
    row.bytes_from_server = row.bytes_from_server.saturating_sub(before.bytes_from_server);
    Some(row)
}

#[cfg(test)]
mod tests;
