//! E6, tool search (in-process: a backend that hands over generated tools, so the rows measure
//! the router, not transports): the specs' bytes with search on against off for 50 servers of
//! 20 tools, and the median `search_mcp_tools` call over 10,000 tools (the index cached after
//! the first search, as between a model's calls).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_backend::{QualifiedTool, json_len, qualified_tool_name};
use router_protocol::EventSender;
use tool_router::{CallContext, RouterSettings, ToolCall, ToolFormat, ToolRouter, ToolSearchMode};

use crate::options::manager_options;
use crate::row::Row;
use crate::workloads::{Prepared, median, show};

const VERBS: &[&str] = &["get", "list", "create", "update", "delete", "search", "export", "sync"];
const NOUNS: &[&str] = &[
    "issue",
    "invoice",
    "customer",
    "ticket",
    "report",
    "metric",
    "alert",
    "dashboard",
    "user",
    "project",
    "file",
    "message",
    "channel",
    "order",
    "payment",
    "deployment",
    "log",
    "trace",
    "build",
    "release",
];

/// `servers` × `per_server` tools with realistic names, descriptions and two parameters each.
fn tools(servers: usize, per_server: usize) -> Vec<QualifiedTool> {
    tools_named("svc", servers, per_server)
}

/// The same, the servers named `prefix0`, `prefix1`, … (texts the model has not seen).
fn tools_named(prefix: &str, servers: usize, per_server: usize) -> Vec<QualifiedTool> {
    let mut out = Vec::with_capacity(servers * per_server);
    for s in 0..servers {
        let server = format!("{prefix}{s}");
        for t in 0..per_server {
            let (verb, noun) = (VERBS[t % VERBS.len()], NOUNS[(t + s) % NOUNS.len()]);
            let name = format!("{verb}_{noun}_{t}");
            let description = format!(
                "{verb} a {noun} in service {server}: returns the {noun} record with its id, owner, status and timestamps; fails when the {noun} does not exist."
            );
            let schema = serde_json::json!({"type": "object", "properties": {
                "id": {"type": "string", "description": format!("The {noun}'s id.")},
                "fields": {"type": "array", "items": {"type": "string"}, "description": "Fields to return."}
            }, "required": ["id"]});
            let schema = schema.as_object().cloned().unwrap_or_default();
            out.push(QualifiedTool {
                qualified_name: qualified_tool_name(&server, &name),
                server: server.clone(),
                tool: rmcp::model::Tool::new(name, description, schema),
            });
        }
    }
    out
}

/// A router over `tools` (without the retrieval model: see [`with_model`]).
fn router(tools: Vec<QualifiedTool>, mode: ToolSearchMode) -> anyhow::Result<ToolRouter> {
    model_router(tools, mode, false)
}

fn model_router(
    tools: Vec<QualifiedTool>,
    mode: ToolSearchMode,
    model: bool,
) -> anyhow::Result<ToolRouter> {
    let mut backend = Prepared::new(Vec::new(), Duration::ZERO);
    backend.tools = Arc::new(tools);
    let settings = RouterSettings::default().with(|s| {
        s.search.mode = mode;
        s.search.model = model;
        s.data.enabled = false;
    });
    Ok(ToolRouter::with_mcp_settings(Arc::new(backend), &settings)?)
}

async fn spec_bytes(router: &ToolRouter) -> usize {
    router.specs().await.iter().map(|s| json_len(&s.to_format(ToolFormat::OpenAi))).sum()
}

/// `reps` `search_mcp_tools` calls through `router` after one that builds the index: each
/// call's time.
async fn search_times(router: &ToolRouter, reps: usize) -> anyhow::Result<Vec<Duration>> {
    let ctx = CallContext::new(EventSender::discard());
    let queries = ["create an invoice", "list deployment logs", "export the metric dashboard"];
    let mut samples = Vec::with_capacity(reps);
    for i in 0..=reps {
        let arguments = serde_json::json!({"query": queries[i % queries.len()]}).to_string();
        let call = ToolCall {
            call_id: format!("q{i}"),
            name: "search_mcp_tools".into(),
            arguments: arguments.into(),
        };
        let started = Instant::now();
        router.dispatch(&ctx, call).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        if i > 0 {
            samples.push(started.elapsed()); // the first call builds the index
        }
        router.reset_revealed_tools();
    }
    Ok(samples)
}

/// The 95th percentile of `samples`.
fn p95(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[(samples.len() - 1) * 95 / 100]
}

/// A row for the 95th percentile of `samples`, within `most` (`target` says so).
fn p95_row(
    name: &'static str,
    samples: Vec<Duration>,
    most: Duration,
    target: &'static str,
) -> Row {
    let p95 = p95(samples);
    Row {
        name,
        baseline: "—".into(),
        router: show(p95),
        ratio: p95.as_secs_f64() / most.as_secs_f64(),
        target,
        met: Some(p95 <= most),
    }
}

pub(crate) async fn rows(quick: bool) -> anyhow::Result<Vec<Row>> {
    let fifty = tools(50, 20);
    let off = spec_bytes(&router(fifty.clone(), ToolSearchMode::Off)?).await;
    let on = spec_bytes(&router(fifty, ToolSearchMode::On)?).await;
    let share = on as f64 / off as f64;
    let reps = if quick { 50 } else { 300 };
    let thousand = search_times(&router(tools(50, 20), ToolSearchMode::On)?, reps).await?;
    let samples = search_times(&router(tools(500, 20), ToolSearchMode::On)?, reps).await?;
    let latency = median(samples.clone());
    Ok(vec![
        Row {
            name: "E6 specs of 50 servers × 20 tools as OpenAI tools: tool search on vs off (bytes)",
            baseline: format!("{off} B"),
            router: format!("{on} B"),
            ratio: share,
            target: "≤ 0.05",
            met: Some(share <= 0.05),
        },
        Row {
            name: "E6 search_mcp_tools over 10,000 tools, median call (index cached)",
            baseline: "—".into(),
            router: show(latency),
            ratio: latency.as_secs_f64() * 1e3,
            target: "≤ 1 ms",
            met: Some(latency <= Duration::from_millis(1)),
        },
        p95_row(
            "E6 search_mcp_tools over 1,000 tools, 95th percentile call (index cached)",
            thousand,
            Duration::from_millis(5),
            "≤ 5 ms (ratio to it)",
        ),
        p95_row(
            "E6 search_mcp_tools over 10,000 tools, 95th percentile call (index cached)",
            samples,
            Duration::from_millis(20),
            "≤ 20 ms (ratio to it)",
        ),
    ])
}

/// E6 with real servers: 50 stdio bench servers of 20 tools whose catalogs a first run saved,
/// tool search on. The time from starting the manager to the first specs (no server started),
/// and the child processes alive after one search and one call (the called tool's server).
pub(crate) async fn unstarted(quick: bool) -> anyhow::Result<Vec<Row>> {
    use mcp_connection_manager::{McpConnectionManager, ToolCache};
    let dir = std::env::temp_dir().join(format!("mcp-router-bench-e6-{}", std::process::id()));
    let cache = ToolCache::at(dir.join("tools"));
    let options = crate::server::Options { tools: 20, ..crate::workloads::read_options(16) };
    let servers = (0..50)
        .map(|i| crate::workloads::bench_server(&format!("s{i:02}"), &options))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let learn = manager_options().with(|o| o.startup.tool_cache = Some(cache.clone()));
    let manager = McpConnectionManager::start(servers.clone(), EventSender::discard(), learn);
    manager.wait_until_started().await;
    manager.shutdown().await;
    let names: std::collections::BTreeSet<String> =
        servers.iter().map(|s| s.name.clone()).collect();
    let settings = RouterSettings::default().with(|s| {
        s.search.mode = ToolSearchMode::On;
        s.data.enabled = false;
    });
    let (mut samples, mut alive) = (Vec::new(), usize::MAX);
    for rep in 0..(if quick { 3 } else { 7 }) {
        let started = Instant::now();
        let options = manager_options().with(|o| {
            o.startup.tool_cache = Some(cache.clone());
            o.startup.lazy_when_cataloged = names.clone();
        });
        let running = crate::workloads::assembled(
            servers.clone(),
            options,
            settings.clone(),
            EventSender::discard(),
        )?;
        let (manager, router) = (running.manager.clone(), running.router.clone());
        let specs = router.specs().await;
        samples.push(started.elapsed());
        anyhow::ensure!(
            !specs.iter().any(|s| s.name.starts_with("mcp__")),
            "MCP tools in the base"
        );
        if rep == 0 {
            let ctx = CallContext::new(EventSender::discard());
            let arguments =
                serde_json::json!({"query": "bench tool 7", "server": "s07"}).to_string();
            let search = ToolCall {
                call_id: "s".into(),
                name: "search_mcp_tools".into(),
                arguments: arguments.into(),
            };
            router.dispatch_to_output(&ctx, search).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            let call = ToolCall {
                call_id: "c".into(),
                name: "mcp__s07__t7".into(),
                arguments: "{}".into(),
            };
            router.dispatch_to_output(&ctx, call).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            alive = manager.child_pids().len();
        }
        manager.shutdown().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let first = median(samples);
    Ok(vec![
        Row {
            name: "E6 first specs, 50 stdio servers × 20 tools with catalogs, tool search on (none started)",
            baseline: "—".into(),
            router: show(first),
            ratio: first.as_secs_f64() * 1e3,
            target: "≤ 20 ms",
            met: Some(first <= Duration::from_millis(20)),
        },
        Row {
            name: "E6 same, server processes alive after one search and one call",
            baseline: "—".into(),
            router: alive.to_string(),
            ratio: alive as f64,
            target: "1",
            met: Some(alive == 1),
        },
    ])
}

/// E6 with the retrieval model (`scripts/install-search-model`; the rows say so when it is not
/// installed): the first search while 400 tools are being embedded (it never waits for them),
/// the 95th percentile call over 1,000 tools once every one is embedded, the time to embed
/// them (one thread, in the background), and the memory the model takes.
pub(crate) async fn with_model(quick: bool) -> anyhow::Result<Vec<Row>> {
    if !tool_router::retrieval::settle() {
        return Ok(vec![Row {
            name: "E6 search with the retrieval model",
            baseline: "—".into(),
            router: "not installed (scripts/install-search-model)".into(),
            ratio: f64::NAN,
            target: "installed",
            met: None,
        }]);
    }
    let loaded = tool_router::retrieval::model_bytes().unwrap_or(0) / 1024;
    // Tools no earlier run embedded (kept embeddings would answer at once).
    let fresh = format!("run{}x", std::process::id());
    let four_hundred = model_router(tools_named(&fresh, 20, 20), ToolSearchMode::On, true)?;
    let first = search_times(&four_hundred, 1).await?;
    // Those embedded first, so the next row times its own tools alone.
    tool_router::retrieval::settle();
    let (servers, reps) = if quick { (20, 30) } else { (50, 200) };
    let others = format!("{fresh}b");
    let thousand = model_router(tools_named(&others, servers, 20), ToolSearchMode::On, true)?;
    let started = Instant::now();
    search_times(&thousand, 1).await?;
    tool_router::retrieval::settle();
    let indexing = started.elapsed();
    let samples = search_times(&thousand, reps).await?;
    let count = servers * 20;
    let row_name: &'static str = if quick {
        "E6 search_mcp_tools over 400 tools with the retrieval model, 95th percentile call (all embedded)"
    } else {
        "E6 search_mcp_tools over 1,000 tools with the retrieval model, 95th percentile call (all embedded)"
    };
    Ok(vec![
        p95_row(
            "E6 the first search while 400 tools are being embedded (the retrieval model loaded)",
            first,
            Duration::from_millis(50),
            "≤ 50 ms (ratio to it)",
        ),
        p95_row(row_name, samples, Duration::from_millis(50), "≤ 50 ms (ratio to it)"),
        Row {
            name: "E6 the retrieval model embeds the tools in the background (every core but one, at most four: one on two cores), per tool",
            baseline: "—".into(),
            router: format!("{} for {count}", show(indexing)),
            ratio: indexing.as_secs_f64() * 1e3 / count as f64,
            target: "ms per tool (no target)",
            met: None,
        },
        Row {
            name: "E6 memory the retrieval model holds once loaded (its weights as expanded and its tokenizer, MiB)",
            baseline: "—".into(),
            router: format!("{:.1} MiB", loaded as f64 / 1024.0),
            ratio: loaded as f64 / 1024.0,
            target: "≤ 64 MiB",
            met: Some(loaded <= 64 * 1024),
        },
    ])
}

/// E6's quality rows: the development set (`crates/tool-router/tests/data/search_eval`: 21
/// packaged servers' catalogs, 170 needs in a tuning and a held-out half) through
/// `search_mcp_tools` as a model calls it (limit 5, then `more`), with the retrieval model and
/// without: recall@5 and how often the right tool is in front of the model (revealed or named).
/// Without the model installed, one row says so.
pub(crate) async fn quality() -> anyhow::Result<Vec<Row>> {
    let (tools, needs) = development_set()?;
    let words = model_router(tools.clone(), ToolSearchMode::On, false)?;
    let fused = model_router(tools, ToolSearchMode::On, true)?;
    ranked(&fused, "warm up").await?;
    if !tool_router::retrieval::settle() {
        anyhow::bail!("the retrieval model is not installed (scripts/install-search-model)");
    }
    let mut rows = Vec::new();
    for half in ["tune", "held"] {
        // [words, fused] × [at 5, in front]
        let mut counts = [[0usize; 2]; 2];
        let mine: Vec<&(String, String, Vec<String>)> =
            needs.iter().filter(|(_, h, _)| h == half).collect();
        for (text, _, expected) in &mine {
            for (which, router) in [&words, &fused].into_iter().enumerate() {
                let names = ranked(router, text).await?;
                if let Some(at) = names.iter().position(|n| expected.contains(n)) {
                    counts[which][0] += usize::from(at < 5);
                    counts[which][1] += 1;
                }
            }
        }
        rows.extend(quality_rows(half, mine.len(), counts));
    }
    Ok(rows)
}

/// The two rows of one half: recall@5 and in front, words (the baseline) against fused.
fn quality_rows(half: &str, total: usize, counts: [[usize; 2]; 2]) -> Vec<Row> {
    let held = half == "held";
    let names: [&'static str; 2] = if held {
        [
            "E6 development set, held-out half: recall@5, fused with the model vs words alone",
            "E6 development set, held-out half: the right tool in front (revealed or named), fused vs words",
        ]
    } else {
        [
            "E6 development set, tuning half: recall@5, fused with the model vs words alone",
            "E6 development set, tuning half: the right tool in front (revealed or named), fused vs words",
        ]
    };
    let share = |n: usize| n as f64 / total.max(1) as f64;
    (0..2)
        .map(|i| {
            let what = ["recall@5", "in front"][i];
            let (base, ours) = (share(counts[0][i]), share(counts[1][i]));
            Row {
                name: names[i],
                baseline: format!("{what} {base:.3}"),
                router: format!("{what} {ours:.3}"),
                ratio: ours / base,
                target: "> 1 (the model lifts it)",
                met: Some(ours > base),
            }
        })
        .collect()
}

/// The development set: its tools, and each need with its half and the tools that do the job.
type Needs = Vec<(String, String, Vec<String>)>;

fn development_set() -> anyhow::Result<(Vec<QualifiedTool>, Needs)> {
    let catalogs: Vec<serde_json::Value> = serde_json::from_str(include_str!(
        "../../tool-router/tests/data/search_eval/catalogs.json"
    ))?;
    let needs: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("../../tool-router/tests/data/search_eval/needs.json"))?;
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let tools = catalogs
        .iter()
        .map(|row| {
            let (server, name) = (text(&row["server"]), text(&row["name"]));
            let schema = row["inputSchema"].as_object().cloned().unwrap_or_default();
            let mut tool = rmcp::model::Tool::new(name.clone(), text(&row["description"]), schema);
            tool.title = row["title"].as_str().map(str::to_string);
            QualifiedTool { qualified_name: qualified_tool_name(&server, &name), server, tool }
        })
        .collect();
    let needs = needs
        .iter()
        .map(|need| {
            let expected = need["expected"].as_array().into_iter().flatten();
            let expected = expected
                .filter_map(|e| e.as_str()?.split_once('/'))
                .map(|(server, tool)| qualified_tool_name(server, tool))
                .collect();
            (text(&need["need"]), text(&need["half"]), expected)
        })
        .collect();
    Ok((tools, needs))
}

/// Every E6 workload's rows, in order.
pub(crate) async fn every(quick: bool) -> Vec<anyhow::Result<Vec<Row>>> {
    vec![rows(quick).await, unstarted(quick).await, with_model(quick).await, quality().await]
}

/// The tools one `search_mcp_tools` call puts in front of the model, in order: the revealed
/// ones, then the ones named in `more`.
async fn ranked(router: &ToolRouter, query: &str) -> anyhow::Result<Vec<String>> {
    let ctx = CallContext::new(EventSender::discard());
    let arguments = serde_json::json!({"query": query}).to_string();
    let call = ToolCall {
        call_id: "q".into(),
        name: "search_mcp_tools".into(),
        arguments: arguments.into(),
    };
    let output = router.dispatch_to_output(&ctx, call).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    router.reset_revealed_tools();
    let tool_router::ToolOutput::Function { content, .. } = output else {
        anyhow::bail!("search_mcp_tools answered with a tool result");
    };
    let found: serde_json::Value = serde_json::from_str(&content).unwrap_or_default();
    let revealed = found["tools"].as_array().cloned().unwrap_or_default();
    let named = found["more"].as_array().cloned().unwrap_or_default();
    Ok(revealed
        .iter()
        .chain(&named)
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect())
}
