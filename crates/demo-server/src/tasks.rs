//! Tools that run as tasks (the tasks extension, SEP-2663, on rmcp's `TaskManager`): the demo's
//! `job`, and with `--conformance-fixtures` the tools the conformance suite's `tasks-*`
//! scenarios call. A call that declared `io.modelcontextprotocol/tasks` (per request, or at
//! `initialize`) is answered with a `CreateTaskResult` and the work goes on behind `tasks/get`;
//! a call that did not waits for the work (a tool that needs a task answers -32021 instead).

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    CreateTaskResult, ElicitRequest, ElicitRequestParams, ElicitationSchema, InputRequest,
    InputRequiredResult, JsonObject, Tool,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskFuture, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

/// Whether a tool may, or must, run as a task.
#[derive(Clone, Copy, PartialEq)]
enum Support {
    /// A task when the caller declared the extension, the plain result otherwise.
    Optional,
    /// Only as a task: a caller that did not declare the extension gets -32021.
    Required,
}

/// The demo's task tool, listed always.
pub(crate) fn job_tool() -> Tool {
    tool(
        "job",
        "Work for `seconds` seconds (default 2), saying how far it got; runs as a task (io.modelcontextprotocol/tasks) for a client that declared the extension, otherwise answers when done. `ask: true` asks the user's name first (a task's input_required), `fail: true` ends with an isError result.",
        json!({
            "type": "object",
            "properties": {
                "seconds": {"type": "number"},
                "ask": {"type": "boolean"},
                "fail": {"type": "boolean"}
            }
        }),
    )
}

/// The conformance suite's task fixtures (`--conformance-fixtures`).
pub(crate) fn fixture_tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    vec![
        tool(
            "greet",
            "Say hello to `name` (never a task).",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        ),
        tool(
            "slow_compute",
            "Sleep `seconds` seconds, then answer (a task when the client allows).",
            json!({"type": "object", "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}}}),
        ),
        tool(
            "failing_job",
            "Fails with an isError result after a second (a task only).",
            empty.clone(),
        ),
        tool(
            "protocol_error_job",
            "Fails with a protocol error (a task when allowed).",
            empty.clone(),
        ),
        tool("confirm_delete", "Asks for a confirmation, then answers (a task).", empty.clone()),
        tool("multi_input", "Asks two questions at once, then answers (a task).", empty.clone()),
        tool(
            "test_tool_with_task",
            "Asks for `user_name` (input_required), then runs as a task (a task only).",
            empty,
        ),
    ]
}

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else { unreachable!("schemas are objects") };
    Tool::new(name, description, schema)
}

fn support(name: &str, fixtures: bool) -> Option<Support> {
    match name {
        "job" => Some(Support::Optional),
        "slow_compute" | "protocol_error_job" | "confirm_delete" | "multi_input" if fixtures => {
            Some(Support::Optional)
        }
        "failing_job" | "test_tool_with_task" if fixtures => Some(Support::Required),
        _ => None,
    }
}

/// Calls a task tool (or the fixtures' `greet`): `None` when `request` names none.
pub(crate) async fn call(
    manager: &TaskManager,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    fixtures: bool,
) -> Option<Result<CallToolResponse, ErrorData>> {
    if fixtures && request.name == "greet" {
        let args = request.arguments.as_ref();
        let name = args.and_then(|a| a.get("name")).and_then(Value::as_str).unwrap_or("world");
        return Some(Ok(text(format!("Hello, {name}!")).into()));
    }
    let support = support(&request.name, fixtures)?;
    let declared = context.client_capabilities().is_some_and(|c| c.supports_tasks());
    let args = request.arguments.clone().unwrap_or_default();
    if !declared {
        if support == Support::Required {
            let required = ClientCapabilities::builder().enable_tasks().build();
            return Some(Err(ErrorData::missing_required_client_capability(required)));
        }
        return Some(run_inline(&request.name, args).await.map(Into::into));
    }
    let user_name = request.input_responses.as_ref().and_then(|r| r.get("user_name"));
    if request.name == "test_tool_with_task" && user_name.is_none() {
        // The input comes first, by input_required rounds; the task carries the answer.
        let ask = elicitation("What is your name?", "name");
        let requests = [("user_name".to_string(), ask)].into_iter().collect();
        return Some(Ok(InputRequiredResult::new(Some(requests), None).into()));
    }
    if request.name == "slow_compute" && seconds(&args, 0.0) == 0.0 {
        // The immediate shortcut: fast enough to answer at once.
        return Some(run_inline(&request.name, args).await.map(Into::into));
    }
    let args = match user_name {
        Some(answer) => args_with(&args, "user_name", elicited(answer, "name")),
        None => args,
    };
    let name = request.name.to_string();
    let options = TaskOptions::new().with_poll_interval_ms(200).with_ttl_ms(600_000);
    let task = manager.spawn(options, move |task| -> TaskFuture {
        Box::pin(async move { run_task(&name, args, task).await })
    });
    Some(Ok(CreateTaskResult::new(task).into()))
}

fn args_with(args: &JsonObject, key: &str, value: String) -> JsonObject {
    let mut args = args.clone();
    args.insert(key.to_string(), Value::String(value));
    args
}

/// The text of an accepted elicitation's `field`, or what the user did instead.
fn elicited(answer: &Value, field: &str) -> String {
    match answer.get("content").and_then(|c| c.get(field)).and_then(Value::as_str) {
        Some(text) => text.to_string(),
        None => answer.get("action").and_then(Value::as_str).unwrap_or("no answer").to_string(),
    }
}

#[allow(clippy::expect_used, reason = "a schema of one required string is always valid")]
fn elicitation(message: &str, field: &str) -> InputRequest {
    let schema = ElicitationSchema::builder()
        .required_string(field)
        .build()
        .expect("a schema of one required string is valid");
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_string(),
        requested_schema: schema,
    };
    InputRequest::Elicitation(ElicitRequest::new(params))
}

fn seconds(args: &JsonObject, default: f64) -> f64 {
    args.get("seconds").and_then(Value::as_f64).unwrap_or(default).clamp(0.0, 3600.0)
}

fn flag(args: &JsonObject, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

fn failed(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_string())])
}

/// A task tool called without the extension: the same work, answered when done; what would
/// need a task's input rounds is an isError result.
async fn run_inline(name: &str, args: JsonObject) -> Result<CallToolResult, ErrorData> {
    match name {
        "job" if flag(&args, "ask") => {
            Ok(failed("`ask` needs a client that declared the tasks extension"))
        }
        "job" => {
            let secs = seconds(&args, 2.0);
            tokio::time::sleep(Duration::from_secs_f64(secs)).await;
            Ok(job_result(&args, secs, None))
        }
        "slow_compute" => {
            let secs = seconds(&args, 0.0);
            tokio::time::sleep(Duration::from_secs_f64(secs)).await;
            Ok(computed(&args, secs))
        }
        "protocol_error_job" => Err(ErrorData::internal_error("the job broke", None)),
        _ => Ok(failed(&format!("`{name}` needs a client that declared the tasks extension"))),
    }
}

fn job_result(args: &JsonObject, secs: f64, name: Option<String>) -> CallToolResult {
    if flag(args, "fail") {
        return failed(&format!("the job failed after {secs} s"));
    }
    match name {
        Some(name) => text(format!("job done after {secs} s, for {name}")),
        None => text(format!("job done after {secs} s")),
    }
}

fn computed(args: &JsonObject, secs: f64) -> CallToolResult {
    let label = args.get("label").and_then(Value::as_str).unwrap_or("compute");
    text(format!("{label}: done after {secs} s"))
}

/// Sleeps `secs`, saying how far it got once a second; ends at once on `tasks/cancel`.
async fn work(task: &TaskContext, secs: f64) -> Result<(), TaskExit> {
    let total = Duration::from_secs_f64(secs);
    let started = tokio::time::Instant::now();
    loop {
        let left = total.saturating_sub(started.elapsed());
        if left.is_zero() {
            task.set_status_message(format!("{secs} of {secs} s"));
            return Ok(());
        }
        task.set_status_message(format!(
            "{:.0} of {secs} s",
            started.elapsed().as_secs_f64().floor()
        ));
        tokio::select! {
            _ = task.cancelled() => return Err(TaskExit::Cancelled),
            _ = tokio::time::sleep(left.min(Duration::from_secs(1))) => {}
        }
    }
}

async fn run_task(
    name: &str,
    args: JsonObject,
    task: TaskContext,
) -> Result<CallToolResult, TaskExit> {
    match name {
        "job" => {
            let asked = if flag(&args, "ask") {
                let answer = task.request_input("name", elicitation("What is your name?", "name"));
                Some(elicited(&answer.await?, "name"))
            } else {
                None
            };
            let secs = seconds(&args, 2.0);
            work(&task, secs).await?;
            Ok(job_result(&args, secs, asked))
        }
        "slow_compute" => {
            let secs = seconds(&args, 0.0);
            work(&task, secs).await?;
            Ok(computed(&args, secs))
        }
        "failing_job" => {
            work(&task, 1.0).await?;
            Ok(failed("failing_job failed, as it always does"))
        }
        "protocol_error_job" => {
            Err(TaskExit::Error(ErrorData::internal_error("the job broke", None)))
        }
        "confirm_delete" => {
            let answer =
                task.request_input("confirm", elicitation("Delete it?", "confirm")).await?;
            Ok(text(format!("confirm_delete: {}", elicited(&answer, "confirm"))))
        }
        "multi_input" => {
            let first = task.request_input("first", elicitation("First question?", "answer"));
            let second = task.request_input("second", elicitation("Second question?", "answer"));
            let (first, second) = tokio::try_join!(first, second)?;
            let (first, second) = (elicited(&first, "answer"), elicited(&second, "answer"));
            Ok(text(format!("multi_input: {first}, {second}")))
        }
        "test_tool_with_task" => {
            let name = args.get("user_name").and_then(Value::as_str).unwrap_or_default();
            work(&task, 0.5).await?;
            Ok(text(format!("Hello, {name}! (from a task)")))
        }
        other => Ok(failed(&format!("`{other}` is not a task tool"))),
    }
}
