//! The commands for a person: the same router calls as a model makes, printed readably
//! (or raw with `--json`). Exit code 1 when the call failed.

use std::path::Path;

use router_protocol::EventSender;
use serde_json::{Value, json};
use tool_router::{CallContext, ToolCall, ToolFormat, ToolOutput};

use crate::setup;

/// The specs as the model would get them. A server with a tool catalog (see
/// `mcp_connection_manager::ToolCache`) is listed from it and not started; `refresh` starts
/// every server and lists what each offers now (saving it for next time).
pub(crate) async fn tools(
    config: Option<&Path>,
    format: ToolFormat,
    refresh: bool,
) -> anyhow::Result<i32> {
    let mut config = setup::config(config)?;
    if !refresh
        && config.tool_cache
        && let Some(cache) = mcp_connection_manager::ToolCache::default_location()
    {
        for server in &mut config.servers {
            if cache.load(server).is_some() {
                server.startup = mcp_connection_manager::Startup::Lazy;
            }
        }
    }
    let running = setup::start(config, EventSender::discard())?;
    if refresh {
        running.manager.wait_until_started().await;
    }
    let specs: Vec<Value> =
        running.router.specs().await.iter().map(|s| s.to_format(format)).collect();
    println!("{}", serde_json::to_string_pretty(&specs)?);
    running.manager.shutdown().await;
    Ok(0)
}

pub(crate) async fn list(
    config: Option<&Path>,
    tool: &str,
    server: Option<String>,
    cursor: Option<String>,
    raw: bool,
) -> anyhow::Result<i32> {
    let arguments = json!({"server": server, "cursor": cursor});
    let output = one_call(config, tool, arguments.to_string()).await?;
    let items_key =
        if tool == tool_router::LIST_MCP_RESOURCES { "resources" } else { "resourceTemplates" };
    print_output(&output, raw, |payload| {
        for item in payload[items_key].as_array().into_iter().flatten() {
            let uri = item
                .get("uri")
                .or_else(|| item.get("uriTemplate"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let name = item["name"].as_str().unwrap_or("");
            let mime = item["mimeType"].as_str().unwrap_or("");
            println!("{:<12} {uri:<40} {name:<20} {mime}", item["server"].as_str().unwrap_or(""));
        }
        if let Some(next) = payload["nextCursor"].as_str() {
            println!("(more: --cursor {next})");
        }
        for error in payload["errors"].as_array().into_iter().flatten() {
            eprintln!(
                "server {} failed: {}",
                error["server"].as_str().unwrap_or(""),
                error["error"].as_str().unwrap_or("")
            );
        }
    })
}

pub(crate) async fn read(
    config: Option<&Path>,
    server: String,
    uri: String,
    raw: bool,
) -> anyhow::Result<i32> {
    let arguments = json!({"server": server, "uri": uri}).to_string();
    let output = one_call(config, tool_router::READ_MCP_RESOURCE, arguments).await?;
    print_output(&output, raw, |payload| {
        for content in payload["contents"].as_array().into_iter().flatten() {
            match (content.get("text"), content.get("blob")) {
                (Some(Value::String(text)), _) => println!("{text}"),
                (_, Some(Value::String(blob))) => println!(
                    "<binary {} of {} base64 characters>",
                    content["mimeType"].as_str().unwrap_or("blob"),
                    blob.len()
                ),
                _ => println!("{content}"),
            }
        }
    })
}

pub(crate) async fn call(
    config: Option<&Path>,
    name: String,
    arguments: String,
    raw: bool,
) -> anyhow::Result<i32> {
    let output = one_call(config, &name, arguments).await?;
    if raw {
        println!("{}", serde_json::to_string(&output)?);
    } else {
        match &output {
            ToolOutput::Mcp { result: Ok(result) } => {
                for block in &result.content {
                    match block.as_text() {
                        Some(text) => println!("{}", text.text),
                        None => println!("{}", serde_json::to_string(block)?),
                    }
                }
            }
            ToolOutput::Mcp { result: Err(message) } => eprintln!("{message}"),
            ToolOutput::Function { content, .. } => println!("{content}"),
        }
    }
    Ok(if output.is_success() { 0 } else { 1 })
}

async fn one_call(
    config: Option<&Path>,
    name: &str,
    arguments: String,
) -> anyhow::Result<ToolOutput> {
    let running = setup::start(setup::config(config)?, EventSender::discard())?;
    let ctx = CallContext::new(EventSender::discard());
    let call = ToolCall {
        call_id: "cli".to_string(),
        name: name.to_string(),
        arguments: arguments.into(),
    };
    let output = running.router.dispatch_to_output(&ctx, call).await;
    running.manager.shutdown().await;
    Ok(output?)
}

fn print_output(
    output: &ToolOutput,
    raw: bool,
    readable: impl FnOnce(&Value),
) -> anyhow::Result<i32> {
    let ToolOutput::Function { content, .. } = output else {
        println!("{}", serde_json::to_string(output)?);
        return Ok(1);
    };
    if !output.is_success() {
        eprintln!("{content}");
        return Ok(1);
    }
    match serde_json::from_str::<Value>(content) {
        Ok(payload) if !raw => readable(&payload),
        // Raw output, or a text answer such as a CSV import summary.
        _ => println!("{content}"),
    }
    Ok(0)
}
