//! The demo's tools: `add`, `echo`, `ask` (elicitation), `roots`, `fail`, `sleep`, the fault
//! tools `crash`, `garbage` and `huge` for recovery tests, and `panel_refresh`, an MCP App's
//! own tool (`_meta.ui.visibility: ["app"]`) that the router keeps from the model.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequiredResult,
    JsonObject, Tool,
};
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::{Value, json};

use crate::options::ProcessFaults;

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
            "Ask the user for their name (an elicitation: a request to the client in protocol 2025-11-25, an input_required answer in 2026-07-28), `times` times (default 1).",
            schema(json!({"type": "object", "properties": {"times": {"type": "integer"}}})),
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
            "add_tool",
            "Add a tool named `name` to this server's list (or remove it with `remove: true`); clients are told the list changed (`repeat` times).",
            schema(json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "remove": {"type": "boolean"}, "repeat": {"type": "integer"}},
                "required": ["name"]
            })),
        ),
        Tool::new(
            "progress",
            "Report progress `steps` times, `ms` apart (notifications/progress, when the call carries a progressToken), then answer.",
            schema(json!({
                "type": "object",
                "properties": {"steps": {"type": "integer"}, "ms": {"type": "integer"}}
            })),
        ),
        Tool::new(
            "touch",
            "Tell clients watching `uri` that it changed (notifications/resources/updated).",
            schema(json!({
                "type": "object",
                "properties": {"uri": {"type": "string"}},
                "required": ["uri"]
            })),
        ),
        Tool::new(
            "add_note",
            "Add a resource `demo://added/{id}` holding `text`; clients are told the resource list changed.",
            schema(json!({
                "type": "object",
                "properties": {"id": {"type": "string"}, "text": {"type": "string"}},
                "required": ["id", "text"]
            })),
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
        // An MCP App's own tool (`_meta.ui.visibility: ["app"]`): for the app, never the model.
        Tool::new(
            "panel_refresh",
            "Refresh the demo panel (called by its app, not by the model).",
            schema(json!({"type": "object", "properties": {}})),
        )
        .with_meta(rmcp::model::MetaObject(schema(json!({
            "ui": {"resourceUri": "ui://demo/panel.html", "visibility": ["app"]}
        })))),
    ]
}

fn number(args: &JsonObject, key: &str) -> Result<f64, ErrorData> {
    args.get(key).and_then(Value::as_f64).ok_or_else(|| {
        ErrorData::invalid_params(format!("argument `{key}` must be a number"), None)
    })
}

/// A tool added at run time by `add_tool`: it answers with its name and arguments.
pub(crate) fn added_tool(name: &str) -> Tool {
    let schema = match json!({"type": "object", "properties": {}}) {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(name.to_string(), "A tool added at run time (answers with its arguments).", schema)
}

/// How a tool call asks the client for something: by a server-to-client request (protocol
/// 2025-11-25), or by answering `input_required` and reading the retry's `inputResponses`
/// (2026-07-28).
pub(crate) struct Asking {
    pub(crate) peer: Peer<RoleServer>,
    /// `true` when the request came in protocol 2026-07-28 or later.
    pub(crate) modern: bool,
    pub(crate) input_responses: Option<rmcp::model::InputResponses>,
    pub(crate) request_state: Option<String>,
}

fn client_error(e: rmcp::ServiceError) -> ErrorData {
    ErrorData::internal_error(format!("the client failed: {e}"), None)
}

fn name_request() -> Result<rmcp::model::ElicitRequestParams, ErrorData> {
    let schema = rmcp::model::ElicitationSchema::builder()
        .required_string("name")
        .build()
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    Ok(rmcp::model::ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "What is your name?".to_string(),
        requested_schema: schema,
    })
}

fn describe(answer: rmcp::model::ElicitResult) -> String {
    match (answer.action, answer.content) {
        (rmcp::model::ElicitationAction::Accept, Some(content)) => format!("accepted: {content}"),
        (action, _) => format!("{action:?}").to_lowercase(),
    }
}

/// The answer to input request `key` of the previous round, if the client sent one.
fn input_response<T: serde::de::DeserializeOwned>(
    asking: &Asking,
    key: &str,
) -> Result<Option<T>, ErrorData> {
    let Some(value) = asking.input_responses.as_ref().and_then(|r| r.get(key)) else {
        return Ok(None);
    };
    serde_json::from_value(value.clone())
        .map(Some)
        .map_err(|e| ErrorData::invalid_params(format!("inputResponses.{key}: {e}"), None))
}

/// `ask`: an elicitation for the user's name, `times` times; what came back the last time.
async fn ask(asking: &Asking, times: u64) -> Result<CallToolResponse, ErrorData> {
    if !asking.modern {
        let mut last = None;
        for _ in 0..times.max(1) {
            last =
                Some(asking.peer.create_elicitation(name_request()?).await.map_err(client_error)?);
        }
        let text = last.map(describe).unwrap_or_default();
        return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
    }
    // The request state counts the answers so far.
    let answered: u64 = match &asking.request_state {
        None => 0,
        Some(state) => state.parse().map_err(|_| {
            ErrorData::invalid_params(
                format!("requestState `{state}` was not sent by this server"),
                None,
            )
        })?,
    };
    let answer = input_response::<rmcp::model::ElicitResult>(asking, "name")?;
    let answered = answered + u64::from(answer.is_some());
    match answer {
        Some(answer) if answered >= times.max(1) => {
            Ok(CallToolResult::success(vec![ContentBlock::text(describe(answer))]).into())
        }
        _ => {
            let request = rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(
                name_request()?,
            ));
            let requests = [("name".to_string(), request)].into_iter().collect();
            Ok(InputRequiredResult::new(Some(requests), Some(answered.to_string())).into())
        }
    }
}

/// `roots`: the client's root URIs (`roots/list` is deprecated in rmcp's 2026 API, current in
/// 2025-11-25; in 2026-07-28 it is an input request).
#[allow(deprecated)]
async fn roots(asking: &Asking) -> Result<CallToolResponse, ErrorData> {
    let listed = if asking.modern {
        match input_response::<rmcp::model::ListRootsResult>(asking, "roots")? {
            Some(listed) => listed,
            None => {
                let request = rmcp::model::InputRequest::ListRoots(rmcp::model::ListRootsRequest {
                    method: Default::default(),
                    extensions: Default::default(),
                });
                let requests = [("roots".to_string(), request)].into_iter().collect();
                return Ok(InputRequiredResult::new(Some(requests), None).into());
            }
        }
    } else {
        asking.peer.list_roots().await.map_err(client_error)?
    };
    let uris: Vec<String> = listed.roots.into_iter().map(|r| r.uri).collect();
    let text = format!("{} roots: {}", uris.len(), uris.join(", "));
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

/// Run one tool. `crash` and `garbage` act on the process, through `faults`; without them (a
/// server embedded in another program) they answer with an error result.
pub(crate) async fn call(
    params: CallToolRequestParams,
    asking: Asking,
    faults: Option<&dyn ProcessFaults>,
) -> Result<CallToolResponse, ErrorData> {
    let args = params.arguments.clone().unwrap_or_default();
    match params.name.as_ref() {
        "ask" => {
            let times = args.get("times").and_then(Value::as_u64).unwrap_or(1);
            ask(&asking, times).await
        }
        "roots" => roots(&asking).await,
        _ => plain(params, args, faults).await.map(Into::into),
    }
}

async fn plain(
    params: CallToolRequestParams,
    args: JsonObject,
    faults: Option<&dyn ProcessFaults>,
) -> Result<CallToolResult, ErrorData> {
    match params.name.as_ref() {
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
        "panel_refresh" => Ok(CallToolResult::success(vec![ContentBlock::text("panel refreshed")])),
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
