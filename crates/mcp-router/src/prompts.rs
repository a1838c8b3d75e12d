//! `mcp-router prompts` and `mcp-router prompt`: the servers' prompts, as a host lists them for
//! slash commands, and one prompt's messages. Only the servers' own words are printed.

use router_protocol::EventSender;

use crate::setup;

/// `mcp-router prompts`: a line per prompt (`server<TAB>name<TAB>arguments<TAB>description`,
/// required arguments marked `*`), or the host's JSON with `--json`; exit 1 when a server's
/// prompts could not be listed (named on stderr).
pub(crate) async fn list(config: &setup::ConfigArg, json: bool) -> anyhow::Result<i32> {
    let running = setup::start(setup::config(config)?, EventSender::discard())?;
    let prompts = running.router.prompts().await;
    let held = crate::human::held_of(&running.manager, router_protocol::DefinitionKind::Prompt);
    running.shutdown().await;
    if json {
        outln!("{}", serde_json::to_string_pretty(&prompts)?);
        return Ok(i32::from(!prompts.errors.is_empty()));
    }
    if prompts.prompts.is_empty() && held.is_empty() {
        outln!("no prompts offered");
    }
    crate::human::held_notes(&held, "prompts", config);
    for p in &prompts.prompts {
        let arguments: Vec<String> = p
            .prompt
            .arguments
            .iter()
            .flatten()
            .map(|a| format!("{}{}", a.name, if a.required == Some(true) { "*" } else { "" }))
            .collect();
        let description = p.prompt.description.as_deref().unwrap_or("");
        outln!("{}\t{}\t{}\t{description}", p.server, p.prompt.name, arguments.join(" "));
    }
    for failure in &prompts.errors {
        eprintln!("mcp-router: {}: {}", failure.server, failure.error);
    }
    Ok(i32::from(!prompts.errors.is_empty()))
}

/// `mcp-router prompt --server S NAME [--arg K=V]…`: the prompt's messages as JSON.
pub(crate) async fn get(
    config: &setup::ConfigArg,
    server: &str,
    name: &str,
    args: &[String],
) -> anyhow::Result<i32> {
    let mut arguments = serde_json::Map::new();
    for arg in args {
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--arg takes NAME=VALUE, got `{arg}`"))?;
        arguments.insert(key.to_string(), serde_json::Value::String(value.to_string()));
    }
    let mut config = setup::config(config)?;
    // Only the server asked is started.
    for other in config.servers.iter_mut().filter(|s| s.name != server) {
        other.startup = mcp_connection_manager::Startup::Lazy;
    }
    let running = setup::start(config, EventSender::discard())?;
    let arguments = (!arguments.is_empty()).then_some(arguments);
    let result = running.router.get_prompt(server, name, arguments).await;
    running.shutdown().await;
    match result {
        Ok(result) => {
            outln!("{}", serde_json::to_string_pretty(&result)?);
            Ok(0)
        }
        Err(e) => {
            eprintln!("mcp-router: prompts/get failed: {e}");
            Ok(1)
        }
    }
}
