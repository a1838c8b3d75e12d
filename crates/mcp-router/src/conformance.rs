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
use mcp_connection_manager::{
    HostHandler, ManagerOptions, McpConnectionManager, McpError, QualifiedTool, ServerConfig,
};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, JsonObject};
use router_protocol::EventSender;
use serde_json::{Map, Value};

/// Accepts every form elicitation with the defaults its schema declares.
struct AcceptDefaults;

#[async_trait]
impl HostHandler for AcceptDefaults {
    async fn elicit(&self, _server: &str, request: ElicitRequestParams) -> ElicitResult {
        let schema = match &request {
            ElicitRequestParams::FormElicitationParams { requested_schema, .. } => {
                serde_json::to_value(requested_schema).unwrap_or_default()
            }
            _ => return ElicitResult::new(ElicitationAction::Decline),
        };
        ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(defaults(&schema)))
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

pub(crate) async fn run(url: String) -> anyhow::Result<i32> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let mut config = ServerConfig::http("conformance", url);
    config.startup_timeout = Duration::from_secs(20);
    config.tool_timeout = Duration::from_secs(20);
    let manager = McpConnectionManager::start_with_host(
        vec![config],
        EventSender::discard(),
        ManagerOptions::default(),
        Arc::new(AcceptDefaults),
    );
    manager.wait_until_started().await;
    if let Some(mcp_connection_manager::ServerStatus::Failed(error)) = manager.status("conformance")
    {
        eprintln!("conformance client ({scenario}): {error}");
        return Ok(1);
    }
    let mut code = 0;
    let tools = manager.list_tools().await;
    for (tool, arguments) in planned_calls(&context, &tools) {
        match manager.call_tool("conformance", &tool, Some(arguments)).await {
            Ok(result) => eprintln!("{tool}: {}", serde_json::to_string(&result.content)?),
            // The server refused the call: its answer, not a failure of this client.
            Err(error @ McpError::Server { .. }) => eprintln!("{tool}: {error}"),
            Err(error) => {
                eprintln!("{tool}: {error}");
                code = 1;
            }
        }
    }
    manager.shutdown().await;
    Ok(code)
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
