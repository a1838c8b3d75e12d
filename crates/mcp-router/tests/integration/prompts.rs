//! Prompts for the host (slash commands) against server-everything (npm, pinned), which offers
//! prompts with required and optional arguments and argument completion, and the demo server,
//! which offers none.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::interop::{everything_js, node};
use crate::support::{DEMO, exec_command, router_command, write_config};

fn config(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let text = format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n[mcp_servers.docs]\ncommand = {DEMO:?}\n",
        node(),
        everything_js("2026")
    );
    write_config(dir, "prompts.toml", &text)
}

#[test]
fn the_command_line_lists_prompts_and_gets_one_with_its_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(&dir);
    let mut command = router_command();
    let listed = command.args(["prompts", "--config"]).arg(&config).output().expect("prompts");
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(stdout.contains("everything\tsimple-prompt\t\t"), "{stdout}");
    assert!(stdout.contains("everything\targs-prompt\tcity* state\t"), "{stdout}");
    assert!(!stdout.contains("docs\t"), "the demo server offers no prompts: {stdout}");

    let mut command = router_command();
    let got = command
        .args([
            "prompt",
            "--server",
            "everything",
            "args-prompt",
            "--arg",
            "city=Paris",
            "--config",
        ])
        .arg(&config)
        .output()
        .expect("prompt");
    assert!(got.status.success(), "{}", String::from_utf8_lossy(&got.stderr));
    let result: Value = serde_json::from_slice(&got.stdout).expect("json");
    let text = result["messages"][0]["content"]["text"].as_str().expect("text");
    assert!(text.contains("Paris"), "{result}");
}

#[test]
fn exec_lists_prompts_and_answers_get_prompt_or_says_why_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exec = ExecSession::spawn(exec_command(&config(&dir)));
    exec.send(&json!({"type": "list_prompts"}));
    let listed = exec.line("the prompts answer", |v| v["type"] == "prompts");
    let names: Vec<&str> = listed["prompts"]
        .as_array()
        .expect("prompts")
        .iter()
        .map(|p| {
            assert_eq!(p["server"], "everything");
            p["name"].as_str().expect("name")
        })
        .collect();
    assert!(names.contains(&"args-prompt") && names.contains(&"simple-prompt"), "{names:?}");
    let args =
        listed["prompts"].as_array().expect("prompts").iter().find(|p| p["name"] == "args-prompt");
    assert_eq!(args.expect("args-prompt")["arguments"][0]["name"], "city");

    let request = json!({"type": "get_prompt", "server": "everything", "name": "args-prompt", "arguments": {"city": "Oslo", "state": "Oslo"}});
    exec.send(&request);
    let got = exec.line("the prompt", |v| v["type"] == "prompt");
    assert_eq!(got["server"], "everything");
    assert!(
        got["result"]["messages"][0]["content"]["text"].as_str().expect("text").contains("Oslo")
    );
    exec.send(&json!({"type": "get_prompt", "server": "everything", "name": "no-such-prompt"}));
    let error = exec.line("an error line", |v| v["type"] == "error");
    assert!(
        error["message"].as_str().expect("message").starts_with("prompts/get failed: "),
        "{error}"
    );
    assert_eq!(error["line"], 3);
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_completes_a_prompt_argument() {
    let everything = mcp_connection_manager::ServerConfig::stdio(
        "everything",
        node(),
        vec![everything_js("2026"), "stdio".into()],
    );
    let manager = Arc::new(mcp_connection_manager::McpConnectionManager::start(
        vec![everything],
        router_protocol::EventSender::discard(),
        mcp_connection_manager::ManagerOptions::default(),
    ));
    let router = tool_router::ToolRouter::with_mcp(manager.clone());
    let values = router
        .complete_prompt_argument("everything", "completable-prompt", "department", "E")
        .await
        .expect("completion");
    assert!(values.values.iter().any(|v| v.starts_with('E')), "{values:?}");
    manager.shutdown().await;
}

#[test]
fn with_prompt_tool_the_model_gets_a_prompt_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(config(&dir)).expect("config");
    let config =
        write_config(&dir, "tool.toml", &format!("[mcp_router]\nprompt_tool = true\n{text}"));
    let mut exec = ExecSession::spawn(exec_command(&config));
    exec.send(&json!({"type": "list_tools"}));
    let tools = exec.line("the tools answer", |v| v["type"] == "tools");
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"get_mcp_prompt"), "{names:?}");
    let arguments =
        json!({"server": "everything", "name": "args-prompt", "arguments": {"city": "Rome"}});
    exec.send(&json!({"call_id": "p1", "name": "get_mcp_prompt", "arguments": arguments}));
    let output = exec.output("p1");
    assert_eq!(output["success"], true, "{output}");
    let payload: Value =
        serde_json::from_str(output["content"].as_str().expect("text")).expect("json");
    assert_eq!(payload["name"], "args-prompt");
    assert!(payload["messages"][0]["content"]["text"].as_str().expect("text").contains("Rome"));
    exec.send(
        &json!({"call_id": "p2", "name": "get_mcp_prompt", "arguments": {"server": "everything"}}),
    );
    assert_eq!(exec.output("p2")["content"], "name must be provided");
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}
