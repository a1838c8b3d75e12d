//! Server logs: a server's `notifications/message` become `mcp_server_log` events, bounded, and
//! the config's `log_level` is asked with `logging/setLevel` — against a hand-spoken fixture
//! (each message exact) as a child process.

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::interop::{python, python_script};
use crate::support::{exec_command, write_config};

/// The log events of one `log` call (`expected` of them, waited for: rmcp may hand a
/// notification on after the call's answer) and the call's output.
fn logs(log_level: Option<&str>, expected: usize) -> (Vec<Value>, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let level = log_level.map(|l| format!("log_level = \"{l}\"\n")).unwrap_or_default();
    let text = format!(
        "[mcp_servers.chatty]\ncommand = {:?}\nargs = [{:?}]\nprotocol = \"2025-11-25\"\n{level}",
        python(),
        python_script("log_fixture.py")
    );
    let config = write_config(&dir, "logs.toml", &text);
    let mut exec = ExecSession::spawn(exec_command(&config));
    exec.send(&json!({"call_id": "c1", "name": "mcp__chatty__log", "arguments": {}}));
    let output = exec.output("c1");
    let seen = std::cell::Cell::new(0);
    exec.line("every log event", |v| {
        if v["type"] == "mcp_server_log" {
            seen.set(seen.get() + 1);
        }
        seen.get() == expected
    });
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let events = lines.into_iter().filter(|l| l["type"] == "mcp_server_log").collect();
    (events, output)
}

#[test]
fn a_servers_log_messages_become_events_at_the_level_the_config_asks() {
    // rmcp handles each notification on a task of its own: the order is not promised.
    let sorted = |events: &[Value]| {
        let mut levels: Vec<String> =
            events.iter().filter_map(|e| e["level"].as_str().map(str::to_string)).collect();
        levels.sort();
        levels
    };
    let (all, _) = logs(None, 9);
    let mut expected =
        ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", "error"];
    expected.sort();
    assert_eq!(sorted(&all), expected);
    let info = all.iter().find(|e| e["level"] == "info").expect("info");
    assert_eq!(
        *info,
        json!({"type": "mcp_server_log", "server": "chatty", "level": "info", "logger": "fixture", "data": "info message"})
    );
    // The long one is cut to 4 KiB of its JSON, its size kept.
    let long = all.iter().find(|e| e.get("data_truncated_from").is_some()).expect("cut");
    assert_eq!(long["data_truncated_from"], 10002);
    assert_eq!(long["data"].as_str().expect("cut").len(), 4096);

    let (warnings, output) = logs(Some("warning"), 6);
    let mut expected = ["warning", "error", "critical", "alert", "emergency", "error"];
    expected.sort();
    assert_eq!(sorted(&warnings), expected);
    assert!(output.to_string().contains("logged at warning and above"), "{output}");
}

/// The log events of the Python SDK fixture's `chatty` call, in protocol 2026-07-28, with the
/// server's `log_level` (or none), over stdio or at an HTTP `url`; its progress reports checked
/// on the way.
fn modern_logs(log_level: Option<&str>, url: Option<&str>) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    let level = log_level.map(|l| format!("log_level = \"{l}\"\n")).unwrap_or_default();
    let server = match url {
        Some(url) => format!("url = {url:?}"),
        None => format!(
            "command = {:?}\nargs = [{:?}, \"stdio\"]",
            python(),
            python_script("era_fixture.py")
        ),
    };
    let text = format!(
        "[mcp_router]\nprogress_interval_ms = 0\n[mcp_servers.era]\n{server}\nprotocol = \"2026-07-28\"\n{level}"
    );
    let mut exec = ExecSession::spawn(exec_command(&write_config(&dir, "era.toml", &text)));
    exec.send(&json!({"call_id": "c1", "name": "mcp__era__chatty", "arguments": {}}));
    let output = exec.output("c1");
    assert_eq!(output["result"]["Ok"]["content"][0]["text"], "logged", "{output}");
    if log_level.is_some() {
        exec.line("the warning", |v| v["type"] == "mcp_server_log" && v["level"] == "warning");
    }
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    // The SDK's progress reports (floats) reach the host too, between the call's begin and end.
    let at = |kind: &str| lines.iter().position(|l| l["type"] == kind && l["call_id"] == "c1");
    let (begin, end) =
        (at("mcp_tool_call_begin").expect("begin"), at("mcp_tool_call_end").expect("end"));
    let progress: Vec<(usize, &Value)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "mcp_tool_call_progress" && l["call_id"] == "c1")
        .collect();
    // Each report precedes the answer on the server's output, so none is lost to the call's
    // end (the transport handles them in the stream's order).
    let steps: Vec<Option<f64>> = progress.iter().map(|(_, r)| r["progress"].as_f64()).collect();
    assert_eq!(steps, [Some(1.0), Some(2.0), Some(3.0)], "{progress:?}");
    for (i, report) in &progress {
        assert!(begin < *i && *i < end, "{report}");
        assert_eq!((report["total"].as_f64(), report["server"].as_str()), (Some(3.0), Some("era")));
        assert!(report["message"].as_str().unwrap_or_default().starts_with("after "), "{report}");
    }
    lines.into_iter().filter(|l| l["type"] == "mcp_server_log").collect()
}

#[test]
fn a_2026_server_is_asked_for_its_log_level_on_every_request() {
    let asked = modern_logs(Some("info"), None);
    let mut levels: Vec<&str> = asked.iter().filter_map(|l| l["level"].as_str()).collect();
    levels.sort();
    assert_eq!(levels, ["info", "warning"], "{asked:?}");
    assert!(asked.iter().all(|l| l["server"] == "era" && l["logger"] == "era"), "{asked:?}");
    // Unasked, a 2026-07-28 server sends none (the SDK follows the spec's per-request opt-in).
    assert_eq!(modern_logs(None, None), Vec::<Value>::new());
}

/// Over HTTP too, every progress report sent on the call's stream before its answer reaches
/// the host before the call's end (the transport wrapper handles them in order, not rmcp's
/// notification tasks).
#[test]
fn over_http_a_2026_servers_progress_all_arrives_before_the_end() {
    let server = crate::support::HttpServer::python("era_fixture.py", &[]);
    let asked = modern_logs(Some("warning"), Some(&server.url));
    assert_eq!(asked.len(), 1, "{asked:?}");
}
