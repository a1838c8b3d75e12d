//! The smallest host: a config's servers, the specs for the model, one call, the events, and
//! the shutdown. `cargo run -p mcp-host --example minimal -- CONFIG` (the README's Embedding
//! section is this file).
use mcp_host::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = std::env::args().nth(1).ok_or("usage: minimal CONFIG")?;
    // The servers start concurrently; a call waits only for the server it needs.
    let mut running = Assembly::from_file(config.as_ref())?.start()?;
    let mut events = running.take_events().ok_or("the assembly's own event channel")?;
    // Give these to the model (`ToolFormat::OpenAi` or `ToolFormat::Anthropic`).
    let tools = running.tools(ToolFormat::OpenAi).await;
    println!("{} tools for the model", tools.len());
    // A call the model made: its id, the tool's name, its JSON arguments (text or a Value).
    let call = ToolCall {
        call_id: "call_1".into(),
        name: "list_mcp_resources".into(),
        arguments: "{}".into(),
    };
    // Every failure the model should see is a failed output; the only error is a shut-down
    // router (end the turn).
    let output = running.dispatch(call).await?;
    println!("{}", output.to_format(OutputFormat::OpenAiResponses, "call_1"));
    // Every server ends, each says `mcp_server_stopped`, and the event stream ends.
    running.shutdown().await;
    while let Some(event) = events.recv().await {
        println!("{}", mcp_host::render::describe(&event));
    }
    Ok(())
}
