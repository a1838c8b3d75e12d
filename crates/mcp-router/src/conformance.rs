//! `mcp-router conformance-client <url>`: the client side of the official MCP conformance suite
//! (`MCP_CONFORMANCE_SCENARIO` names the scenario; the behaviour is the same for all of them).
//! It connects through the connection manager (streamable HTTP, protocol `auto`), lists the
//! tools and calls each with arguments built from its input schema (or the calls the scenario's
//! `MCP_CONFORMANCE_CONTEXT` names), answering elicitations by accepting the schema's defaults.
//! Exit code 0 when every step worked (a JSON-RPC error the server answers with is its answer,
//! printed, not a failure).
#![allow(deprecated)] // Elicitation schema types of protocol 2025-11-25.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_backend::{McpBackend, McpError, QualifiedTool};
use mcp_connection_manager::oauth::{Login, OAuthConfig, TokenStore};
use mcp_connection_manager::{HostHandler, ManagerOptions, ServerConfig, ServerStatus};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, JsonObject};
use router_protocol::EventSender;
use serde_json::{Map, Value};

/// Accepts every form elicitation with the defaults its schema declares.
struct AcceptDefaults;

#[async_trait]
impl HostHandler for AcceptDefaults {
    async fn elicit(
        &self,
        _asking: &mcp_connection_manager::Asking,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let schema = match &request {
            ElicitRequestParams::FormElicitationParams { requested_schema, .. } => {
                serde_json::to_value(requested_schema).unwrap_or_default()
            }
            _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
        };
        let content = Value::Object(defaults(&schema));
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }
}

/// `{property: default}` for every property of a JSON schema that declares one.
fn defaults(schema: &Value) -> Map<String, Value> {
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, property)| property.get("default").map(|d| (name.clone(), d.clone())))
        .collect()
}

/// Arguments for a tool: its defaults, and a small value of the right type for each required
/// property without one.
fn arguments(schema: &JsonObject) -> JsonObject {
    let schema = Value::Object(schema.clone());
    let mut out = defaults(&schema);
    let required: Vec<&str> =
        schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    for (i, name) in required.iter().enumerate() {
        if out.contains_key(*name) {
            continue;
        }
        let value = match schema["properties"][*name]["type"].as_str() {
            Some("number") | Some("integer") => Value::from(i as i64 + 1),
            Some("boolean") => Value::Bool(true),
            Some("array") => Value::Array(Vec::new()),
            Some("object") => Value::Object(Map::new()),
            _ => Value::String("test".into()),
        };
        out.insert(name.to_string(), value);
    }
    out
}

/// The tool calls a scenario asks for: the ones its context names (`toolCalls` in
/// `MCP_CONFORMANCE_CONTEXT`), or else every listed tool with arguments from its schema. A tool
/// that takes a `schema` object (`json_schema_echo`) gets the other tools' input schemas back
/// verbatim, which is how the schema-preservation scenario observes what the client kept.
fn planned_calls(context: &Value, tools: &[QualifiedTool]) -> Vec<(String, JsonObject)> {
    if let Some(calls) = context["toolCalls"].as_array() {
        return calls
            .iter()
            .filter_map(|call| {
                let name = call["name"].as_str()?.to_string();
                let arguments = call["arguments"].as_object().cloned().unwrap_or_default();
                Some((name, arguments))
            })
            .collect();
    }
    let mut calls = Vec::new();
    for tool in tools {
        let schema = &tool.tool.input_schema;
        let echoes_schemas = schema
            .get("properties")
            .and_then(|p| p.get("schema"))
            .is_some_and(|p| p["type"] == "object")
            && tool.tool.name.contains("echo");
        if echoes_schemas {
            for other in tools.iter().filter(|t| t.tool.name != tool.tool.name) {
                let schema = Value::Object(other.tool.input_schema.as_ref().clone());
                let arguments = [("schema".to_string(), schema)].into_iter().collect();
                calls.push((tool.tool.name.to_string(), arguments));
            }
        } else {
            calls.push((tool.tool.name.to_string(), arguments(schema)));
        }
    }
    calls
}

/// The redirect URI of the headless sign-in (the suite's authorization endpoint redirects to it
/// with the code; nothing listens there).
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The client ID metadata document URL the suite's CIMD scenarios expect.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Sign-ins one run may do (the first, then step-ups for more scope).
const MAX_SIGN_INS: usize = 3;
/// The environment variable `main` puts the scenario's client secret in, before any thread.
pub(crate) const SECRET_VAR: &str = "MCP_CONFORMANCE_CLIENT_SECRET";

fn oauth_config(context: &Value) -> OAuthConfig {
    let mut oauth = OAuthConfig {
        client_metadata_url: Some(CLIENT_METADATA_URL.to_string()),
        ..OAuthConfig::default()
    };
    if let Some(client_id) = context["client_id"].as_str() {
        oauth.client_id = Some(client_id.to_string());
        if context["client_secret"].is_string() {
            oauth.client_secret_env_var = Some(SECRET_VAR.to_string());
        }
        // Without an authorization endpoint to visit, a client with a secret is a machine.
        oauth.client_credentials = std::env::var("MCP_CONFORMANCE_SCENARIO")
            .is_ok_and(|s| s.starts_with("auth/client-credentials"));
    }
    oauth
}

fn start(url: &str, oauth: &OAuthConfig, store: &TokenStore) -> anyhow::Result<mcp_host::Running> {
    let mut config = ServerConfig::http("conformance", url);
    if let mcp_connection_manager::TransportConfig::StreamableHttp { oauth: o, .. } =
        &mut config.transport
    {
        *o = oauth.clone();
    }
    config.startup_timeout = Duration::from_secs(20);
    config.tool_timeout = Duration::from_secs(20);
    let mut file = router_config::ConfigFile::from_servers(vec![config]);
    file.manager = ManagerOptions::default().with(|o| o.token_store = Some(store.clone()));
    file.tool_cache = false;
    // Every scenario's server is named `conformance`, with other tools: nothing to pin.
    file.pin_tools = false;
    let assembly = mcp_host::Assembly::new(file)
        .host_handler(Arc::new(AcceptDefaults))
        .events(EventSender::discard());
    Ok(assembly.start()?)
}

/// Sign in without a browser: the suite's authorization endpoint redirects at once, so the
/// `Location` of its answer is the redirect a browser would follow.
async fn headless_login(
    url: &str,
    oauth: &OAuthConfig,
    store: &TokenStore,
    challenge: Option<&str>,
) -> anyhow::Result<()> {
    let login = Login::start("conformance", url, oauth, store, REDIRECT_URI, challenge)
        .await
        .map_err(anyhow::Error::msg)?;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
    let answer = client.get(login.authorization_url()).send().await?;
    let location = answer
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| anyhow::anyhow!("the authorization endpoint did not redirect"))?
        .to_string();
    login.finish(&location).await.map_err(anyhow::Error::msg)
}

pub(crate) async fn run(url: String) -> anyhow::Result<i32> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("mcp-router-conformance-{}", std::process::id()));
    let store = TokenStore::at(dir.join("credentials.json"));
    let oauth = oauth_config(&context);
    let result = run_with(&url, &scenario, &context, &oauth, &store).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn run_with(
    url: &str,
    scenario: &str,
    context: &Value,
    oauth: &OAuthConfig,
    store: &TokenStore,
) -> anyhow::Result<i32> {
    let mut sign_ins = 0;
    let mut running = start(url, oauth, store)?;
    running.manager.wait_until_started().await;
    // A server that wants sign-in: sign in, then connect again.
    loop {
        let error = match running.manager.status("conformance") {
            Some(ServerStatus::SignInRequired(sign_in)) if sign_ins < MAX_SIGN_INS => {
                eprintln!("conformance client ({scenario}): {}", sign_in.advice("conformance"));
                None
            }
            Some(ServerStatus::SignInRequired(sign_in)) => Some(sign_in.advice("conformance")),
            Some(ServerStatus::Failed(error)) => Some(error),
            _ => break,
        };
        if let Some(error) = error {
            eprintln!("conformance client ({scenario}): {error}");
            running.shutdown().await;
            return Ok(1);
        }
        let challenge = running.manager.auth_challenge("conformance");
        running.shutdown().await;
        sign_ins += 1;
        if let Err(e) = headless_login(url, oauth, store, challenge.as_deref()).await {
            eprintln!("conformance client ({scenario}): {e}");
            return Ok(1);
        }
        running = start(url, oauth, store)?;
        running.manager.wait_until_started().await;
    }
    let manager = running.manager.clone();
    let mut code = use_skills(&running.router, scenario).await;
    let tools = manager.list_tools().await;
    for (tool, arguments) in planned_calls(context, &tools) {
        loop {
            match manager.call_tool("conformance", &tool, Some(arguments.clone())).await {
                Ok(result) => eprintln!("{tool}: {}", serde_json::to_string(&result.content)?),
                // The server refused the call: its answer, not a failure of this client.
                Err(error @ McpError::Server { .. }) => eprintln!("{tool}: {error}"),
                // Step-up: sign in again for what the server's challenge asks, then retry,
                // a bounded number of times.
                Err(error @ McpError::SignInRequired { .. }) if sign_ins < MAX_SIGN_INS => {
                    eprintln!("{tool}: {error}");
                    sign_ins += 1;
                    let challenge = manager.auth_challenge("conformance");
                    if let Err(e) = headless_login(url, oauth, store, challenge.as_deref()).await {
                        eprintln!("{tool}: {e}");
                        code = 1;
                        break;
                    }
                    continue;
                }
                Err(error) => {
                    eprintln!("{tool}: {error}");
                    code = 1;
                }
            }
            break;
        }
    }
    running.shutdown().await;
    Ok(code)
}

/// Skills (SEP-2640) as a host uses them, through the router: list them; unless the scenario
/// is about not fetching ahead (`…-no-prefetch`), load the first and read each file its
/// manifest lists. A load or read the router refuses (a file that fails verification) is the
/// host doing its job, printed, not a failure. A server without the extension is not asked.
async fn use_skills(router: &tool_router::ToolRouter, scenario: &str) -> i32 {
    let skills = router.skills().await;
    for failure in &skills.errors {
        eprintln!("skills/list: {}", failure.error);
    }
    let Some(first) = skills.skills.first() else { return i32::from(!skills.errors.is_empty()) };
    if scenario.ends_with("no-prefetch") {
        return 0;
    }
    let ctx = tool_router::CallContext::new(EventSender::discard());
    let call = |id: &str, name: &str, arguments: Value| tool_router::ToolCall {
        call_id: id.to_string(),
        name: name.to_string(),
        arguments: tool_router::ToolArguments::Json(arguments),
    };
    let arguments = serde_json::json!({"server": first.server, "name": first.name});
    let load =
        router.dispatch_to_output(&ctx, call("load", tool_router::LOAD_MCP_SKILL, arguments));
    let text = match load.await {
        Ok(router_protocol::ToolOutput::Function { content, success: Some(true), .. }) => content,
        Ok(other) => {
            eprintln!("{}: not loaded: {}", first.name, crate::watch::output_text(&other));
            return 0;
        }
        Err(fatal) => {
            eprintln!("{}: {fatal}", first.name);
            return 1;
        }
    };
    let loaded: Value = serde_json::from_str(&text).unwrap_or_default();
    for file in loaded["files"].as_array().into_iter().flatten() {
        let Some(uri) = file["uri"].as_str() else { continue };
        let arguments = serde_json::json!({"server": first.server, "uri": uri});
        let read = call("read", tool_router::READ_MCP_RESOURCE, arguments);
        match router.dispatch_to_output(&ctx, read).await {
            Ok(output) => eprintln!("{uri}: {}", crate::watch::output_text(&output)),
            Err(fatal) => {
                eprintln!("{uri}: {fatal}");
                return 1;
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_and_arguments_from_schemas() {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string", "default": "John Doe"}, "age": {"type": "integer", "default": 30}, "x": {"type": "string"}}});
        assert_eq!(Value::Object(defaults(&schema)), json!({"name": "John Doe", "age": 30}));
        let tool: JsonObject = serde_json::from_value(json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]})).expect("object");
        assert_eq!(Value::Object(arguments(&tool)), json!({"a": 1, "b": 2}));
    }
}
