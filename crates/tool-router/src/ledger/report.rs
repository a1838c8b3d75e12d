//! Runs added up into a report: calls, errors and bytes summed, percentiles over every
//! duration kept, each server's specs as its largest run had them, and the spec-share warnings.

use std::collections::BTreeMap;

use router_protocol::{LedgerReport, LedgerRun, ServerCost, ServerSpecs, ToolCalls, ToolCost};

use super::{ROUTER, tokens};
use crate::settings::LedgerSettings;

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
