//! MCP Apps (SEP-1865) as far as the router goes: a tool for its app alone never reaches the
//! model (specs, search, calls by name), and a call to a tool with a UI names its `ui://`
//! resource in its begin and end events — against the demo server's `panel_refresh` and the
//! packaged `@modelcontextprotocol/server-basic-vanillajs` (npm, pinned), which we did not write.

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::support::{DEMO, exec_command, router_command, write_config};

#[test]
fn an_app_only_tool_never_reaches_the_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[mcp_router]\ntool_search = \"on\"\ntool_cache = false\n[mcp_servers.docs]\ncommand = {DEMO:?}\nargs = [\"--name\", \"docs\"]\n"
    );
    let config = write_config(&dir, "apps.toml", &text);
    let mut tools = router_command();
    let listed =
        tools.args(["tools", "--refresh", "--config"]).arg(&config).output().expect("tools");
    assert!(listed.status.success());
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("panel_refresh"));

    let mut exec = ExecSession::spawn(exec_command(&config));
    exec.line("docs ready", |v| v["type"] == "mcp_server_ready" && v["server"] == "docs");
    let query = json!({"query": "refresh the demo panel", "limit": 50});
    exec.send(&json!({"call_id": "s1", "name": "search_mcp_tools", "arguments": query}));
    let found = exec.output("s1");
    let found: Value =
        serde_json::from_str(found["content"].as_str().expect("text")).expect("json");
    let names: Vec<&str> = found["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.is_empty() && !names.contains(&"mcp__docs__panel_refresh"), "{names:?}");
    exec.send(&json!({"call_id": "c1", "name": "mcp__docs__panel_refresh", "arguments": {}}));
    let refused = exec.output("c1");
    assert_eq!(
        refused["content"],
        "tool `panel_refresh` of MCP server 'docs' is for its app only (its _meta.ui.visibility leaves out \"model\"): the model cannot call it"
    );
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    assert!(!lines.iter().any(|l| l["type"] == "mcp_tool_call_begin" && l["call_id"] == "c1"));
}

#[test]
fn a_call_to_a_tool_with_a_ui_names_its_ui_resource_in_both_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = crate::interop::harness_dir()
        .join("node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js");
    let text = format!(
        "[mcp_servers.app]\ncommand = {:?}\nargs = [{:?}, \"--stdio\"]\n[mcp_servers.docs]\ncommand = {DEMO:?}\n",
        crate::interop::node(),
        server.display().to_string()
    );
    let config = write_config(&dir, "vanilla.toml", &text);
    let mut exec = ExecSession::spawn(exec_command(&config));
    exec.send(&json!({"call_id": "t1", "name": "mcp__app__get-time", "arguments": {}}));
    let output = exec.output("t1");
    assert!(output["result"]["Ok"]["structuredContent"]["time"].is_string(), "{output}");
    exec.send(&json!({"call_id": "e1", "name": "mcp__docs__echo", "arguments": {"text": "hi"}}));
    exec.output("e1");
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let event = |kind: &str, id: &str| {
        lines.iter().find(|l| l["type"] == kind && l["call_id"] == id).expect("event").clone()
    };
    for kind in ["mcp_tool_call_begin", "mcp_tool_call_end"] {
        assert_eq!(event(kind, "t1")["ui_resource_uri"], "ui://get-time/mcp-app.html", "{kind}");
        assert!(event(kind, "e1").get("ui_resource_uri").is_none(), "{kind}: absent without a UI");
    }
}

/// The host's side for an app it renders: its `ui://` resource, and its server's tools the app
/// may call, the app-only ones included (same server only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_reads_an_apps_ui_and_calls_tools_for_it() {
    use mcp_connection_manager::{ManagerOptions, McpConnectionManager, ServerConfig};
    let vanilla = crate::interop::harness_dir()
        .join("node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js");
    let servers = vec![
        ServerConfig::stdio(
            "app",
            crate::interop::node(),
            vec![vanilla.display().to_string(), "--stdio".into()],
        ),
        ServerConfig::stdio("docs", DEMO, vec![]),
    ];
    let manager = std::sync::Arc::new(McpConnectionManager::start(
        servers,
        router_protocol::EventSender::discard(),
        ManagerOptions::default(),
    ));
    manager.wait_until_started().await;
    let router = tool_router::ToolRouter::with_mcp(manager.clone());
    let ui = router.read_ui_resource("app", "ui://get-time/mcp-app.html").await.expect("ui");
    let html = serde_json::to_string(&ui.contents).expect("json");
    assert!(html.contains("text/html;profile=mcp-app") && html.contains("<html"), "{html:.200}");
    let refreshed = router.call_app_tool("docs", "panel_refresh", None).await.expect("app-only");
    assert!(serde_json::to_string(&refreshed.content).expect("json").contains("panel refreshed"));
    let time = router.call_app_tool("app", "get-time", None).await.expect("shared");
    assert!(time.structured_content.is_some(), "{time:?}");
    let refused = router.call_app_tool("docs", "nope", None).await.expect_err("unknown");
    assert!(refused.to_string().contains("is not one its app may call"), "{refused}");
    let not_ui =
        router.read_ui_resource("docs", "demo://notes/welcome").await.expect_err("ui only");
    assert_eq!(
        not_ui.to_string(),
        "MCP server 'docs' demo://notes/welcome is not a ui:// resource"
    );
    manager.shutdown().await;
}

/// What the client declared at `initialize` to the hand-spoken fixture, with `settings`.
fn declared(settings: &str) -> Value {
    use crate::interop::{python, python_script};
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "{settings}\n[mcp_servers.caps]\ncommand = {:?}\nargs = [{:?}]\nprotocol = \"2025-11-25\"\n",
        python(),
        python_script("caps_fixture.py")
    );
    let mut exec = ExecSession::spawn(exec_command(&write_config(&dir, "caps.toml", &text)));
    exec.send(&json!({"call_id": "c", "name": "mcp__caps__capabilities", "arguments": {}}));
    let output = exec.output("c");
    let text = output["result"]["Ok"]["content"][0]["text"].as_str().expect("text").to_string();
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
    serde_json::from_str(&text).expect("the capabilities as JSON")
}

#[test]
fn a_host_that_renders_apps_declares_the_ui_extension_and_one_that_does_not_leaves_it_out() {
    let plain = declared("");
    assert_eq!(plain["extensions"], json!({"io.modelcontextprotocol/tasks": {}}), "{plain}");
    assert!(plain["elicitation"].is_object() && plain["roots"].is_object(), "{plain}");
    let apps = declared("[mcp_router]\napps_ui = true");
    assert_eq!(
        apps["extensions"],
        json!({
            "io.modelcontextprotocol/tasks": {},
            "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}
        }),
        "{apps}"
    );
}

#[test]
fn exec_reads_an_apps_ui_and_calls_tools_for_it_or_says_why_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vanilla = crate::interop::harness_dir()
        .join("node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js");
    let text = format!(
        "[mcp_router]\napps_ui = true\n[mcp_servers.app]\ncommand = {:?}\nargs = [{:?}, \"--stdio\"]\n[mcp_servers.docs]\ncommand = {DEMO:?}\n",
        crate::interop::node(),
        vanilla.display().to_string()
    );
    let mut exec = ExecSession::spawn(exec_command(&write_config(&dir, "apps.toml", &text)));
    for server in ["app", "docs"] {
        exec.line("ready", |v| v["type"] == "mcp_server_ready" && v["server"] == server);
    }
    let ui =
        json!({"type": "read_ui_resource", "server": "app", "uri": "ui://get-time/mcp-app.html"});
    exec.send(&ui);
    let read = exec.line("the ui", |v| v["type"] == "ui_resource");
    assert_eq!(
        (read["server"].as_str(), read["uri"].as_str()),
        (Some("app"), Some("ui://get-time/mcp-app.html"))
    );
    assert!(read["result"]["contents"][0]["text"].as_str().unwrap_or_default().contains("<html"));
    exec.send(&json!({"type": "call_app_tool", "server": "docs", "name": "panel_refresh"}));
    let called = exec.line("the app's call", |v| v["type"] == "app_tool_result");
    assert_eq!(called["name"], "panel_refresh");
    assert!(called["result"]["content"].to_string().contains("panel refreshed"), "{called}");
    exec.send(
        &json!({"type": "call_app_tool", "server": "docs", "name": "echo", "arguments": [1]}),
    );
    exec.send(
        &json!({"type": "read_ui_resource", "server": "docs", "uri": "demo://notes/welcome"}),
    );
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let errors: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "error")
        .filter_map(|l| l["message"].as_str())
        .collect();
    assert_eq!(
        errors,
        [
            "invalid request line: `arguments` of call_app_tool must be an object, got [1]",
            "resources/read failed: MCP server 'docs' demo://notes/welcome is not a ui:// resource",
        ]
    );
    // The app's calls are not the model's: no begin/end events.
    assert!(!lines.iter().any(|l| l["type"] == "mcp_tool_call_begin"));
}
