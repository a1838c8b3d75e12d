use std::sync::Arc;

use router_protocol::{CallResult, EventMsg};
use serde_json::{Value, json};

use super::*;
use crate::test_support::{FakeBackend, FakeServer, dispatch};

fn backend() -> Arc<FakeBackend> {
    FakeBackend::with(vec![("figma", FakeServer::default())])
}

/// Through the router's MCP route (which parses the arguments), as the model calls it.
async fn call(arguments: &str, tool: &str) -> (ToolOutput, Vec<EventMsg>) {
    let (output, events) =
        dispatch(backend(), None, &format!("mcp__figma__{tool}"), arguments).await;
    let output = match output {
        Ok(output) => output,
        Err(FunctionCallError::RespondToModel(message)) => ToolOutput::failure(message),
        Err(fatal) => panic!("{fatal:?}"),
    };
    (output, events)
}

#[tokio::test]
async fn success_passes_the_result_through() {
    let (output, events) = call(r#"{"text":"hi"}"#, "echo").await;
    insta::assert_json_snapshot!("mcp_output_ok", output);
    assert!(output.is_success());
    let [EventMsg::McpToolCallBegin(begin), EventMsg::McpToolCallEnd(end)] = events.as_slice()
    else {
        panic!("{events:?}")
    };
    assert_eq!(begin.invocation.server.as_deref(), Some("figma"));
    assert_eq!(begin.invocation.tool, "echo");
    assert_eq!(begin.invocation.arguments.as_deref(), Some(&json!({"text": "hi"})));
    assert_eq!(end.summary, None);
    let ToolOutput::Mcp { result: Ok(result) } = &output else { panic!() };
    // The event and the output share one result: nothing was copied.
    let Ok(CallResult::Call(shown)) = &end.result else { panic!("{:?}", end.result) };
    assert!(Arc::ptr_eq(shown, result));
}

#[tokio::test]
async fn is_error_results_are_passed_through_not_reinterpreted() {
    let (output, events) = call("", "fail").await;
    let ToolOutput::Mcp { result: Ok(result) } = &output else { panic!("{output:?}") };
    assert_eq!(result.is_error, Some(true));
    assert!(!output.is_success());
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn bad_json_is_a_function_failure_without_events() {
    let (output, events) = call("{not json", "echo").await;
    assert_eq!(output, ToolOutput::failure("err: key must be a string at line 1 column 2"));
    assert!(events.is_empty());
    let (output, events) = call("[1,2]", "echo").await;
    assert_eq!(output, ToolOutput::failure("err: tool arguments must be a JSON object"));
    assert!(events.is_empty());
}

#[tokio::test]
async fn transport_errors_become_the_mcp_err_string() {
    let (output, events) = call("{}", "slow").await;
    let expected =
        "tool call error: timed out awaiting tools/call after 60s (MCP server 'figma')".to_string();
    assert_eq!(output, ToolOutput::Mcp { result: Err(expected.clone()) });
    let Some(EventMsg::McpToolCallEnd(end)) = events.last() else { panic!("{events:?}") };
    assert_eq!(end.result, Err(expected));
}

/// A router over `figma` and `other`, and a way to call it as the model does.
struct Session {
    router: crate::ToolRouter,
    ctx: CallContext,
    rx: router_protocol::EventReceiver,
    calls: usize,
}

impl Session {
    fn new() -> Self {
        let backend = FakeBackend::with(vec![
            ("figma", FakeServer::default()),
            ("other", FakeServer::default()),
        ]);
        let router = crate::ToolRouter::build(
            backend,
            ContentPolicy::default(),
            None,
            crate::KeptLimits::default(),
            Default::default(),
        );
        let (ctx, rx) = crate::test_support::context();
        Self { router, ctx, rx, calls: 0 }
    }

    async fn call(
        &mut self,
        name: &str,
        arguments: Value,
    ) -> Result<ToolOutput, FunctionCallError> {
        self.calls += 1;
        let call = crate::ToolCall {
            call_id: format!("call-{}", self.calls),
            name: name.into(),
            arguments: arguments.to_string().into(),
        };
        let output = self.router.dispatch(&self.ctx, call).await;
        crate::test_support::drain(&mut self.rx);
        output
    }

    async fn read(&mut self, server: &str, uri: &str, offset: usize) -> Value {
        let args = json!({"server": server, "uri": uri, "offset": offset});
        match self.call("read_mcp_resource", args).await {
            Ok(ToolOutput::Function { content, .. }) => {
                serde_json::from_str(content.as_str()).expect("json")
            }
            other => json!({"error": format!("{other:?}")}),
        }
    }
}

#[tokio::test]
async fn a_result_over_the_budget_is_cut_and_the_rest_is_read_back_exactly() {
    let mut session = Session::new();
    let text = "ünïcödé text ".repeat(20_000);
    let output = session.call("mcp__figma__echo", json!({"text": text})).await.expect("ok");
    let ToolOutput::Mcp { result: Ok(result) } = &output else { panic!("{output:?}") };
    let shown = result.content[0].as_text().expect("text").text.clone();
    assert!(shown.len() < 64 * 1024 + 300, "{}", shown.len());
    let full = format!("Echo: {text}");
    let note = format!(
        "\n[truncated: 65536 of {} bytes shown; read_mcp_resource with server \"mcp-router\", uri \"mcp-router://results/call-1/content/0\" and offset 65536 returns the rest]",
        full.len()
    );
    assert!(shown.ends_with(&note), "{}", &shown[shown.len() - 300..]);
    let mut read = shown[..shown.len() - note.len()].to_string();
    let mut offset = read.len();
    loop {
        let page =
            session.read("mcp-router", "mcp-router://results/call-1/content/0", offset).await;
        read.push_str(page["contents"][0]["text"].as_str().expect("text"));
        match page["next_offset"].as_u64() {
            Some(next) => offset = next as usize,
            None => break,
        }
    }
    assert!(read == full, "reassembled {} of {} bytes", read.len(), full.len());
    // The kept result is the router's alone: another server never gets its URI.
    let elsewhere = session.read("figma", "mcp-router://results/call-1/content/0", 0).await;
    assert!(elsewhere["error"].as_str().is_some_and(|e| e.contains(
        "resources/read refused: mcp-router://results/call-1/content/0 is a tool result the router kept; read it with server \\\"mcp-router\\\""
    )), "{elsewhere}");
}

#[tokio::test]
async fn a_linked_uri_is_read_on_the_server_that_linked_it_and_refused_on_another() {
    let mut session = Session::new();
    session.call("mcp__figma__link", json!({"text": "memo://1"})).await.expect("ok");
    let refused = session.read("other", "memo://1", 0).await;
    let expected = "resources/read refused: memo://1 was linked by a tool result of server \\\"figma\\\", not of \\\"other\\\"; read it with server \\\"figma\\\"";
    assert!(refused["error"].as_str().is_some_and(|e| e.contains(expected)), "{refused}");
    // On its own server the read goes to the server (this fake has no such resource).
    let read = session.read("figma", "memo://1", 0).await;
    let answer = read["error"].as_str().unwrap_or_default();
    assert!(
        answer.contains("Resource not found: memo://1") && !answer.contains("refused"),
        "{read}"
    );
}

/// What the model reads does not depend on the server's era: `resultType` and the protocol's
/// `_meta` keys go, the tool's own `_meta` stays.
#[test]
fn the_protocol_envelope_is_not_part_of_the_result() {
    let modern: CallToolResult = serde_json::from_value(json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": "hi"}],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}, "tool/own": 1},
    }))
    .expect("a result");
    let mut stripped = modern.clone();
    without_envelope(&mut stripped);
    assert_eq!(
        serde_json::to_value(&stripped).expect("json"),
        json!({"content": [{"type": "text", "text": "hi"}], "_meta": {"tool/own": 1}})
    );
    let mut only_envelope: CallToolResult = serde_json::from_value(json!({
        "resultType": "complete",
        "content": [],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
    }))
    .expect("a result");
    without_envelope(&mut only_envelope);
    let legacy: CallToolResult = serde_json::from_value(json!({"content": []})).expect("a result");
    assert_eq!(
        serde_json::to_value(&only_envelope).expect("json"),
        serde_json::to_value(&legacy).expect("json")
    );
}
