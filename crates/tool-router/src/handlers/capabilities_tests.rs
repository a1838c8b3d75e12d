//! The optional capabilities through the router: a tool is offered only for a capability the
//! backend has (and a server offers), prompts and apps answered from the scripted backend, and
//! a backend with the core only offering none of them.

use rmcp::model::{CallToolResult, ContentBlock, Prompt, Tool};
use serde_json::{Value, json};

use crate::invocation::{ToolCall, ToolOutput};
use crate::test_support::{FakeBackend, FakeServer, context, drain};
use crate::{RouterSettings, ToolRouter};

fn tool(name: &str) -> Tool {
    Tool::new(name.to_string(), "a tool", serde_json::Map::new())
}

/// A server with prompts, skills declared (none), an app-only tool and completions.
fn rich() -> FakeServer {
    FakeServer {
        prompts: Some(vec![Prompt::new("review", Some("Review a change"), None)]),
        skills: Some(Vec::new()),
        app_tools: vec![tool("echo")],
        completions: Some(vec!["alpha".into(), "beta".into()]),
        ..FakeServer::default()
    }
}

fn settings() -> RouterSettings {
    RouterSettings::default().with(|s| {
        s.tools.get_prompt = true;
        s.tools.list_skills = true;
    })
}

async fn names(router: &ToolRouter) -> Vec<String> {
    router.specs().await.into_iter().map(|s| s.name).collect()
}

async fn call(router: &ToolRouter, name: &str, arguments: Value) -> ToolOutput {
    let (ctx, _rx) = context();
    let call = ToolCall { call_id: "c1".into(), name: name.into(), arguments: arguments.into() };
    router.dispatch_to_output(&ctx, call).await.expect("not fatal")
}

fn text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Function { content, .. } => content.to_string(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn get_mcp_prompt_is_offered_for_a_backend_with_prompts_and_fills_a_prompt_in() {
    let backend = FakeBackend::with(vec![("docs", rich())]);
    let router = ToolRouter::with_mcp_settings(backend, &settings()).expect("router");
    assert!(names(&router).await.contains(&"get_mcp_prompt".to_string()));
    let (ctx, mut rx) = context();
    let arguments = json!({"server": "docs", "name": "review", "arguments": {"pr": "7"}});
    let call = ToolCall {
        call_id: "p1".into(),
        name: "get_mcp_prompt".into(),
        arguments: arguments.into(),
    };
    let output = router.dispatch_to_output(&ctx, call).await.expect("not fatal");
    let payload: Value = serde_json::from_str(&text(&output)).expect("JSON");
    assert_eq!(payload["messages"][0]["content"]["text"], "prompt review with {\"pr\":\"7\"}");
    assert_eq!(drain(&mut rx).len(), 2, "one begin, one end");
    // The host's side of the same capability.
    let prompts = router.prompts().await;
    assert_eq!(prompts.prompts.len(), 1);
    assert_eq!(prompts.prompts[0].server, "docs");
    let missing = router.get_prompt("docs", "nope", None).await.expect_err("unknown prompt");
    assert_eq!(missing.to_string(), "MCP error -32602: Unknown prompt: nope");
    let values = router.complete_prompt_argument("docs", "review", "pr", "a").await;
    assert_eq!(values.expect("completes").values, ["alpha"]);
}

#[tokio::test]
async fn an_app_calls_only_the_tools_its_app_may_call() {
    let backend = FakeBackend::with(vec![("docs", rich())]);
    let router = ToolRouter::with_mcp_settings(backend, &settings()).expect("router");
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".into(), json!("hi"));
    let result = router.call_app_tool("docs", "echo", Some(arguments)).await.expect("allowed");
    assert_eq!(result.content, vec![ContentBlock::text("Echo: hi")]);
    let refused = router.call_app_tool("docs", "fail", None).await.expect_err("not the app's");
    assert!(refused.to_string().contains("is not one its app may call"), "{refused}");
}

#[tokio::test]
async fn await_mcp_task_collects_a_backgrounded_result_once() {
    let done = CallToolResult::success(vec![ContentBlock::text("built")]);
    let backend = FakeBackend::backgrounding(vec![("docs", rich())], vec![("docs", "t1", done)]);
    let router = ToolRouter::with_mcp_settings(backend, &settings()).expect("router");
    assert!(names(&router).await.contains(&"await_mcp_task".to_string()));
    match call(&router, "await_mcp_task", json!({"task": "t1"})).await {
        ToolOutput::Mcp { result: Ok(result) } => {
            assert_eq!(result.content, vec![ContentBlock::text("built")]);
        }
        other => panic!("{other:?}"),
    }
    let again = call(&router, "await_mcp_task", json!({"task": "t1"})).await;
    assert!(text(&again).contains("no such task runs in the background"), "{again:?}");
}

#[tokio::test]
async fn a_backend_with_the_core_only_offers_no_optional_tool_and_says_so_to_the_host() {
    let backend = FakeBackend::core_only(vec![("docs", rich())]);
    let router = ToolRouter::with_mcp_settings(backend, &settings()).expect("router");
    let offered = names(&router).await;
    for absent in ["get_mcp_prompt", "load_mcp_skill", "list_mcp_skills", "await_mcp_task"] {
        assert!(!offered.contains(&absent.to_string()), "{absent} offered: {offered:?}");
    }
    assert!(offered.contains(&"read_mcp_resource".to_string()), "{offered:?}");
    assert!(router.prompts().await.prompts.is_empty());
    assert!(router.skills().await.skills.is_empty());
    let error = router.get_prompt("docs", "review", None).await.expect_err("no prompts");
    assert_eq!(
        error.to_string(),
        "MCP error -32601: prompts of MCP server 'docs' are not available in this host"
    );
    let refused = router.call_app_tool("docs", "echo", None).await.expect_err("no apps");
    assert!(refused.to_string().contains("is not one its app may call"), "{refused}");
    // A call to a tool that is not offered is the model's unknown tool.
    let output = call(&router, "get_mcp_prompt", json!({"server": "docs", "name": "review"})).await;
    assert_eq!(text(&output), "unsupported call: get_mcp_prompt");
}
