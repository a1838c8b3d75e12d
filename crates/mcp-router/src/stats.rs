//! `mcp-router stats`: what MCP cost, from the ledger's runs (every router that used the state
//! folder — `exec`, `serve`, the one-shot commands, an embedded host — adds its run when it
//! shuts down): per server, the context its specs take and its calls; per tool, calls,
//! errors, latency, what the model was given against what the server sent.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use mcp_host::events::{LedgerReport, ServerCost};
use mcp_host::ledger;

/// `mcp-router stats`'s arguments.
#[derive(clap::Args)]
pub(crate) struct StatsArgs {
    /// Only the runs that ended within this long: `90s`, `30m`, `12h`, `7d` (default: every
    /// run the ledger keeps).
    #[arg(long)]
    since: Option<String>,
    /// Print the `LedgerReport` JSON (`mcp_host::events::LedgerReport`).
    #[arg(long)]
    json: bool,
    /// The config whose `context_window_tokens` and `spec_share_warning` the warnings follow
    /// (default: their defaults, 200,000 and 0.05).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The state folder whose `ledger/` is read (default: `$MCP_ROUTER_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/mcp-router`, else `~/.cache/mcp-router`; a host's `state_dir`).
    #[arg(long)]
    state_dir: Option<PathBuf>,
}

/// Prints the report; exit 0 (with `no runs kept yet` when there are none).
pub(crate) fn run(args: &StatsArgs) -> anyhow::Result<i32> {
    let base = match &args.state_dir {
        Some(dir) => dir.clone(),
        None => mcp_host::default_state_dir()
            .context("no state folder: set MCP_ROUTER_CACHE_DIR, XDG_CACHE_HOME or HOME")?,
    };
    let since = match args.since.as_deref() {
        None => None,
        Some(text) => Some(ledger::now_unix().saturating_sub(parse_since(text)?.as_secs())),
    };
    let loaded = ledger::store::load(&base.join("ledger"), since);
    for warning in &loaded.warnings {
        eprintln!("mcp-router: warning: {warning}");
    }
    let settings = match &args.config {
        Some(path) => {
            let strictness = router_config::Strictness::Lenient;
            router_config::load_config_file_with(path, strictness)?.settings.ledger
        }
        None => mcp_host::LedgerSettings::default(),
    };
    let report = ledger::report(&loaded.runs, &settings);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(0)
}

/// `30m`, `12h`, `7d`, `90s` as a duration.
fn parse_since(text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok().filter(|_| !number.is_empty()).with_context(|| {
        format!("--since: expected a number and a unit (90s, 30m, 12h, 7d), found `{text}`")
    })?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => bail!("--since: the unit must be s, m, h or d (90s, 30m, 12h, 7d), found `{text}`"),
    };
    Ok(Duration::from_secs(n.saturating_mul(seconds)))
}

/// The report as the terminal shows it: a line on the runs, the servers, the tools, the
/// warnings, and which server takes the most context and which is slowest.
pub(crate) fn table(report: &LedgerReport) -> String {
    if report.runs == 0 {
        return "no runs kept yet (a router adds its run to the ledger when it shuts down)\n"
            .to_string();
    }
    let mut out = format!("{} runs; tokens: {}\n\n", report.runs, report.tokenizer);
    out += &server_table(report);
    out += "\n";
    out += &tool_table(report);
    out += "\n";
    out += &summary(report);
    out
}

/// A row per server.
fn server_table(report: &LedgerReport) -> String {
    let header = [
        "SERVER",
        "SPECS",
        "SPEC TOKENS",
        "SHARE",
        "BEHIND SEARCH",
        "CALLS",
        "ERRORS",
        "P50",
        "P95",
        "TO MODEL",
        "TOKENS",
        "FROM SERVER",
        "RESTARTS",
        "HELD",
    ];
    let rows: Vec<Vec<String>> = report
        .servers
        .iter()
        .map(|s| {
            vec![
                s.server.clone(),
                s.tools_loaded.to_string(),
                s.spec_tokens_loaded.to_string(),
                format!("{:.0}%", 100.0 * s.context_share),
                format!("{} ({} tokens)", s.tools_deferred, s.spec_tokens_deferred),
                s.calls.to_string(),
                s.errors.to_string(),
                ms(s.p50_ms),
                ms(s.p95_ms),
                bytes(s.bytes_to_model),
                s.tokens_to_model.to_string(),
                bytes(s.bytes_from_server),
                s.restarts.to_string(),
                s.held.to_string(),
            ]
        })
        .collect();
    columns(&header, &rows)
}

/// A row per tool.
fn tool_table(report: &LedgerReport) -> String {
    let header = [
        "SERVER",
        "TOOL",
        "CALLS",
        "ERRORS",
        "P50",
        "P95",
        "MAX",
        "TO MODEL",
        "TOKENS",
        "FROM SERVER",
    ];
    let rows: Vec<Vec<String>> = report
        .tools
        .iter()
        .map(|t| {
            let errors: Vec<String> = t.errors.iter().map(|(k, n)| format!("{n} {k}")).collect();
            vec![
                t.server.clone(),
                t.tool.clone(),
                t.calls.to_string(),
                if errors.is_empty() { "0".into() } else { errors.join(", ") },
                ms(t.p50_ms),
                ms(t.p95_ms),
                ms(t.max_ms),
                bytes(t.bytes_to_model),
                t.tokens_to_model.to_string(),
                bytes(t.bytes_from_server),
            ]
        })
        .collect();
    columns(&header, &rows)
}

/// Which server takes the most context, which is slowest, and the warnings.
fn summary(report: &LedgerReport) -> String {
    let mut out = String::new();
    let servers = || report.servers.iter().filter(|s| s.server != ledger::ROUTER);
    let most = servers()
        .filter(|s| s.spec_tokens_loaded > 0)
        .max_by(|a, b| a.spec_tokens_loaded.cmp(&b.spec_tokens_loaded));
    let slowest = servers().filter(|s| s.calls > 0).max_by(|a, b| a.p95_ms.total_cmp(&b.p95_ms));
    let deferred = servers()
        .filter(|s| s.spec_tokens_deferred > 0)
        .max_by(|a, b| a.spec_tokens_deferred.cmp(&b.spec_tokens_deferred));
    match (most, deferred) {
        (Some(ServerCost { server, spec_tokens_loaded, context_share, .. }), _) => {
            out += &format!(
                "most context: {server} ({spec_tokens_loaded} spec tokens, {:.0}% of the specs)\n",
                100.0 * context_share
            )
        }
        (None, Some(ServerCost { server, tools_deferred, spec_tokens_deferred, .. })) => {
            out += &format!(
                "no MCP server's specs were loaded (all behind tool search); the most behind it: {server} ({tools_deferred} tools, {spec_tokens_deferred} tokens)\n"
            )
        }
        (None, None) => out += "no tool list was counted (the runs gave the model none)\n",
    }
    if let Some(ServerCost { server, p95_ms, .. }) = slowest {
        out += &format!("slowest: {server} (p95 {})\n", ms(*p95_ms));
    }
    for warning in &report.warnings {
        out += &format!("warning: {warning}\n");
    }
    out
}

/// Milliseconds as people read them.
fn ms(value: f64) -> String {
    match value {
        v if v >= 1000.0 => format!("{:.2} s", v / 1000.0),
        v if v >= 10.0 => format!("{v:.0} ms"),
        v => format!("{v:.1} ms"),
    }
}

/// Bytes as people read them.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1 << 20)),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// Left-aligned columns, two spaces apart.
fn columns(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> =
            cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}", w = *w)).collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        out += &line(row.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_number_and_a_unit() {
        assert_eq!(parse_since("90s").expect("ok"), Duration::from_secs(90));
        assert_eq!(parse_since("7d").expect("ok"), Duration::from_secs(7 * 86_400));
        for bad in ["", "h", "7", "7w", "-1h"] {
            let error = parse_since(bad).expect_err(bad).to_string();
            assert!(error.starts_with("--since:"), "{bad}: {error}");
        }
    }

    /// The table as a user reads it (servers, tools, the two lines, the warnings).
    #[test]
    fn the_table() {
        let tool = |server: &str, tool: &str, calls: u64, ms: f64| mcp_host::events::ToolCost {
            server: server.into(),
            tool: tool.into(),
            calls,
            errors: [("timeout".to_string(), 1)].into_iter().filter(|_| calls > 2).collect(),
            p50_ms: ms,
            p95_ms: ms * 3.0,
            max_ms: ms * 3.0,
            bytes_to_model: 2048 * calls,
            tokens_to_model: 500 * calls,
            bytes_from_server: 9000 * calls,
        };
        let tools = [tool("fetch", "fetch", 3, 400.0), tool("github", "search_issues", 2, 90.0)];
        let runs = [mcp_host::events::LedgerRun {
            at: 1,
            tokenizer: "o200k_base".into(),
            servers: ["fetch", "github"]
                .iter()
                .zip([(1, 300), (30, 12_000)])
                .map(|(server, (tools, bytes))| mcp_host::events::ServerSpecs {
                    server: server.to_string(),
                    tools_loaded: tools,
                    spec_bytes_loaded: bytes,
                    spec_tokens_loaded: bytes / 4,
                    restarts: u64::from(*server == "fetch"),
                    ..Default::default()
                })
                .collect(),
            tools: tools
                .iter()
                .map(|t| mcp_host::events::ToolCalls {
                    server: t.server.clone(),
                    tool: t.tool.clone(),
                    calls: t.calls,
                    errors: t.errors.clone(),
                    durations_us: (0..t.calls)
                        .map(|i| (t.p50_ms * 1000.0) as u64 * (i + 1))
                        .collect(),
                    bytes_to_model: t.bytes_to_model,
                    tokens_to_model: t.tokens_to_model,
                    bytes_from_server: t.bytes_from_server,
                })
                .collect(),
        }];
        let mut settings = mcp_host::LedgerSettings::default();
        settings.context_tokens = 50_000;
        insta::assert_snapshot!(table(&ledger::report(&runs, &settings)));
    }

    /// Runs whose host never asked for a tool list (the demo, a host that lists no tools) name
    /// no server as taking the most context.
    #[test]
    fn without_a_tool_list_no_server_is_said_to_take_the_most_context() {
        let run = mcp_host::events::LedgerRun {
            at: 1,
            tokenizer: "o200k_base".into(),
            servers: vec![],
            tools: vec![mcp_host::events::ToolCalls {
                server: "docs".into(),
                tool: "echo".into(),
                calls: 1,
                durations_us: vec![2000],
                ..Default::default()
            }],
        };
        let text = table(&ledger::report(&[run], &mcp_host::LedgerSettings::default()));
        assert!(
            text.contains("\nno tool list was counted (the runs gave the model none)\n"),
            "{text}"
        );
        assert!(text.contains("\nslowest: docs (p95 2.0 ms)\n"), "{text}");
    }

    /// With every MCP tool behind tool search only the router's specs are loaded: the line says
    /// so and names the server with the most behind it.
    #[test]
    fn with_every_tool_behind_search_the_most_behind_it_is_named() {
        let spec = |server: &str, loaded: u64, deferred: u64| mcp_host::events::ServerSpecs {
            server: server.into(),
            tools_loaded: u64::from(loaded > 0),
            spec_tokens_loaded: loaded,
            spec_bytes_loaded: loaded * 4,
            tools_deferred: 12,
            spec_tokens_deferred: deferred,
            ..Default::default()
        };
        let run = mcp_host::events::LedgerRun {
            at: 1,
            tokenizer: "o200k_base".into(),
            servers: vec![
                spec(ledger::ROUTER, 1331, 0),
                spec("files", 0, 1734),
                spec("git", 0, 1197),
            ],
            tools: vec![],
        };
        let text = table(&ledger::report(&[run], &mcp_host::LedgerSettings::default()));
        let line = "\nno MCP server's specs were loaded (all behind tool search); the most behind it: files (12 tools, 1734 tokens)\n";
        assert!(text.contains(line), "{text}");
    }

    #[test]
    fn no_runs_says_so() {
        assert!(table(&LedgerReport::default()).starts_with("no runs kept yet"));
    }
}
