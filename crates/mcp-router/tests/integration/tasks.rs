//! Tool calls the server runs as tasks (SEP-2663), against the demo server's `job` tool and its
//! conformance fixtures: followed past the tool timeout, input answered through the host,
//! failures named, cancellation sent as `tasks/cancel`, a restarted server that lost the task
//! answered with an error, and long tasks handed to the background and collected with
//! `await_mcp_task`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_connection_manager::{HostHandler, ManagerOptions, ProtocolChoice, ServerConfig};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use router_protocol::{EventMsg, McpTaskStatusEvent};
use serde_json::{Value, json};
use tool_router::ToolOutput;

use crate::exec::ExecSession;
use crate::support::{DEMO, Harness, demo, exec_command, mcp_text, write_config};

fn statuses(events: &[EventMsg]) -> Vec<McpTaskStatusEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            EventMsg::McpTaskStatus(status) => Some(status.clone()),
            _ => None,
        })
        .collect()
}

fn with_timeout(mut config: ServerConfig, timeout: Duration) -> ServerConfig {
    config.tool_timeout = timeout;
    config
}

fn error_text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Mcp { result: Err(message) } => message.clone(),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_task_outliving_the_tool_timeout_completes_through_polling_with_its_statuses() {
    let server = with_timeout(demo("d", 100), Duration::from_secs(1));
    let mut h = Harness::start(vec![server]);
    let started = Instant::now();
    let output = h.call("mcp__d__job", r#"{"seconds": 2.5}"#).await;
    assert_eq!(mcp_text(&output), "job done after 2.5 s");
    assert!(started.elapsed() >= Duration::from_millis(2500));
    let events = h.drain();
    let seen = statuses(&events);
    assert!(seen.len() >= 3, "created, a status message or more, completed: {seen:?}");
    let first = &seen[0];
    assert_eq!(
        (first.status.as_str(), first.call_id.as_deref()),
        ("working", Some("mcp__d__job-call"))
    );
    assert!(seen.iter().all(|s| s.task == first.task && s.server == "d" && !s.background));
    assert!(seen.iter().any(|s| s.status_message.as_deref() == Some("1 of 2.5 s")), "{seen:?}");
    assert_eq!(seen.last().map(|s| s.status.as_str()), Some("completed"));
    // Every status between the call's begin and end.
    let at = |wanted: fn(&EventMsg) -> bool| events.iter().position(wanted).expect("event");
    let begin = at(|e| matches!(e, EventMsg::McpToolCallBegin(_)));
    let end = at(|e| matches!(e, EventMsg::McpToolCallEnd(_)));
    let first_status = at(|e| matches!(e, EventMsg::McpTaskStatus(_)));
    assert!(begin < first_status && first_status < end);
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_2025_11_25_server_is_declared_the_extension_at_initialize_and_runs_tasks_too() {
    let mut server = demo("d", 100);
    server.protocol = ProtocolChoice::Legacy;
    let mut h = Harness::start(vec![server]);
    let output = h.call("mcp__d__job", r#"{"seconds": 0.3}"#).await;
    assert_eq!(mcp_text(&output), "job done after 0.3 s");
    let events = h.drain();
    assert_eq!(
        crate::support::ready_protocols(&events),
        [("d".to_string(), "2025-11-25".to_string())]
    );
    let seen = statuses(&events);
    assert_eq!(seen.last().map(|s| s.status.as_str()), Some("completed"), "{seen:?}");
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_tool_error_ends_as_an_error_result_and_a_failed_task_as_the_servers_error() {
    let args = ["--name", "d", "--conformance-fixtures"].map(String::from).to_vec();
    let h = Harness::start(vec![ServerConfig::stdio("d", DEMO, args)]);
    let failed = h.call("mcp__d__job", r#"{"seconds": 0.1, "fail": true}"#).await;
    match &failed {
        ToolOutput::Mcp { result: Ok(result) } => assert_eq!(result.is_error, Some(true)),
        other => panic!("{other:?}"),
    }
    assert_eq!(mcp_text(&failed), "the job failed after 0.1 s");
    let broke = h.call("mcp__d__protocol_error_job", "{}").await;
    assert_eq!(error_text(&broke), "tool call error: MCP error -32603: the job broke");
    h.manager.shutdown().await;
}

/// A host whose user answers every question with "Ada".
struct Ada;

#[async_trait]
impl HostHandler for Ada {
    async fn elicit(
        &self,
        _asking: &mcp_connection_manager::Asking,
        _request: ElicitRequestParams,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"})))
    }
}

#[tokio::test]
async fn a_task_asking_for_input_is_answered_through_the_host() {
    let mut h =
        Harness::start_with_host(vec![demo("d", 100)], ManagerOptions::default(), Arc::new(Ada));
    let output = h.call("mcp__d__job", r#"{"seconds": 0.2, "ask": true}"#).await;
    assert_eq!(mcp_text(&output), "job done after 0.2 s, for Ada");
    let events = h.drain();
    let seen = statuses(&events);
    assert!(seen.iter().any(|s| s.status == "input_required"), "{seen:?}");
    let asked = events.iter().any(|e| {
        matches!(e, EventMsg::McpServerRequest(r) if r.method == "elicitation/create" && r.server == "d")
    });
    assert!(asked, "the question is announced as other server requests are");
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_call_given_up_cancels_its_task_on_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests.log");
    let args = vec!["--name".into(), "d".into(), "--request-log".into(), log.display().to_string()];
    let mut h = Harness::start(vec![ServerConfig::stdio("d", DEMO, args)]);
    {
        let call = h.call("mcp__d__job", r#"{"seconds": 60}"#);
        // Given up after a second (a host that cancels the model's turn drops the call).
        assert!(tokio::time::timeout(Duration::from_secs(1), call).await.is_err());
    }
    let requests = || std::fs::read_to_string(&log).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !requests().contains("tasks/cancel") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let requests = requests();
    assert!(requests.contains("tasks/get"), "{requests}");
    assert!(requests.lines().any(|l| l == "tasks/cancel"), "{requests}");
    let seen = statuses(&h.drain());
    assert!(seen.iter().all(|s| s.status == "working"), "no end is reported: {seen:?}");
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_task_lost_in_a_server_restart_ends_with_the_servers_answer() {
    let h = Harness::start(vec![demo("d", 100)]);
    let (job, crashed) = tokio::join!(h.call("mcp__d__job", r#"{"seconds": 30}"#), async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        h.call("mcp__d__crash", "{}").await
    });
    assert!(matches!(crashed, ToolOutput::Mcp { result: Err(_) }), "{crashed:?}");
    let error = error_text(&job);
    assert!(error.starts_with("tool call error: MCP error -32602: unknown task: "), "{error}");
    h.manager.shutdown().await;
}

fn background_config(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let text = format!(
        "[mcp_router]\nbackground_tasks_after_sec = 0.5\n[mcp_servers.docs]\ncommand = {DEMO:?}\nargs = [\"--name\", \"docs\"]\ntool_timeout_sec = 1\n"
    );
    write_config(dir, "tasks.toml", &text)
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"call_id": id, "name": name, "arguments": arguments.to_string()})
}

#[test]
fn backgrounded_a_long_task_gives_the_model_a_handle_and_await_mcp_task_collects_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exec = ExecSession::spawn(exec_command(&background_config(&dir)));
    let started = Instant::now();
    exec.send(&call("job", "mcp__docs__job", json!({"seconds": 3})));
    let handed = exec.output("job");
    assert!(started.elapsed() < Duration::from_secs(3), "the handle comes at once");
    let handle: Value = serde_json::from_str(
        handed["result"]["Ok"]["content"][0]["text"].as_str().expect("the handle's text"),
    )
    .expect("the handle is JSON");
    let task = handle["task"].as_str().expect("task").to_string();
    assert_eq!(
        (handle["server"].as_str(), handle["status"].as_str()),
        (Some("docs"), Some("working"))
    );
    let background =
        exec.line("the hand-over", |l| l["type"] == "mcp_task_status" && l["background"] == true);
    assert_eq!(background["task"], task.as_str());

    exec.send(&call("peek", "await_mcp_task", json!({"task": task, "wait_sec": 0})));
    let still = exec.output("peek");
    let text = still["result"]["Ok"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains(r#""status":"working""#), "{still}");

    exec.send(&call("wait", "await_mcp_task", json!({"task": task, "wait_sec": 10})));
    let done = exec.output("wait");
    assert_eq!(done["result"]["Ok"]["content"][0]["text"], "job done after 3 s", "{done}");

    exec.send(&call("again", "await_mcp_task", json!({"task": task})));
    let gone = exec.output("again");
    let expected = format!(
        "task '{task}': no such task runs in the background (it was collected already, or never handed over)"
    );
    assert_eq!(gone["content"], expected.as_str(), "{gone}");
    assert_eq!(gone["success"], false);
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}

#[tokio::test]
async fn ended_results_nobody_collects_do_not_pile_up() {
    use mcp_backend::TasksBackend as _;
    let options =
        ManagerOptions::default().with(|o| o.tasks.background_after = Some(Duration::ZERO));
    let h = Harness::start_with(vec![demo("d", 100)], options);
    let mut handles = Vec::new();
    for _ in 0..70 {
        let output = h.call("mcp__d__job", r#"{"seconds": 0.05}"#).await;
        let ToolOutput::Mcp { result: Ok(result) } = output else { panic!("{output:?}") };
        let handle = result.structured_content.clone().expect("a handle");
        handles.push(handle["task"].as_str().expect("task").to_string());
    }
    // Let every task end, then one more backgrounded call makes room.
    tokio::time::sleep(Duration::from_millis(600)).await;
    h.call("mcp__d__job", r#"{"seconds": 0.05}"#).await;
    let forgotten = h.manager.await_task("d", &handles[0], Duration::ZERO).await;
    assert!(forgotten.is_err(), "the oldest ended result went: {forgotten:?}");
    let kept = h.manager.await_task("d", &handles[69], Duration::from_secs(5)).await;
    let kept = kept.expect("the newest is kept");
    let text = kept.content[0].as_text().map(|t| t.text.clone());
    assert_eq!(text.as_deref(), Some("job done after 0.05 s"));
    h.manager.shutdown().await;
}
