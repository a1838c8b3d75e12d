use std::sync::Arc;

use router_protocol::{CallResult, EventMsg};
use serde_json::json;

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
    assert_eq!(begin.invocation.arguments, Some(json!({"text": "hi"})));
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
