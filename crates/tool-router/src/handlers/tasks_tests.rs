use mcp_backend::TaskHandle;
use rmcp::model::TaskStatus;
use serde_json::{Value, json};

use crate::invocation::{ToolCall, ToolOutput};
use crate::test_support::{FakeBackend, FakeServer, context, drain};
use crate::{RouterSettings, ToolRouter};

/// A router over a backend that hands calls to the background (`backgrounding`) or not.
fn router(backgrounding: bool) -> ToolRouter {
    let servers = vec![("docs", FakeServer::default())];
    let backend = match backgrounding {
        true => FakeBackend::backgrounding(servers, Vec::new()),
        false => FakeBackend::with(servers),
    };
    ToolRouter::with_mcp_settings(backend, &RouterSettings::default()).expect("router")
}

async fn refusal(router: &ToolRouter, arguments: Value) -> String {
    let (ctx, mut rx) = context();
    let call = ToolCall {
        call_id: "a1".into(),
        name: "await_mcp_task".into(),
        arguments: arguments.to_string().into(),
    };
    let output = router.dispatch_to_output(&ctx, call).await.expect("not fatal");
    assert!(drain(&mut rx).is_empty(), "refused before any event");
    match output {
        ToolOutput::Function { content, success: Some(false), .. } => content.to_string(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn await_mcp_task_is_offered_only_when_tasks_go_to_the_background() {
    let names = |router: ToolRouter| async move {
        router.specs().await.into_iter().map(|s| s.name).collect::<Vec<_>>()
    };
    assert!(!names(router(false)).await.contains(&"await_mcp_task".to_string()));
    let router = router(true);
    let spec = router.specs().await.into_iter().find(|s| s.name == "await_mcp_task");
    insta::assert_json_snapshot!("await_mcp_task_spec", spec.expect("offered"));
}

#[tokio::test]
async fn await_mcp_task_refuses_bad_arguments_and_unknown_tasks_with_reasons() {
    let router = router(true);
    assert_eq!(refusal(&router, json!({})).await, "task must be provided");
    assert_eq!(
        refusal(&router, json!({"task": "t", "wait_sec": -1})).await,
        "wait_sec must be a number of seconds, 0 or more"
    );
    assert_eq!(
        refusal(&router, json!({"task": "t"})).await,
        "task 't': no such task runs in the background (it was collected already, or never handed over)"
    );
}

#[test]
fn the_handle_the_model_gets_in_place_of_a_result() {
    let handle = TaskHandle {
        server: "docs".into(),
        task: "0b6a1c52".into(),
        status: TaskStatus::Working,
        status_message: Some("3 of 30 s".into()),
    };
    insta::assert_json_snapshot!("task_handle_result", handle.to_call_tool_result());
}
