//! The front door's examples, run as a host author runs them: `mcp-host`'s `host` example over
//! two demo servers answers a model turn, renders every event, answers an elicitation and a
//! skill approval, prints outputs in both providers' formats and leaves no process; and it
//! behaves exactly as `mcp-router exec` does for the same config (one assembly, not two).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::support::{DEMO, ROUTER, exec_command, marker, wait_gone, write_config};

/// An example's binary, built by `cargo test --workspace` beside the router's.
fn example(name: &str) -> PathBuf {
    let bin = PathBuf::from(ROUTER).with_file_name("examples").join(name);
    assert!(
        bin.exists(),
        "{} is not built: run the workspace's tests (`cargo test --workspace` builds mcp-host's examples)",
        bin.display()
    );
    bin
}

fn config(dir: &tempfile::TempDir, marker: &str) -> PathBuf {
    config_with(dir, marker, "[mcp_router]\ntool_search = \"on\"\n")
}

/// The two demo servers, then `router` (a `[mcp_router]` section, or nothing for the defaults).
fn config_with(dir: &tempfile::TempDir, marker: &str, router: &str) -> PathBuf {
    let text = format!(
        r#"
[mcp_servers.docs]
command = "{DEMO}"
args = ["--name", "{marker}-docs", "--page-size", "2", "--demo-skills"]

[mcp_servers.notes]
command = "{DEMO}"
args = ["--name", "{marker}-notes"]

{router}"#
    );
    write_config(dir, "config.toml", &text)
}

/// The model's turn, as the example ships it (`examples/host/turn.jsonl`): a list, a read, a
/// template read, a search, MCP calls (one elicits), a skill.
fn turn() -> Vec<Value> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("crates/mcp-host/examples/host/turn.jsonl"))
        .expect("the shipped turn");
    text.lines().map(|line| serde_json::from_str(line).expect("a call a line")).collect()
}

/// The example's stdout lines (parsed) and stderr, run on `config` with the turn on stdin.
fn run_host(config: &std::path::Path, cache: &std::path::Path) -> (Vec<Value>, String) {
    let mut child = Command::new(example("host"))
        .arg(config)
        .env("MCP_ROUTER_CACHE_DIR", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the host example");
    let mut stdin = child.stdin.take().expect("stdin");
    for call in turn() {
        writeln!(stdin, "{call}").expect("write a call");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("the example ends");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    (lines, stderr)
}

#[test]
fn the_host_example_runs_a_turn_and_renders_every_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = marker("example-host");
    let config = config(&dir, &marker);
    let (lines, stderr) = run_host(&config, &dir.path().join("cache"));
    a_whole_turn(&lines, &stderr);
    assert_eq!(wait_gone(&marker, Duration::from_secs(3)), Vec::<u32>::new(), "processes left");
}

/// `cargo run -p mcp-host --example host` as written: no argument, so the config and the turn
/// shipped beside the example (its demo servers served by the example itself), stdin unread.
#[test]
fn the_host_example_runs_as_written_with_what_it_ships() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A copy in a folder of its own: its servers (itself, `serve-demo`) carry the marker.
    let marker = marker("example-as-written");
    let bin = dir.path().join(&marker).join("host");
    std::fs::create_dir(bin.parent().expect("folder")).expect("mkdir");
    std::fs::copy(example("host"), &bin).expect("copy the example");
    let out = Command::new(&bin)
        .env("MCP_ROUTER_CACHE_DIR", dir.path().join("cache"))
        .stdin(Stdio::null())
        .output()
        .expect("run the host example");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    a_whole_turn(&lines, &stderr);
    assert!(stderr.contains("event  mcp_server_ready     notes"), "{stderr}");
    assert_eq!(wait_gone(&marker, Duration::from_secs(3)), Vec::<u32>::new(), "processes left");
}

/// The specs in both formats, every call of the turn answered in three formats, the
/// elicitation and the skill approval answered by the example's host, every event rendered.
fn a_whole_turn(lines: &[Value], stderr: &str) {
    // Specs in both formats, then three lines per call: as exec, OpenAI Responses, Anthropic.
    assert_eq!(lines.len(), 2 + 3 * turn().len(), "{lines:#?}");
    assert_eq!((&lines[0]["format"], &lines[1]["format"]), (&json!("openai"), &json!("anthropic")));
    assert!(
        lines[0]["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["type"] == "function"))
    );
    assert!(
        lines[1]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().all(|t| t["input_schema"].is_object()))
    );
    for (i, call) in turn().iter().enumerate() {
        let [exec, openai, anthropic] = [&lines[2 + 3 * i], &lines[3 + 3 * i], &lines[4 + 3 * i]];
        let id = &call["call_id"];
        assert_eq!((&exec["type"], &exec["call_id"]), (&json!("function_call_output"), id));
        assert_eq!((&openai["type"], &openai["call_id"]), (&json!("function_call_output"), id));
        assert_eq!((&anthropic["type"], &anthropic["tool_use_id"]), (&json!("tool_result"), id));
        let failed = exec["output"]["success"] == false;
        assert!(!failed, "call {id} failed: {exec}");
        assert!(anthropic.get("is_error").is_none(), "{anthropic}");
    }
    // The elicitation was answered by the example's HostHandler, in every format.
    let asked = &lines[2 + 3 * 4..2 + 3 * 5];
    assert_eq!(asked[1]["output"], "accepted: {\"name\":\"Ada\"}", "{asked:?}");
    assert_eq!(asked[2]["content"][0]["text"], "accepted: {\"name\":\"Ada\"}");
    assert!(stderr.contains("host: the user allows skill csv-report of docs"), "{stderr}");
    // The HostHandler is told which call waits, and the events bracket the wait.
    assert!(stderr.contains("host: docs asks the user (5 waits)"), "{stderr}");
    assert!(
        stderr.contains(
            "mcp_server_request_begin docs elicitation/create (call 5 waits on the host)"
        ),
        "{stderr}"
    );
    // Every event rendered, through the shutdown: the stream ended after the last stop.
    for expected in [
        "event  mcp_server_ready     docs",
        "event  mcp_tool_call_end    3 ",
        "event  mcp_server_request   docs elicitation/create",
        "event  mcp_tools_revealed   ",
        "event  mcp_server_stopped   docs",
        "event  mcp_server_stopped   notes",
    ] {
        assert!(stderr.contains(expected), "no `{expected}` in:\n{stderr}");
    }
    assert!(stderr.trim_end().ends_with("event  mcp_server_stopped   notes"), "{stderr}");
}

#[test]
fn the_example_and_the_binary_give_the_same_specs_and_outputs_for_one_config() {
    // Tool search on, and the defaults (no `[mcp_router]`: search `auto`, the tool catalog).
    for router in ["[mcp_router]\ntool_search = \"on\"\n", ""] {
        same_specs_and_outputs(router);
    }
}

fn same_specs_and_outputs(router: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = marker("example-same");
    let config = config_with(&dir, &marker, router);
    let (lines, _) = run_host(&config, &dir.path().join("host-cache"));
    let mut exec = ExecSession::spawn({
        let mut command = exec_command(&config);
        command.env("MCP_ROUTER_CACHE_DIR", dir.path().join("exec-cache"));
        command
    });
    for (i, format) in ["openai", "anthropic"].iter().enumerate() {
        exec.send(&json!({"type": "list_tools", "format": format}));
        let tools = exec.line("tools", |v| v["type"] == "tools" && v["format"] == *format);
        let (exec, host) = (tools["tools"].to_string(), lines[i]["tools"].to_string());
        assert_eq!(exec, host, "{format} specs with {router:?}");
    }
    // One call at a time, as the example makes them; the elicitation is the host's own answer
    // (exec declines), so it is left out.
    for (i, call) in turn().iter().enumerate().filter(|(_, c)| c["name"] != "mcp__docs__ask") {
        exec.send(call);
        let output = exec.output(call["call_id"].as_str().expect("id"));
        let host = &lines[2 + 3 * i]["output"];
        assert_eq!(
            output.to_string(),
            host.to_string(),
            "call {} with {router:?}",
            call["call_id"]
        );
    }
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
    assert_eq!(wait_gone(&marker, Duration::from_secs(3)), Vec::<u32>::new(), "processes left");
}

#[test]
fn the_minimal_example_is_the_readme_s_embedding_section_and_runs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let source = std::fs::read_to_string(root.join("crates/mcp-host/examples/minimal.rs"))
        .expect("minimal.rs");
    let body = &source[source.find("use mcp_host::prelude::*;").expect("the body")..];
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let embedding = &readme[readme.find("## Embedding").expect("an Embedding section")..];
    assert!(
        embedding.contains(&format!("```rust,no_run\n{body}```")),
        "README's Embedding section is not crates/mcp-host/examples/minimal.rs: copy it over"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = marker("example-minimal");
    let config = config(&dir, &marker);
    let out = Command::new(example("minimal"))
        .arg(&config)
        .env("MCP_ROUTER_CACHE_DIR", dir.path().join("cache"))
        .stdin(Stdio::null())
        .output()
        .expect("run the minimal example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].ends_with(" tools for the model"), "{stdout}");
    let output: Value = serde_json::from_str(lines[1]).expect("the output as JSON");
    assert_eq!(
        (&output["type"], &output["call_id"]),
        (&json!("function_call_output"), &json!("call_1"))
    );
    let payload: Value =
        serde_json::from_str(output["output"].as_str().expect("text")).expect("JSON");
    assert_eq!(payload["resources"].as_array().map(Vec::len), Some(10), "{payload}");
    assert!(lines.iter().any(|l| l.starts_with("mcp_tool_call_end    call_1 ")), "{stdout}");
    assert_eq!(
        &lines[lines.len() - 2..],
        ["mcp_server_stopped   docs", "mcp_server_stopped   notes"]
    );
    assert_eq!(wait_gone(&marker, Duration::from_secs(3)), Vec::<u32>::new(), "processes left");
}

#[test]
fn the_own_backend_example_routes_to_a_backend_of_the_host_s_own() {
    let out = Command::new(example("own_backend")).output().expect("run own_backend");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    let specs: Vec<&str> = lines[0].trim_start_matches("specs: ").split(' ').collect();
    assert!(specs.contains(&"mcp__notebook__shout") && specs.contains(&"read_mcp_resource"));
    // Only the core: no tool of a capability the backend does not have.
    for absent in ["load_mcp_skill", "get_mcp_prompt", "await_mcp_task", "list_mcp_skills"] {
        assert!(!specs.contains(&absent), "{absent} offered: {specs:?}");
    }
    let outputs: Vec<Value> =
        lines[1..4].iter().map(|l| serde_json::from_str(l).expect("an output")).collect();
    assert!(outputs[0]["output"].as_str().is_some_and(|t| t.contains("note://groceries")));
    assert!(outputs[1]["output"].as_str().is_some_and(|t| t.contains("a router")));
    assert_eq!(outputs[2]["output"], "HELLO");
    let ends = lines.iter().filter(|l| l.starts_with("event mcp_tool_call_end")).count();
    assert_eq!(ends, 3, "{stdout}");
}

#[test]
fn call_and_exec_print_outputs_in_a_provider_s_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = marker("example-format");
    let config = config(&dir, &marker);
    let out = crate::support::router_command()
        .args(["call", "--format", "anthropic", "--config"])
        .arg(&config)
        .args(["mcp__notes__echo", r#"{"text": "hi"}"#])
        .output()
        .expect("mcp-router call");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let block: Value = serde_json::from_slice(&out.stdout).expect("one JSON value");
    assert_eq!(
        block,
        json!({"type": "tool_result", "tool_use_id": "cli", "content": [{"type": "text", "text": "Echo: hi"}]})
    );
    let mut exec = ExecSession::spawn({
        let mut command = exec_command(&config);
        command.args(["--format", "openai-chat"]);
        command
    });
    exec.send(&json!({"call_id": "f1", "name": "mcp__notes__echo", "arguments": {"text": "yo"}}));
    exec.send(
        &json!({"call_id": "f2", "name": "read_mcp_resource", "arguments": {"server": "notes"}}),
    );
    let _ = exec.output("f2");
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let formatted = |id: &str| {
        let line = lines.iter().find(|l| l["type"] == "function_call_output" && l["call_id"] == id);
        line.expect("the output line")["formatted"].clone()
    };
    assert_eq!(
        formatted("f1"),
        json!({"role": "tool", "tool_call_id": "f1", "content": "Echo: yo"})
    );
    assert_eq!(formatted("f2")["content"], "uri must be provided");
    assert_eq!(wait_gone(&marker, Duration::from_secs(3)), Vec::<u32>::new(), "processes left");
}
