//! Load: 10,000 calls with 256 in flight across 8 servers through `mcp-router exec`. Every call
//! gets exactly one output with its own call_id and its own content, begin and end events match
//! one to one, and the router's memory stays flat in the second half.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};

use std::sync::mpsc;

use serde_json::{Value, json};

use crate::support::{DEMO, exec_command, write_config};

const CALLS: usize = 10_000;
const IN_FLIGHT: usize = 256;
const SERVERS: usize = 8;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Call `i`: alternately a template read and a tool call whose answers carry `i`.
fn call(i: usize) -> (Value, String) {
    let server = format!("s{}", i % SERVERS);
    if i.is_multiple_of(2) {
        let line = json!({"call_id": format!("c{i}"), "name": "read_mcp_resource", "arguments": json!({"server": server, "uri": format!("demo://notes/{i}")}).to_string()});
        (line, format!("Note {i}"))
    } else {
        let line = json!({"call_id": format!("c{i}"), "name": format!("mcp__{server}__echo"), "arguments": json!({"text": format!("n{i}")}).to_string()});
        (line, format!("Echo: n{i}"))
    }
}

#[test]
fn ten_thousand_calls_256_in_flight_8_servers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let servers: String = (0..SERVERS)
        .map(|i| {
            format!("[mcp_servers.s{i}]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"s{i}\"]\n")
        })
        .collect();
    let config = write_config(&dir, "config.toml", &servers);
    let mut child = exec_command(&config).spawn().expect("spawn");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");

    // The reader reports each output so the writer keeps at most IN_FLIGHT calls open.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("line");
            let value: Value = serde_json::from_str(&line).expect("JSON line");
            if value["type"] == "function_call_output" {
                let _ = done_tx.send(());
            }
            lines.push(value);
        }
        lines
    });
    let mut expected = HashMap::new();
    let mut rss_at_half = 0;
    for i in 0..CALLS {
        if i >= IN_FLIGHT {
            done_rx.recv().expect("an output");
        }
        if i == CALLS / 2 {
            rss_at_half = rss_kib(pid);
        }
        let (line, answer) = call(i);
        writeln!(stdin, "{line}").expect("write");
        expected.insert(format!("c{i}"), answer);
    }
    for _ in 0..IN_FLIGHT.min(CALLS) {
        done_rx.recv().expect("an output");
    }
    let rss_at_end = rss_kib(pid);
    drop(stdin);
    let lines = reader.join().expect("reader");
    assert_eq!(child.wait().expect("wait").code(), Some(0));

    let mut outputs: HashMap<String, usize> = HashMap::new();
    let mut begins: HashMap<String, usize> = HashMap::new();
    let mut ends: HashMap<String, usize> = HashMap::new();
    for line in &lines {
        let id = line["call_id"].as_str().unwrap_or_default().to_string();
        match line["type"].as_str() {
            Some("function_call_output") => {
                *outputs.entry(id.clone()).or_default() += 1;
                let text = line["output"].to_string();
                let answer = &expected[&id];
                // Its own content, and no other call's.
                assert!(text.contains(answer.as_str()), "{id}: {text:.300}");
            }
            Some("mcp_tool_call_begin") => *begins.entry(id).or_default() += 1,
            Some("mcp_tool_call_end") => *ends.entry(id).or_default() += 1,
            _ => {}
        }
    }
    assert_eq!(outputs.len(), CALLS, "every call answered");
    assert!(outputs.values().all(|n| *n == 1), "exactly one output per call");
    assert_eq!(begins, ends, "begin and end events match one to one");
    assert_eq!(begins.len(), CALLS);
    assert!(begins.values().all(|n| *n == 1));
    // Flat: the second half adds little (allocator noise), no per-call growth.
    let growth = rss_at_end.saturating_sub(rss_at_half);
    println!(
        "load: {CALLS} calls, RSS {rss_at_half} KiB at half, {rss_at_end} KiB at end (+{growth} KiB)"
    );
    assert!(growth < 16 * 1024, "memory grew by {growth} KiB in the second half");
}
