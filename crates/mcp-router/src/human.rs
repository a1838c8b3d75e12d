//! The commands for a person: the same router calls as a model makes, printed readably
//! (or raw with `--json`). Exit codes: 0 done, 1 the call failed (or the config could not be
//! used), 2 bad command-line usage, 3 an all-server list answered but some server failed (it
//! is named in `errors` / on stderr). A command about one server (`--server S`, `read`, `call
//! mcp__S__…`) starts only that server.

use router_protocol::EventSender;
use serde_json::{Value, json};
use tool_router::{CallContext, ToolCall, ToolFormat, ToolOutput};

use crate::setup;

/// `mcp-router skills`: every server's skills, a line each (`server<TAB>name<TAB>description`),
/// then the servers that could not be listed; or the host's JSON with `--json`. Nothing of a
/// skill is fetched.
pub(crate) async fn skills(config: &crate::setup::ConfigArg, json: bool) -> anyhow::Result<i32> {
    let running = setup::start(setup::config(config)?, EventSender::discard())?;
    let skills = running.router.skills().await;
    let held = held_of(&running.manager, router_protocol::DefinitionKind::Skill);
    running.shutdown().await;
    if json {
        outln!("{}", serde_json::to_string_pretty(&skills)?);
        return Ok(0);
    }
    if skills.skills.is_empty() && held.is_empty() {
        outln!("no skills offered");
    }
    held_notes(&held, "skills", config);
    for skill in &skills.skills {
        outln!("{}\t{}\t{}", skill.server, skill.name, skill.description);
    }
    for failure in &skills.errors {
        eprintln!("mcp-router: {}: {}", failure.server, failure.error);
    }
    Ok(if skills.errors.is_empty() { 0 } else { 1 })
}

/// The specs as the model would get them. A server with a tool catalog (see
/// `mcp_connection_manager::ToolCache`) is listed from it and not started; `refresh` starts
/// every server — idle or not, tool search on or not — and lists what each offers now (saving
/// it for next time). With tool search on, a note on stderr says how many MCP tools of how many
/// servers are behind `search_mcp_tools`, and `all` lists them after the specs.
pub(crate) async fn tools(
    config_arg: &crate::setup::ConfigArg,
    format: ToolFormat,
    refresh: bool,
    all: bool,
) -> anyhow::Result<i32> {
    let mut config = setup::config(config_arg)?;
    if refresh {
        config.manager.startup.lazy_when_cataloged.clear();
        config.manager.startup.lazy_over = None;
        for server in &mut config.servers {
            server.startup = mcp_connection_manager::Startup::Eager;
        }
    }
    if !refresh
        && config.tool_cache
        && let Some(cache) = mcp_connection_manager::ToolCache::default_location()
    {
        for server in &mut config.servers {
            let Some((_, failure)) = cache.load_noted(server) else { continue };
            server.startup = mcp_connection_manager::Startup::Lazy;
            // Listed from a catalog older than the server's last failed start: say so.
            if let Some(failure) = failure {
                eprintln!(
                    "mcp-router: note: server `{}` failed to start at {} ({}); its tools are listed from the catalog saved at {} (`--refresh` starts it and checks)",
                    server.name, failure.at, failure.error, failure.saved_at
                );
            }
        }
    }
    let running = setup::start(config, EventSender::discard())?;
    if refresh {
        running.manager.wait_until_started().await;
    }
    let mut specs: Vec<Value> = running.router.tool_list(format).await;
    if running.router.revealed_tools().is_some() {
        use mcp_backend::McpBackend as _;
        let behind = running.manager.list_tools().await;
        let servers: std::collections::BTreeSet<&str> =
            behind.iter().map(|t| t.server.as_str()).collect();
        eprintln!(
            "mcp-router: note: tool search is on: {} MCP tools of {} servers are behind search_mcp_tools{}",
            behind.len(),
            servers.len(),
            if all { " (listed after the specs)" } else { " (`--all` lists them)" }
        );
        if all {
            let shown: std::collections::BTreeSet<String> =
                specs.iter().filter_map(spec_name).collect();
            let mut rest: Vec<_> =
                behind.iter().filter(|t| !shown.contains(&t.qualified_name)).collect();
            rest.sort_by(|a, b| a.qualified_name.cmp(&b.qualified_name));
            specs.extend(rest.into_iter().map(|t| {
                tool_router::ToolSpec::for_mcp_tool(&t.qualified_name, &t.tool).to_format(format)
            }));
        }
    }
    outln!("{}", serde_json::to_string_pretty(&specs)?);
    let (failed, of) = failed_servers(&running.manager);
    let held = held_of(&running.manager, router_protocol::DefinitionKind::Tool);
    let sandboxes = running.manager.sandboxes();
    running.shutdown().await;
    held_notes(&held, "tools", config_arg);
    unsandboxed_notes(&sandboxes);
    for (name, why) in &failed {
        eprintln!("mcp-router: server `{name}` failed: {why}");
    }
    // Every server failed: the list holds none of their tools, which is not a success.
    Ok(if of > 0 && failed.len() == of { 1 } else { 0 })
}

/// A note on stderr per started server the kernel could not sandbox.
fn unsandboxed_notes(sandboxes: &[(String, String)]) {
    for (name, tier) in sandboxes.iter().filter(|(_, t)| t.starts_with("none:")) {
        eprintln!("mcp-router: note: server `{name}` runs NOT sandboxed: {tier}");
    }
}

/// The held definitions of `kind`, by server.
pub(crate) fn held_of(
    manager: &mcp_connection_manager::McpConnectionManager,
    kind: router_protocol::DefinitionKind,
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut by_server: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (server, held_kind, name) in manager.held_definitions() {
        if held_kind == kind {
            by_server.entry(server).or_default().push(name);
        }
    }
    by_server
}

/// One note on stderr per server with `what` held from the model, and the command that lets
/// them in: nothing is left out of a listing without a word.
pub(crate) fn held_notes(
    held: &std::collections::BTreeMap<String, Vec<String>>,
    what: &str,
    config: &crate::setup::ConfigArg,
) {
    let approve = setup::approve_command(config);
    for (server, names) in held {
        eprintln!(
            "mcp-router: note: server `{server}` has {} {what} held from the model ({}): their definitions are not the pinned ones; `{approve} {server}` approves them",
            names.len(),
            names.join(", ")
        );
    }
}

/// The servers that failed to start (or want a sign-in), with why, and how many there are.
fn failed_servers(
    manager: &mcp_connection_manager::McpConnectionManager,
) -> (Vec<(String, String)>, usize) {
    let names = manager.server_names();
    let failed = names
        .iter()
        .filter_map(|name| match manager.status(name)? {
            mcp_connection_manager::ServerStatus::Failed(why) => Some((name.clone(), why)),
            mcp_connection_manager::ServerStatus::SignInRequired(sign_in) => {
                Some((name.clone(), sign_in.advice(name)))
            }
            _ => None,
        })
        .collect();
    (failed, names.len())
}

/// `rows` as lines of aligned columns: each column as wide as its widest cell (in
/// characters), two spaces between columns, no trailing spaces.
fn columns<const N: usize>(rows: &[[&str; N]]) -> Vec<String> {
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..N).map(width).collect();
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if i + 1 < N {
                    let pad = widths[i] - cell.chars().count() + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

/// A spec's name, in either format (OpenAI's `name` or nested `function.name`).
fn spec_name(spec: &Value) -> Option<String> {
    spec.get("name").or_else(|| spec.pointer("/function/name"))?.as_str().map(str::to_string)
}

/// `list-resources` / `list-templates`' arguments.
#[derive(clap::Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    config: crate::setup::ConfigArg,
    /// Only this server (one page).
    #[arg(long)]
    server: Option<String>,
    /// The cursor of the page to fetch (needs --server).
    #[arg(long)]
    cursor: Option<String>,
    /// Print the raw payload the model would get.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn list(args: ListArgs, tool: &str) -> anyhow::Result<i32> {
    let ListArgs { config, server, cursor, json: raw } = args;
    let config = &config;
    let arguments = json!({"server": server, "cursor": cursor});
    let output = one_call(config, tool, arguments.to_string(), server.as_deref()).await?;
    let items_key =
        if tool == tool_router::LIST_MCP_RESOURCES { "resources" } else { "resourceTemplates" };
    print_output(&output, raw, |payload| {
        let rows: Vec<[&str; 4]> = payload[items_key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| {
                let uri = item.get("uri").or_else(|| item.get("uriTemplate"));
                [
                    item["server"].as_str().unwrap_or(""),
                    uri.and_then(Value::as_str).unwrap_or(""),
                    item["name"].as_str().unwrap_or(""),
                    item["mimeType"].as_str().unwrap_or(""),
                ]
            })
            .collect();
        for line in columns(&rows) {
            outln!("{line}");
        }
        if let Some(next) = payload["nextCursor"].as_str() {
            outln!("(more: --cursor {next})");
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

/// What to read: a URI, or a template with its parameters (`k=v`).
pub(crate) enum Target {
    Uri(String),
    Template { template: String, params: Vec<String> },
}

pub(crate) async fn read(
    config: &crate::setup::ConfigArg,
    server: String,
    target: Target,
    raw: bool,
) -> anyhow::Result<i32> {
    let arguments = match target {
        Target::Uri(uri) => json!({"server": server, "uri": uri}),
        Target::Template { template, params } => {
            let mut parameters = serde_json::Map::new();
            for param in params {
                let Some((key, value)) = param.split_once('=') else {
                    anyhow::bail!("--param {param:?}: write it as NAME=VALUE");
                };
                parameters.insert(key.to_string(), Value::from(value));
            }
            json!({"server": server, "template": template, "parameters": parameters})
        }
    };
    let output =
        one_call(config, tool_router::READ_MCP_RESOURCE, arguments.to_string(), Some(&server))
            .await?;
    print_output(&output, raw, |payload| {
        for content in payload["contents"].as_array().into_iter().flatten() {
            match (content.get("text"), content.get("blob")) {
                (Some(Value::String(text)), _) => outln!("{text}"),
                (_, Some(Value::String(blob))) => outln!(
                    "<binary {} of {} base64 characters>",
                    content["mimeType"].as_str().unwrap_or("blob"),
                    blob.len()
                ),
                _ => outln!("{content}"),
            }
        }
    })
}

pub(crate) async fn call(
    config: &crate::setup::ConfigArg,
    name: String,
    arguments: String,
    raw: bool,
    format: Option<router_protocol::OutputFormat>,
) -> anyhow::Result<i32> {
    let output = one_call(config, &name, arguments, None).await?;
    if let Some(format) = format {
        outln!("{}", output.to_format(format, "cli"));
    } else if raw {
        outln!("{}", serde_json::to_string(&output)?);
    } else {
        match &output {
            ToolOutput::Mcp { result: Ok(result) } => {
                for block in &result.content {
                    match block.as_text() {
                        Some(text) => outln!("{}", text.text),
                        None => outln!("{}", serde_json::to_string(block)?),
                    }
                }
            }
            ToolOutput::Mcp { result: Err(message) } => eprintln!("mcp-router: {message}"),
            ToolOutput::Function { content, .. } if !output.is_success() => {
                eprintln!("mcp-router: {content}")
            }
            ToolOutput::Function { content, .. } => outln!("{content}"),
        }
    }
    Ok(if output.is_success() { 0 } else { 1 })
}

/// One call, with only the server it is about started: `only`, or the server an MCP tool's
/// qualified name names (the longest configured name that fits `mcp__S__`); every server for
/// an all-server list.
async fn one_call(
    config: &crate::setup::ConfigArg,
    name: &str,
    arguments: String,
    only: Option<&str>,
) -> anyhow::Result<ToolOutput> {
    let mut config = setup::config(config)?;
    let named = config
        .servers
        .iter()
        .map(|s| s.name.as_str())
        .chain(config.unusable.iter().map(|u| u.name.as_str()))
        .filter(|server| name.starts_with(&format!("mcp__{server}__")))
        .max_by_key(|server| server.len())
        .map(str::to_string);
    if let Some(server) = only.map(str::to_string).or(named) {
        config.servers.retain(|s| s.name == server);
        config.unusable.retain(|u| u.name == server);
    }
    let running = setup::start(config, EventSender::discard())?;
    let ctx = CallContext::new(EventSender::discard());
    let call = ToolCall {
        call_id: "cli".to_string(),
        name: name.to_string(),
        arguments: arguments.into(),
    };
    let output = running.router.dispatch_to_output(&ctx, call).await;
    running.shutdown().await;
    Ok(output?)
}

fn print_output(
    output: &ToolOutput,
    raw: bool,
    readable: impl FnOnce(&Value),
) -> anyhow::Result<i32> {
    let ToolOutput::Function { content, .. } = output else {
        outln!("{}", serde_json::to_string(output)?);
        return Ok(1);
    };
    if !output.is_success() {
        eprintln!("mcp-router: {content}");
        return Ok(1);
    }
    let payload = serde_json::from_str::<Value>(content);
    let partial =
        payload.as_ref().is_ok_and(|p| p["errors"].as_array().is_some_and(|e| !e.is_empty()));
    match payload {
        Ok(payload) if !raw => readable(&payload),
        // Raw output, or a text answer such as a CSV import summary.
        _ => outln!("{content}"),
    }
    Ok(if partial { 3 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let rows = [
            ["docs", "demo://a-very-long-uri/that/goes/on/and/on", "Ä name", "text/plain"],
            ["a-server-with-a-long-name", "demo://b", "b", ""],
        ];
        assert_eq!(
            columns(&rows),
            [
                "docs                       demo://a-very-long-uri/that/goes/on/and/on  Ä name  text/plain",
                "a-server-with-a-long-name  demo://b                                    b",
            ]
        );
    }
}
