//! Bad input against every tool: random and hostile tool names and arguments through the whole
//! router (templates, completion, data sources on). Nothing may panic, every call gets exactly one
//! answer that is an output or a model-visible error (never `Fatal`), and every begin event is
//! paired with one end event. `PROPTEST_CASES` raises the case count for a longer campaign.

use std::sync::Arc;

use data_sources::{DataSources, QueryLimits};
use proptest::prelude::*;
use router_protocol::EventMsg;
use serde_json::{Value, json};

use crate::content::ContentPolicy;
use crate::invocation::{FunctionCallError, ToolCall};
use crate::router::ToolRouter;
use crate::test_support::{FakeBackend, FakeServer, context, drain, resource, tool};

fn router() -> ToolRouter {
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
        FakeBackend::with(vec![("figma", server)]),
        ContentPolicy::default(),
        Some(data),
    )
}

const NAMES: &[&str] = &[
    "list_mcp_resources",
    "list_mcp_resource_templates",
    "read_mcp_resource",
    "complete_mcp_resource_argument",
    "query_mcp_data",
    "list_mcp_data_sources",
    "mcp__figma__echo",
    "mcp__figma__fail",
    "mcp__figma__",
    "mcp__",
];

/// JSON values up to a few levels deep with hostile strings.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "\\PC{0,40}".prop_map(Value::String),
        Just(json!("memo://{id}")),
        Just(json!("figma")),
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
                    "\\PC{0,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        json_value().prop_map(|v| v.to_string()),
        "\\PC{0,60}",
        Just(String::new()),
        Just("[".repeat(10_000)),
        Just(format!("{{\"cursor\":\"{}\"}}", "c".repeat(200_000))),
        Just("{\"server\":\"figma\",\"uri\":\"memo://\\u0000\"}".to_string()),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(NAMES).prop_map(String::from),
        1 => "\\PC{0,80}",
        1 => "mcp__[a-z_]{0,10}__\\PC{0,10}",
    ]
}

fn check(
    runtime: &tokio::runtime::Runtime,
    router: &ToolRouter,
    name: String,
    arguments: String,
) -> Result<(), TestCaseError> {
    let (ctx, mut rx) = context();
    let call = ToolCall { call_id: "fuzz".into(), name, arguments: arguments.into() };
    let outcome = runtime.block_on(router.dispatch(&ctx, call));
    prop_assert!(!matches!(outcome, Err(FunctionCallError::Fatal(_))), "fatal: {outcome:?}");
    let events = drain(&mut rx);
    let begins = events.iter().filter(|e| matches!(e, EventMsg::McpToolCallBegin(_))).count();
    let ends = events.iter().filter(|e| matches!(e, EventMsg::McpToolCallEnd(_))).count();
    prop_assert_eq!(begins, ends);
    prop_assert!(begins <= 1);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn any_call_gets_one_answer_and_never_panics(name in name(), arguments in arguments()) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
        let router = router();
        check(&runtime, &router, name, arguments)?;
    }
}

/// Interesting inputs kept as regressions.
#[test]
fn corpus() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let router = router();
    let cases: &[(&str, &str)] = &[
        (
            "read_mcp_resource",
            r#"{"server":"figma","template":"memo://{id}{?q}","parameters":{"id":["a",["b"]]}}"#,
        ),
        (
            "read_mcp_resource",
            r#"{"server":"figma","uri":"memo://1","offset":18446744073709551615}"#,
        ),
        ("read_mcp_resource", r#"{"server":"figma","uri":"memo://1","max_bytes":0}"#),
        (
            "read_mcp_resource",
            r#"{"server":"figma","template":"{+x:9999}","parameters":{"x":"é"}}"#,
        ),
        ("read_mcp_resource", r#"{"server":"figma","template":"{","parameters":{}}"#),
        ("list_mcp_resources", r#"{"server":"figma","cursor":"\u0000"}"#),
        (
            "query_mcp_data",
            r#"{"sql":"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r LIMIT 100000) SELECT n FROM r"}"#,
        ),
        ("query_mcp_data", r#"{"sql":"SELECT load_extension('x')"}"#),
        ("query_mcp_data", r#"{"sql":"/* */ -- \n VALUES (1)"}"#),
        (
            "complete_mcp_resource_argument",
            r#"{"server":"figma","template":"memo://{id}{?q}","argument":"id","value":"\u0000"}"#,
        ),
        ("mcp__figma__echo", "null"),
        ("mcp__figma__echo", "[]"),
        ("mcp__figma__echo", r#"{"text":"\ud800"}"#),
        ("\u{0}", ""),
        ("mcp__\u{1F600}__x", "{}"),
    ];
    for (name, arguments) in cases {
        check(&runtime, &router, name.to_string(), arguments.to_string())
            .unwrap_or_else(|e| panic!("{name} {arguments}: {e}"));
    }
}
