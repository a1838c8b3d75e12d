//! Interop with servers we did not write, through the router and the connection manager:
//! server-everything 2026.8.31 (stdio and streamable HTTP) and 2025.11.25, and two Python SDK
//! (mcp==2.3.0) fixture servers — low-level `Server` and decorator-style `MCPServer` — on stdio
//! and HTTP (the low-level one also on stateless JSON HTTP); plus a differential check against the
//! Python SDK client paging by itself (the same HTTP server; for stdio, its own instance of the
//! same deterministic server), and `mcp-router exec` with server-everything. Every server listens
//! on 127.0.0.1 only and is ended with its test.
//!
//! Needs the pinned harness in `tests/harness` (`tests/harness/install`, which `./scripts/test`
//! runs first). Each test prints the wall time of its all-server list and of 200 reads.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use mcp_connection_manager::ServerConfig;
use router_protocol::EventMsg;
use serde_json::{Value, json};
use tool_router::ToolOutput;

use crate::support::{Harness, HttpServer, live_processes};

/// The installed harness folder (checked once); panics with what to run when it is missing.
pub(crate) fn harness_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/harness");
        let dir = dir.canonicalize().expect("tests/harness exists");
        for needed in [
            "node_modules/.harness-stamp",
            "node_modules/.bin/node",
            ".venv/.harness-stamp",
            ".venv/bin/python",
        ] {
            assert!(
                dir.join(needed).exists(),
                "the interop harness is not installed ({needed} is missing): run \
                 tests/harness/install (./scripts/test does)"
            );
        }
        dir
    })
}

fn path_arg(path: PathBuf) -> String {
    path.to_str().expect("UTF-8 path").to_string()
}

pub(crate) fn node() -> String {
    path_arg(harness_dir().join("node_modules/.bin/node"))
}

pub(crate) fn python() -> String {
    path_arg(harness_dir().join(".venv/bin/python"))
}

pub(crate) fn everything_js(version: &str) -> String {
    path_arg(harness_dir().join(format!("node_modules/server-everything-{version}/dist/index.js")))
}

/// A Python fixture script in `tests/harness/py`.
pub(crate) fn python_script(script: &str) -> String {
    path_arg(harness_dir().join("py").join(script))
}

/// The low-level `Server` fixture: paging behind opaque cursors, blobs, an erroring read.
const LOWLEVEL: &str = "fixture_server.py";
/// The decorator-style `MCPServer` fixture: query and reserved-expansion templates, tools.
const MCPSERVER: &str = "mcpserver_fixture.py";

/// How a test reaches a server: a stdio command the manager spawns, or an HTTP server running
/// for the test.
pub(crate) enum Target {
    Stdio(Vec<String>),
    Http(HttpServer),
}

impl Target {
    pub(crate) fn everything_stdio(version: &str) -> Self {
        Self::Stdio(vec![node(), everything_js(version), "stdio".into()])
    }

    pub(crate) fn python_stdio(script: &str) -> Self {
        Self::Stdio(vec![python(), python_script(script), "stdio".into()])
    }

    pub(crate) fn config(&self, name: &str) -> ServerConfig {
        match self {
            Self::Stdio(command) => {
                ServerConfig::stdio(name, command[0].clone(), command[1..].to_vec())
            }
            Self::Http(server) => ServerConfig::http(name, server.url.clone()),
        }
    }

    /// The arguments that point `collect.py` at the same server.
    fn collect_args(&self) -> Vec<String> {
        match self {
            Self::Stdio(command) => [vec!["--stdio".to_string()], command.clone()].concat(),
            Self::Http(server) => vec!["--url".to_string(), server.url.clone()],
        }
    }
}

/// A harness on one server named `name`.
fn start(name: &str, target: &Target) -> Harness {
    Harness::start(vec![target.config(name)])
}

/// The differential check, then shutdown: a stdio server's process group must be gone.
async fn finish(h: &Harness, name: &str, target: &Target) {
    differential(h, name, &target.collect_args()).await;
    if matches!(target, Target::Stdio(_)) {
        assert!(!h.manager.process_groups().is_empty(), "{name} has no process group");
    }
    shutdown_leaving_nothing(h).await;
}

/// The harness's HTTP servers.
impl HttpServer {
    /// server-everything with the loopback preload and `PORT=0`; the preload reports the port.
    pub(crate) fn everything(version: &str) -> Self {
        let mut command = Command::new(node());
        command
            .arg("--require")
            .arg(harness_dir().join("loopback.cjs"))
            .args([everything_js(version), "streamableHttp".into()])
            .env("PORT", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        Self::spawn(command, "mcp-harness: listening on ", |addr| format!("http://{addr}/mcp"))
    }

    /// A Python fixture server; it binds 127.0.0.1 itself and prints its URL.
    pub(crate) fn python(script: &str, extra: &[&str]) -> Self {
        let mut command = Command::new(python());
        command
            .args([python_script(script), "http".into()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        Self::spawn(command, "listening on ", str::to_string)
    }
}

/// Live processes in process group `pgid` (a stdio server's group, led by the spawned command).
fn group_members(pgid: u32) -> Vec<u32> {
    live_processes(|_, _, fields| fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid))
}

/// Shut the manager down and check that no stdio server's process group outlived it: shutdown
/// returns only once every process it started has exited.
pub(crate) async fn shutdown_leaving_nothing(h: &Harness) {
    let groups = h.manager.process_groups();
    h.manager.shutdown().await;
    for (server, pgid) in groups {
        assert_eq!(group_members(pgid), Vec::<u32>::new(), "{server} left processes behind");
    }
}

/// `(uri or uriTemplate, name, mimeType)` of one server's items in an all-server list payload.
fn listed(payload: &Value, key: &str, server: &str) -> Vec<(String, Value, Value)> {
    payload[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {payload}"))
        .iter()
        .filter(|item| item["server"] == server)
        .map(|item| {
            let uri = item.get("uri").or_else(|| item.get("uriTemplate")).expect("uri");
            let field = |k: &str| item.get(k).cloned().unwrap_or(Value::Null);
            (uri.as_str().expect("string uri").to_string(), field("name"), field("mimeType"))
        })
        .collect()
}

/// What the Python SDK client collects when it pages a server to the end itself.
fn python_collect(target: &[String]) -> Value {
    let output = Command::new(python())
        .arg(harness_dir().join("py/collect.py"))
        .args(target)
        .stderr(Stdio::inherit())
        .output()
        .expect("run collect.py");
    assert!(output.status.success(), "collect.py failed: {:?}", output.status);
    serde_json::from_slice(&output.stdout).expect("collect.py JSON")
}

/// Our all-server lists (through the router) equal the Python SDK client's own paging.
async fn differential(h: &Harness, server: &str, target: &[String]) {
    let python = python_collect(target);
    let ours = h.payload("list_mcp_resources", "{}").await;
    let ours_templates = h.payload("list_mcp_resource_templates", "{}").await;
    let theirs = |key: &str, uri: &str| -> Vec<(String, Value, Value)> {
        python[key]
            .as_array()
            .expect("python list")
            .iter()
            .map(|i| {
                (
                    i[uri].as_str().expect("uri").to_string(),
                    i["name"].clone(),
                    i["mimeType"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(listed(&ours, "resources", server), theirs("resources", "uri"), "{server}");
    assert_eq!(
        listed(&ours_templates, "resourceTemplates", server),
        theirs("templates", "uriTemplate"),
        "{server}"
    );
}

/// The JSON text of a successful read's first content entry.
async fn read_text(h: &Harness, args: Value) -> String {
    let payload = h.payload("read_mcp_resource", &args.to_string()).await;
    payload["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("text in {payload}"))
        .to_string()
}

/// A failed function output's message.
async fn failure(h: &Harness, name: &str, args: Value) -> String {
    match h.call(name, &args.to_string()).await {
        ToolOutput::Function { content, success: Some(false), .. } => content.to_string(),
        other => panic!("{name} {args} should fail: {other:?}"),
    }
}

/// A qualified tool call's result: `(is_error, text of the content)`.
async fn call_tool(h: &Harness, name: &str, args: Value) -> (bool, String) {
    let ToolOutput::Mcp { result: Ok(result) } = h.call(name, &args.to_string()).await else {
        panic!("{name} did not return a tool result")
    };
    let text = serde_json::to_value(&result.content).expect("json")[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (result.is_error == Some(true), text)
}

/// Time the all-server list and 200 concurrent reads (`read(i)` gives the arguments and a text
/// the answer must contain); every read must succeed with its own content.
async fn timed_list_and_reads(h: &Harness, label: &str, read: impl Fn(usize) -> (Value, String)) {
    let started = Instant::now();
    let list = h.payload("list_mcp_resources", "{}").await;
    let list_time = started.elapsed();
    assert!(list.get("errors").is_none(), "{list}");
    let cases: Vec<(Value, String)> = (0..200).map(read).collect();
    let started = Instant::now();
    let outputs =
        futures::future::join_all(cases.iter().map(|(args, _)| read_text(h, args.clone()))).await;
    let reads_time = started.elapsed();
    for ((args, expected), text) in cases.iter().zip(&outputs) {
        assert!(text.contains(expected.as_str()), "{args}: {text:?} lacks {expected:?}");
    }
    println!("interop timing {label}: all-server list {list_time:?}, 200 reads {reads_time:?}");
}

/// Everything issue 5 asks of server-everything 2026.8.31, on whichever transport `h` uses.
async fn check_everything_2026(h: &mut Harness, label: &str) {
    let s = "everything";
    let all = h.payload("list_mcp_resources", "{}").await;
    assert!(all.get("errors").is_none(), "{all}");
    let resources = listed(&all, "resources", s);
    assert_eq!(resources.len(), 7, "{all}");
    let one = h.payload("list_mcp_resources", &json!({"server": s}).to_string()).await;
    assert_eq!(listed(&one, "resources", s), resources);
    assert_eq!(one["nextCursor"], Value::Null);

    let templates = h.payload("list_mcp_resource_templates", "{}").await;
    let uris: Vec<String> =
        listed(&templates, "resourceTemplates", s).into_iter().map(|t| t.0).collect();
    assert_eq!(
        uris,
        ["demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}"]
    );

    let text =
        read_text(h, json!({"server": s, "template": uris[0], "parameters": {"resourceId": 7}}))
            .await;
    assert!(text.starts_with("Resource 7: This is a plaintext resource"), "{text}");
    // Its "blob" instances are base64 of text, labelled text/plain: read as text.
    let blob = h
        .payload(
            "read_mcp_resource",
            &json!({"server": s, "template": uris[1], "parameters": {"resourceId": "3"}})
                .to_string(),
        )
        .await;
    assert_eq!(blob["uri"], "demo://resource/dynamic/blob/3");
    let blob_text = blob["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(blob_text.starts_with("Resource 3: This is a base64 blob"), "{blob}");

    // It declares `completions`, so the completion tool is offered and answers from the server.
    let specs: Vec<String> = h.router.specs().await.into_iter().map(|s| s.name).collect();
    assert!(specs.iter().any(|n| n == "complete_mcp_resource_argument"), "{specs:?}");
    let completion = h
        .payload(
            "complete_mcp_resource_argument",
            &json!({"server": s, "template": uris[0], "argument": "resourceId", "value": "1"})
                .to_string(),
        )
        .await;
    assert_eq!(completion["values"], json!(["1"]), "{completion}");

    let first_static = &resources[0].0;
    let doc = read_text(h, json!({"server": s, "uri": first_static})).await;
    assert!(!doc.is_empty());

    assert_eq!(
        call_tool(h, "mcp__everything__echo", json!({"message": "hi there"})).await,
        (false, "Echo: hi there".to_string())
    );
    assert_eq!(
        call_tool(h, "mcp__everything__get-sum", json!({"a": 2, "b": 40})).await,
        (false, "The sum of 2 and 40 is 42.".to_string())
    );

    // Errors carry the server's own message to the model.
    assert_eq!(
        failure(h, "read_mcp_resource", json!({"server": s, "uri": "demo://nope/x"})).await,
        "resources/read failed: MCP error -32602: Resource demo://nope/x not found"
    );
    assert_eq!(
        call_tool(h, "mcp__everything__no-such-tool", json!({})).await,
        (true, "MCP error -32602: Tool no-such-tool not found".to_string())
    );

    timed_list_and_reads(h, label, |i| {
        // Its ids start at 1.
        let n = i + 1;
        let args = json!({"server": s, "uri": format!("demo://resource/dynamic/text/{n}")});
        (args, format!("Resource {n}: This is a plaintext resource"))
    })
    .await;

    // Every MCP call was bracketed by exactly one begin and one end.
    let events = h.drain();
    let begins = events.iter().filter(|e| matches!(e, EventMsg::McpToolCallBegin(_))).count();
    let ends = events.iter().filter(|e| matches!(e, EventMsg::McpToolCallEnd(_))).count();
    assert_eq!(begins, ends);
    assert!(begins >= 200);
}

#[tokio::test]
async fn server_everything_2026_over_stdio() {
    let target = Target::everything_stdio("2026");
    let mut h = start("everything", &target);
    check_everything_2026(&mut h, "server-everything 2026.8.31 stdio").await;
    finish(&h, "everything", &target).await;
}

#[tokio::test]
async fn server_everything_2026_over_streamable_http() {
    let target = Target::Http(HttpServer::everything("2026"));
    let mut h = start("everything", &target);
    check_everything_2026(&mut h, "server-everything 2026.8.31 streamable HTTP").await;
    finish(&h, "everything", &target).await;
}

#[tokio::test]
async fn server_everything_2025_all_100_resources_over_10_pages() {
    let target = Target::everything_stdio("2025");
    let mut h = start("old", &target);
    let payload = h.payload("list_mcp_resources", "{}").await;
    assert!(payload.get("errors").is_none(), "{payload}");
    let resources = listed(&payload, "resources", "old");
    let unique: HashSet<&String> = resources.iter().map(|r| &r.0).collect();
    assert_eq!((resources.len(), unique.len()), (100, 100));
    for n in 1..=100 {
        assert!(unique.contains(&format!("test://static/resource/{n}")), "resource {n}");
    }
    let summary = h.last_summary();
    assert_eq!((summary.items, summary.pages, summary.servers), (100, 10, 1));

    // Odd resources are text; even ones are binary and described, not poured out as base64.
    let blob = h
        .payload("read_mcp_resource", r#"{"server":"old","uri":"test://static/resource/2"}"#)
        .await;
    assert_eq!(blob["contents"][0]["mimeType"], "application/octet-stream");
    assert!(blob["contents"][0].get("blob").is_none(), "{blob}");
    assert_eq!(blob["contents"][0]["sha256"].as_str().map(str::len), Some(64));

    timed_list_and_reads(&h, "server-everything 2025.11.25 stdio", |i| {
        let n = 2 * (i % 50) + 1;
        let args = json!({"server": "old", "uri": format!("test://static/resource/{n}")});
        (args, format!("Resource {n}: This is a plaintext resource"))
    })
    .await;
    finish(&h, "old", &target).await;
}

/// The Python fixture: 23 items + `broken` in pages of 5 behind opaque cursors, two templates one
/// per page, text and blob contents, an erroring read.
async fn check_python_fixture(h: &mut Harness, label: &str) {
    let s = "py";
    let all = h.payload("list_mcp_resources", "{}").await;
    assert!(all.get("errors").is_none(), "{all}");
    let resources = listed(&all, "resources", s);
    let mut expected: Vec<String> = (0..23).map(|i| format!("fixture://items/{i}")).collect();
    expected.push("fixture://broken".into());
    assert_eq!(resources.iter().map(|r| r.0.clone()).collect::<Vec<_>>(), expected);
    let summary = h.last_summary();
    assert_eq!((summary.items, summary.pages), (24, 5));

    // Single-server paging hands the server's opaque cursor through untouched.
    let mut cursor = Value::Null;
    let mut walked = Vec::new();
    for _ in 0..10 {
        let page = h
            .payload("list_mcp_resources", &json!({"server": s, "cursor": cursor}).to_string())
            .await;
        walked.extend(listed(&page, "resources", s).into_iter().map(|r| r.0));
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(walked, expected);
    let bad = failure(h, "list_mcp_resources", json!({"server": s, "cursor": "forged"})).await;
    assert_eq!(bad, "resources/list failed: MCP error -32602: Invalid cursor: 'forged'");

    let templates = h.payload("list_mcp_resource_templates", "{}").await;
    let uris: Vec<String> =
        listed(&templates, "resourceTemplates", s).into_iter().map(|t| t.0).collect();
    assert_eq!(uris, ["fixture://items/{id}", "fixture://echo/{text}"]);

    assert_eq!(
        read_text(h, json!({"server": s, "template": uris[0], "parameters": {"id": 4}})).await,
        "Fixture item 4: the quick brown fox, number 4."
    );
    assert_eq!(
        read_text(h, json!({"server": s, "template": uris[1], "parameters": {"text": "a b/c"}}))
            .await,
        "a%20b%2Fc"
    );
    let blob = h
        .payload("read_mcp_resource", &json!({"server": s, "uri": "fixture://items/2"}).to_string())
        .await;
    let entry = &blob["contents"][0];
    assert_eq!(entry["mimeType"], "application/octet-stream");
    assert_eq!(entry["size"], 5 + "item-2".len());
    assert!(entry.get("blob").is_none() && entry.get("text").is_none(), "{blob}");

    assert_eq!(
        failure(h, "read_mcp_resource", json!({"server": s, "uri": "fixture://broken"})).await,
        "resources/read failed: MCP error -32603: fixture read failed: the backing store is \
         unavailable"
    );
    assert_eq!(
        failure(h, "read_mcp_resource", json!({"server": s, "uri": "fixture://items/99"})).await,
        "resources/read failed: MCP error -32002: Resource not found"
    );

    timed_list_and_reads(h, label, |i| {
        let n = [0, 1, 3, 4][i % 4] + 6 * (i % 3);
        let args = json!({"server": s, "uri": format!("fixture://items/{n}")});
        (args, format!("Fixture item {n}: "))
    })
    .await;
}

#[tokio::test]
async fn python_sdk_fixture_over_stdio() {
    let target = Target::python_stdio(LOWLEVEL);
    let mut h = start("py", &target);
    check_python_fixture(&mut h, "python-sdk fixture stdio").await;
    finish(&h, "py", &target).await;
}

#[tokio::test]
async fn python_sdk_fixture_over_streamable_http() {
    let target = Target::Http(HttpServer::python(LOWLEVEL, &[]));
    let mut h = start("py", &target);
    check_python_fixture(&mut h, "python-sdk fixture streamable HTTP").await;
    finish(&h, "py", &target).await;
}

/// Stateless streamable HTTP with plain JSON answers (no session id, no SSE), as servers behind
/// load balancers are often run.
#[tokio::test]
async fn python_sdk_fixture_over_stateless_json_http() {
    let target = Target::Http(HttpServer::python(LOWLEVEL, &["--stateless"]));
    let mut h = start("py", &target);
    check_python_fixture(&mut h, "python-sdk fixture stateless JSON HTTP").await;
    finish(&h, "py", &target).await;
}

/// All five servers at once: one all-server list, sorted by server name, nothing missing.
#[tokio::test]
async fn all_real_servers_in_one_list() {
    let targets = [
        ("py-stdio", Target::python_stdio(LOWLEVEL)),
        ("everything-http", Target::Http(HttpServer::everything("2026"))),
        ("everything-stdio", Target::everything_stdio("2026")),
        ("old", Target::everything_stdio("2025")),
        ("py-http", Target::Http(HttpServer::python(LOWLEVEL, &[]))),
    ];
    let h = Harness::start(targets.iter().map(|(name, t)| t.config(name)).collect());
    let started = Instant::now();
    let first = h.payload("list_mcp_resources", "{}").await;
    let first_time = started.elapsed();
    let started = Instant::now();
    let payload = h.payload("list_mcp_resources", "{}").await;
    println!(
        "interop timing all five servers: all-server list {:?} (the first, waiting for startup: \
         {first_time:?})",
        started.elapsed()
    );
    assert_eq!(first, payload);
    assert!(payload.get("errors").is_none(), "{payload}");
    let servers: Vec<&str> = payload["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["server"].as_str().expect("server"))
        .collect();
    let mut sorted = servers.clone();
    sorted.sort();
    assert_eq!(servers, sorted);
    let count = |name: &str| servers.iter().filter(|s| **s == name).count();
    assert_eq!(
        ["everything-http", "everything-stdio", "old", "py-http", "py-stdio"].map(count),
        [7, 7, 100, 24, 24]
    );
    shutdown_leaving_nothing(&h).await;
}

/// The decorator-style server: our RFC 6570 expansion against the Python SDK's own template
/// matcher (query variables, reserved expansion, non-ASCII), bytes resources, tools and errors.
async fn check_python_mcpserver(h: &mut Harness, label: &str) {
    let s = "pym";
    let all = h.payload("list_mcp_resources", "{}").await;
    let uris: Vec<String> = listed(&all, "resources", s).into_iter().map(|r| r.0).collect();
    assert_eq!(uris, ["notes://index", "notes://logo.bin", "notes://broken"]);
    let templates = h.payload("list_mcp_resource_templates", "{}").await;
    let templates: Vec<String> =
        listed(&templates, "resourceTemplates", s).into_iter().map(|t| t.0).collect();
    assert_eq!(templates, ["notes://{name}", "search://items{?q,limit}", "files://{+path}"]);

    let read = |template: &str, parameters: Value| json!({"server": s, "template": template, "parameters": parameters});
    let cases = [
        (read("notes://{name}", json!({"name": "héllo wörld"})), "Note héllo wörld"),
        (
            read("search://items{?q,limit}", json!({"q": "a b&c", "limit": 3})),
            "search q='a b&c' limit=3",
        ),
        (read("search://items{?q,limit}", json!({})), "search q='' limit=10"),
        (
            read("files://{+path}", json!({"path": "docs/sub dir/a.txt"})),
            "file at docs/sub dir/a.txt",
        ),
        (json!({"server": s, "uri": "notes://index"}), "notes: alpha, beta"),
    ];
    for (args, expected) in cases {
        assert_eq!(read_text(h, args).await, expected);
    }
    let logo = h
        .payload("read_mcp_resource", &json!({"server": s, "uri": "notes://logo.bin"}).to_string())
        .await;
    assert_eq!(logo["contents"][0]["size"], 256, "{logo}");
    assert!(logo["contents"][0].get("blob").is_none(), "{logo}");

    assert_eq!(
        failure(h, "read_mcp_resource", json!({"server": s, "uri": "notes://broken"})).await,
        "resources/read failed: MCP error -32603: Error reading resource notes://broken"
    );
    assert_eq!(
        failure(h, "read_mcp_resource", json!({"server": s, "uri": "unknown://x"})).await,
        "resources/read failed: MCP error -32602: Unknown resource: unknown://x"
    );
    assert_eq!(call_tool(h, "mcp__pym__add", json!({"a": 2, "b": 3})).await, (false, "5".into()));
    assert_eq!(
        call_tool(h, "mcp__pym__fail", json!({})).await,
        (true, "Error executing tool fail".into())
    );
    assert_eq!(
        call_tool(h, "mcp__pym__nope", json!({})).await,
        (true, "Unknown tool: nope".into())
    );
    timed_list_and_reads(h, label, |i| {
        (read("notes://{name}", json!({"name": format!("n{i}")})), format!("Note n{i}"))
    })
    .await;
}

#[tokio::test]
async fn python_sdk_mcpserver_over_stdio() {
    let target = Target::python_stdio(MCPSERVER);
    let mut h = start("pym", &target);
    check_python_mcpserver(&mut h, "python-sdk MCPServer stdio").await;
    finish(&h, "pym", &target).await;
}

#[tokio::test]
async fn python_sdk_mcpserver_over_streamable_http() {
    let target = Target::Http(HttpServer::python(MCPSERVER, &[]));
    let mut h = start("pym", &target);
    check_python_mcpserver(&mut h, "python-sdk MCPServer streamable HTTP").await;
    finish(&h, "pym", &target).await;
}

/// `mcp-router exec` with server-everything: the server sees only the router's environment
/// whitelist plus its configured `env` (a secret in the router's environment does not reach it),
/// and its elicitation and roots requests reach the default host (decline, empty roots) and
/// appear as `mcp_server_request` events.
#[test]
fn exec_with_server_everything_env_and_server_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = crate::support::write_config(
        &dir,
        "everything.toml",
        &format!(
            "[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n\
             env = {{ VISIBLE_TO_SERVER = \"configured-value\" }}\n",
            node(),
            everything_js("2026")
        ),
    );
    let secret = "interop-secret-value-1f3e";
    let mut child = crate::support::exec_command(&config)
        .env("MCP_INTEROP_SECRET", secret)
        .spawn()
        .expect("spawn mcp-router exec");
    let mut stdin = child.stdin.take().expect("stdin");
    for (id, tool) in
        [("env", "get-env"), ("elicit", "trigger-elicitation-request"), ("roots", "get-roots-list")]
    {
        let line =
            json!({"call_id": id, "name": format!("mcp__everything__{tool}"), "arguments": "{}"});
        writeln!(stdin, "{line}").expect("write");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).expect("utf8");
    assert!(!stdout.contains(secret), "the router's secret reached the server");
    let lines: Vec<Value> =
        stdout.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    let text_of = |id: &str| -> String {
        let out = lines
            .iter()
            .find(|l| l["type"] == "function_call_output" && l["call_id"] == id)
            .unwrap_or_else(|| panic!("no output for {id}"));
        out["output"]["result"]["Ok"]["content"]
            .as_array()
            .expect("content")
            .iter()
            .filter_map(|c| c["text"].as_str())
            .collect()
    };
    let env: Value = serde_json::from_str(&text_of("env")).expect("get-env JSON");
    assert_eq!(env["VISIBLE_TO_SERVER"], "configured-value");
    assert!(env.get("MCP_INTEROP_SECRET").is_none());
    assert!(text_of("elicit").contains("declined"), "{}", text_of("elicit"));
    assert!(text_of("roots").contains("no roots"), "{}", text_of("roots"));

    let request = |method: &str| {
        lines
            .iter()
            .find(|l| l["type"] == "mcp_server_request" && l["method"] == method)
            .unwrap_or_else(|| panic!("no {method} event"))
            .clone()
    };
    assert_eq!(request("elicitation/create")["server"], "everything");
    assert_eq!(request("elicitation/create")["response"]["Ok"]["action"], "decline");
    assert_eq!(request("roots/list")["response"], json!({"Ok": {"roots": []}}));
}
