//! The dispatch fuzzer: random and hostile tool names and arguments, and the oracle every call
//! must satisfy (no panic, never `Fatal`, exactly one end event for a begin). Shared by the unit
//! tests (`fuzz_tests`) and, behind the `fuzzing` feature, by the campaign command of the bench
//! binary (`mcp-router-bench fuzz`), which runs it against this fake backend and against a live
//! demo server.

use std::sync::Arc;

use data_sources::{DataSources, QueryLimits};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use router_protocol::{EventMsg, event_channel};
use serde_json::{Value, json};

pub use proptest::strategy::BoxedStrategy;

use crate::invocation::{CallContext, FunctionCallError, ToolCall};
use crate::results::content::ContentPolicy;
use crate::router::ToolRouter;
use crate::test_support::{FakeBackend, FakeServer, resource, tool};

/// The server name of [`fake_router`].
pub const FAKE_SERVER: &str = "figma";

/// A router over a scripted backend with one server, `figma`: resources (one a CSV), a
/// template, tools `echo` and `fail`, completions, one item per page; data sources on.
pub fn fake_router() -> ToolRouter {
    let server = FakeServer {
        resources: vec![resource("memo://1", "memo"), resource("f://data.csv", "data")],
        templates: vec![rmcp::model::ResourceTemplate::new("memo://{id}{?q}", "memo")],
        tools: vec![tool("echo"), tool("fail")],
        completions: Some(vec!["alpha".into(), "beta".into()]),
        page_size: 1,
        ..Default::default()
    };
    let data = Arc::new(DataSources::new(QueryLimits::default()).expect("db"));
    ToolRouter::build(
        FakeBackend::with(vec![(FAKE_SERVER, server)]),
        ContentPolicy::default(),
        Some(data),
        Default::default(),
        Default::default(),
    )
}

/// One generated call.
#[derive(Debug, Clone)]
pub struct Case {
    /// The tool name.
    pub name: String,
    /// The arguments as JSON text (often not JSON, or not an object).
    pub arguments: String,
}

/// JSON values up to a few levels deep with hostile strings, naming `server` sometimes.
fn json_value(server: String, uri: String) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "\\PC{0,40}".prop_map(Value::String),
        Just(json!("memo://{id}")),
        Just(Value::String(server)),
        Just(Value::String(uri)),
        Just(json!("SELECT 1; DROP TABLE x")),
        Just(json!("x".repeat(70_000))),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("server".to_string()),
                    Just("uri".to_string()),
                    Just("cursor".to_string()),
                    Just("template".to_string()),
                    Just("parameters".to_string()),
                    Just("offset".to_string()),
                    Just("max_bytes".to_string()),
                    Just("argument".to_string()),
                    Just("value".to_string()),
                    Just("sql".to_string()),
                    Just("query".to_string()),
                    Just("limit".to_string()),
                    "\\PC{0,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arguments(server: &str, uri: &str) -> impl Strategy<Value = String> + use<> {
    prop_oneof![
        json_value(server.to_string(), uri.to_string()).prop_map(|v| v.to_string()),
        "\\PC{0,60}",
        Just(String::new()),
        Just("[".repeat(10_000)),
        Just(format!("{{\"cursor\":\"{}\"}}", "c".repeat(200_000))),
        Just(format!("{{\"server\":\"{server}\",\"uri\":\"memo://\\u0000\"}}")),
        Just(format!("{{\"server\":\"{server}\",\"uri\":\"{uri}\"}}")),
    ]
}

fn name(server: &str, tools: &[String]) -> impl Strategy<Value = String> + use<> {
    let mut names: Vec<String> = [
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
        "complete_mcp_resource_argument",
        "query_mcp_data",
        "list_mcp_data_sources",
        "mcp__",
    ]
    .iter()
    .map(|n| n.to_string())
    .collect();
    names.push(format!("mcp__{server}__"));
    names.extend(tools.iter().map(|t| format!("mcp__{server}__{t}")));
    prop_oneof![
        4 => proptest::sample::select(names),
        1 => "\\PC{0,80}",
        1 => "mcp__[a-z_]{0,10}__\\PC{0,10}",
    ]
}

/// The calls against `server` offering `tools` (original names) and a resource at `uri`.
pub fn cases(server: &str, tools: &[String], uri: &str) -> BoxedStrategy<Case> {
    (name(server, tools), arguments(server, uri))
        .prop_map(|(name, arguments)| Case { name, arguments })
        .boxed()
}

/// An endless, reproducible stream of cases (one per `next`), for a campaign.
pub struct CaseStream {
    runner: TestRunner,
    strategy: BoxedStrategy<Case>,
}

impl CaseStream {
    /// Cases from `strategy`, seeded by `seed`.
    pub fn new(strategy: BoxedStrategy<Case>, seed: u64) -> Self {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
        Self { runner: TestRunner::new_with_rng(Config::default(), rng), strategy }
    }

    /// The next case.
    pub fn next_case(&mut self) -> Option<Case> {
        self.strategy.new_tree(&mut self.runner).ok().map(|tree| tree.current())
    }
}

/// What one call did, judged by the oracle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// An output or a model-visible error, with paired events: as it must be.
    Answered,
    /// `Err(Fatal)`: only a shut-down backend may produce it.
    Fatal(String),
    /// Begin and end events did not pair up (or more than one call's worth).
    Unpaired {
        /// `mcp_tool_call_begin` events seen.
        begins: usize,
        /// `mcp_tool_call_end` events seen.
        ends: usize,
    },
}

/// Dispatch `case` through `router` with a fresh event stream and judge it.
pub async fn run_case(router: &ToolRouter, case: Case) -> Verdict {
    let (events, mut rx) = event_channel();
    let ctx = CallContext::new(events);
    let call =
        ToolCall { call_id: "fuzz".into(), name: case.name, arguments: case.arguments.into() };
    let outcome = router.dispatch(&ctx, call).await;
    drop(ctx);
    let (mut begins, mut ends) = (0, 0);
    while let Ok(event) = rx.try_recv() {
        match event {
            EventMsg::McpToolCallBegin(_) => begins += 1,
            EventMsg::McpToolCallEnd(_) => ends += 1,
            _ => {}
        }
    }
    match outcome {
        Err(FunctionCallError::Fatal(message)) => Verdict::Fatal(message),
        _ if begins != ends || begins > 1 => Verdict::Unpaired { begins, ends },
        _ => Verdict::Answered,
    }
}
