//! A host gives up a call in flight (exec's `cancel`): the call gets its end event and one
//! output saying so, and its server is told — `notifications/cancelled` for a request,
//! `tasks/cancel` for a task. Against the demo server (whose request log shows what it was
//! told) and server-everything's long-running operation, which reports progress.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::interop::{everything_js, node};
use crate::support::{DEMO, exec_command, write_config};

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"call_id": id, "name": name, "arguments": arguments.to_string()})
}

/// `log`'s lines once `wanted` is among them (at most 10 s).
fn logged(log: &std::path::Path, wanted: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| l == wanted) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Cancels `id` once it reported something, and checks its output and end event.
fn cancel_after(exec: &mut ExecSession, id: &str, reported: &str) {
    exec.line("a report of the call", |l| l["type"] == reported && l["call_id"] == id);
    exec.send(&json!({"type": "cancel", "call_id": id}));
    let output = exec.output(id);
    assert_eq!(output["content"], "cancelled before it finished", "{output}");
    assert_eq!(output["success"], false);
    let end =
        exec.line("the end event", |l| l["type"] == "mcp_tool_call_end" && l["call_id"] == id);
    assert_eq!(end["result"]["Err"], "cancelled before it finished", "{end}");
}

#[test]
fn a_cancelled_call_ends_once_and_its_server_is_told() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests.log");
    let text = format!(
        "[mcp_servers.docs]\ncommand = {DEMO:?}\nargs = [\"--name\", \"docs\", \"--request-log\", {:?}]\n",
        log.display().to_string()
    );
    let mut exec = ExecSession::spawn(exec_command(&write_config(&dir, "c.toml", &text)));
    exec.send(&call("p", "mcp__docs__progress", json!({"steps": 100, "ms": 100})));
    cancel_after(&mut exec, "p", "mcp_tool_call_progress");
    let requests = logged(&log, "notifications/cancelled");
    assert!(requests.lines().any(|l| l == "notifications/cancelled"), "{requests}");

    exec.send(&call("j", "mcp__docs__job", json!({"seconds": 60})));
    cancel_after(&mut exec, "j", "mcp_task_status");
    let requests = logged(&log, "tasks/cancel");
    assert!(requests.lines().any(|l| l == "tasks/cancel"), "{requests}");

    // Nothing left to cancel: an error line, no output.
    exec.send(&json!({"type": "cancel", "call_id": "p"}));
    let error = exec.line("the error", |l| l["type"] == "error");
    assert_eq!(error["message"], "no call `p` is in flight", "{error}");
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let outputs = |id: &str| {
        lines.iter().filter(|l| l["type"] == "function_call_output" && l["call_id"] == id).count()
    };
    assert_eq!((outputs("p"), outputs("j")), (1, 1), "one output each");
}

#[test]
fn server_everythings_long_running_operation_reports_progress_and_can_be_cancelled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[mcp_router]\nprogress_interval_ms = 0\n[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n",
        node(),
        everything_js("2026")
    );
    let mut exec = ExecSession::spawn(exec_command(&write_config(&dir, "c.toml", &text)));
    let tool = "mcp__everything__trigger-long-running-operation";
    exec.send(&call("long", tool, json!({"duration": 1, "steps": 4})));
    let output = exec.output("long");
    let text = output["result"]["Ok"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Long running operation completed"), "{output}");
    exec.send(&call("longer", tool, json!({"duration": 30, "steps": 60})));
    cancel_after(&mut exec, "longer", "mcp_tool_call_progress");
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let at = |kind: &str| {
        lines.iter().position(|l| l["type"] == kind && l["call_id"] == "long").expect(kind)
    };
    let (begin, end) = (at("mcp_tool_call_begin"), at("mcp_tool_call_end"));
    let progress: Vec<(usize, &Value)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "mcp_tool_call_progress" && l["call_id"] == "long")
        .collect();
    assert!(progress.len() >= 3, "{progress:?}");
    assert!(
        progress.iter().all(|(i, l)| begin < *i && *i < end && l["total"] == 4.0),
        "{progress:?}"
    );
}
