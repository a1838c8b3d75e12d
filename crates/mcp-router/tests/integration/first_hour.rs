//! The first hour with real servers: slow starts succeed in one process under the default
//! startup timeout, in both eras; a start that runs out of time names its phase; exec ends
//! whatever is waiting when its input closes or a signal comes; and no process a server started
//! is handed to a subreaper (as an agent that is PID 1 in a container would see it).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mcp_connection_manager::ServerConfig;
use router_protocol::EventMsg;
use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::interop::{harness_dir, python, python_script};
use crate::support::{DEMO, Harness, ROUTER, exec_command, ready_protocols, write_config};

/// A demo server that appends a line to `log` at each start, then sleeps `secs` before it
/// serves (`fault`: a demo server fault, e.g. `legacy-versions`).
fn slow_demo(name: &str, log: &Path, secs: u32, fault: Option<&str>) -> ServerConfig {
    let fault = fault.map(|f| format!(" --fault {f}")).unwrap_or_default();
    let script = format!(
        "echo started >> '{}'; echo loading >&2; sleep {secs}; exec '{DEMO}' --name {name}{fault}",
        log.display()
    );
    ServerConfig::stdio(name, "sh", vec!["-c".to_string(), script])
}

fn starts(log: &Path) -> usize {
    std::fs::read_to_string(log).map(|t| t.lines().count()).unwrap_or(0)
}

/// Servers that take 3, 6 and 9 s to start, under the default 10 s startup timeout and
/// `protocol = "auto"`: the 2026-07-28 demo server, one that offers no 2026 version
/// (`initialize` follows on the same pipes) and one that ignores `server/discover`. Each is
/// ready in the era it speaks and was started once; a 12 s one fails naming the phase, and
/// succeeds once in either era with the timeout raised to 30 s.
#[tokio::test]
async fn slow_servers_start_once_in_either_era_and_a_too_slow_one_names_its_phase() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: &[(&str, u32, Option<&str>, &str)] = &[
        ("modern3", 3, None, "2026-07-28"),
        ("modern6", 6, None, "2026-07-28"),
        ("modern9", 9, None, "2026-07-28"),
        ("legacy6", 6, Some("legacy-versions"), "2025-11-25"),
        ("legacy9", 9, Some("legacy-versions"), "2025-11-25"),
        ("ignores6", 6, Some("ignore-discover"), "2025-11-25"),
    ];
    let log = |name: &str| dir.path().join(format!("{name}.log"));
    let mut servers: Vec<ServerConfig> = cases
        .iter()
        .map(|(name, secs, fault, _)| slow_demo(name, &log(name), *secs, *fault))
        .collect();
    servers.push(slow_demo("slow12", &log("slow12"), 12, None));
    assert!(servers.iter().all(|s| s.startup_timeout == Duration::from_secs(10)), "the default");
    // With the timeout raised, a 12 s start is past rmcp's own 10 s fallback: still one
    // process, in the era the server speaks.
    let raised: &[(&str, u32, Option<&str>, &str)] = &[
        ("raised12", 12, None, "2026-07-28"),
        ("raisedignores12", 12, Some("ignore-discover"), "2025-11-25"),
    ];
    for (name, secs, fault, _) in raised {
        let mut config = slow_demo(name, &log(name), *secs, *fault);
        config.startup_timeout = Duration::from_secs(30);
        servers.push(config);
    }
    let mut h = Harness::start(servers);
    h.manager.wait_until_started().await;
    let events = h.drain();
    let cases: Vec<_> = cases.iter().chain(raised).collect();
    let mut expected: Vec<(String, String)> =
        cases.iter().map(|(name, _, _, era)| (name.to_string(), era.to_string())).collect();
    expected.sort();
    assert_eq!(ready_protocols(&events), expected);
    for (name, ..) in cases {
        assert_eq!(starts(&log(name)), 1, "{name} was started once");
    }
    let failed: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EventMsg::McpServerFailed(f) if f.server == "slow12" => Some(f.error.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        [
            "startup timed out after 10s waiting for the answer to server/discover (the server has not read it yet: it is still starting); its last stderr lines: loading"
        ]
    );
    assert_eq!(starts(&log("slow12")), 1);
    h.manager.shutdown().await;
}

/// A config whose `notes` demo server asks the host before each `echo`.
fn asking_config(dir: &tempfile::TempDir) -> std::path::PathBuf {
    write_config(
        dir,
        "config.toml",
        &format!(
            "[mcp_servers.notes]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"notes\"]\ntool_approvals = {{ echo = \"ask\" }}\n"
        ),
    )
}

/// exec with a call waiting for its approval, ended by `end` (closing stdin or a signal):
/// it exits at once with `code`, the call answered as refused (the host went away).
fn ends_with_an_approval_waiting(end: &str, code: i32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exec = ExecSession::spawn(exec_command(&asking_config(&dir)));
    exec.send(&json!({"call_id": "1", "name": "mcp__notes__echo", "arguments": {"text": "hi"}}));
    exec.line("the question", |v| v["type"] == "tool_approval_request");
    let started = Instant::now();
    if end != "stdin" {
        let status = Command::new("kill").args([end, &exec.pid().to_string()]).status();
        assert!(status.is_ok_and(|s| s.success()));
    }
    let (lines, exit) = exec.finish();
    assert!(started.elapsed() < Duration::from_secs(10), "{end}: {:?}", started.elapsed());
    assert_eq!(exit, code, "{end}");
    let outputs: Vec<&Value> =
        lines.iter().filter(|l| l["type"] == "function_call_output").collect();
    assert_eq!(outputs.len(), 1, "{end}: one output for the one call: {lines:?}");
    let output = outputs[0]["output"].to_string();
    let refused = "did not approve this call of tool `echo` of MCP server 'notes': the host went away before answering (exec is ending)";
    // A signal also cancels the call, which may end before the refusal reaches it.
    let cancelled = end != "stdin" && output.contains("cancelled before it finished");
    assert!(output.contains(refused) || cancelled, "{end}: {output}");
    let stopped = lines.iter().filter(|l| l["type"] == "mcp_server_stopped").count();
    assert_eq!(stopped, 1, "{end}: the server was shut down");
}

#[test]
fn exec_ends_when_its_input_closes_while_an_approval_waits() {
    ends_with_an_approval_waiting("stdin", 0);
}

#[test]
fn exec_ends_on_sigterm_while_an_approval_waits() {
    ends_with_an_approval_waiting("-TERM", 143);
}

#[test]
fn exec_ends_on_sigint_while_an_approval_waits() {
    ends_with_an_approval_waiting("-INT", 130);
}

/// What `tests/harness/py/subreaper.py` saw: the command's exit, its stdout lines, and the
/// processes handed to the subreaper.
struct Reaped {
    exit: Value,
    lines: Vec<Value>,
    adopted: Vec<Value>,
}

/// `mcp-router exec --config CONFIG` under a subreaper, given `input`, ended as `how` says
/// (`subreaper.py`'s flags).
fn under_subreaper(config: &Path, input: &str, how: &[&str]) -> Reaped {
    let dir = tempfile::tempdir().expect("tempdir");
    let input_file = dir.path().join("input.jsonl");
    std::fs::write(&input_file, input).expect("input");
    let output = Command::new(python())
        .arg(python_script("subreaper.py"))
        .args(how)
        .arg("--input")
        .arg(&input_file)
        .args(["--", ROUTER, "exec", "--config"])
        .arg(config)
        .env("MCP_ROUTER_CACHE_DIR", dir.path().join("cache"))
        .output()
        .expect("run subreaper.py");
    let text = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&output.stderr)));
    let lines = report["stdout"]
        .as_array()
        .expect("stdout")
        .iter()
        .filter_map(|l| serde_json::from_str(l.as_str()?).ok())
        .collect();
    let exit = report.get("code").cloned().unwrap_or_else(|| json!({"signal": report["signal"]}));
    Reaped { exit, lines, adopted: report["adopted"].as_array().cloned().unwrap_or_default() }
}

/// A process that keeps one core busy while it lives, as another build would.
struct CpuHog(std::process::Child);

impl CpuHog {
    fn start() -> Self {
        Self(Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("hog"))
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first hour, as a test: the six packaged servers (server-everything over stdio and
/// HTTP, server-memory and server-filesystem through `npx`, mcp-server-git behind a `sh`
/// wrapper, mcp-server-time) and a start given up (a wrapper with a child of its own, past its
/// startup timeout), under the default config, the first run beside a CPU hog; ended by the
/// end of input, SIGTERM and SIGINT, after the calls and while the servers still start: every
/// call answered (and, ended after them, every server ready), nothing handed to a subreaper.
#[test]
fn nothing_a_server_started_is_left_to_a_subreaper() {
    let h = harness_dir().display().to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let http = crate::support::HttpServer::everything("2026");
    let config = write_config(
        &dir,
        "config.toml",
        &format!(
            r#"
[mcp_servers.everything]
command = {node:?}
args = [{everything:?}, "stdio"]
[mcp_servers.everything_http]
url = "{url}"
[mcp_servers.memory]
command = "npx"
args = ["--prefix", "{h}", "mcp-server-memory"]
env = {{ MEMORY_FILE_PATH = "{mem}" }}
[mcp_servers.fs]
command = "npx"
args = ["--prefix", "{h}", "mcp-server-filesystem", "{tmp}"]
[mcp_servers.git]
command = "sh"
args = ["-c", "{h}/.venv/bin/mcp-server-git"]
[mcp_servers.time]
command = "{h}/.venv/bin/mcp-server-time"
[mcp_servers.gaveup]
command = "sh"
args = ["-c", "sleep 30 & sleep 30; wait"]
startup_timeout_sec = 1
"#,
            node = crate::interop::node(),
            everything = crate::interop::everything_js("2026"),
            url = http.url,
            mem = dir.path().join("memory.jsonl").display(),
            tmp = dir.path().display(),
        ),
    );
    let calls = [
        json!({"call_id": "everything", "name": "mcp__everything__echo", "arguments": {"message": "hi"}}),
        json!({"call_id": "everything_http", "name": "mcp__everything_http__echo", "arguments": {"message": "hi"}}),
        json!({"call_id": "time", "name": "mcp__time__get_current_time", "arguments": {"timezone": "UTC"}}),
        json!({"call_id": "memory", "name": "mcp__memory__read_graph", "arguments": {}}),
        json!({"call_id": "git", "name": "mcp__git__git_status", "arguments": {"repo_path": dir.path().display().to_string()}}),
        json!({"call_id": "fs", "name": "mcp__fs__list_allowed_directories", "arguments": {}}),
        json!({"call_id": "gaveup", "name": "mcp__gaveup__anything", "arguments": {}}),
    ];
    let input: String = calls.iter().map(|c| format!("{c}\n")).collect();
    // The last two end it while the servers start: their calls are cancelled, not run.
    for (n, (how, exit)) in [
        (&["--close-after", "0"][..], json!(0)),
        (&["--close-after", "60", "--signal", "TERM:15"][..], json!(143)),
        (&["--close-after", "60", "--signal", "INT:15"][..], json!(130)),
        (&["--close-after", "60", "--signal", "TERM:0.8"][..], json!(143)),
        (&["--close-after", "60", "--signal", "INT:1.5"][..], json!(130)),
    ]
    .into_iter()
    .enumerate()
    {
        let whole = n < 3;
        let hog = (n == 0).then(CpuHog::start);
        let reaped = under_subreaper(&config, &input, how);
        drop(hog);
        assert_eq!(reaped.adopted, Vec::<Value>::new(), "{how:?}: adopted");
        assert_eq!(reaped.exit, exit, "{how:?}");
        for call in &calls {
            let id = &call["call_id"];
            let outputs: Vec<&Value> = reaped
                .lines
                .iter()
                .filter(|l| l["type"] == "function_call_output" && l["call_id"] == *id)
                .collect();
            assert_eq!(outputs.len(), 1, "{how:?}: call {id}");
            if !whole {
                continue;
            }
            let failed = outputs[0].to_string().contains("\"Err\"")
                || outputs[0]["output"]["success"] == json!(false);
            assert_eq!(failed, *id == "gaveup", "{how:?}: {}", outputs[0]);
        }
        for server in ["everything", "everything_http", "time", "memory", "git", "fs"] {
            if !whole {
                break;
            }
            let ready = reaped
                .lines
                .iter()
                .any(|l| l["type"] == "mcp_server_ready" && l["server"] == server);
            assert!(ready, "{how:?}: {server} ready: {:?}", reaped.lines);
        }
    }
}
