//! What MCP costs, added up: per server, the context its tool specs take (loaded, and what
//! the tools behind search would take — from the last tool list the model was given), and per
//! tool its calls, errors by kind, latency, what its outputs gave the model and what the
//! server sent. The router records every call it dispatches and every tool list it makes;
//! [`Ledger::run`] is the run as the ledger file keeps it, [`report`] adds runs up.
//! Tokens are counted off the call path ([`tokens`]).

pub mod store;
pub mod tokens;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::settings::LedgerSettings;
use router_protocol::{
    LedgerReport, LedgerRun, ServerCost, ServerSpecs, ToolCalls, ToolCost, ToolOutput,
};

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
    tools: BTreeMap<(String, String), ToolCalls>,
    specs: BTreeMap<String, ServerSpecs>,
    /// Bumped by every tool list recorded: a count queued for an older list is dropped.
    specs_generation: u64,
    /// Each server's restarts and held definitions, as the manager last told them.
    facts: BTreeMap<String, (u64, u64)>,
    /// Each tool's calls when the last turn ended ([`Ledger::turn`]).
    turn_mark: BTreeMap<(String, String), ToolCalls>,
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
        let (text, image_bytes) = output.model_text();
        let error = error_kind(output, &text);
        let key = (server.to_string(), tool.to_string());
        {
            let mut book = self.book();
            let row = book.tools.entry(key.clone()).or_insert_with(|| ToolCalls {
                server: key.0.clone(),
                tool: key.1.clone(),
                ..ToolCalls::default()
            });
            row.calls += 1;
            if let Some(kind) = error {
                *row.errors.entry(kind.to_string()).or_default() += 1;
            }
            if row.durations_us.len() == LedgerRun::DURATIONS_KEPT {
                row.durations_us.remove(0);
            }
            row.durations_us.push(duration.as_micros().min(u128::from(u64::MAX)) as u64);
            row.bytes_to_model += (text.len() + image_bytes) as u64;
            row.bytes_from_server += from_server;
        }
        let book = self.book.clone();
        self.counter.count(text, move |tokens| {
            let mut book = book.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(row) = book.tools.get_mut(&key) {
                row.tokens_to_model += tokens;
            }
        });
    }

    /// The model was given a tool list: `seen` are its MCP specs by server (and the router's
    /// own), with the specs of the tools behind search (`loaded: false`). Replaces the specs
    /// of the list before.
    pub(crate) fn specs(&self, seen: Vec<SpecSeen>) {
        let generation = {
            let mut book = self.book();
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
            tools: book.tools.values().cloned().collect(),
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

/// What the handlers learn of the call being dispatched: the bytes its server sent, and its
/// duration as its end event tells it (so the ledger's latency is the events').
#[derive(Default)]
pub(crate) struct Measured {
    from_server: std::sync::atomic::AtomicU64,
    /// Microseconds plus one (0: no end event measured it).
    duration_us: std::sync::atomic::AtomicU64,
}

tokio::task_local! {
    /// Set by the router around each call it dispatches.
    static MEASURED: Arc<Measured>;
}

/// The server sent `bytes()` bytes for the call being dispatched (measured only when a
/// dispatch counts them).
pub(crate) fn from_server(bytes: impl FnOnce() -> usize) {
    let _ = MEASURED.try_with(|m| {
        m.from_server.fetch_add(bytes() as u64, std::sync::atomic::Ordering::Relaxed);
    });
}

/// The call being dispatched took `duration`, as its end event says.
pub(crate) fn ended_after(duration: Duration) {
    let _ = MEASURED.try_with(|m| {
        let micros = duration.as_micros().min(u128::from(u64::MAX - 1)) as u64;
        m.duration_us.store(micros + 1, std::sync::atomic::Ordering::Relaxed);
    });
}

/// `work` measured: its output, the bytes its server sent, and its end event's duration.
pub(crate) async fn measuring<T>(
    work: impl std::future::Future<Output = T>,
) -> (T, u64, Option<Duration>) {
    let measured = Arc::new(Measured::default());
    let out = MEASURED.scope(measured.clone(), work).await;
    let from_server = measured.from_server.load(std::sync::atomic::Ordering::Relaxed);
    let duration = match measured.duration_us.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        micros => Some(Duration::from_micros(micros - 1)),
    };
    (out, from_server, duration)
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The kind of failure `output` is (`None`: a success); `text` is what the model reads of it.
fn error_kind(output: &ToolOutput, text: &str) -> Option<&'static str> {
    if output.is_success() {
        return None;
    }
    if let ToolOutput::Mcp { result: Ok(_) } = output {
        return Some("tool_error");
    }
    let text = text.to_ascii_lowercase();
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

/// `runs` added up: calls, errors and bytes summed; percentiles over every duration kept;
/// each server's specs as its largest run had them (a config's tool list, not a sum of turns).
pub fn report(runs: &[LedgerRun], settings: &LedgerSettings) -> LedgerReport {
    let mut tools: BTreeMap<(String, String), ToolCalls> = BTreeMap::new();
    let mut specs: BTreeMap<String, ServerSpecs> = BTreeMap::new();
    // Restarts add up; held definitions are the latest run's (runs come oldest first).
    let mut restarts: BTreeMap<String, u64> = BTreeMap::new();
    let mut held: BTreeMap<String, u64> = BTreeMap::new();
    for run in runs {
        for row in &run.servers {
            *restarts.entry(row.server.clone()).or_default() += row.restarts;
        }
        if !run.servers.is_empty() {
            held = run.servers.iter().map(|row| (row.server.clone(), row.held)).collect();
        }
        for row in &run.tools {
            let key = (row.server.clone(), row.tool.clone());
            add_calls(tools.entry(key).or_default(), row);
        }
        for row in &run.servers {
            let kept = specs.entry(row.server.clone()).or_default();
            if row.spec_bytes_loaded + row.spec_bytes_deferred
                >= kept.spec_bytes_loaded + kept.spec_bytes_deferred
            {
                *kept = row.clone();
            }
        }
    }
    let tool_rows: Vec<ToolCost> = tools.values().map(tool_cost).collect();
    let loaded_total: u64 = specs.values().map(|s| s.spec_bytes_loaded).sum();
    let mut names: Vec<&String> = specs
        .keys()
        .chain(tools.keys().map(|(s, _)| s))
        .chain(restarts.iter().filter(|(_, n)| **n > 0).map(|(s, _)| s))
        .chain(held.iter().filter(|(_, n)| **n > 0).map(|(s, _)| s))
        .collect();
    names.sort();
    names.dedup();
    let servers: Vec<ServerCost> = names
        .into_iter()
        .map(|server| {
            let spec = specs.get(server).cloned().unwrap_or_default();
            let of: Vec<&ToolCalls> = tools.values().filter(|t| &t.server == server).collect();
            let facts = (
                restarts.get(server).copied().unwrap_or(0),
                held.get(server).copied().unwrap_or(0),
            );
            server_cost(server, spec, &of, loaded_total, facts)
        })
        .collect();
    let tokenizer = runs.last().map_or(tokens::TOKENIZER, |r| r.tokenizer.as_str());
    let warnings = warnings(&servers, settings);
    LedgerReport {
        tokenizer: tokenizer.to_string(),
        runs: runs.len() as u64,
        since: runs.iter().map(|r| r.at).min(),
        servers,
        tools: tool_rows,
        warnings,
    }
}

/// A sentence per server whose loaded specs take more than `settings`' share of the context.
fn warnings(servers: &[ServerCost], settings: &LedgerSettings) -> Vec<String> {
    let context = settings.context_tokens.max(1) as f64;
    servers
        .iter()
        .filter(|s| s.server != ROUTER)
        .filter(|s| s.spec_tokens_loaded as f64 > settings.spec_share_warning * context)
        .map(|s| {
            format!(
                "MCP server '{}': its {} tool specs take {} tokens, {:.1}% of a {}-token context (more than the {:.1}% of spec_share_warning); turn tool search on (tool_search = \"on\") or keep the tools you use (enabled_tools / disabled_tools)",
                s.server,
                s.tools_loaded,
                s.spec_tokens_loaded,
                100.0 * s.spec_tokens_loaded as f64 / context,
                settings.context_tokens,
                100.0 * settings.spec_share_warning,
            )
        })
        .collect()
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

/// `row`'s calls added to `sum` (named after `row`).
fn add_calls(sum: &mut ToolCalls, row: &ToolCalls) {
    if sum.server.is_empty() {
        (sum.server, sum.tool) = (row.server.clone(), row.tool.clone());
    }
    sum.calls += row.calls;
    for (kind, n) in &row.errors {
        *sum.errors.entry(kind.clone()).or_default() += n;
    }
    sum.durations_us.extend(&row.durations_us);
    sum.bytes_to_model += row.bytes_to_model;
    sum.tokens_to_model += row.tokens_to_model;
    sum.bytes_from_server += row.bytes_from_server;
}

/// One server's row: its specs, the sums of its tools' rows, its `(restarts, held)`.
fn server_cost(
    server: &str,
    spec: ServerSpecs,
    of: &[&ToolCalls],
    loaded_total: u64,
    (restarts, held): (u64, u64),
) -> ServerCost {
    let mut durations: Vec<u64> = of.iter().flat_map(|t| t.durations_us.iter().copied()).collect();
    let (p50_ms, p95_ms, max_ms) = percentiles(&mut durations);
    ServerCost {
        server: server.to_string(),
        tools_loaded: spec.tools_loaded,
        spec_bytes_loaded: spec.spec_bytes_loaded,
        spec_tokens_loaded: spec.spec_tokens_loaded,
        tools_deferred: spec.tools_deferred,
        spec_bytes_deferred: spec.spec_bytes_deferred,
        spec_tokens_deferred: spec.spec_tokens_deferred,
        context_share: match loaded_total {
            0 => 0.0,
            total => spec.spec_bytes_loaded as f64 / total as f64,
        },
        restarts,
        held,
        calls: of.iter().map(|t| t.calls).sum(),
        errors: of.iter().flat_map(|t| t.errors.values()).sum(),
        bytes_to_model: of.iter().map(|t| t.bytes_to_model).sum(),
        tokens_to_model: of.iter().map(|t| t.tokens_to_model).sum(),
        bytes_from_server: of.iter().map(|t| t.bytes_from_server).sum(),
        p50_ms,
        p95_ms,
        max_ms,
    }
}

fn tool_cost(row: &ToolCalls) -> ToolCost {
    let mut durations = row.durations_us.clone();
    let (p50_ms, p95_ms, max_ms) = percentiles(&mut durations);
    ToolCost {
        server: row.server.clone(),
        tool: row.tool.clone(),
        calls: row.calls,
        errors: row.errors.clone(),
        p50_ms,
        p95_ms,
        max_ms,
        bytes_to_model: row.bytes_to_model,
        tokens_to_model: row.tokens_to_model,
        bytes_from_server: row.bytes_from_server,
    }
}

/// Median, 95th percentile and maximum of `durations` (microseconds), in milliseconds, by
/// nearest rank (a value that was measured, not one between two).
pub(crate) fn percentiles(durations: &mut [u64]) -> (f64, f64, f64) {
    if durations.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    durations.sort_unstable();
    let rank = |p: f64| {
        let n = durations.len();
        let index = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        durations[index] as f64 / 1000.0
    };
    (rank(0.5), rank(0.95), durations[durations.len() - 1] as f64 / 1000.0)
}

#[cfg(test)]
mod tests;
