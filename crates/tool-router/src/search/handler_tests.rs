use std::collections::BTreeSet;
use std::sync::Arc;

use router_protocol::EventMsg;
use serde_json::{Value, json};

use crate::ToolRouter;
use crate::invocation::{ToolCall, ToolOutput};
use crate::results::content::ContentPolicy;
use crate::search::mode::{ToolSearch, ToolSearchMode};
use crate::test_support::{FakeBackend, FakeServer, context, drain};

fn described(name: &str, description: &str) -> rmcp::model::Tool {
    let parameter = if description.contains("time") { "timezone" } else { "path" };
    let schema = json!({"type": "object", "properties": {parameter: {"type": "string"}}});
    rmcp::model::Tool::new(
        name.to_string(),
        description.to_string(),
        schema.as_object().cloned().unwrap_or_default(),
    )
}

fn backend() -> Arc<FakeBackend> {
    let time = FakeServer {
        tools: vec![
            described("get_current_time", "Get the current time in a timezone."),
            described("convert_time", "Convert a time between timezones."),
        ],
        ..Default::default()
    };
    let files = FakeServer {
        tools: vec![
            described("read_file", "Read the contents of a file."),
            described("write_file", "Write a file."),
            described("list_directory", "List the entries of a directory."),
        ],
        ..Default::default()
    };
    FakeBackend::with(vec![("time", time), ("files", files)])
}

fn router(mode: ToolSearchMode, threshold: usize, always: &[&str]) -> ToolRouter {
    let always: BTreeSet<String> = always.iter().map(|s| s.to_string()).collect();
    let search = ToolSearch::new(mode, threshold, always);
    ToolRouter::build(backend(), ContentPolicy::default(), None, Default::default(), search)
}

async fn names(router: &ToolRouter) -> Vec<String> {
    router.specs().await.into_iter().map(|s| s.name).collect()
}

async fn call(router: &ToolRouter, name: &str, arguments: Value) -> (ToolOutput, Vec<EventMsg>) {
    let (ctx, mut rx) = context();
    let call = ToolCall {
        call_id: "s1".into(),
        name: name.into(),
        arguments: arguments.to_string().into(),
    };
    let output = router.dispatch_to_output(&ctx, call).await.expect("not fatal");
    (output, drain(&mut rx))
}

fn payload(output: &ToolOutput) -> Value {
    let ToolOutput::Function { content, success: Some(true), .. } = output else {
        panic!("{output:?}")
    };
    serde_json::from_str(content.as_str()).expect("json")
}

const BASE: [&str; 5] = [
    "complete_mcp_resource_argument",
    "list_mcp_resource_templates",
    "list_mcp_resources",
    "read_mcp_resource",
    "search_mcp_tools",
];

#[tokio::test]
async fn search_reveals_what_it_finds_after_a_stable_base_and_calls_reveal_too() {
    let router = router(ToolSearchMode::On, 0, &[]);
    let base: Vec<String> = names(&router).await;
    assert_eq!(
        base.iter().filter(|n| !n.starts_with("complete")).cloned().collect::<Vec<_>>(),
        BASE[1..]
    );
    let (output, events) = call(
        &router,
        "search_mcp_tools",
        json!({"query": "current time in a timezone", "limit": 1}),
    )
    .await;
    let found = payload(&output);
    assert_eq!(found["tools"][0]["name"], "mcp__time__get_current_time");
    assert_eq!(found["tools"][0]["server"], "time");
    assert_eq!(found["tools"][0]["input_schema"]["properties"]["timezone"]["type"], "string");
    assert_eq!(found["total"], 2, "both time tools match; one shown");
    let revealed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            EventMsg::McpToolsRevealed(r) => Some(r.tools.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(revealed, vec![vec!["mcp__time__get_current_time".to_string()]]);
    let after_one = names(&router).await;
    assert_eq!(after_one[..base.len()], base[..], "the base is a prefix");
    assert_eq!(after_one[base.len()..], ["mcp__time__get_current_time"]);
    // A call by name reveals too, appended after what is there.
    let (_, events) = call(&router, "mcp__files__write_file", json!({})).await;
    assert!(events.iter().any(
        |e| matches!(e, EventMsg::McpToolsRevealed(r) if r.tools == ["mcp__files__write_file"])
    ));
    let after_two = names(&router).await;
    assert_eq!(after_two[..after_one.len()], after_one[..], "the earlier specs are a prefix");
    assert_eq!(after_two.last().map(String::as_str), Some("mcp__files__write_file"));
    assert_eq!(
        router.revealed_tools(),
        Some(vec!["mcp__time__get_current_time".to_string(), "mcp__files__write_file".to_string()])
    );
    assert_eq!(router.revealed_count(), Some(2));
    // Found again: nothing new.
    let (_, events) = call(&router, "search_mcp_tools", json!({"query": "current time"})).await;
    assert!(
        events
            .iter()
            .filter_map(|e| match e {
                EventMsg::McpToolsRevealed(r) => Some(r.tools.clone()),
                _ => None,
            })
            .all(|t| !t.contains(&"mcp__time__get_current_time".to_string()))
    );
    assert_eq!(router.reset_revealed_tools(), 3, "get_current_time, write_file and convert_time");
    assert_eq!(names(&router).await, base);
}

#[tokio::test]
async fn bad_searches_are_refused_in_words() {
    let router = router(ToolSearchMode::On, 0, &[]);
    let refused = |output: ToolOutput| match output {
        ToolOutput::Function { content, success: Some(false), .. } => content.as_str().to_string(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused(call(&router, "search_mcp_tools", json!({"query": "  "})).await.0),
        "query must be provided: describe the tool you need"
    );
    assert_eq!(
        refused(call(&router, "search_mcp_tools", json!({"query": "x", "limit": 0})).await.0),
        "limit must be a positive integer, got 0"
    );
    assert_eq!(
        refused(call(&router, "search_mcp_tools", json!({"query": "x", "limit": -2})).await.0),
        "limit must be a positive integer, got -2"
    );
    assert_eq!(
        refused(call(&router, "search_mcp_tools", json!({"query": "x", "server": "nope"})).await.0),
        "unknown server \"nope\": the servers with tools are files, time"
    );
    let only_files = payload(
        &call(&router, "search_mcp_tools", json!({"query": "time file", "server": "files"}))
            .await
            .0,
    );
    assert!(
        only_files["tools"].as_array().is_some_and(|t| t.iter().all(|t| t["server"] == "files")),
        "{only_files}"
    );
}

#[tokio::test]
async fn auto_turns_on_past_the_threshold_and_off_is_todays_list() {
    let under = router(ToolSearchMode::Auto, 1 << 20, &[]);
    let all = names(&under).await;
    assert!(
        all.contains(&"mcp__files__read_file".to_string())
            && !all.contains(&"search_mcp_tools".to_string())
    );
    let off = router(ToolSearchMode::Off, 0, &[]);
    assert_eq!(off.specs().await, under.specs().await, "off: every tool, as before");
    assert_eq!(off.revealed_tools(), None);
    assert_eq!(off.revealed_count(), None);
    let over = router(ToolSearchMode::Auto, 100, &[]);
    let deferred = names(&over).await;
    assert!(
        deferred.contains(&"search_mcp_tools".to_string())
            && !deferred.iter().any(|n| n.starts_with("mcp__")),
        "{deferred:?}"
    );
    assert_eq!(over.revealed_tools(), Some(vec![]));
    assert_eq!(over.revealed_count(), Some(0));
}

#[tokio::test]
async fn always_loaded_servers_stay_in_the_base() {
    let router = router(ToolSearchMode::On, 0, &["time"]);
    let names = names(&router).await;
    assert!(
        names.contains(&"mcp__time__convert_time".to_string())
            && !names.contains(&"mcp__files__read_file".to_string()),
        "{names:?}"
    );
    let (_, events) = call(&router, "search_mcp_tools", json!({"query": "time"})).await;
    assert!(
        !events.iter().any(|e| matches!(e, EventMsg::McpToolsRevealed(_))),
        "already in the specs"
    );
}

fn router_via(via: crate::SearchVia) -> ToolRouter {
    let search = ToolSearch::new(ToolSearchMode::On, 0, BTreeSet::new()).via(via);
    ToolRouter::build(backend(), ContentPolicy::default(), None, Default::default(), search)
}

#[tokio::test]
async fn api_deferral_lists_every_mcp_tool_deferred_in_both_formats() {
    use crate::ToolFormat;
    let api = router_via(crate::SearchVia::Api);
    let openai = api.tool_list(ToolFormat::OpenAi).await;
    let names: Vec<&str> = openai.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!names.contains(&"search_mcp_tools"), "the API searches: {names:?}");
    insta::assert_json_snapshot!(
        "deferred_openai",
        openai.iter().filter(|t| t["type"] != "function").collect::<Vec<_>>()
    );
    let anthropic = api.tool_list(ToolFormat::Anthropic).await;
    insta::assert_json_snapshot!(
        "deferred_anthropic",
        anthropic
            .iter()
            .filter(|t| t.get("input_schema").is_none() || t.get("defer_loading").is_some())
            .collect::<Vec<_>>()
    );
    // A call by name works and reveals nothing (the API loads tools itself).
    let (_, events) = call(&api, "mcp__time__convert_time", json!({})).await;
    assert!(!events.iter().any(|e| matches!(e, EventMsg::McpToolsRevealed(_))));
    // Both: the router's search tool too.
    let both = router_via(crate::SearchVia::Both).tool_list(ToolFormat::Anthropic).await;
    assert!(both.iter().any(|t| t["name"] == "search_mcp_tools"));
    assert!(both.iter().any(|t| t["name"] == "tool_search_tool_bm25"));
    // Router (the default): no deferral in the list.
    let plain = router_via(crate::SearchVia::Router).tool_list(ToolFormat::OpenAi).await;
    assert!(plain.iter().all(|t| t.get("defer_loading").is_none() && t["type"] == "function"));
}

/// Past the limit, the next hits are named with a line each, not revealed; one of them called by
/// name runs (and is revealed then). The names and lines stay within their byte bound.
#[tokio::test]
async fn the_hits_past_the_limit_are_named_and_callable_without_another_search() {
    let router = router(ToolSearchMode::On, 0, &[]);
    let (output, _) =
        call(&router, "search_mcp_tools", json!({"query": "file directory", "limit": 1})).await;
    let found = payload(&output);
    insta::assert_json_snapshot!("search_names_the_hits_past_the_limit", found["more"]);
    assert_eq!(found["tools"].as_array().map(Vec::len), Some(1));
    let more = found["more"].as_array().expect("more names");
    assert_eq!(more.len() + 1, found["total"].as_u64().expect("total") as usize, "{found}");
    let named: Vec<&str> = more.iter().filter_map(|m| m["name"].as_str()).collect();
    assert!(named.iter().all(|n| n.starts_with("mcp__files__")), "{named:?}");
    assert!(more.iter().all(|m| m["summary"].as_str().is_some_and(|s| !s.is_empty())), "{found}");
    assert_eq!(router.revealed_count(), Some(1), "named, not revealed");
    let (output, _) = call(&router, named[0], json!({"path": "/tmp/x"})).await;
    assert!(matches!(output, ToolOutput::Mcp { .. }), "called by name: {output:?}");
    assert_eq!(router.revealed_count(), Some(2), "revealed by the call");

    // Many long descriptions: at most MORE_NAMES names, within MORE_BYTES.
    let tools = (0..40)
        .map(|i| {
            described(
                &format!("file_tool_{i:02}"),
                &format!("Do file thing {i} {}", "very long words ".repeat(20)),
            )
        })
        .collect();
    let server = FakeServer { tools, ..Default::default() };
    let search = ToolSearch::new(ToolSearchMode::On, 0, BTreeSet::new());
    let backend = FakeBackend::with(vec![("many", server)]);
    let router =
        ToolRouter::build(backend, ContentPolicy::default(), None, Default::default(), search);
    let (output, _) =
        call(&router, "search_mcp_tools", json!({"query": "file thing", "limit": 3})).await;
    let found = payload(&output);
    let more = found["more"].as_array().expect("more names");
    assert_eq!(more.len(), crate::search::handler::MORE_NAMES);
    let bytes: usize = more
        .iter()
        .map(|m| m["name"].as_str().map_or(0, str::len) + m["summary"].as_str().map_or(0, str::len))
        .sum();
    assert!(bytes <= crate::search::handler::MORE_BYTES, "{bytes}");
    assert!(
        more.iter().all(|m| m["summary"].as_str().is_some_and(|s| s.ends_with('…'))),
        "{found}"
    );
}
