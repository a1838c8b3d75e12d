//! The resource tools (list, read, template reads, CSV imports) through the router, against the
//! scripted backend: exact strings, payload bytes and events.

use std::sync::Arc;

use mcp_backend::{ListKind, McpError};
use router_protocol::{CallResult, EventMsg, McpToolCallEndEvent};
use serde_json::{Value, json};

use crate::handlers::read::{McpReadHandler, READ_MCP_RESOURCE};
use crate::invocation::{FunctionCallError, ToolOutput};
use crate::lists::handler::{LIST_MCP_RESOURCE_TEMPLATES, LIST_MCP_RESOURCES, McpListHandler};
use crate::test_support::{FakeBackend, FakeServer, dispatch, resource};

fn backend() -> Arc<FakeBackend> {
    let figma = FakeServer {
        resources: vec![resource("memo://123", "memo"), resource("memo://456", "other")],
        templates: vec![
            rmcp::model::ResourceTemplate::new("memo://{id}", "memo-by-id"),
            rmcp::model::ResourceTemplate::new("search://{index}/q{?text,limit}", "search"),
        ],
        page_size: 1,
        ..Default::default()
    };
    let alpha = FakeServer {
        resources: vec![resource("file:///b", "b"), resource("file:///a", "a")],
        ..Default::default()
    };
    FakeBackend::with(vec![("figma", figma), ("alpha", alpha)])
}

/// Run one call; returns the output (or the model-visible error) and the events.
async fn call(
    backend: Arc<FakeBackend>,
    tool: &str,
    arguments: &str,
) -> (Result<ToolOutput, String>, Vec<EventMsg>) {
    let (result, events) = dispatch(backend, None, tool, arguments).await;
    let result = result.map_err(|e| match e {
        FunctionCallError::RespondToModel(m) => m,
        FunctionCallError::Fatal(m) => format!("FATAL {m}"),
    });
    (result, events)
}

fn content(output: &Result<ToolOutput, String>) -> Value {
    match output {
        Ok(ToolOutput::Function { content, success: Some(true), content_items: None }) => {
            serde_json::from_str(content).expect("content is JSON")
        }
        other => panic!("expected a successful function output, got {other:?}"),
    }
}

/// The exact text the model reads (the byte-level contract).
fn raw(output: &Result<ToolOutput, String>) -> &str {
    match output {
        Ok(ToolOutput::Function { content, .. }) => content,
        other => panic!("expected a function output, got {other:?}"),
    }
}

fn end_event(events: &[EventMsg]) -> &McpToolCallEndEvent {
    match events {
        [EventMsg::McpToolCallBegin(begin), EventMsg::McpToolCallEnd(end)] => {
            assert_eq!(begin.call_id, end.call_id);
            assert_eq!(begin.invocation, end.invocation);
            end
        }
        other => panic!("expected one begin and one end, got {other:?}"),
    }
}

/// Asserts the call fails with exactly `expected` and contacts no server (no events).
async fn check_rejected(tool: &str, arguments: &str, expected: &str) {
    let (result, events) = call(backend(), tool, arguments).await;
    assert_eq!(result.expect_err("should fail"), expected, "{tool} {arguments}");
    assert!(events.is_empty(), "no begin/end for a call rejected before MCP: {events:?}");
}

#[tokio::test]
async fn list_all_servers_for_blank_arguments() {
    for arguments in
        ["", "   ", "{}", "null", "{\"server\": \"  \"}", "{\"server\": null, \"cursor\": \"\"}"]
    {
        let (result, events) = call(backend(), LIST_MCP_RESOURCES, arguments).await;
        content(&result);
        insta::assert_snapshot!("list_all_resources", raw(&result));
        let end = end_event(&events);
        assert_eq!(end.invocation.server, None);
        assert_eq!(end.invocation.tool, "list_mcp_resources");
        let summary = end.summary.as_ref().expect("summary");
        assert_eq!((summary.items, summary.servers), (4, 2));
        assert!(summary.failed_servers.is_empty());
    }
}

#[tokio::test]
async fn list_single_server_keeps_next_cursor_key() {
    let (result, events) =
        call(backend(), LIST_MCP_RESOURCES, r#"{"server":"figma","cursor":null}"#).await;
    insta::assert_snapshot!("list_single_first_page", raw(&result));
    let end = end_event(&events);
    assert_eq!(end.invocation.server.as_deref(), Some("figma"));
    let arguments = end.invocation.arguments.as_deref();
    assert_eq!(arguments, Some(&json!({"server": "figma", "cursor": null})));

    let (result, _) =
        call(backend(), LIST_MCP_RESOURCES, r#"{"server":" figma ","cursor":"1"}"#).await;
    let last = content(&result);
    assert_eq!(last["nextCursor"], Value::Null);
    assert!(last.as_object().expect("object").contains_key("nextCursor"));
    assert_eq!(last["resources"][0]["uri"], "memo://456");
}

#[tokio::test]
async fn an_empty_cursor_reaches_the_server() {
    // `""` is a valid cursor in 2026-07-28: passed on, not taken for "no cursor" (this server
    // does not know it). Other cursors are trimmed as Codex does.
    let (result, _) =
        call(backend(), LIST_MCP_RESOURCES, r#"{"server":"figma","cursor":""}"#).await;
    assert_eq!(
        result.expect_err("refused"),
        "resources/list failed: MCP error -32602: Invalid cursor: \"\""
    );
    let (result, _) =
        call(backend(), LIST_MCP_RESOURCES, r#"{"server":"figma","cursor":" 1 "}"#).await;
    assert_eq!(content(&result)["resources"][0]["uri"], "memo://456");
}

#[tokio::test]
async fn end_event_result_is_the_payload_text() {
    let (result, events) = call(backend(), LIST_MCP_RESOURCES, r#"{"server":"alpha"}"#).await;
    let Ok(ToolOutput::Function { content, .. }) = &result else { panic!("{result:?}") };
    let end = end_event(&events);
    let ok = end.result.as_ref().expect("ok result");
    assert_eq!(
        serde_json::to_value(ok).expect("json"),
        json!({"content": [{"type": "text", "text": content}], "isError": false})
    );
    // Shared with the output, not copied.
    let CallResult::Text(text) = ok else { panic!("{ok:?}") };
    assert!(text.ptr_eq(content));
}

#[tokio::test]
async fn cursor_without_server_is_refused_before_mcp() {
    check_rejected(
        LIST_MCP_RESOURCES,
        r#"{"cursor":"abc"}"#,
        "cursor can only be used when a server is specified",
    )
    .await;
    check_rejected(
        LIST_MCP_RESOURCES,
        r#"{"server":"  ","cursor":"abc"}"#,
        "cursor can only be used when a server is specified",
    )
    .await;
    check_rejected(
        LIST_MCP_RESOURCE_TEMPLATES,
        r#"{"cursor":"abc"}"#,
        "cursor can only be used when a server is specified",
    )
    .await;
}

#[tokio::test]
async fn read_requires_server_and_uri() {
    check_rejected(READ_MCP_RESOURCE, r#"{"uri":"memo://123"}"#, "server must be provided").await;
    check_rejected(
        READ_MCP_RESOURCE,
        r#"{"server":"  ","uri":"memo://123"}"#,
        "server must be provided",
    )
    .await;
    check_rejected(READ_MCP_RESOURCE, r#"{"server":"figma"}"#, "uri must be provided").await;
    check_rejected(READ_MCP_RESOURCE, r#"{"server":"figma","uri":" "}"#, "uri must be provided")
        .await;
    check_rejected(READ_MCP_RESOURCE, "", "failed to parse function arguments: expected value")
        .await;
    check_rejected(READ_MCP_RESOURCE, "null", "failed to parse function arguments: expected value")
        .await;
}

#[tokio::test]
async fn malformed_arguments_are_refused_before_mcp() {
    check_rejected(
        LIST_MCP_RESOURCES,
        "{",
        "failed to parse function arguments: EOF while parsing an object at line 1 column 1",
    )
    .await;
    check_rejected(
        LIST_MCP_RESOURCES,
        r#"{"server": 3}"#,
        "failed to parse function arguments: invalid type: integer `3`, expected a string",
    )
    .await;
    check_rejected(
        READ_MCP_RESOURCE,
        r#"["figma"]"#,
        "failed to parse function arguments: expected a JSON object, got an array",
    )
    .await;
    check_rejected(
        LIST_MCP_RESOURCES,
        "42",
        "failed to parse function arguments: expected a JSON object, got a number",
    )
    .await;
}

#[tokio::test]
async fn read_success_payload() {
    let (result, events) =
        call(backend(), READ_MCP_RESOURCE, r#"{"server":"figma","uri":"memo://123"}"#).await;
    insta::assert_snapshot!("read_payload", raw(&result));
    let end = end_event(&events);
    assert_eq!(end.invocation.server.as_deref(), Some("figma"));
    assert_eq!(end.summary.as_ref().map(|s| s.items), Some(1));
}

#[tokio::test]
async fn backend_errors_reach_the_model_and_the_end_event() {
    let (result, events) =
        call(backend(), READ_MCP_RESOURCE, r#"{"server":"figma","uri":"other://nope"}"#).await;
    let expected = "resources/read failed: MCP error -32002: Resource not found: other://nope";
    assert_eq!(result.expect_err("fails"), expected);
    let end = end_event(&events);
    assert_eq!(end.result, Err(expected.to_string()));
    assert_eq!(end.summary.as_ref().map(|s| s.failed_servers.len()), Some(1));

    let (result, events) = call(backend(), LIST_MCP_RESOURCES, r#"{"server":"nope"}"#).await;
    assert_eq!(result.expect_err("fails"), "resources/list failed: unknown MCP server 'nope'");
    end_event(&events);

    let (result, _) = call(backend(), LIST_MCP_RESOURCE_TEMPLATES, r#"{"server":"nope"}"#).await;
    assert_eq!(
        result.expect_err("fails"),
        "resources/templates/list failed: unknown MCP server 'nope'"
    );
}

#[tokio::test]
async fn all_server_list_reports_failing_servers() {
    let broken = FakeServer {
        fail: Some(McpError::NotStarted {
            server: "broken".into(),
            error: "failed to spawn `nope`: No such file or directory (os error 2)".into(),
        }),
        ..Default::default()
    };
    let backend = FakeBackend::with(vec![
        ("alpha", FakeServer { resources: vec![resource("file:///a", "a")], ..Default::default() }),
        ("broken", broken),
    ]);
    let (result, events) = call(backend, LIST_MCP_RESOURCES, "{}").await;
    insta::assert_snapshot!("list_all_with_errors", raw(&result));
    let summary = end_event(&events).summary.clone().expect("summary");
    assert_eq!(summary.failed_servers[0].server, "broken");
    assert_eq!(summary.servers, 2);
}

#[tokio::test]
async fn templates_single_and_all() {
    let (result, _) = call(backend(), LIST_MCP_RESOURCE_TEMPLATES, r#"{"server":"figma"}"#).await;
    insta::assert_snapshot!("templates_single", raw(&result));
    let (result, _) = call(backend(), LIST_MCP_RESOURCE_TEMPLATES, "").await;
    insta::assert_snapshot!("templates_all", raw(&result));
}

#[test]
fn specs_are_codex_shaped() {
    let specs = [
        McpListHandler::spec(ListKind::Resources),
        McpListHandler::spec(ListKind::Templates),
        McpReadHandler::spec(),
    ];
    let specs: Vec<Value> = specs.iter().map(|s| s.to_format(crate::ToolFormat::OpenAi)).collect();
    insta::assert_json_snapshot!("resource_tool_specs_openai", specs);
}

#[tokio::test]
async fn read_through_a_template() {
    let (result, events) = call(
        backend(),
        READ_MCP_RESOURCE,
        r#"{"server":"figma","template":"memo://{id}","parameters":{"id":"77"}}"#,
    )
    .await;
    insta::assert_snapshot!("read_template_payload", raw(&result));
    let end = end_event(&events);
    assert_eq!(end.invocation.server.as_deref(), Some("figma"));
    // Query-style variables are optional; numbers are accepted.
    let (result, _) = call(
        backend(),
        READ_MCP_RESOURCE,
        r#"{"server":"figma","template":"search://{index}/q{?text,limit}","parameters":{"index":"main","limit":5}}"#,
    )
    .await;
    assert_eq!(content(&result)["uri"], "search://main/q?limit=5");
}

#[tokio::test]
async fn template_mistakes_name_the_parameter() {
    let cases = [
        (
            r#"{"server":"figma","template":"memo://{id}"}"#,
            "missing parameter `id` (required by template memo://{id})",
        ),
        (
            r#"{"server":"figma","template":"memo://{id}","parameters":{"id":null}}"#,
            "missing parameter `id` (required by template memo://{id})",
        ),
        (
            r#"{"server":"figma","template":"memo://{id}","parameters":{"id":{"a":1}}}"#,
            "parameter `id` must be a string, number, boolean or a list of them, got an object",
        ),
        (
            r#"{"server":"figma","template":"memo://{id}","parameters":{"id":"1","name":"x"}}"#,
            "unknown parameter `name`: the template's variables are `id`",
        ),
        (
            r#"{"server":"figma","template":"memo://{id}","parameters":["1"]}"#,
            "parameters must be a JSON object, got an array",
        ),
        (
            r#"{"server":"figma","template":"memo://{id","parameters":{}}"#,
            "template is not valid: invalid URI template \"memo://{id\" at byte 7: unclosed `{`",
        ),
        (
            r#"{"server":"figma","uri":"memo://1","template":"memo://{id}","parameters":{"id":"1"}}"#,
            "provide either uri or template (with parameters), not both",
        ),
        (r#"{"template":"memo://{id}","parameters":{"id":"1"}}"#, "server must be provided"),
    ];
    for (arguments, expected) in cases {
        check_rejected(READ_MCP_RESOURCE, arguments, expected).await;
    }
}

#[tokio::test]
async fn a_plain_uri_is_passed_through_as_is() {
    // Not in any list, not matching any template: the server decides, and its error comes back.
    let (result, events) =
        call(backend(), READ_MCP_RESOURCE, r#"{"server":"figma","uri":"weird:/x?y#z"}"#).await;
    assert_eq!(
        result.expect_err("server says no"),
        "resources/read failed: MCP error -32002: Resource not found: weird:/x?y#z"
    );
    end_event(&events);
}

mod data_sources_and_shaping {
    use std::sync::{Arc, Mutex};

    use base64::Engine as _;
    use data_sources::{DataSources, QueryLimits};
    use rmcp::model::ResourceContents;

    use super::*;

    fn with_reads(reads: Vec<(&str, Vec<ResourceContents>)>) -> Arc<FakeBackend> {
        let server = FakeServer {
            reads: reads.into_iter().map(|(u, c)| (u.to_string(), c)).collect(),
            ..Default::default()
        };
        FakeBackend::with(vec![("files", server)])
    }

    async fn read_with_data(
        backend: Arc<FakeBackend>,
        uri: &str,
    ) -> (Result<ToolOutput, String>, Vec<EventMsg>) {
        let data = Arc::new(DataSources::new(QueryLimits::default()).expect("db"));
        let arguments = json!({"server": "files", "uri": uri}).to_string();
        let (result, events) = dispatch(backend, Some(data), READ_MCP_RESOURCE, &arguments).await;
        (result.map_err(|e| e.to_string()), events)
    }

    #[tokio::test]
    async fn csv_failures_read_resource_retrieval_failed() {
        let ragged = ResourceContents::text("a,b\n1,2\n3\n", "f://ragged.csv");
        let empty = ResourceContents::text("", "f://empty").with_mime_type("text/csv");
        let latin1 = ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(b"name\nJos\xe9\n"),
            "f://latin1.csv",
        );
        let backend = with_reads(vec![
            ("f://ragged.csv", vec![ragged]),
            ("f://empty", vec![empty]),
            ("f://latin1.csv", vec![latin1]),
        ]);
        for (uri, expected) in [
            (
                "f://ragged.csv",
                "Resource retrieval failed: CSV import failed: line 3 has 1 fields, but the header has 2",
            ),
            (
                "f://empty",
                "Resource retrieval failed: CSV import failed: the resource is empty (no header row)",
            ),
            (
                "f://latin1.csv",
                "Resource retrieval failed: CSV import failed: line 2 is not valid UTF-8",
            ),
        ] {
            let (result, events) = read_with_data(backend.clone(), uri).await;
            assert_eq!(result.expect_err(uri), expected);
            assert_eq!(end_event(&events).result, Err(expected.to_string()));
        }
    }

    #[tokio::test]
    async fn csv_by_mime_type_or_extension_and_header_only() {
        let by_mime = ResourceContents::text("x,y\n1,2\n", "db://table")
            .with_mime_type("text/csv; charset=utf-8");
        let header_only = ResourceContents::text("only,header\n", "f://h.CSV?v=1");
        let backend =
            with_reads(vec![("db://table", vec![by_mime]), ("f://h.CSV?v=1", vec![header_only])]);
        let (result, _) = read_with_data(backend.clone(), "db://table").await;
        let text = raw(&result).to_string();
        assert!(
            text.starts_with(
                "CSV resource imported as data source: db://table\n{\"table\":\"files_table\""
            ),
            "{text}"
        );
        let (result, _) = read_with_data(backend, "f://h.CSV?v=1").await;
        assert!(raw(&result).contains("\"rows\":0"), "{}", raw(&result));
    }

    /// A `tracing` writer that keeps what was logged.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn each_retrieval_is_traced_with_server_uri_outcome_and_duration() {
        // Both callsites are registered first, before this test's subscriber exists: another
        // test's thread registering one of them while the subscriber is added can leave tracing's
        // global interest cache at "never" for it (a race in tracing-core that CI has hit), and a
        // callsite registered before the subscriber is added is asked again when it is added.
        let _ =
            call(backend(), READ_MCP_RESOURCE, r#"{"server":"figma","uri":"memo://123"}"#).await;
        let _ =
            call(backend(), READ_MCP_RESOURCE, r#"{"server":"figma","uri":"other://nope"}"#).await;
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber =
            tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        // And every callsite is asked again, in case another thread's registration was still
        // under way. That race is in tracing-core's global interest cache (other tests register
        // callsites on other threads meanwhile), not in the router: a pair of retrievals that
        // lost a line to it is tried again, a few times at most.
        let mut log = String::new();
        for _ in 0..5 {
            captured.0.lock().expect("log").clear();
            tracing::callsite::rebuild_interest_cache();
            let memo = r#"{"server":"figma","uri":"memo://123"}"#;
            let _ = call(backend(), READ_MCP_RESOURCE, memo).await;
            let nope = r#"{"server":"figma","uri":"other://nope"}"#;
            let _ = call(backend(), READ_MCP_RESOURCE, nope).await;
            log = String::from_utf8(captured.0.lock().expect("log").clone()).expect("utf8");
            if log.lines().count() == 2 {
                break;
            }
        }
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2, "{log}");
        for (line, outcome) in lines.iter().zip(["ok", "error"]) {
            assert!(line.contains("resource_retrieval{server=figma"), "{line}");
            assert!(
                line.contains(&format!("outcome=\"{outcome}\""))
                    || line.contains(&format!("outcome={outcome}")),
                "{line}"
            );
            assert!(line.contains("duration_ms="), "{line}");
        }
        assert!(lines[1].contains("Resource not found: other://nope"));
    }
}

/// A router over `backend` with a list budget of `budget` bytes.
async fn list_with_budget(
    backend: Arc<FakeBackend>,
    budget: usize,
    arguments: &str,
) -> Result<Value, String> {
    let policy =
        crate::results::content::ContentPolicy { list_budget_bytes: budget, ..Default::default() };
    let router =
        crate::ToolRouter::build(backend, policy, None, Default::default(), Default::default());
    let (ctx, _rx) = crate::test_support::context();
    let call = crate::ToolCall {
        call_id: "c".into(),
        name: LIST_MCP_RESOURCES.into(),
        arguments: arguments.into(),
    };
    match router.dispatch(&ctx, call).await {
        Ok(ToolOutput::Function { content, .. }) => {
            assert!(content.len() <= budget, "{} bytes over a budget of {budget}", content.len());
            Ok(serde_json::from_str(&content).expect("valid JSON"))
        }
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e.to_string()),
    }
}

fn many(prefix: &str, n: usize, page_size: usize) -> FakeServer {
    FakeServer {
        resources: (0..n)
            .map(|i| resource(&format!("{prefix}://{i:04}"), &format!("r{i}")))
            .collect(),
        page_size,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_page_larger_than_the_budget_is_split_and_continued_exactly_once() {
    let backend = FakeBackend::with(vec![("big", many("big", 100, 40))]);
    let mut seen = Vec::new();
    let mut arguments = r#"{"server":"big"}"#.to_string();
    let mut calls = 0;
    loop {
        let payload = list_with_budget(backend.clone(), 1024, &arguments).await.expect("ok");
        let uris: Vec<String> = payload["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .map(|r| r["uri"].as_str().expect("uri").to_string())
            .collect();
        assert!(!uris.is_empty(), "every answer makes progress");
        seen.extend(uris);
        calls += 1;
        match payload["nextCursor"].as_str() {
            Some(next) => arguments = json!({"server": "big", "cursor": next}).to_string(),
            None => break,
        }
    }
    let expected: Vec<String> = (0..100).map(|i| format!("big://{i:04}")).collect();
    assert_eq!(seen, expected);
    assert!(calls > 3, "the pages of 40 did not fit 1 KiB: {calls} calls");
}

#[tokio::test]
async fn every_server_is_represented_in_a_shared_budget() {
    let backend = FakeBackend::with(vec![
        ("a", many("a", 200, 0)),
        ("b", many("b", 1, 0)),
        ("c", many("c", 200, 0)),
    ]);
    let payload = list_with_budget(backend, 2048, "{}").await.expect("ok");
    let servers: Vec<&str> = payload["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["server"].as_str().expect("server"))
        .collect();
    for server in ["a", "b", "c"] {
        assert!(servers.contains(&server), "{server} missing: {payload}");
    }
    let incomplete = payload["incomplete"].as_array().expect("incomplete");
    let names: Vec<&str> = incomplete.iter().map(|e| e["server"].as_str().expect("s")).collect();
    assert_eq!(names, ["a", "c"], "b was shown in full");
    assert_eq!(incomplete[0]["total"], 200);
    // Codex's rule still holds: a cursor needs a server.
    let cursor = incomplete[0]["nextCursor"].as_str().expect("cursor");
    let backend = FakeBackend::with(vec![("a", many("a", 200, 0))]);
    let refused = list_with_budget(backend, 2048, &json!({"cursor": cursor}).to_string()).await;
    assert_eq!(
        refused.expect_err("an error"),
        "cursor can only be used when a server is specified"
    );
}

#[tokio::test]
async fn bad_filters_and_cursors_are_clear_errors() {
    let backend = FakeBackend::with(vec![("a", many("a", 5, 0))]);
    let err = |args: &'static str| {
        let backend = backend.clone();
        async move { list_with_budget(backend, 4096, args).await.expect_err("an error") }
    };
    assert_eq!(err(r#"{"limit":0}"#).await, "limit must be a positive integer, got 0");
    assert_eq!(err(r#"{"limit":"ten"}"#).await, "limit must be a positive integer, got \"ten\"");
    assert_eq!(
        err(r#"{"sort":"name"}"#).await,
        "sort must be \"priority\" (or absent), got \"name\""
    );
    assert_eq!(
        err(r#"{"server":"a","cursor":"mcp-router:%%%"}"#).await,
        "invalid cursor: it is not one this router handed out; list again without a cursor"
    );
    // A continuation whose page the server no longer knows: the server's error and the advice.
    let gone = crate::lists::shape::Continuation {
        page: Some("not-a-number".into()),
        offset: 0,
        ..Default::default()
    }
    .encode();
    let message = list_with_budget(
        backend.clone(),
        4096,
        &json!({"server": "a", "cursor": gone}).to_string(),
    )
    .await
    .expect_err("an error");
    assert!(
        message.starts_with("resources/list failed: MCP error -32602: Invalid cursor"),
        "{message}"
    );
    assert!(message.ends_with("list again without a cursor"), "{message}");
    // A plain server cursor that the server refuses keeps Codex's wording.
    let message = list_with_budget(backend, 4096, r#"{"server":"a","cursor":"nope"}"#)
        .await
        .expect_err("an error");
    assert_eq!(message, "resources/list failed: MCP error -32602: Invalid cursor: \"nope\"");
}

#[tokio::test]
async fn templates_are_cut_filtered_and_continued_the_same_way() {
    let templates: Vec<rmcp::model::ResourceTemplate> = (0..60)
        .map(|i| {
            let mime = if i % 3 == 0 { "application/json" } else { "text/plain" };
            rmcp::model::ResourceTemplate::new(format!("tpl://{i:02}/{{id}}"), format!("t{i}"))
                .with_mime_type(mime)
        })
        .collect();
    let server = FakeServer { templates, page_size: 25, ..Default::default() };
    let backend = FakeBackend::with(vec![("t", server)]);
    let policy =
        crate::results::content::ContentPolicy { list_budget_bytes: 1024, ..Default::default() };
    let router =
        crate::ToolRouter::build(backend, policy, None, Default::default(), Default::default());
    let (ctx, _rx) = crate::test_support::context();
    let mut arguments = json!({"server": "t", "mimeType": "application/"});
    let mut seen = Vec::new();
    loop {
        let call = crate::ToolCall {
            call_id: "c".into(),
            name: LIST_MCP_RESOURCE_TEMPLATES.into(),
            arguments: arguments.to_string().into(),
        };
        let Ok(ToolOutput::Function { content, .. }) = router.dispatch(&ctx, call).await else {
            panic!("list failed");
        };
        assert!(content.len() <= 1024);
        let payload: Value = serde_json::from_str(&content).expect("json");
        assert!(payload["matched"].as_u64().is_some(), "{payload}");
        seen.extend(
            payload["resourceTemplates"]
                .as_array()
                .expect("templates")
                .iter()
                .map(|t| t["uriTemplate"].as_str().expect("uriTemplate").to_string()),
        );
        match payload["nextCursor"].as_str() {
            Some(next) => arguments = json!({"server": "t", "cursor": next}),
            None => break,
        }
    }
    let expected: Vec<String> =
        (0..60).step_by(3).map(|i| format!("tpl://{i:02}/{{id}}")).collect();
    assert_eq!(seen, expected);
}
