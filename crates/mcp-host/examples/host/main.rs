//! A whole host against the one crate: a config's servers started, the specs in both providers'
//! formats, one model turn, every event rendered, an elicitation and a skill approval answered,
//! each output in both providers' formats, and a shutdown that leaves no process.
//!
//! `cargo run -p mcp-host --example host` runs the config and the turn shipped beside it
//! (`examples/host/config.toml`: two demo servers the example serves itself;
//! `examples/host/turn.jsonl`). `cargo run -p mcp-host --example host -- CONFIG < TURN` runs
//! yours, TURN holding the model's calls one JSON object a line: `{"call_id": "1", "name":
//! "list_mcp_resources", "arguments": {}}`. Stdout: the specs, then for each call its output as
//! `mcp-router exec` writes it and in each provider's format (JSON lines). Stderr: the events,
//! readable.
use std::sync::Arc;

use mcp_host::prelude::*;
use mcp_host::rmcp::ErrorData;
use mcp_host::rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, Skill};
use mcp_host::{Asking, SkillApproval, events::ExecOutput, render, serde_json::json};

/// The user, as this host asks them: they give their name, and allow every skill.
struct User;

#[async_trait]
impl HostHandler for User {
    async fn elicit(
        &self,
        asking: &Asking,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = mcp_host::serde_json::to_value(&request).unwrap_or_default();
        let call = asking.call_id.as_deref().unwrap_or("no call");
        eprintln!("host: {} asks the user ({call} waits): {}", asking.server, asked["message"]);
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"})))
    }

    async fn approve_skill(&self, asking: &Asking, skill: &Skill) -> SkillApproval {
        eprintln!("host: the user allows skill {} of {}", skill.name(), asking.server);
        SkillApproval::Allow
    }
}

/// The shipped config (`SELF`: this example, which serves the demo servers) and turn.
const CONFIG: &str = include_str!("config.toml");
const TURN: &str = include_str!("turn.jsonl");

/// `host serve-demo …`: the demo server the shipped config runs.
#[derive(clap::Parser)]
struct ServeDemo {
    #[command(flatten)]
    args: demo_server::ServeArgs,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("serve-demo") {
        let demo = <ServeDemo as clap::Parser>::parse_from(&args[1..]);
        demo_server::serve(&demo.args, None, |_| {}).await?;
        return Ok(());
    }
    let (assembly, turn) = match args.get(1) {
        Some(config) => {
            let turn = std::io::read_to_string(std::io::stdin())?;
            (Assembly::from_file(config.as_ref())?, turn)
        }
        None => {
            let me = std::env::current_exe()?.to_string_lossy().to_string();
            let config = CONFIG.replace("\"SELF\"", &format!("{me:?}"));
            (Assembly::from_text(&config, ConfigFormat::CodexToml)?, TURN.to_string())
        }
    };
    let mut running = assembly.host_handler(Arc::new(User)).start()?;
    let mut events = running.take_events().ok_or("the assembly's own event channel")?;
    let ui = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            eprintln!("event  {}", render::describe(&event));
        }
    });
    for (name, format) in [("openai", ToolFormat::OpenAi), ("anthropic", ToolFormat::Anthropic)] {
        let tools = running.tools(format).await;
        println!("{}", json!({"type": "specs", "format": name, "tools": tools}));
    }
    for line in turn.lines().filter(|line| !line.trim().is_empty()) {
        let call: mcp_host::serde_json::Value = mcp_host::serde_json::from_str(line)?;
        let call_id = call["call_id"].as_str().ok_or("a call needs a call_id")?.to_string();
        let name = call["name"].as_str().ok_or("a call needs a name")?.to_string();
        let arguments = call["arguments"].clone().into();
        let call = ToolCall { call_id: call_id.clone(), name, arguments };
        let output = running.dispatch(call).await?;
        let exec =
            ExecOutput::FunctionCallOutput { call_id: call_id.clone(), output: output.clone() };
        println!("{}", mcp_host::serde_json::to_string(&exec)?);
        for format in [OutputFormat::OpenAiResponses, OutputFormat::Anthropic] {
            println!("{}", output.to_format(format, &call_id));
        }
    }
    running.shutdown().await;
    ui.await?;
    Ok(())
}
