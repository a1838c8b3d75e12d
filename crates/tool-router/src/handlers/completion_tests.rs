use std::sync::Arc;

use router_protocol::EventMsg;

use super::*;
use crate::test_support::{FakeBackend, FakeServer, dispatch};

fn backend(completions: Option<Vec<String>>) -> Arc<FakeBackend> {
    let docs = FakeServer {
        templates: vec![rmcp::model::ResourceTemplate::new("docs://{name}", "doc")],
        completions,
        ..Default::default()
    };
    FakeBackend::with(vec![("docs", docs)])
}

async fn call(
    backend: Arc<FakeBackend>,
    arguments: &str,
) -> (Result<ToolOutput, FunctionCallError>, Vec<EventMsg>) {
    dispatch(backend, None, COMPLETE_MCP_RESOURCE_ARGUMENT, arguments).await
}

#[tokio::test]
async fn offered_only_with_the_capability() {
    assert!(!McpCompletionHandler::new(backend(None)).offered().await);
    assert!(McpCompletionHandler::new(backend(Some(vec![]))).offered().await);
}

#[tokio::test]
async fn returns_the_servers_values() {
    let names = ["readme.md", "release.md", "guide.md"].map(String::from).to_vec();
    let (result, events) = call(
        backend(Some(names)),
        r#"{"server":"docs","template":"docs://{name}","argument":"name","value":"re"}"#,
    )
    .await;
    let Ok(ToolOutput::Function { content, success: Some(true), .. }) = result else {
        panic!("{result:?}")
    };
    insta::assert_snapshot!("completion_payload", content);
    let [EventMsg::McpToolCallBegin(_), EventMsg::McpToolCallEnd(end)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(end.invocation.tool, COMPLETE_MCP_RESOURCE_ARGUMENT);
    assert_eq!(end.summary.as_ref().map(|s| s.items), Some(2));
}

#[tokio::test]
async fn errors_reach_the_model() {
    let (result, events) =
        call(backend(Some(vec![])), r#"{"server":"docs","template":"nope://{x}","argument":"x"}"#)
            .await;
    assert_eq!(
        result.expect_err("unknown template"),
        FunctionCallError::RespondToModel(
            "completion/complete failed: MCP error -32602: Unknown resource template: nope://{x}"
                .into()
        )
    );
    assert_eq!(events.len(), 2);
    for (arguments, expected) in [
        (r#"{"template":"docs://{name}","argument":"name"}"#, "server must be provided"),
        (r#"{"server":"docs","argument":"name"}"#, "template must be provided"),
        (r#"{"server":"docs","template":"docs://{name}"}"#, "argument must be provided"),
        ("", "failed to parse function arguments: expected value"),
    ] {
        let (result, events) = call(backend(Some(vec![])), arguments).await;
        assert_eq!(result.expect_err(expected), FunctionCallError::RespondToModel(expected.into()));
        assert!(events.is_empty());
    }
}
