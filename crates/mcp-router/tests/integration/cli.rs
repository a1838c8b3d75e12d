//! The human commands and the demo, as a user runs them.

use crate::support::{DEMO, write_config};

fn run(args: &[&str]) -> (String, String, i32) {
    let out = crate::support::router_command().args(args).output().expect("run mcp-router");
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn demo_prints_the_transcript() {
    let (stdout, _, code) = run(&["demo"]);
    assert_eq!(code, 0);
    for expected in [
        "mcp_server_ready     docs",
        "mcp_server_ready     notes",
        "mcp_tool_call_end    call-1",
        "\"nextCursor\": \"c1.",
        "output (error, as the model sees it):\n     server must be provided",
        "resources/read failed: MCP error -32602: Resource not found: demo://missing",
        "protocol 2026-07-28",
        "mcp_tools_changed    notes: added [mcp__notes__greet], removed []",
        "mcp__notes__garbage mcp__notes__greet mcp__notes__huge",
        "greet: {\\\"to\\\":\\\"you\\\"}",
        "mcp_resource_updated docs demo://notes/welcome",
        "\"changed\": [\n         {\"server\":\"docs\",\"uri\":\"demo://notes/welcome\",\"detected_at\":\"",
        "\"incomplete\": [\n         {\"server\":\"catalog\",\"shown\":",
        "{\"server\":\"catalog\",\"uri\":\"demo://gen/000000\",\"name\":\"invoice-0\"",
        "\"matched\": 171",
        "\"nextCursor\": \"mcp-router:",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
    // Resources are grouped by server name: every docs item precedes every notes item.
    let first_notes = stdout.find("{\"server\":\"notes\"").expect("notes items");
    let last_docs = stdout[..stdout.find("── 2.").expect("second call")]
        .rfind("{\"server\":\"docs\"")
        .expect("docs items");
    assert!(last_docs < first_notes);
    // Every end event shows a duration in milliseconds.
    assert!(stdout.lines().filter(|l| l.contains("mcp_tool_call_end")).all(|l| l.contains(" ms ")));
}

#[test]
fn tools_in_both_formats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config =
        write_config(&dir, "c.toml", &format!("[mcp_servers.docs]\ncommand = \"{DEMO}\"\n"));
    let config = config.to_str().expect("utf8 path");
    let (stdout, _, code) = run(&["tools", "--config", config]);
    assert_eq!(code, 0);
    let specs: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let names: Vec<&str> = specs
        .as_array()
        .expect("array")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "complete_mcp_resource_argument",
            "list_mcp_data_sources",
            "list_mcp_resource_templates",
            "list_mcp_resources",
            "mcp__docs__add",
            "mcp__docs__add_note",
            "mcp__docs__add_tool",
            "mcp__docs__ask",
            "mcp__docs__crash",
            "mcp__docs__echo",
            "mcp__docs__fail",
            "mcp__docs__garbage",
            "mcp__docs__huge",
            "mcp__docs__roots",
            "mcp__docs__sleep",
            "mcp__docs__touch",
            "query_mcp_data",
            "read_mcp_resource"
        ]
    );
    assert!(
        specs
            .as_array()
            .expect("array")
            .iter()
            .all(|s| s["type"] == "function" && s["parameters"]["type"] == "object")
    );
    let (stdout, _, code) = run(&["tools", "--config", config, "--format", "anthropic"]);
    assert_eq!(code, 0);
    let specs: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert!(
        specs
            .as_array()
            .expect("array")
            .iter()
            .all(|s| s["input_schema"]["type"] == "object" && s.get("type").is_none())
    );
}

#[test]
fn conveniences_read_list_and_call() {
    let (stdout, _, code) = run(&["read", "--server", "docs", "--uri", "demo://notes/welcome"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("Welcome! Templates:"), "{stdout}");
    let (stdout, _, code) = run(&["list-resources", "--server", "docs"]);
    assert_eq!(code, 0);
    let next = stdout
        .lines()
        .find_map(|l| l.strip_prefix("(more: --cursor "))
        .and_then(|l| l.strip_suffix(')'))
        .expect("a next page");
    let (stdout, _, code) = run(&["list-resources", "--server", "docs", "--cursor", next]);
    assert_eq!(code, 0);
    assert!(stdout.contains("demo://data/cities.csv"), "{stdout}");
    let (stdout, _, code) = run(&["list-resources", "--json"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("{\"server\":null,\"resources\":["), "{stdout}");
    let (stdout, _, code) = run(&["call", "mcp__notes__add", "{\"a\":1,\"b\":2}"]);
    assert_eq!((stdout.as_str(), code), ("3\n", 0));
    let (_, stderr, code) = run(&["read", "--server", "docs", "--uri", "demo://nope"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("Resource not found: demo://nope"), "{stderr}");
}

#[test]
fn a_bad_config_gets_one_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config =
        write_config(&dir, "bad.toml", "[mcp_servers.docs]\ncommand = \"x\"\nargs = \"--oops\"\n");
    let (_, stderr, code) = run(&["exec", "--config", config.to_str().expect("utf8")]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains(
            "bad.toml: server `docs`: key `args`: expected an array of strings, found a string"
        ),
        "{stderr}"
    );
}
