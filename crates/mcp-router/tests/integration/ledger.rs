//! The ledger, as a user meets it: `exec` runs on the demo servers with the defaults, then
//! `mcp-router stats` says what each server and tool cost — and its numbers are the exec
//! stream's own: the specs' bytes, the outputs' text, the end events' durations, tokens as
//! o200k_base counts them. Runs add up across restarts; a corrupt ledger is set aside.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::support::{DEMO, router_command, write_config};

fn config(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let text = format!(
        r#"
[mcp_servers.notes]
command = "{DEMO}"
args = ["--name", "notes"]

[mcp_servers.docs]
command = "{DEMO}"
args = ["--name", "docs", "--page-size", "2"]
"#
    );
    write_config(dir, "config.toml", &text)
}

/// The model's calls: a list, a read, three tool calls, a call to a server nobody runs.
fn calls() -> Vec<Value> {
    let echo = |id: &str, text: &str| json!({"call_id": id, "name": "mcp__notes__echo", "arguments": {"text": text}});
    vec![
        json!({"call_id": "1", "name": "list_mcp_resources", "arguments": {"server": "notes"}}),
        json!({"call_id": "2", "name": "read_mcp_resource",
               "arguments": {"server": "docs", "uri": "demo://docs/README.md"}}),
        echo("3", "hello"),
        echo("4", "a longer line of text to echo back"),
        echo("5", "ünïcödé"),
        json!({"call_id": "6", "name": "mcp__nobody__echo", "arguments": {}}),
    ]
}

/// A tool's calls, bytes and tokens given to the model, and its end events' durations.
type Expected = (u64, u64, u64, Vec<f64>);

/// One exec run with its state in `state`: the tools it gave the model, its stdout lines.
fn run_exec(config: &Path, state: &Path) -> (Vec<Value>, Vec<Value>) {
    let mut exec = ExecSession::in_state(config, state);
    exec.send(&json!({"type": "list_tools", "format": "openai"}));
    let tools = exec.line("tools", |v| v["type"] == "tools");
    for call in calls() {
        exec.send(&call);
        exec.output(call["call_id"].as_str().expect("id"));
    }
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    (tools["tools"].as_array().expect("tools").clone(), lines)
}

fn stats(state: &Path, args: &[&str]) -> (String, String, i32) {
    let out = router_command()
        .arg("stats")
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .output()
        .expect("run mcp-router stats");
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (text(&out.stdout), text(&out.stderr), out.status.code().unwrap_or(-1))
}

/// What the model reads of an exec output: a function's text, or an MCP result's text blocks
/// joined by newlines.
fn model_text(output: &Value) -> String {
    match output["type"].as_str() {
        Some("function") => output["content"].as_str().expect("text").to_string(),
        Some("mcp") => {
            let blocks = output["result"]["Ok"]["content"].as_array().expect("blocks");
            let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
            texts.join("\n")
        }
        other => panic!("output type {other:?}"),
    }
}

#[test]
fn stats_tells_what_exec_gave_the_model_in_its_own_bytes_tokens_and_durations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (config, state) = (config(&dir), dir.path().join("state"));
    let (tools, lines) = run_exec(&config, &state);
    let (stdout, stderr, code) = stats(&state, &["--json"]);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("the report");
    assert_eq!((report["runs"].as_u64(), &report["tokenizer"]), (Some(1), &json!("o200k_base")));
    let count = mcp_host::ledger::tokens::count;

    // Per tool: the outputs' text, byte for byte and token for token; the end events' durations.
    let mut expected: BTreeMap<(String, String), Expected> = BTreeMap::new();
    for end in lines.iter().filter(|l| l["type"] == "mcp_tool_call_end") {
        let invocation = &end["invocation"];
        let key = (
            invocation["server"].as_str().expect("server").to_string(),
            invocation["tool"].as_str().expect("tool").to_string(),
        );
        let id = end["call_id"].as_str().expect("id");
        let output = lines
            .iter()
            .find(|l| l["type"] == "function_call_output" && l["call_id"] == id)
            .expect("its output");
        let text = model_text(&output["output"]);
        let row = expected.entry(key).or_default();
        row.0 += 1;
        row.1 += text.len() as u64;
        row.2 += count(&text);
        row.3.push(end["duration"].as_f64().expect("ms"));
    }
    assert_eq!(expected.len(), 4, "{expected:?}");
    let rows = report["tools"].as_array().expect("tools");
    assert_eq!(rows.len(), expected.len(), "{rows:#?}");
    for row in rows {
        let key =
            (row["server"].as_str().expect("s").into(), row["tool"].as_str().expect("t").into());
        let (calls, bytes, tokens, mut durations) = expected.remove(&key).expect("a tool called");
        assert_eq!(row["calls"].as_u64(), Some(calls), "{key:?}");
        assert_eq!(row["bytes_to_model"].as_u64(), Some(bytes), "{key:?}");
        assert_eq!(row["tokens_to_model"].as_u64(), Some(tokens), "{key:?}");
        durations.sort_by(f64::total_cmp);
        let rank = |p: f64| durations[((p * durations.len() as f64).ceil() as usize).max(1) - 1];
        assert_eq!(row["p50_ms"].as_f64(), Some(rank(0.5)), "{key:?}");
        assert_eq!(row["p95_ms"].as_f64(), Some(rank(0.95)), "{key:?}");
        assert_eq!(row["max_ms"].as_f64(), durations.last().copied(), "{key:?}");
    }
    let tool = |server: &str, tool: &str| {
        rows.iter().find(|r| r["server"] == server && r["tool"] == tool).expect("row").clone()
    };
    assert_eq!(tool("nobody", "echo")["errors"], json!({"unknown": 1}));
    assert_eq!(tool("notes", "echo")["calls"], 3);
    // What the servers sent: a read's and the tool results' JSON; the read was cut to the
    // read budget, so the model got less than the server sent.
    let read = tool("docs", "read_mcp_resource");
    assert!(read["bytes_from_server"].as_u64() > read["bytes_to_model"].as_u64(), "{read}");

    // Per server: the specs exec printed, by their qualified names' server.
    let mut spec_bytes: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for spec in &tools {
        let name = spec["name"].as_str().expect("name");
        let server = match name.strip_prefix("mcp__") {
            Some(rest) => rest.split("__").next().expect("server"),
            None => "(router)",
        };
        let text = spec.to_string();
        let row = spec_bytes.entry(server).or_default();
        row.0 += text.len() as u64;
        row.1 += count(&text);
    }
    let total: u64 = spec_bytes.values().map(|(b, _)| b).sum();
    for (server, (bytes, tokens)) in spec_bytes {
        let row = report["servers"]
            .as_array()
            .expect("servers")
            .iter()
            .find(|r| r["server"] == server)
            .unwrap_or_else(|| panic!("{server}: {report:#}"))
            .clone();
        assert_eq!(row["spec_bytes_loaded"].as_u64(), Some(bytes), "{server}");
        assert_eq!(row["spec_tokens_loaded"].as_u64(), Some(tokens), "{server}");
        assert_eq!(row["context_share"].as_f64(), Some(bytes as f64 / total as f64), "{server}");
    }

    // The table names the server with the most context and the slowest.
    let (table, _, code) = stats(&state, &[]);
    assert_eq!(code, 0);
    assert!(table.starts_with("1 runs; tokens: o200k_base\n"), "{table}");
    assert!(table.contains("\nmost context: ") && table.contains("\nslowest: "), "{table}");
}

#[test]
fn runs_add_up_across_restarts_and_a_corrupt_ledger_is_set_aside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (config, state) = (config(&dir), dir.path().join("state"));
    run_exec(&config, &state);
    run_exec(&config, &state);
    let report = |args: &[&str]| -> (Value, String) {
        let (stdout, stderr, code) = stats(&state, args);
        assert_eq!(code, 0, "{stderr}");
        (serde_json::from_str(&stdout).expect("the report"), stderr)
    };
    let (both, _) = report(&["--json"]);
    assert_eq!(both["runs"], 2);
    let echo = |r: &Value| {
        let rows = r["tools"].as_array().expect("tools");
        rows.iter().find(|t| t["tool"] == "echo" && t["server"] == "notes").expect("echo").clone()
    };
    assert_eq!(echo(&both)["calls"], 6, "three a run");
    let (recent, _) = report(&["--json", "--since", "1h"]);
    assert_eq!(recent["runs"], 2);

    // A torn line: a warning naming the file, the readable runs still counted, exit 0.
    let file = state.join("ledger").join("ledger.jsonl");
    let mut text = std::fs::read_to_string(&file).expect("the ledger");
    text.push_str("{\"at\": 12, \"tools\": [\n");
    std::fs::write(&file, text).expect("write");
    let (after, stderr) = report(&["--json"]);
    assert_eq!(after["runs"], 2, "{stderr}");
    assert!(
        stderr.contains("could not be read (line 3") && stderr.contains("set aside as"),
        "{stderr}"
    );
    let (_, again) = report(&["--json"]);
    assert_eq!(again, "", "set aside once: the file is whole again");
    // The next run is added to the mended file.
    run_exec(&config, &state);
    assert_eq!(report(&["--json"]).0["runs"], 3);
}

#[test]
fn ledger_false_keeps_no_run_and_bad_values_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let text = format!(
        "[mcp_servers.notes]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"notes\"]\n\n[mcp_router]\nledger = false\n"
    );
    let config = write_config(&dir, "off.toml", &text);
    run_exec(&config, &state);
    let (stdout, _, code) = stats(&state, &[]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("no runs kept yet"), "{stdout}");
    let bad =
        write_config(&dir, "bad.toml", "[mcp_servers]\n[mcp_router]\nspec_share_warning = 2\n");
    let out = router_command().args(["tools", "--config"]).arg(&bad).output().expect("run tools");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("key `spec_share_warning`: expected a share between 0 and 1"),
        "{stderr}"
    );
}

#[test]
fn a_server_that_crashed_is_counted_as_restarted_and_its_failed_call_by_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (config, state) = (config(&dir), dir.path().join("state"));
    let mut exec = ExecSession::in_state(&config, &state);
    exec.send(&json!({"call_id": "1", "name": "mcp__notes__crash", "arguments": {}}));
    exec.output("1");
    exec.send(&json!({"call_id": "2", "name": "mcp__notes__echo", "arguments": {"text": "x"}}));
    let after = exec.output("2");
    assert_eq!(model_text(&after), "Echo: x", "restarted by the next call: {after}");
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
    let (stdout, stderr, code) = stats(&state, &["--json"]);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("the report");
    let servers = report["servers"].as_array().expect("servers");
    let notes = servers.iter().find(|s| s["server"] == "notes").expect("notes");
    assert_eq!(
        (&notes["restarts"], &notes["calls"], &notes["errors"]),
        (&json!(1), &json!(2), &json!(1))
    );
    let docs = servers.iter().find(|s| s["server"] == "docs");
    assert!(docs.is_none_or(|docs| docs["restarts"] == 0), "{docs:?}");
    let crash =
        report["tools"].as_array().expect("tools").iter().find(|t| t["tool"] == "crash").cloned();
    assert_eq!(crash.expect("crash")["errors"], json!({"failed": 1}));
    let (table, _, _) = stats(&state, &[]);
    assert!(table.contains("RESTARTS"), "{table}");
}

/// `{"type": "end_turn"}`: the turn's cost as the `mcp_turn_cost` event — the calls since the
/// last turn ended, the specs as they are now.
#[test]
fn the_host_asks_what_its_turn_cost_and_gets_an_event_of_that_turn_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (config, state) = (config(&dir), dir.path().join("state"));
    let mut exec = ExecSession::in_state(&config, &state);
    exec.send(&json!({"type": "list_tools", "format": "openai"}));
    exec.line("tools", |v| v["type"] == "tools");
    let echo =
        |id: &str| json!({"call_id": id, "name": "mcp__notes__echo", "arguments": {"text": id}});
    for id in ["1", "2"] {
        exec.send(&echo(id));
        exec.output(id);
    }
    exec.send(&json!({"type": "end_turn"}));
    let first = exec.line("the first turn's cost", |v| v["type"] == "mcp_turn_cost");
    exec.send(&echo("3"));
    exec.output("3");
    exec.send(&json!({"type": "end_turn", "id": 2}));
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let turns: Vec<&Value> = lines.iter().filter(|l| l["type"] == "mcp_turn_cost").collect();
    assert_eq!(turns.len(), 2, "one event per end_turn, no answer line: {lines:#?}");
    assert_eq!(turns[0], &first);
    let calls = |turn: &Value| turn["tools"][0]["calls"].as_u64();
    assert_eq!((calls(turns[0]), calls(turns[1])), (Some(2), Some(1)));
    let notes = |turn: &Value| {
        let servers = turn["servers"].as_array().expect("servers").clone();
        servers.into_iter().find(|s| s["server"] == "notes").expect("notes")
    };
    assert!(notes(turns[1])["spec_tokens_loaded"].as_u64() > Some(0), "the specs as they are now");
    assert!(lines.iter().all(|l| l["id"] != 2), "end_turn has no answer line");
}
