//! What MCP costs, as the ledger tells it: per server and per tool, the context its tool specs
//! take (loaded, and what the tools behind search would take), what its results gave the model
//! against what the server sent, calls, errors by kind and latency. `mcp-router stats --json`,
//! `Running::ledger` and the ledger file's runs are these shapes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How tokens were counted: `o200k_base` (OpenAI's tokenizer of its current models, exact), or
/// `estimate (bytes / 4)` where this build has no tokenizer — labelled so, never passed off as
/// a count.
pub const TOKENS_ESTIMATED: &str = "estimate (bytes / 4)";

/// The ledger's answer: one row per server and one per tool, sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerReport {
    /// How `*_tokens` were counted (`o200k_base`, or [`TOKENS_ESTIMATED`]).
    pub tokenizer: String,
    /// The runs added up (1 for a running router's own).
    pub runs: u64,
    /// Seconds since the Unix epoch of the oldest run added up (`None`: no run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// Per server, sorted by name. `(router)` is the router's own tools (the resource tools,
    /// search, skills): their specs and the calls that name no server.
    pub servers: Vec<ServerCost>,
    /// Per tool of a server, sorted by server then tool.
    pub tools: Vec<ToolCost>,
    /// A sentence per server whose loaded specs take more than the configured share of the
    /// context (`spec_share_warning` of `context_window_tokens`), with what to do about it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One server's share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCost {
    /// The server as configured.
    pub server: String,
    /// Its tools whose specs the model was given (the last tool list of a run; summed over
    /// runs: the largest).
    pub tools_loaded: u64,
    /// Bytes and tokens of those specs, as the provider's API takes them.
    pub spec_bytes_loaded: u64,
    /// Tokens of those specs.
    pub spec_tokens_loaded: u64,
    /// Its tools behind tool search (not in the specs), and what their specs would take.
    pub tools_deferred: u64,
    /// Bytes their specs would take.
    pub spec_bytes_deferred: u64,
    /// Tokens their specs would take.
    pub spec_tokens_deferred: u64,
    /// Its loaded specs' share of every loaded spec byte (0 to 1).
    pub context_share: f64,
    /// Times it was restarted (its process died, its connection closed), over the runs.
    #[serde(default)]
    pub restarts: u64,
    /// Its definitions held from the model (pinned, changed, not approved) at the end of the
    /// latest run.
    #[serde(default)]
    pub held: u64,
    /// The sums of its tools' rows.
    pub calls: u64,
    /// Failed calls of its tools, every kind.
    pub errors: u64,
    /// Bytes its tools' outputs gave the model.
    pub bytes_to_model: u64,
    /// Tokens of its tools' outputs.
    pub tokens_to_model: u64,
    /// Bytes it sent (results and reads).
    pub bytes_from_server: u64,
    /// Latency over every call of its tools, in milliseconds.
    pub p50_ms: f64,
    /// 95th percentile (nearest rank).
    pub p95_ms: f64,
    /// The slowest call.
    pub max_ms: f64,
}

/// One tool's calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCost {
    /// The server as configured (`(router)` for the router's own tools).
    pub server: String,
    /// The tool's name on its server (or the router's tool: `read_mcp_resource`, …).
    pub tool: String,
    /// Calls that ended (failed ones too).
    pub calls: u64,
    /// Failed calls by kind: `tool_error` (the server's result says `isError`), `refused`
    /// (held, not approved, refused by policy), `timeout`, `unknown` (no such server or tool),
    /// `arguments` (the model's arguments were refused), `failed` (the server could not answer).
    pub errors: BTreeMap<String, u64>,
    /// Latency in milliseconds: median, 95th percentile (nearest rank) and the slowest.
    pub p50_ms: f64,
    /// 95th percentile in milliseconds.
    pub p95_ms: f64,
    /// The slowest call, in milliseconds.
    pub max_ms: f64,
    /// What the model was given: the output's text (images as their base64 bytes).
    pub bytes_to_model: u64,
    /// Tokens of the output's text (images not counted).
    pub tokens_to_model: u64,
    /// What the server sent (the result or read as JSON), before budgets and spill: the
    /// difference to `bytes_to_model` is what they saved. 0 for the router's own tools.
    pub bytes_from_server: u64,
}

/// One run as the ledger file keeps it (a JSON line): totals, and the calls' durations so
/// that percentiles over several runs are exact (at most [`LedgerRun::DURATIONS_KEPT`] per
/// tool and run, the latest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerRun {
    /// When the run ended, in seconds since the Unix epoch.
    pub at: u64,
    /// How its tokens were counted.
    pub tokenizer: String,
    /// Each server's specs.
    pub servers: Vec<ServerSpecs>,
    /// Each tool's calls.
    pub tools: Vec<ToolCalls>,
}

impl LedgerRun {
    /// The durations a run keeps per tool.
    pub const DURATIONS_KEPT: usize = 1024;
}

/// A server's specs in a run (the last tool list the model was given).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSpecs {
    /// The server as configured.
    pub server: String,
    /// Tools whose specs the model was given.
    pub tools_loaded: u64,
    /// Their bytes.
    pub spec_bytes_loaded: u64,
    /// Their tokens.
    pub spec_tokens_loaded: u64,
    /// Tools behind search.
    pub tools_deferred: u64,
    /// Bytes their specs would take.
    pub spec_bytes_deferred: u64,
    /// Tokens their specs would take.
    pub spec_tokens_deferred: u64,
    /// Its restarts in the run.
    #[serde(default)]
    pub restarts: u64,
    /// Its definitions held from the model when the run ended.
    #[serde(default)]
    pub held: u64,
}

/// A tool's calls in a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCalls {
    /// The server as configured.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// Calls that ended.
    pub calls: u64,
    /// Failed calls by kind (see `ToolCost::errors`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
    /// Durations in microseconds, in the order the calls ended.
    pub durations_us: Vec<u64>,
    /// Bytes given to the model.
    pub bytes_to_model: u64,
    /// Tokens given to the model.
    pub tokens_to_model: u64,
    /// Bytes the server sent.
    pub bytes_from_server: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> LedgerReport {
        LedgerReport {
            tokenizer: "o200k_base".into(),
            runs: 2,
            since: Some(1_765_000_000),
            servers: vec![ServerCost {
                server: "github".into(),
                tools_loaded: 40,
                spec_bytes_loaded: 48_000,
                spec_tokens_loaded: 11_500,
                tools_deferred: 2,
                spec_bytes_deferred: 900,
                spec_tokens_deferred: 210,
                context_share: 0.8,
                restarts: 1,
                held: 0,
                calls: 3,
                errors: 1,
                bytes_to_model: 5000,
                tokens_to_model: 1200,
                bytes_from_server: 9000,
                p50_ms: 120.5,
                p95_ms: 800.25,
                max_ms: 800.25,
            }],
            tools: vec![ToolCost {
                server: "github".into(),
                tool: "search_issues".into(),
                calls: 3,
                errors: BTreeMap::from([("timeout".to_string(), 1)]),
                p50_ms: 120.5,
                p95_ms: 800.25,
                max_ms: 800.25,
                bytes_to_model: 5000,
                tokens_to_model: 1200,
                bytes_from_server: 9000,
            }],
            warnings: vec!["MCP server 'github': …".into()],
        }
    }

    /// `mcp-router stats --json` and `Running::ledger`: a contract, changed on purpose.
    #[test]
    fn the_report_shape() {
        insta::assert_json_snapshot!(report());
    }

    #[test]
    fn a_run_reads_back_as_written_and_older_lines_without_facts_still_read() {
        let run = LedgerRun {
            at: 5,
            tokenizer: "o200k_base".into(),
            servers: vec![ServerSpecs { server: "a".into(), restarts: 2, ..Default::default() }],
            tools: vec![ToolCalls {
                server: "a".into(),
                tool: "t".into(),
                calls: 1,
                ..Default::default()
            }],
        };
        let line = serde_json::to_string(&run).expect("json");
        assert_eq!(serde_json::from_str::<LedgerRun>(&line).expect("back"), run);
        let older = r#"{"at":1,"tokenizer":"x","servers":[{"server":"a","tools_loaded":0,"spec_bytes_loaded":0,"spec_tokens_loaded":0,"tools_deferred":0,"spec_bytes_deferred":0,"spec_tokens_deferred":0}],"tools":[]}"#;
        assert_eq!(serde_json::from_str::<LedgerRun>(older).expect("older").servers[0].restarts, 0);
    }
}
