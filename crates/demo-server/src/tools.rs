//! The demo's tools: `add`, `echo`, `ask` (elicitation), `roots`, `fail`, `sleep`, and the fault
//! tools `crash`, `garbage` and `huge` for recovery tests.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::{Value, json};

use crate::ProcessFaults;

/// The demo's tools, in listing order.
pub(crate) fn tools() -> Vec<Tool> {
    let schema = |v: Value| -> JsonObject {
        match v {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    };
    vec![
        Tool::new(
            "add",
            "Add two numbers.",
            schema(json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            })),
        ),
        Tool::new(
            "echo",
            "Echo the text back.",
            schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            })),
        ),
        Tool::new(
            "ask",
            "Ask the user for their name (an elicitation request to the client).",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "roots",
            "List the client's roots (a roots/list request to the client).",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "crash",
            "Exit the server process at once, without answering (for recovery tests).",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "garbage",
            "Write a line that is not JSON-RPC to stdout, then answer (for fault tests).",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "huge",
            "Answer with `mb` megabytes of text (for fault tests).",
            schema(
                json!({"type": "object", "properties": {"mb": {"type": "integer"}}, "required": ["mb"]}),
            ),
        ),
        Tool::new(
            "fail",
            "Always fails with an isError result.",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "sleep",
            "Sleep for `ms` milliseconds, then answer.",
            schema(json!({
                "type": "object",
                "properties": {"ms": {"type": "integer"}},
                "required": ["ms"]
            })),
        ),
    ]
}

fn number(args: &JsonObject, key: &str) -> Result<f64, ErrorData> {
    args.get(key).and_then(Value::as_f64).ok_or_else(|| {
        ErrorData::invalid_params(format!("argument `{key}` must be a number"), None)
    })
}

/// The client's root URIs (`roots/list` is deprecated in rmcp's 2026 API, current in 2025-11-25).
#[allow(deprecated)]
async fn root_uris(peer: &Peer<RoleServer>) -> Result<Vec<String>, rmcp::ServiceError> {
    Ok(peer.list_roots().await?.roots.into_iter().map(|r| r.uri).collect())
}

/// `ask`: an elicitation request for the user's name, and what came back.
async fn ask(peer: &Peer<RoleServer>) -> Result<CallToolResult, ErrorData> {
    let client_error =
        |e: rmcp::ServiceError| ErrorData::internal_error(format!("the client failed: {e}"), None);

    let schema = rmcp::model::ElicitationSchema::builder()
        .required_string("name")
        .build()
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let request = rmcp::model::ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "What is your name?".to_string(),
        requested_schema: schema,
    };
    let answer = peer.create_elicitation(request).await.map_err(client_error)?;
    let text = match (answer.action, answer.content) {
        (rmcp::model::ElicitationAction::Accept, Some(content)) => {
            format!("accepted: {content}")
        }
        (action, _) => format!("{action:?}").to_lowercase(),
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

/// Run one tool. `crash` and `garbage` act on the process, through `faults`; without them (a
/// server embedded in another program) they answer with an error result.
pub(crate) async fn call(
    params: CallToolRequestParams,
    peer: Peer<RoleServer>,
    faults: Option<&dyn ProcessFaults>,
) -> Result<CallToolResult, ErrorData> {
    let args = params.arguments.unwrap_or_default();
    let client_error =
        |e: rmcp::ServiceError| ErrorData::internal_error(format!("the client failed: {e}"), None);
    match params.name.as_ref() {
        "ask" => ask(&peer).await,
        "roots" => {
            let uris = root_uris(&peer).await.map_err(client_error)?;
            let text = format!("{} roots: {}", uris.len(), uris.join(", "));
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
        }
        "echo" => {
            let text = args.get("text").and_then(Value::as_str).ok_or_else(|| {
                ErrorData::invalid_params("argument `text` must be a string", None)
            })?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!("Echo: {text}"))]))
        }
        "add" => {
            let sum = number(&args, "a")? + number(&args, "b")?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!("{sum}"))]))
        }
        "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("this tool always fails")])),
        "crash" | "garbage" => {
            let Some(faults) = faults else {
                let text = format!("`{}` needs a process of its own", params.name);
                return Ok(CallToolResult::error(vec![ContentBlock::text(text)]));
            };
            if params.name == "crash" {
                faults.crash();
            }
            faults.write_garbage();
            Ok(CallToolResult::success(vec![ContentBlock::text("wrote garbage")]))
        }
        "huge" => {
            let mb = number(&args, "mb")?.clamp(0.0, 100.0) as usize;
            Ok(CallToolResult::success(vec![ContentBlock::text("x".repeat(mb * 1024 * 1024))]))
        }
        "sleep" => {
            let ms = number(&args, "ms")?.clamp(0.0, 600_000.0);
            tokio::time::sleep(Duration::from_millis(ms as u64)).await;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!("slept {ms} ms"))]))
        }
        other => {
            Ok(CallToolResult::error(vec![ContentBlock::text(format!("unknown tool: {other}"))]))
        }
    }
}
