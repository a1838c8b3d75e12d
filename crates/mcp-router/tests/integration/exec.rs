//! `mcp-router exec` end to end: a real router process, real server processes, JSON lines.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{
    DEMO, exec_command, marker, processes_with, router_command, wait_gone, write_config,
};

/// Run exec with `lines` on stdin; returns every stdout line as JSON and the exit code.
fn exec(config: &std::path::Path, lines: &[Value]) -> (Vec<Value>, i32) {
    let mut child = exec_command(config).spawn().expect("spawn mcp-router exec");
    let mut stdin = child.stdin.take().expect("stdin");
    for line in lines {
        match line {
            Value::String(raw) => writeln!(stdin, "{raw}").expect("write"),
            other => writeln!(stdin, "{other}").expect("write"),
        }
    }
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    let out = String::from_utf8(output.stdout).expect("utf8");
    let values = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect();
    (values, output.status.code().unwrap_or(-1))
}

/// An `exec` process driven line by line (for calls that need an earlier call's answer).
pub(crate) struct ExecSession {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    reader: BufReader<std::process::ChildStdout>,
    lines: Vec<Value>,
    /// Bytes of stdout read so far, by the `call_id` of their line (`""` for lines without).
    pub(crate) bytes_by_call: HashMap<String, usize>,
    _watchdog: std::sync::mpsc::Sender<()>,
}

impl ExecSession {
    fn start(config: &std::path::Path) -> Self {
        Self::spawn(exec_command(config))
    }

    /// `command` (an `exec_command`, perhaps with more environment) as a session.
    pub(crate) fn spawn(mut command: Command) -> Self {
        let mut child = command.spawn().expect("spawn mcp-router exec");
        let stdin = child.stdin.take();
        let reader = BufReader::new(child.stdout.take().expect("stdout"));
        // A session that hangs is killed after two minutes, so a blocked read fails the test
        // ("exec ended before …") instead of stalling the suite. Dropping the session disarms it.
        let (watchdog, disarmed) = std::sync::mpsc::channel::<()>();
        let pid = child.id().to_string();
        std::thread::spawn(move || {
            if disarmed.recv_timeout(Duration::from_secs(120))
                == Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            {
                let _ = Command::new("kill").args(["-9", &pid]).status();
            }
        });
        Self {
            child,
            stdin,
            reader,
            lines: Vec::new(),
            bytes_by_call: HashMap::new(),
            _watchdog: watchdog,
        }
    }

    /// exec on `config` with its state (catalogs, pins, the ledger) in `state`.
    pub(crate) fn in_state(config: &std::path::Path, state: &std::path::Path) -> Self {
        let mut command = exec_command(config);
        command.env("MCP_ROUTER_CACHE_DIR", state);
        Self::spawn(command)
    }

    /// The exec process's id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn send(&mut self, line: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        match line {
            Value::String(raw) => writeln!(stdin, "{raw}").expect("write"),
            other => writeln!(stdin, "{other}").expect("write"),
        }
    }

    /// The output of `call_id`: one already read (calls in flight may finish in any order), or
    /// read until it arrives.
    pub(crate) fn output(&mut self, call_id: &str) -> Value {
        let is_output = |v: &Value| v["type"] == "function_call_output" && v["call_id"] == call_id;
        if let Some(seen) = self.lines.iter().find(|v| is_output(v)) {
            return seen["output"].clone();
        }
        loop {
            let mut line = String::new();
            assert!(
                self.reader.read_line(&mut line).expect("read") > 0,
                "exec ended before {call_id}"
            );
            let value = self.parse(&line);
            if is_output(&value) {
                return value["output"].clone();
            }
        }
    }

    /// The first line (already read or read now) that `wanted` accepts.
    pub(crate) fn line(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(seen) = self.lines.iter().find(|v| wanted(v)) {
            return seen.clone();
        }
        loop {
            let mut line = String::new();
            assert!(
                self.reader.read_line(&mut line).expect("read") > 0,
                "exec ended before {what}"
            );
            let value = self.parse(&line);
            if wanted(&value) {
                return value;
            }
        }
    }

    /// One stdout line, recorded and counted.
    fn parse(&mut self, line: &str) -> Value {
        let value: Value = serde_json::from_str(line).expect("JSON line");
        let call_id = value["call_id"].as_str().unwrap_or_default().to_string();
        *self.bytes_by_call.entry(call_id).or_default() += line.len();
        self.lines.push(value.clone());
        value
    }

    /// Close stdin, read everything left, wait for the exit code.
    pub(crate) fn finish(mut self) -> (Vec<Value>, i32) {
        drop(self.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.reader, &mut rest).expect("read rest");
        self.lines
            .extend(rest.lines().map(|l| serde_json::from_str::<Value>(l).expect("JSON line")));
        let code = self.child.wait().expect("wait").code().unwrap_or(-1);
        (self.lines, code)
    }
}

fn two_server_config(dir: &tempfile::TempDir) -> std::path::PathBuf {
    write_config(
        dir,
        "config.toml",
        &format!(
            r#"
[mcp_servers.notes]
command = "{DEMO}"
args = ["--name", "notes"]

[mcp_servers.docs]
command = "{DEMO}"
args = ["--name", "docs", "--page-size", "2"]
"#
        ),
    )
}

fn outputs(lines: &[Value]) -> HashMap<String, Value> {
    let mut map = HashMap::new();
    for line in lines.iter().filter(|l| l["type"] == "function_call_output") {
        // An id written as a number is echoed as one: keyed by its digits here.
        let id = match &line["call_id"] {
            Value::String(id) => id.clone(),
            number @ Value::Number(_) => number.to_string(),
            other => panic!("call_id {other}"),
        };
        assert!(map.insert(id.clone(), line["output"].clone()).is_none(), "two outputs for {id}");
    }
    map
}

fn content(output: &Value) -> Value {
    assert_eq!(output["type"], "function", "{output}");
    assert_eq!(output["success"], true, "{output}");
    serde_json::from_str(output["content"].as_str().expect("content")).expect("JSON content")
}

#[test]
fn acceptance_through_exec() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_server_config(&dir);
    let calls = vec![
        json!({"call_id": "all", "name": "list_mcp_resources", "arguments": "{}"}),
        json!({"call_id": "cursor-only", "name": "list_mcp_resources", "arguments": "{\"cursor\":\"x\"}"}),
        json!({"call_id": "read-no-server", "name": "read_mcp_resource", "arguments": {"uri": "demo://notes/welcome"}}),
        json!({"call_id": "page1", "name": "list_mcp_resources", "arguments": "{\"server\":\"docs\"}"}),
        json!({"call_id": "tool", "name": "mcp__notes__echo", "arguments": "{\"text\":\"hi\"}"}),
        json!({"call_id": "unknown", "name": "no_such_tool"}),
        Value::String("this is not json".into()),
    ];
    let mut session = ExecSession::start(&config);
    for call in &calls {
        session.send(call);
    }
    // The next page, with the cursor the first page returned.
    let page1 = content(&session.output("page1"));
    let next = page1["nextCursor"].as_str().expect("a next page").to_string();
    let args = json!({"server": "docs", "cursor": next}).to_string();
    session.send(&json!({"call_id": "page2", "name": "list_mcp_resources", "arguments": args}));
    let (lines, code) = session.finish();
    assert_eq!(code, 0);

    let outs = outputs(&lines);
    assert_eq!(outs.len(), 7, "one output per call: {lines:#?}");

    let all = content(&outs["all"]);
    let servers: Vec<&str> = all["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["server"].as_str().expect("server"))
        .collect();
    assert_eq!(servers.len(), 10);
    let mut sorted = servers.clone();
    sorted.sort();
    assert_eq!(servers, sorted, "sorted by server name");

    let failure = |id: &str| {
        assert_eq!(outs[id]["success"], false, "{id}");
        outs[id]["content"].as_str().expect("content").to_string()
    };
    assert_eq!(failure("cursor-only"), "cursor can only be used when a server is specified");
    assert_eq!(failure("read-no-server"), "server must be provided");
    assert_eq!(failure("unknown"), "unsupported call: no_such_tool");

    let page2 = content(&outs["page2"]);
    assert_eq!(page2["resources"][0]["uri"], "demo://data/cities.csv");
    assert_eq!(page1["resources"].as_array().map(Vec::len), Some(2));

    assert_eq!(outs["tool"]["type"], "mcp");
    assert_eq!(outs["tool"]["result"]["Ok"]["content"][0]["text"], "Echo: hi");

    let errors: Vec<&Value> = lines.iter().filter(|l| l["type"] == "error").collect();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].get("call_id").is_none());

    // Begin/end pairs: exactly one each for the calls that reach a server, none for the others,
    // and each end is written before its call's output.
    let mut pairs: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let id = line["call_id"].as_str().unwrap_or_default().to_string();
        match line["type"].as_str() {
            Some("mcp_tool_call_begin") => pairs.entry(id).or_default().0 += 1,
            Some("mcp_tool_call_end") => {
                assert!(line["duration"].as_f64().is_some_and(|d| d >= 0.0));
                let out_at = lines.iter().position(|l| {
                    l["type"] == "function_call_output" && l["call_id"] == line["call_id"]
                });
                assert!(out_at.is_some_and(|o| o > i), "end before output for {id}");
                pairs.entry(id).or_default().1 += 1;
            }
            _ => {}
        }
    }
    let expected: BTreeMap<String, (usize, usize)> =
        ["all", "page1", "page2", "tool"].iter().map(|id| (id.to_string(), (1, 1))).collect();
    assert_eq!(pairs, expected);

    let ready: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "mcp_server_ready")
        .map(|l| l["server"].as_str().expect("server"))
        .collect();
    assert_eq!(ready.len(), 2);
}

#[test]
fn every_line_with_a_call_id_gets_exactly_one_output_and_errors_name_their_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_server_config(&dir);
    let mut child = exec_command(&config).spawn().expect("spawn mcp-router exec");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines: [&[u8]; 7] = [
        br#"{"call_id":"n1","name":"mcp__notes__echo","arguments":42}"#,
        br#"{"call_id":"n2","arguments":{}}"#,
        br#"{"call_id":"n3","name":"mcp__notes__echo","arguments":{"text":"#,
        b"{\"call_id\":\"n4\",\"name\":\"mcp__notes__echo\",\"arguments\":\"\xff\"}",
        br#"not json at all"#,
        br#"{"call_id":9,"name":"mcp__notes__echo"}"#,
        br#"{"call_id":"ok","name":"mcp__notes__echo","arguments":{"text":"hi"}}"#,
    ];
    for line in lines {
        stdin.write_all(line).expect("write");
        stdin.write_all(b"\n").expect("write");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    let lines: Vec<Value> = String::from_utf8(output.stdout)
        .expect("utf8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let outs = outputs(&lines);
    let mut ids: Vec<&str> = outs.keys().map(String::as_str).collect();
    ids.sort();
    assert_eq!(ids, ["9", "n1", "n2", "n3", "n4", "ok"], "{lines:#?}");
    assert_eq!(outs["ok"]["result"]["Ok"]["content"][0]["text"], "Echo: hi");
    let n1 = outs["n1"]["content"].as_str().expect("content");
    assert_eq!(
        n1,
        "invalid input line: `arguments` must be a JSON string or object, got 42 (input line 1)"
    );
    for id in ["n1", "n2", "n3", "n4", "9"] {
        assert_eq!(outs[id]["success"], false, "{id}");
    }
    // The id written as a number is echoed as the number.
    let errors: Vec<(Option<String>, u64)> = lines
        .iter()
        .filter(|l| l["type"] == "error")
        .map(|l| {
            let id = match &l["call_id"] {
                Value::String(id) => Some(id.clone()),
                Value::Number(n) => Some(format!("number {n}")),
                _ => None,
            };
            (id, l["line"].as_u64().expect("line number"))
        })
        .collect();
    assert_eq!(
        errors,
        [
            (Some("n1".to_string()), 1),
            (Some("n2".to_string()), 2),
            (Some("n3".to_string()), 3),
            (Some("n4".to_string()), 4),
            (None, 5),
            (Some("number 9".to_string()), 6)
        ]
    );
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn a_missing_command_shows_in_errors_and_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        &dir,
        "mcp.json",
        &format!(
            r#"{{"mcpServers": {{"docs": {{"command": "{DEMO}"}}, "broken": {{"command": "/no/such/mcp-server"}}}}}}"#
        ),
    );
    let (lines, code) =
        exec(&config, &[json!({"call_id": "1", "name": "list_mcp_resources", "arguments": ""})]);
    assert_eq!(code, 0);
    let outs = outputs(&lines);
    let payload = content(&outs["1"]);
    assert_eq!(payload["resources"].as_array().map(Vec::len), Some(5));
    assert_eq!(payload["errors"][0]["server"], "broken");
    let failed: Vec<&Value> = lines.iter().filter(|l| l["type"] == "mcp_server_failed").collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["server"], "broken");
    assert!(failed[0]["error"].as_str().is_some_and(|e| e.contains("/no/such/mcp-server")));
}

/// A config whose one server is wrapped in `sh` (sh forks it), tagged with `tag`.
fn wrapped_config(dir: &tempfile::TempDir, tag: &str) -> std::path::PathBuf {
    write_config(
        dir,
        "config.toml",
        &format!(
            "[mcp_servers.wrapped]\ncommand = \"sh\"\nargs = [\"-c\", \"{DEMO} --name {tag}; true\"]\n"
        ),
    )
}

#[test]
fn no_server_outlives_exec_at_end_of_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = marker("eof");
    let config = wrapped_config(&dir, &tag);
    let (lines, code) =
        exec(&config, &[json!({"call_id": "1", "name": "list_mcp_resources", "arguments": "{}"})]);
    assert_eq!(code, 0);
    assert_eq!(outputs(&lines).len(), 1);
    assert!(wait_gone(&tag, Duration::from_secs(3)).is_empty());
}

#[test]
fn no_server_outlives_exec_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = marker("sigterm");
    let config = wrapped_config(&dir, &tag);
    let mut child = exec_command(&config).spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{}", json!({"call_id": "1", "name": "list_mcp_resources", "arguments": "{}"}))
        .expect("write");
    // Wait for the output: the server is up. stdin stays open, so exec would run forever.
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while reader.read_line(&mut line).expect("read") > 0 && !line.contains("function_call_output") {
        line.clear();
    }
    assert!(!processes_with(&tag).is_empty(), "server is running");
    let status =
        Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let exit = child.wait().expect("wait");
    assert_eq!(exit.code(), Some(143));
    assert!(wait_gone(&tag, Duration::from_secs(3)).is_empty(), "no orphan after SIGTERM");
    drop(stdin);
}

#[test]
fn templates_and_completion_through_exec() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_server_config(&dir);
    let read = |id: &str, args: Value| json!({"call_id": id, "name": "read_mcp_resource", "arguments": args.to_string()});
    let calls = vec![
        json!({"call_id": "templates", "name": "list_mcp_resource_templates", "arguments": "{\"server\":\"docs\"}"}),
        read(
            "doc",
            json!({"server": "docs", "template": "demo://docs/{name}", "parameters": {"name": "architecture.md"}}),
        ),
        read(
            "lines",
            json!({"server": "docs", "template": "demo://lines/{name}{?from,to}", "parameters": {"name": "README.md", "from": 1, "to": 1}}),
        ),
        read(
            "missing",
            json!({"server": "docs", "template": "demo://docs/{name}", "parameters": {}}),
        ),
        read("unknown-uri", json!({"server": "docs", "uri": "demo://nope"})),
        json!({"call_id": "complete", "name": "complete_mcp_resource_argument", "arguments": {"server": "docs", "template": "demo://docs/{name}", "argument": "name", "value": "arch"}}),
    ];
    let mut session = ExecSession::start(&config);
    for call in &calls {
        session.send(call);
    }
    let (lines, code) = session.finish();
    assert_eq!(code, 0);
    let outs = outputs(&lines);

    let templates = content(&outs["templates"]);
    // `docs` serves pages of 2: two templates and a cursor to the third.
    assert_eq!(templates["resourceTemplates"].as_array().map(Vec::len), Some(2));
    assert!(templates["nextCursor"].is_string());
    let doc = content(&outs["doc"]);
    assert_eq!(doc["uri"], "demo://docs/architecture.md");
    assert_eq!(doc["template"], "demo://docs/{name}");
    assert!(doc["contents"][0]["text"].as_str().is_some_and(|t| t.starts_with("# Architecture")));
    let lines_payload = content(&outs["lines"]);
    assert_eq!(lines_payload["uri"], "demo://lines/README.md?from=1&to=1");
    assert_eq!(lines_payload["contents"][0]["text"], "# mcp-router");
    assert_eq!(outs["missing"]["success"], false);
    assert_eq!(
        outs["missing"]["content"],
        "missing parameter `name` (required by template demo://docs/{name})"
    );
    assert_eq!(
        outs["unknown-uri"]["content"],
        "resources/read failed: MCP error -32602: Resource not found: demo://nope"
    );
    let completion = content(&outs["complete"]);
    assert_eq!(completion["values"], json!(["architecture.md"]));

    // Template reads and completions are bracketed by events like every MCP call.
    let ends: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "mcp_tool_call_end")
        .filter_map(|l| l["call_id"].as_str())
        .collect();
    for id in ["templates", "doc", "lines", "unknown-uri", "complete"] {
        assert_eq!(ends.iter().filter(|e| **e == id).count(), 1, "{id}");
    }
    assert!(!ends.contains(&"missing"));
}

fn one_server_config(dir: &tempfile::TempDir, settings: &str) -> std::path::PathBuf {
    write_config(
        dir,
        "config.toml",
        &format!(
            "{settings}\n[mcp_servers.docs]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"docs\"]\n"
        ),
    )
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"call_id": id, "name": name, "arguments": args.to_string()})
}

#[test]
fn csv_resources_become_queryable_data_sources() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = one_server_config(&dir, "");
    let mut session = ExecSession::start(&config);
    session.send(&call(
        "read",
        "read_mcp_resource",
        json!({"server": "docs", "uri": "demo://data/cities.csv"}),
    ));
    let read = session.output("read");
    let summary = read["content"].as_str().expect("content").to_string();
    insta::assert_snapshot!("csv_import_summary", summary);
    assert!(summary.starts_with("CSV resource imported as data source: demo://data/cities.csv\n"));

    let query = |id: &str, sql: &str| call(id, "query_mcp_data", json!({"sql": sql}));
    let calls = [
        query(
            "japan",
            "SELECT city, population FROM docs_cities WHERE country = 'Japan' ORDER BY population DESC",
        ),
        query("drop", "DROP TABLE docs_cities"),
        query("insert", "INSERT INTO docs_cities VALUES ('X', 'Y', 1, 1.0)"),
        query("attach", "ATTACH DATABASE '/tmp/evil.db' AS evil"),
        query("two", "SELECT 1; DELETE FROM docs_cities"),
        query("count", "SELECT count(*) AS n FROM docs_cities"),
        call("list", "list_mcp_data_sources", json!({})),
    ];
    for c in &calls {
        session.send(c);
    }
    let (lines, code) = session.finish();
    assert_eq!(code, 0);
    let outs = outputs(&lines);
    assert_eq!(
        content(&outs["japan"]),
        json!({"columns": ["city", "population"], "rows": [["Tokyo", 13960000], ["Osaka", 2752412]], "rowCount": 2, "truncated": false})
    );
    let refused = |id: &str| {
        assert_eq!(outs[id]["success"], false, "{id}");
        outs[id]["content"].as_str().expect("content").to_string()
    };
    assert_eq!(
        refused("drop"),
        "query refused: only a single SELECT or WITH statement is allowed, not DROP"
    );
    assert_eq!(
        refused("insert"),
        "query refused: only a single SELECT or WITH statement is allowed, not INSERT"
    );
    assert_eq!(
        refused("attach"),
        "query refused: only a single SELECT or WITH statement is allowed, not ATTACH"
    );
    assert_eq!(
        refused("two"),
        "query refused: only one statement is allowed (remove what follows the first `;`)"
    );
    assert_eq!(content(&outs["count"])["rows"], json!([[10]]));
    let list = content(&outs["list"]);
    assert_eq!(list["sources"][0]["table"], "docs_cities");
    assert_eq!(list["sources"][0]["server"], "docs");
    assert_eq!(list["sources"][0]["uri"], "demo://data/cities.csv");
    assert_eq!(list["sources"][0]["rows"], 10);
    assert_eq!(list["sources"][0]["columns"][2], json!({"name": "population", "type": "integer"}));
    assert!(!Path::new("/tmp/evil.db").exists());
}

#[test]
fn images_become_image_items_and_large_texts_are_paged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = one_server_config(&dir, "");
    let mut session = ExecSession::start(&config);
    session.send(&call(
        "png",
        "read_mcp_resource",
        json!({"server": "docs", "uri": "demo://images/pixel.png"}),
    ));
    let five_mb = 5 * 1024 * 1024;
    session.send(&call(
        "big",
        "read_mcp_resource",
        json!({"server": "docs", "uri": format!("demo://sized/{five_mb}")}),
    ));
    let png = session.output("png");
    let big = session.output("big");
    let first = content(&big);
    let next = first["next_offset"].as_u64().expect("next_offset");
    session.send(&call(
        "big2",
        "read_mcp_resource",
        json!({"server": "docs", "uri": format!("demo://sized/{five_mb}"), "offset": next}),
    ));
    let second = content(&session.output("big2"));
    let (_, code) = session.finish();
    assert_eq!(code, 0);

    // The PNG: an image item, no base64 in the text.
    insta::assert_snapshot!("png_read_payload", png["content"].as_str().expect("content"));
    assert!(!png["content"].as_str().expect("content").contains("iVBOR"));
    let items = png["content_items"].as_array().expect("content items");
    assert_eq!(items[0]["type"], "input_text");
    assert_eq!(items[1]["type"], "input_image");
    assert!(
        items[1]["image_url"]
            .as_str()
            .is_some_and(|u| u.starts_with("data:image/png;base64,iVBOR"))
    );

    // 5 MB of text: a valid payload cut at the default 64 KiB budget on a character boundary.
    assert_eq!(
        (first["truncated"].as_bool(), first["total_bytes"].as_u64()),
        (Some(true), Some(five_mb))
    );
    let text1 = first["contents"][0]["text"].as_str().expect("text");
    assert!(text1.len() as u64 == next && next <= 64 * 1024 && next > 64 * 1024 - 4);
    let text2 = second["contents"][0]["text"].as_str().expect("text");
    assert_eq!(second["offset"].as_u64(), Some(next));
    assert_eq!(second["next_offset"].as_u64(), Some(next + text2.len() as u64));
    // Together the two pages are exactly the start of the resource.
    let unit = "aé€😀\n";
    let expected: String = unit.repeat((text1.len() + text2.len()) / unit.len() + 1);
    assert!(expected.starts_with(&format!("{text1}{text2}")));
}

#[test]
fn data_sources_can_be_turned_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config =
        one_server_config(&dir, "[mcp_router]\ndata_sources = false\nread_budget_bytes = 1024\n");
    let mut session = ExecSession::start(&config);
    session.send(&call(
        "read",
        "read_mcp_resource",
        json!({"server": "docs", "uri": "demo://data/cities.csv"}),
    ));
    session.send(&call("query", "query_mcp_data", json!({"sql": "SELECT 1"})));
    session.send(&call(
        "big",
        "read_mcp_resource",
        json!({"server": "docs", "uri": "demo://sized/5000"}),
    ));
    let (lines, code) = session.finish();
    assert_eq!(code, 0);
    let outs = outputs(&lines);
    let read = content(&outs["read"]);
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("city,country,population,area_km2\n"))
    );
    assert_eq!(outs["query"]["content"], "unsupported call: query_mcp_data");
    assert_eq!(content(&outs["big"])["next_offset"].as_u64().map(|n| n <= 1024), Some(true));
    let out = crate::support::router_command()
        .args(["tools", "--config"])
        .arg(&config)
        .output()
        .expect("tools");
    let specs = String::from_utf8_lossy(&out.stdout);
    assert!(!specs.contains("query_mcp_data") && !specs.contains("list_mcp_data_sources"));
}

#[test]
fn no_server_outlives_a_sigkilled_router() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = marker("sigkill");
    // A grandchild that ignores the end of its stdin: parent-death signals alone would orphan it.
    let script = format!("bash -c 'exec -a {tag} sleep 300'; true");
    let config = write_config(
        &dir,
        "config.toml",
        &format!(
            "[mcp_servers.stubborn]\ncommand = \"sh\"\nargs = [\"-c\", \"{script}\"]\nstartup_timeout_sec = 60\n"
        ),
    );
    let mut child = exec_command(&config).stdout(Stdio::null()).spawn().expect("spawn");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while processes_with(&tag).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the server never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL the router");
    child.wait().expect("wait");
    assert!(wait_gone(&tag, Duration::from_secs(3)).is_empty(), "orphans after SIGKILL");
}

#[test]
fn secrets_never_reach_events_outputs_or_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A server that answers, so the token and the header are sent (and could be logged).
    let web = crate::support::HttpServer::demo(10);
    let web = &web.url;
    let (env_secret, header_secret, token_secret) =
        ("s3cr3t-env-value", "s3cr3t-header-value", "s3cr3t-bearer-value");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let config = write_config(
        &dir,
        "config.toml",
        &format!(
            r#"
[mcp_servers.chatty]
command = "sh"
args = ["-c", "echo \"my key is $API_KEY\" >&2; exec {DEMO} --name chatty"]
env = {{ API_KEY = "{env_secret}" }}

[mcp_servers.remote]
url = "http://127.0.0.1:{port}/mcp"
bearer_token_env_var = "MCP_ROUTER_TEST_BEARER"
http_headers = {{ "X-Api-Key" = "{header_secret}" }}
startup_timeout_sec = 2

[mcp_servers.web]
url = "{web}"
bearer_token_env_var = "MCP_ROUTER_TEST_BEARER"
http_headers = {{ "X-Api-Key" = "{header_secret}" }}

[mcp_servers.badheader]
url = "http://127.0.0.1:{port}/mcp"
http_headers = {{ "X-Bad" = "{header_secret}\n" }}
"#
        ),
    );
    // At trace level too: every crate's logs, rmcp's and the HTTP stack's included.
    for level in ["debug", "trace"] {
        let mut child = exec_command(&config)
            .env("RUST_LOG", level)
            .env("MCP_ROUTER_TEST_BEARER", token_secret)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        {
            let mut stdin = child.stdin.take().expect("stdin");
            for line in [
                json!({"call_id": "1", "name": "list_mcp_resources", "arguments": "{}"}),
                json!({"call_id": "2", "name": "read_mcp_resource", "arguments": {"server": "remote", "uri": "x"}}),
                json!({"call_id": "3", "name": "read_mcp_resource", "arguments": {"server": "badheader", "uri": "x"}}),
                json!({"call_id": "4", "name": "mcp__chatty__echo", "arguments": {"text": "hi"}}),
                json!({"call_id": "5", "name": "mcp__web__echo", "arguments": {"text": "hi"}}),
            ] {
                writeln!(stdin, "{line}").expect("write");
            }
        }
        let output = child.wait_with_output().expect("wait");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stdout.matches("function_call_output").count(), 5, "{stdout}");
        let web_output = stdout
            .lines()
            .find(|l| l.contains("function_call_output") && l.contains("\"call_id\":\"5\""))
            .expect("the HTTP call's output");
        assert!(web_output.contains("\"Ok\""), "the HTTP server answered: {web_output}");
        assert!(
            stderr.contains("my key is [redacted]"),
            "server stderr is logged, redacted: {stderr:.2000}"
        );
        for secret in [env_secret, header_secret, token_secret] {
            assert!(!stdout.contains(secret), "{secret} in stdout ({level})");
            assert!(!stderr.contains(secret), "{secret} in the logs ({level})");
        }
    }
    // Nor in what the other commands print: the specs, the trust listing, the sign-in status.
    for args in [&["tools"][..], &["trust"], &["trust", "--json"], &["auth", "status"]] {
        let output = router_command()
            .args(args)
            .arg("--config")
            .arg(&config)
            .env("RUST_LOG", "trace")
            .env("MCP_ROUTER_TEST_BEARER", token_secret)
            .output()
            .expect("mcp-router runs");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!all.is_empty(), "{args:?} printed something");
        for secret in [env_secret, header_secret, token_secret] {
            assert!(!all.contains(secret), "{secret} in `mcp-router {}`", args.join(" "));
        }
    }
}

#[test]
fn a_tool_added_while_exec_runs_reaches_the_specs_and_can_be_called() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Its tools are pinned: a tool added while it runs is accepted (held by default, see
    // `trust.rs`).
    let config = write_config(
        &dir,
        "config.toml",
        &format!(
            "[mcp_servers.docs]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"docs\"]\ntool_changes = \"accept\"\n"
        ),
    );
    let mut session = ExecSession::start(&config);
    let names = |tools: &Value| -> Vec<String> {
        tools["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_string())
            .collect()
    };
    session.send(&json!({"type": "list_tools"}));
    let before = session.line("the first specs", |v| v["type"] == "tools");
    assert_eq!(before["format"], "openai");
    assert!(!names(&before).contains(&"mcp__docs__fresh".to_string()));

    session.send(&call("1", "mcp__docs__add_tool", json!({"name": "fresh"})));
    let started = Instant::now();
    let changed = session.line("mcp_tools_changed", |v| v["type"] == "mcp_tools_changed");
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!(
        changed,
        json!({"type": "mcp_tools_changed", "server": "docs", "added": ["mcp__docs__fresh"], "removed": []})
    );

    session.send(&json!({"type": "list_tools", "format": "anthropic"}));
    let after =
        session.line("the new specs", |v| v["type"] == "tools" && v["format"] == "anthropic");
    assert!(names(&after).contains(&"mcp__docs__fresh".to_string()));
    assert!(after["tools"][0].get("input_schema").is_some(), "anthropic format");
    session.send(&call("2", "mcp__docs__fresh", json!({"k": "v"})));
    let output = session.output("2");
    assert_eq!(output["result"]["Ok"]["content"][0]["text"], r#"fresh: {"k":"v"}"#, "{output}");

    session.send(&json!({"type": "list_tools", "format": "yaml"}));
    let error = session.line("the error", |v| v["type"] == "error");
    assert_eq!(
        error["message"],
        r#"invalid request line: `format` must be "openai" or "anthropic", got "yaml""#
    );
    let (_, code) = session.finish();
    assert_eq!(code, 0);
}

#[test]
fn exec_hands_out_change_notices_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests.log");
    let config = write_config(
        &dir,
        "config.toml",
        &format!(
            "[mcp_servers.docs]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"docs\", \"--request-log\", \"{}\"]\n",
            log.display()
        ),
    );
    let mut session = ExecSession::start(&config);
    let uri = "demo://notes/welcome";
    session.send(&call("read", "read_mcp_resource", json!({"server": "docs", "uri": uri})));
    content(&session.output("read"));
    // The read is watched in the background: wait until the server watches it (a
    // `resources/subscribe`, or a listen stream naming it in 2026-07-28).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let watched = |log: &str| {
        log.lines().any(|l| {
            l == "resources/subscribe"
                || l.starts_with("subscriptions/listen ") && l.split(' ').any(|u| u == uri)
        })
    };
    while !watched(&std::fs::read_to_string(&log).unwrap_or_default()) {
        assert!(std::time::Instant::now() < deadline, "the read resource was never watched");
        std::thread::sleep(Duration::from_millis(10));
    }
    session.send(&call("touch", "mcp__docs__touch", json!({"uri": uri})));
    let updated = session.line("mcp_resource_updated", |v| v["type"] == "mcp_resource_updated");
    assert_eq!(updated, json!({"type": "mcp_resource_updated", "server": "docs", "uri": uri}));

    session.send(&json!({"type": "take_notices"}));
    let notices = session.line("the notices", |v| v["type"] == "notices");
    assert_eq!(notices["changed"][0]["uri"], uri);
    assert_eq!(
        notices["text"],
        "The MCP resource demo://notes/welcome (server docs) that you read has changed since; read it again for its current content."
    );
    session.send(&json!({"type": "take_notices"}));
    let again =
        session.line("the second notices", |v| v["type"] == "notices" && v["changed"] == json!([]));
    assert_eq!(again["text"], Value::Null, "taken once");
    let (_, code) = session.finish();
    assert_eq!(code, 0);
}

/// The end event of each call, by call id.
fn end_events(lines: &[Value]) -> HashMap<String, Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "mcp_tool_call_end")
        .map(|l| (l["call_id"].as_str().expect("call_id").to_string(), l.clone()))
        .collect()
}

#[test]
fn end_events_carry_the_output_or_leave_it_out_when_asked() {
    let calls = [
        call("read", "read_mcp_resource", json!({"server": "docs", "uri": "demo://notes/welcome"})),
        call("list", "list_mcp_resources", json!({"server": "docs"})),
        call("echo", "mcp__docs__echo", json!({"text": "hello"})),
        call("missing", "read_mcp_resource", json!({"server": "docs", "uri": "demo://nope"})),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let (full, code) = exec(&one_server_config(&dir, ""), &calls);
    assert_eq!(code, 0);
    let omitted_dir = tempfile::tempdir().expect("tempdir");
    let config = one_server_config(&omitted_dir, "[mcp_router]\nevent_result_text = false");
    let (omitted, code) = exec(&config, &calls);
    assert_eq!(code, 0);

    let (full_ends, full_outs) = (end_events(&full), outputs(&full));
    let (omitted_ends, omitted_outs) = (end_events(&omitted), outputs(&omitted));
    // By default the end event holds the very text the model gets.
    for id in ["read", "list"] {
        let text = full_outs[id]["content"].as_str().expect("content");
        assert_eq!(
            full_ends[id]["result"],
            json!({"Ok": {"content": [{"type": "text", "text": text}], "isError": false}}),
            "{id}"
        );
        assert!(full_ends[id].get("result_omitted").is_none(), "{id}");
    }
    assert_eq!(full_ends["echo"]["result"]["Ok"], full_outs["echo"]["result"]["Ok"]);
    // With the setting: outputs unchanged, end events without the content but with the rest.
    assert_eq!(omitted_outs["read"], full_outs["read"]);
    assert_eq!(omitted_outs["echo"], full_outs["echo"]);
    for id in ["read", "list", "echo"] {
        let end = &omitted_ends[id];
        assert_eq!(end["result_omitted"], true, "{id}");
        assert_eq!(end["result"]["Ok"]["content"], json!([]), "{id}");
        assert_eq!(end["result"]["Ok"]["isError"], false, "{id}");
        assert_eq!(end["summary"], full_ends[id]["summary"], "{id}");
        assert_eq!(end["invocation"], full_ends[id]["invocation"], "{id}");
    }
    // A failure's message is short and stays.
    assert_eq!(omitted_ends["missing"]["result"], full_ends["missing"]["result"]);
    assert!(omitted_ends["missing"].get("result_omitted").is_none());
    assert!(omitted_ends["missing"]["result"]["Err"].is_string());
}

#[test]
fn events_keep_to_event_payload_bytes_and_outputs_do_not_change() {
    let big_text = "y".repeat(20_000);
    let calls = [
        call("huge", "mcp__docs__huge", json!({"mb": 1})),
        call("echo", "mcp__docs__echo", json!({"text": big_text})),
        call("small", "mcp__docs__echo", json!({"text": "hi"})),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let config = one_server_config(&dir, "[mcp_router]\nevent_payload_bytes = 4096");
    let (lines, code) = exec(&config, &calls);
    assert_eq!(code, 0);
    let default_dir = tempfile::tempdir().expect("tempdir");
    let (unbounded, _) = exec(&one_server_config(&default_dir, ""), &calls);
    // The model's outputs are the same whatever the event bound.
    assert_eq!(outputs(&lines), outputs(&unbounded));
    let ends = end_events(&lines);
    let line_len = |id: &str, kind: &str| {
        lines
            .iter()
            .find(|l| l["type"] == kind && l["call_id"] == id)
            .map(|l| l.to_string().len())
            .expect("the event")
    };
    // The result over the bound: a cut copy and its full size.
    let full = ends["huge"]["result_truncated_from"].as_u64().expect("cut");
    assert!(full > 1024 * 1024, "{full}");
    assert!(line_len("huge", "mcp_tool_call_end") < 4096 + 1024);
    // Arguments over the bound: a string of their first bytes, in both events.
    let begin = lines
        .iter()
        .find(|l| l["type"] == "mcp_tool_call_begin" && l["call_id"] == "echo")
        .expect("begin");
    assert_eq!(begin["arguments_truncated_from"], 20_011, "{begin}");
    let shown = begin["invocation"]["arguments"].as_str().expect("a string");
    assert!(shown.starts_with(r#"{"text":"yyy"#) && shown.len() <= 4096, "{shown}");
    assert_eq!(ends["echo"]["arguments_truncated_from"], 20_011);
    assert!(line_len("echo", "mcp_tool_call_begin") < 4096 + 1024);
    // Within the bound: exactly as without it.
    let unbounded_ends = end_events(&unbounded);
    let without_duration = |mut end: Value| {
        end.as_object_mut().map(|o| o.remove("duration"));
        end
    };
    assert_eq!(
        without_duration(ends["small"].clone()),
        without_duration(unbounded_ends["small"].clone())
    );
    assert!(ends["small"].get("result_truncated_from").is_none());
    // The default bound (256 KiB) keeps a 1 MiB result's end event small too.
    assert!(unbounded_ends["huge"]["result_truncated_from"].as_u64().is_some());
}

/// The progress events of `id`, as (progress, total), checked to lie between its begin and end.
fn progress_of(lines: &[Value], id: &str) -> Vec<(f64, Option<f64>)> {
    let at = |kind: &str| lines.iter().position(|l| l["type"] == kind && l["call_id"] == id);
    let (begin, end) =
        (at("mcp_tool_call_begin").expect("begin"), at("mcp_tool_call_end").expect("end"));
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "mcp_tool_call_progress" && l["call_id"] == id)
        .map(|(i, l)| {
            assert!(begin < i && i < end, "progress outside its call: {l}");
            assert_eq!(l["server"], "docs");
            (l["progress"].as_f64().expect("progress"), l["total"].as_f64())
        })
        .collect()
}

#[test]
fn a_servers_progress_reaches_the_host_between_begin_and_end_rate_limited() {
    let calls = [call("p", "mcp__docs__progress", json!({"steps": 20, "ms": 10}))];
    let every = tempfile::tempdir().expect("tempdir");
    let (lines, code) =
        exec(&one_server_config(&every, "[mcp_router]\nprogress_interval_ms = 0"), &calls);
    assert_eq!(code, 0);
    // Over stdio the transport handles a server's progress in the stream's order: every
    // report sent before the answer arrives, the last (sent just before it) too.
    let all = progress_of(&lines, "p");
    assert_eq!(all.len(), 20, "{all:?}");
    assert!(
        all.iter().zip(1..).all(|((p, total), i)| *p == f64::from(i) && *total == Some(20.0)),
        "{all:?}"
    );
    let line = lines.iter().find(|l| l["type"] == "mcp_tool_call_progress").expect("one");
    assert_eq!(line["message"], "step 1 of 20");
    // The default interval (100 ms) over a 200 ms call: a few.
    let default = tempfile::tempdir().expect("tempdir");
    let (lines, code) = exec(&one_server_config(&default, ""), &calls);
    assert_eq!(code, 0);
    let some = progress_of(&lines, "p");
    assert!((1..=5).contains(&some.len()), "{some:?}");
    assert_eq!(some.first(), Some(&(1.0, Some(20.0))));
    assert!(some.windows(2).all(|w| w[0].0 < w[1].0), "{some:?}");
}

#[test]
fn with_reset_timeout_on_progress_a_call_that_keeps_reporting_outlives_its_tool_timeout() {
    // 5 reports 400 ms apart (2 s) against a 1 s tool timeout.
    let calls = [call("p", "mcp__docs__progress", json!({"steps": 5, "ms": 400}))];
    let config = |dir: &tempfile::TempDir, settings: &str| {
        write_config(
            dir,
            "config.toml",
            &format!(
                "{settings}\n[mcp_servers.docs]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"docs\"]\ntool_timeout_sec = 1\n"
            ),
        )
    };
    let output = |lines: &[Value]| {
        lines.iter().find(|l| l["type"] == "function_call_output").expect("output").clone()
    };
    let plain = tempfile::tempdir().expect("tempdir");
    let (lines, code) = exec(&config(&plain, ""), &calls);
    assert_eq!(code, 0);
    let timed_out = output(&lines);
    assert!(
        timed_out.to_string().contains("timed out awaiting tools/call after 1s"),
        "{timed_out}"
    );
    let reset = tempfile::tempdir().expect("tempdir");
    let (lines, code) =
        exec(&config(&reset, "[mcp_router]\nreset_timeout_on_progress = true"), &calls);
    assert_eq!(code, 0);
    let done = output(&lines);
    assert_eq!(done["output"]["result"]["Ok"]["isError"], false, "{done}");
}
