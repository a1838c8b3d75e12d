//! The fault matrix: each misbehaviour costs one clear, model-visible error within its timeout
//! plus one second, naming the server; the other server keeps answering; every begin event has
//! its end; nothing panics.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_connection_manager::ServerConfig;
use router_protocol::EventMsg;
use tool_router::ToolOutput;

use crate::support::{DEMO, Harness, demo};

/// The text the model gets, whatever the output kind.
fn text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Function { content, .. } => content.to_string(),
        ToolOutput::Mcp { result: Err(e) } => e.clone(),
        ToolOutput::Mcp { result: Ok(r) } => serde_json::to_string(r).unwrap_or_default(),
    }
}

struct Case<'a> {
    fault: ServerConfig,
    tool: &'a str,
    arguments: &'a str,
    limit: Duration,
    /// Each must appear in the model-visible text.
    expect: &'a [&'a str],
    success: bool,
}

async fn run(case: Case<'_>) {
    let name = case.fault.name.clone();
    let mut h = Harness::start(vec![case.fault, demo("ok", 100)]);
    h.manager.wait_until_started().await;
    h.drain();
    let started = Instant::now();
    let output = h.call(case.tool, case.arguments).await;
    let elapsed = started.elapsed();
    let shown = text(&output);
    assert!(elapsed <= case.limit, "{name}: took {elapsed:?} (limit {:?})", case.limit);
    assert_eq!(output.is_success(), case.success, "{name}: {shown:.300}");
    for needle in case.expect {
        assert!(shown.contains(needle), "{name}: {needle:?} missing from {shown:.400}");
    }
    // The other server keeps answering.
    let ok =
        h.payload("read_mcp_resource", r#"{"server":"ok","uri":"demo://notes/welcome"}"#).await;
    assert_eq!(ok["uri"], "demo://notes/welcome", "{name}");
    let events = h.drain();
    let begins = events.iter().filter(|e| matches!(e, EventMsg::McpToolCallBegin(_))).count();
    let ends = events.iter().filter(|e| matches!(e, EventMsg::McpToolCallEnd(_))).count();
    assert_eq!(begins, ends, "{name}: unpaired events");
    h.manager.shutdown().await;
}

fn faulty(name: &str, timeout: Duration) -> ServerConfig {
    let mut config = demo(name, 100);
    config.tool_timeout = timeout;
    config
}

fn sh(name: &str, script: &str, startup: Duration) -> ServerConfig {
    let mut config = ServerConfig::stdio(name, "sh", vec!["-c".into(), script.into()]);
    config.startup_timeout = startup;
    config
}

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn crash_in_the_middle_of_a_call() {
    run(Case {
        fault: faulty("crashy", 5 * SECOND),
        tool: "mcp__crashy__crash",
        arguments: "{}",
        limit: 6 * SECOND,
        expect: &["'crashy'", "connection"],
        success: false,
    })
    .await;
}

#[tokio::test]
async fn hang_forever() {
    run(Case {
        fault: faulty("hangs", SECOND),
        tool: "mcp__hangs__sleep",
        arguments: r#"{"ms": 600000}"#,
        limit: 2 * SECOND,
        expect: &["timed out awaiting tools/call after 1s", "'hangs'"],
        success: false,
    })
    .await;
}

#[tokio::test]
async fn garbage_on_stdout() {
    // The garbage line is skipped by the transport; the call itself is answered.
    run(Case {
        fault: faulty("noisy", 5 * SECOND),
        tool: "mcp__noisy__garbage",
        arguments: "{}",
        limit: 6 * SECOND,
        expect: &["wrote garbage"],
        success: true,
    })
    .await;
}

#[tokio::test]
async fn a_fifty_megabyte_answer_is_cut_to_the_budget() {
    let case = Case {
        fault: faulty("big", 30 * SECOND),
        tool: "mcp__big__huge",
        arguments: r#"{"mb": 50}"#,
        limit: 31 * SECOND,
        expect: &["[truncated: 65536 of 52428800 bytes shown; read_mcp_resource with server"],
        success: true,
    };
    run(case).await;
}

#[tokio::test]
async fn exit_during_startup() {
    run(Case {
        fault: sh("quits", "exit 2", 5 * SECOND),
        tool: "read_mcp_resource",
        arguments: r#"{"server":"quits","uri":"x"}"#,
        limit: 6 * SECOND,
        expect: &["MCP server 'quits' failed to start", "initialize failed"],
        success: false,
    })
    .await;
}

#[tokio::test]
async fn slower_than_the_startup_timeout() {
    run(Case {
        fault: sh("sluggish", "sleep 30", SECOND),
        tool: "read_mcp_resource",
        arguments: r#"{"server":"sluggish","uri":"x"}"#,
        limit: 2 * SECOND,
        expect: &["MCP server 'sluggish' failed to start: startup timed out after 1s"],
        success: false,
    })
    .await;
}

#[tokio::test]
async fn slow_answers_arrive() {
    run(Case {
        fault: faulty("slow", 5 * SECOND),
        tool: "mcp__slow__sleep",
        arguments: r#"{"ms": 300}"#,
        limit: 6 * SECOND,
        expect: &["slept 300 ms"],
        success: true,
    })
    .await;
}

#[tokio::test]
async fn a_cursor_cycle_stops_the_listing_and_keeps_the_items() {
    let mut cyclic = demo("cyclic", 100);
    cyclic.transport = match cyclic.transport {
        mcp_connection_manager::TransportConfig::Stdio { command, mut args, env, cwd } => {
            args.extend(["--fault".to_string(), "cursor-cycle".to_string()]);
            mcp_connection_manager::TransportConfig::Stdio { command, args, env, cwd }
        }
        other => other,
    };
    let expect = &[
        "\"server\":\"cyclic\"",
        "repeated cursor \\\"a\\\" (a cursor cycle)",
        "\"server\":\"ok\"",
    ];
    run(Case {
        fault: cyclic,
        tool: "list_mcp_resources",
        arguments: "{}",
        limit: 5 * SECOND,
        expect,
        success: true,
    })
    .await;
}

#[tokio::test]
async fn a_page_that_never_comes_times_out_and_keeps_the_pages_before_it() {
    let mut hanging = faulty("hanging", SECOND);
    if let mcp_connection_manager::TransportConfig::Stdio { args, .. } = &mut hanging.transport {
        args.extend(["--fault".to_string(), "hanging-pages".to_string()]);
    }
    let expect = &[
        "\"server\":\"hanging\"",
        "timed out awaiting resources/list after 1s (MCP server 'hanging')",
        "\"server\":\"ok\"",
    ];
    run(Case {
        fault: hanging,
        tool: "list_mcp_resources",
        arguments: "{}",
        limit: 3 * SECOND,
        expect,
        success: true,
    })
    .await;
}

/// A loopback HTTP server that answers 500, or closes every connection without answering.
struct BadHttp(Child, String);

impl BadHttp {
    fn start(mode: &str) -> Self {
        let script = r#"
import http.server, sys
mode = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        if mode == "500":
            self.send_response(500); self.send_header("Content-Length", "4"); self.end_headers(); self.wfile.write(b"boom")
        else:
            self.close_connection = True
            self.connection.close()
    do_POST = do_GET = do_DELETE = answer
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
        let mut child = Command::new("python3")
            .args(["-c", script, mode])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut port = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut port).expect("port");
        Self(child, format!("http://127.0.0.1:{}/mcp", port.trim()))
    }
}

impl Drop for BadHttp {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn http_fault(mode: &str, name: &str) {
    let bad = BadHttp::start(mode);
    let mut config = ServerConfig::http(name, bad.1.clone());
    config.startup_timeout = 3 * SECOND;
    let case = Case {
        fault: config,
        tool: "list_mcp_resources",
        arguments: "{}",
        limit: 4 * SECOND,
        expect: &["\"errors\":[{\"server\":", "failed to start"],
        success: true,
    };
    run(case).await;
}

#[tokio::test]
async fn http_server_answering_500() {
    http_fault("500", "err500").await;
}

#[tokio::test]
async fn http_server_closing_streams() {
    http_fault("close", "closer").await;
}

#[test]
fn the_demo_binary_supports_the_faults() {
    let out = Command::new(DEMO).arg("--help").output().expect("help");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--fault <FAULT>") && help.contains("cursor-cycle"), "{help}");
    // The option set is clap's (shared with `mcp-router serve-demo`): a wrong value is refused.
    for program in [DEMO, crate::support::ROUTER] {
        let mut command = Command::new(program);
        if program == crate::support::ROUTER {
            command.arg("serve-demo");
        }
        let out = command.args(["--fault", "nope"]).output().expect("run");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("invalid value 'nope'") && stderr.contains("cursor-cycle"),
            "{stderr}"
        );
    }
}

/// A tool-level fault again, over streamable HTTP (the demo server in HTTP mode).
async fn over_http(
    name: &str,
    tool: &str,
    arguments: &str,
    timeout: Duration,
    expect: &[&str],
    success: bool,
) {
    let web = crate::support::HttpServer::demo(100);
    let mut fault = ServerConfig::http(name, web.url.clone());
    fault.tool_timeout = timeout;
    let tool = format!("mcp__{name}__{tool}");
    run(Case { fault, tool: &tool, arguments, limit: timeout + SECOND, expect, success }).await;
}

#[tokio::test]
async fn http_crash_in_the_middle_of_a_call() {
    over_http("webcrash", "crash", "{}", 5 * SECOND, &["tool call error:", "'webcrash'"], false)
        .await;
}

#[tokio::test]
async fn http_hang_forever() {
    let expect = &["timed out awaiting tools/call after 1s", "'webhang'"];
    over_http("webhang", "sleep", r#"{"ms": 600000}"#, SECOND, expect, false).await;
}

#[tokio::test]
async fn http_fifty_megabyte_answer() {
    let expect = &["[truncated: 65536 of 52428800 bytes shown; read_mcp_resource with server"];
    over_http("webbig", "huge", r#"{"mb": 50}"#, 30 * SECOND, expect, true).await;
}

#[tokio::test]
async fn http_slow_answers_arrive() {
    over_http("webslow", "sleep", r#"{"ms": 300}"#, 5 * SECOND, &["slept 300 ms"], true).await;
}

/// A stdio server of a few lines of Python (not rmcp, not an SDK): it answers reads, except
/// that `x://crash` makes it exit with status 3 and `x://hang` is never answered; it logs the
/// reads and cancellations it receives, with its pid, to the file named by its argument.
const PY_READER: &str = r#"
import json, os, sys
log = sys.argv[1]
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
def note(m):
    m["pid"] = os.getpid()
    with open(log, "a") as f: f.write(json.dumps(m) + "\n")
for line in sys.stdin:
    m = json.loads(line)
    method, id = m.get("method"), m.get("id")
    if method == "initialize":
        info = {"name": "py-reader", "version": "1"}
        send({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"resources": {}}, "serverInfo": info}})
    elif method in ("resources/list", "resources/templates/list"):
        key = "resources" if method == "resources/list" else "resourceTemplates"
        send({"jsonrpc": "2.0", "id": id, "result": {key: []}})
    elif method == "resources/read":
        note(m)
        uri = m["params"]["uri"]
        if uri == "x://crash":
            os._exit(3)
        if uri != "x://hang":
            send({"jsonrpc": "2.0", "id": id, "result": {"contents": [{"uri": uri, "text": "read " + uri}]}})
    elif method == "notifications/cancelled":
        note(m)
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
"#;

fn py_reader(name: &str, log: &std::path::Path, timeout: Duration) -> ServerConfig {
    let args = vec!["-c".into(), PY_READER.into(), log.display().to_string()];
    let mut config = ServerConfig::stdio(name, "python3", args);
    config.tool_timeout = timeout;
    config
}

/// What the Python server logged: each read and cancellation it received.
fn logged(log: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).expect("json")).collect()
}

/// A server that dies in the middle of a read: the read fails at once (not at its timeout;
/// after the one retry a read gets on a restarted server) saying the server exited and how;
/// the next read starts it again and is answered.
#[tokio::test]
async fn a_server_dying_in_the_middle_of_a_read_fails_that_read_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("reads.jsonl");
    let h = Harness::start(vec![py_reader("py", &log, 30 * SECOND)]);
    h.manager.wait_until_started().await;
    let started = Instant::now();
    let output = h.call("read_mcp_resource", r#"{"server":"py","uri":"x://crash"}"#).await;
    let shown = text(&output);
    assert!(!output.is_success(), "{shown}");
    assert!(started.elapsed() < 5 * SECOND, "failed only after {:?}", started.elapsed());
    assert!(shown.contains("'py'") && shown.contains("exited (status 3)"), "{shown}");
    let again = h.payload("read_mcp_resource", r#"{"server":"py","uri":"x://ok"}"#).await;
    assert_eq!(again["contents"][0]["text"], "read x://ok", "{again}");
    // A read is retried once on a restarted server; each attempt met a process of its own.
    let lines = logged(&log);
    let pids: Vec<_> = lines.iter().map(|l| &l["pid"]).collect();
    let crashes = lines.iter().filter(|l| l["params"]["uri"] == "x://crash").count();
    assert!((1..=2).contains(&crashes), "{lines:?}");
    assert_eq!(lines.last().map(|l| &l["params"]["uri"]), Some(&serde_json::json!("x://ok")));
    let distinct: std::collections::HashSet<String> = pids.iter().map(|p| p.to_string()).collect();
    assert_eq!(distinct.len(), lines.len(), "a new process each time: {lines:?}");
    h.manager.shutdown().await;
}

/// A read the server never answers: it times out, the server is told with the id it was sent
/// (`notifications/cancelled`), and the connection goes on answering.
#[tokio::test]
async fn a_read_that_times_out_is_cancelled_at_the_server_which_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("reads.jsonl");
    let h = Harness::start(vec![py_reader("py", &log, SECOND)]);
    h.manager.wait_until_started().await;
    let output = h.call("read_mcp_resource", r#"{"server":"py","uri":"x://hang"}"#).await;
    let shown = text(&output);
    assert!(shown.contains("timed out awaiting resources/read after 1s"), "{shown}");
    let deadline = Instant::now() + 5 * SECOND;
    let (read, cancelled) = loop {
        let lines = logged(&log);
        let cancelled = lines.iter().find(|l| l["method"] == "notifications/cancelled").cloned();
        if let Some(cancelled) = cancelled {
            break (lines[0].clone(), cancelled);
        }
        assert!(Instant::now() < deadline, "no cancellation reached the server: {lines:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(read["params"]["uri"], "x://hang");
    assert_eq!(cancelled["params"]["requestId"], read["id"], "{cancelled}");
    let again = h.payload("read_mcp_resource", r#"{"server":"py","uri":"x://ok"}"#).await;
    assert_eq!(again["contents"][0]["text"], "read x://ok", "{again}");
    let lines = logged(&log);
    let pids: Vec<_> =
        lines.iter().filter(|l| l["method"] == "resources/read").map(|l| &l["pid"]).collect();
    assert!(pids.len() == 2 && pids[0] == pids[1], "the same process answered: {lines:?}");
    h.manager.shutdown().await;
}
