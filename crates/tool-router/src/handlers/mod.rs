//! The handlers, one per file, each with its specs and tests beside it; and what the resource
//! and completion handlers share: the begin/end event bracket, the model's output and the end
//! event's summary built from one outcome.

pub(crate) mod args;
#[cfg(test)]
mod capabilities_tests;
pub(crate) mod completion;
#[cfg(feature = "data-sources")]
pub(crate) mod data;
#[cfg(not(feature = "data-sources"))]
#[path = "data_off.rs"]
pub(crate) mod data;
pub(crate) mod mcp;
pub(crate) mod prompt;
pub(crate) mod read;
#[cfg(test)]
mod resource_tests;
pub(crate) mod tasks;
#[cfg(test)]
mod tasks_tests;
pub(crate) mod template;

use std::future::Future;
use std::time::{Duration, Instant};

use mcp_backend::{McpBackend, McpError};
use rmcp::model::CallToolResult;
use router_protocol::{
    CallResult, EventMsg, McpInvocation, McpToolCallBeginEvent, McpToolCallEndEvent,
    ResourceCallSummary, ResourceChange, ServerFailure, SharedText,
};
use serde::Serialize;

use crate::handlers::args::respond;
use crate::invocation::{CallContext, ContentItem, FunctionCallError, ToolOutput};
use crate::results::event_bounds;

/// Emit `mcp_tool_call_begin`, run `work`, emit `mcp_tool_call_end` with its duration, result and
/// summary. Every begin gets exactly one end, whatever `work` returns. The duration is measured
/// here, once, and returned with the outcome. `to_event` shares the outcome's payload (a
/// reference count), it does not copy it.
pub(crate) async fn bracket<T, E, F>(
    ctx: &CallContext,
    call_id: String,
    invocation: McpInvocation,
    ui_resource_uri: Option<String>,
    work: F,
    to_event: impl FnOnce(&Result<T, E>) -> (Result<CallResult, String>, Option<ResourceCallSummary>),
) -> (Result<T, E>, Duration)
where
    F: Future<Output = Result<T, E>>,
{
    let started = Instant::now();
    if !ctx.has_listener() {
        // Nobody listens: skip building the events (the end event copies the whole payload).
        let outcome = work.await;
        return (outcome, ended(started));
    }
    let limit = ctx.event_payload_bytes();
    let mut invocation = invocation;
    let arguments = event_bounds::arguments(invocation.arguments.take(), limit);
    invocation.arguments = arguments.value;
    ctx.emit(EventMsg::McpToolCallBegin(McpToolCallBeginEvent {
        ui_resource_uri: ui_resource_uri.clone(),
        call_id: call_id.clone(),
        invocation: invocation.clone(),
        arguments_truncated_from: arguments.cut_from,
    }));
    let mut unended = Unended {
        ctx,
        started,
        begun: Some((call_id, invocation, ui_resource_uri, arguments.cut_from)),
    };
    let outcome = work.await;
    #[allow(clippy::expect_used, reason = "set just above, taken only here")]
    let (call_id, invocation, ui_resource_uri, _) = unended.begun.take().expect("taken once");
    let duration = ended(started);
    let (result, summary) = to_event(&outcome);
    let bounded = event_bounds::result(result, limit);
    let mut result = bounded.value;
    let result_omitted = !ctx.result_text() && result.is_ok();
    if result_omitted {
        result = result.map(|full| without_content(&full));
    }
    ctx.emit(EventMsg::McpToolCallEnd(Box::new(McpToolCallEndEvent {
        ui_resource_uri,
        call_id,
        invocation,
        duration,
        result,
        result_omitted,
        arguments_truncated_from: arguments.cut_from,
        result_truncated_from: bounded.cut_from.filter(|_| !result_omitted),
        summary,
    })));
    (outcome, duration)
}

/// An end event's result when the host asked for no result text: empty, with its error flag.
fn without_content(full: &CallResult) -> CallResult {
    let mut empty = CallToolResult::success(Vec::new());
    empty.is_error = Some(full.is_error());
    empty.result_type = None;
    CallResult::from(empty)
}

/// The time since `started`: the call's duration, as its end event and the ledger have it.
fn ended(started: Instant) -> Duration {
    let duration = started.elapsed();
    crate::ledger::ended_after(duration);
    duration
}

/// The model's call the host dropped before it finished (exec's `cancel`, a cancelled turn):
/// its end event, so every begin still gets exactly one end.
pub const CANCELLED: &str = "cancelled before it finished";

/// A begun call whose end event is not sent yet: dropped with the call, it sends the end.
struct Unended<'a> {
    ctx: &'a CallContext,
    started: Instant,
    /// The call id, the invocation, the UI resource and the arguments' cut, for the end event.
    begun: Option<(String, McpInvocation, Option<String>, Option<usize>)>,
}

impl Drop for Unended<'_> {
    fn drop(&mut self) {
        let Some((call_id, invocation, ui_resource_uri, arguments_truncated_from)) =
            self.begun.take()
        else {
            return;
        };
        self.ctx.emit(EventMsg::McpToolCallEnd(Box::new(McpToolCallEndEvent {
            ui_resource_uri,
            call_id,
            invocation,
            duration: self.started.elapsed(),
            result: Err(CANCELLED.to_string()),
            result_omitted: false,
            arguments_truncated_from,
            result_truncated_from: None,
            summary: None,
        })));
    }
}

/// What a successful resource call produced: the model's JSON text and the event summary.
pub(crate) struct Produced {
    pub(crate) content: SharedText,
    pub(crate) items: Option<Vec<ContentItem>>,
    pub(crate) summary: ResourceCallSummary,
}

/// A failed resource call: the error for the model (or the host) and the event summary.
pub(crate) struct Failed {
    pub(crate) error: FunctionCallError,
    pub(crate) summary: ResourceCallSummary,
}

/// Bracket `work` with begin/end events and turn its outcome into the model's output: the
/// one place a resource or completion call's outcome becomes an output and an end event.
pub(crate) async fn run(
    ctx: &CallContext,
    call_id: String,
    invocation: McpInvocation,
    work: impl Future<Output = Result<Produced, Failed>>,
) -> (Result<ToolOutput, FunctionCallError>, Duration) {
    let (outcome, duration) =
        bracket(ctx, call_id, invocation, None, work, |outcome| match outcome {
            Ok(p) => (Ok(CallResult::Text(p.content.clone())), Some(p.summary.clone())),
            Err(f) => (Err(f.error.to_string()), Some(f.summary.clone())),
        })
        .await;
    let output = match outcome {
        Ok(p) => Ok(ToolOutput::Function {
            content: p.content,
            content_items: p.items,
            success: Some(true),
        }),
        Err(f) => Err(f.error),
    };
    (output, duration)
}

/// A payload with an additive `"changed": [{server, uri, detected_at}]` after its own keys
/// (Codex's shapes are otherwise untouched).
#[derive(Serialize)]
struct WithChanges<'a, P: Serialize> {
    #[serde(flatten)]
    payload: &'a P,
    changed: &'a [ResourceChange],
}

/// Serialize the model's payload; `summary` goes to the end event either way. Resources read
/// earlier that changed since ride along with it (taken from the backend, each reported
/// once).
pub(crate) fn produced(
    backend: &dyn McpBackend,
    payload: &impl Serialize,
    summary: ResourceCallSummary,
) -> Result<Produced, Failed> {
    produced_by(backend, |out, changes| write_payload(out, payload, changes), summary)
}

/// [`produced`] for a payload that writes its own JSON: `write` gets the buffer and the
/// changes to add as its `changed` field.
pub(crate) fn produced_by(
    backend: &dyn McpBackend,
    write: impl FnOnce(&mut Vec<u8>, &[ResourceChange]) -> serde_json::Result<()>,
    summary: ResourceCallSummary,
) -> Result<Produced, Failed> {
    let changes = backend.take_resource_changes();
    into_produced(scratch_text(|out| write(out, &changes)), summary)
}

thread_local! {
    /// Where payloads are written before they are copied out at their size: one buffer per
    /// thread, kept between calls, so a payload costs one allocation instead of a vector grown
    /// by doubling (four or five copies for a read's).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Above this the scratch buffer is not kept after a payload: a huge list's text does not stay
/// behind on a worker thread.
const SCRATCH_KEPT: usize = 1 << 20;

/// The payload's JSON through the thread's scratch buffer, copied out at its size (past
/// `SCRATCH_KEPT`, the buffer itself is handed over).
fn scratch_text(
    write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
) -> serde_json::Result<Vec<u8>> {
    SCRATCH.with(|scratch| {
        let Ok(mut buffer) = scratch.try_borrow_mut() else {
            // Taken further up this thread's stack (it never is): a buffer of its own.
            let mut own = Vec::new();
            return write(&mut own).map(|()| own);
        };
        buffer.clear();
        let written = write(&mut buffer).map(|()| {
            if buffer.len() > SCRATCH_KEPT {
                // Not kept anyway: handed over, not copied.
                fitted(std::mem::take(&mut *buffer))
            } else {
                buffer.to_vec()
            }
        });
        if buffer.capacity() > SCRATCH_KEPT {
            *buffer = Vec::new();
        }
        written
    })
}

/// A payload's text, its buffer given back past what it holds when it is much longer (a
/// buffer sized from a guess, or grown by doubling).
pub(crate) fn fitted(mut text: Vec<u8>) -> Vec<u8> {
    if text.capacity() - text.len() > text.len() / 8 {
        text.shrink_to_fit();
    }
    text
}

/// The payload as JSON into `writer`, with `changes` as its `changed` field when there are any.
pub(crate) fn write_payload(
    writer: impl std::io::Write,
    payload: &impl Serialize,
    changes: &[ResourceChange],
) -> serde_json::Result<()> {
    if changes.is_empty() {
        serde_json::to_writer(writer, payload)
    } else {
        serde_json::to_writer(writer, &WithChanges { payload, changed: changes })
    }
}

/// A payload's JSON (or why it has none) as the model's output.
pub(crate) fn into_produced(
    text: serde_json::Result<Vec<u8>>,
    summary: ResourceCallSummary,
) -> Result<Produced, Failed> {
    let text = text.and_then(|bytes| {
        String::from_utf8(bytes).map_err(|e| serde::ser::Error::custom(e.to_string()))
    });
    match text {
        Ok(content) => Ok(Produced { content: content.into(), items: None, summary }),
        Err(e) => Err(Failed {
            error: respond(format!("failed to serialize MCP resource response: {e}")),
            summary,
        }),
    }
}

/// The summary of a call that got one page (or one answer) of `items` from one server.
pub(crate) fn one_server(items: usize) -> ResourceCallSummary {
    ResourceCallSummary { items, pages: 1, servers: 1, failed_servers: vec![] }
}

/// One server failed: the model reads `message`.
pub(crate) fn single_failure(server: &str, message: String) -> Failed {
    Failed {
        summary: ResourceCallSummary {
            items: 0,
            pages: 0,
            servers: 1,
            failed_servers: vec![ServerFailure {
                server: server.to_string(),
                error: message.clone(),
            }],
        },
        error: respond(message),
    }
}

/// A backend error of one server's request: `{what} failed: {error}` for the model, or, once the
/// backend is shut down, a fatal error for the host.
pub(crate) fn backend_failure(server: &str, what: &str, error: McpError) -> Failed {
    match error {
        McpError::ShutDown => shut_down(Some(server)),
        other => single_failure(server, format!("{what} failed: {other}")),
    }
}

/// The backend has been shut down: the host must act.
pub(crate) fn shut_down(server: Option<&str>) -> Failed {
    let message = McpError::ShutDown.to_string();
    Failed {
        summary: ResourceCallSummary {
            items: 0,
            pages: 0,
            servers: usize::from(server.is_some()),
            failed_servers: server
                .map(|s| ServerFailure { server: s.to_string(), error: message.clone() })
                .into_iter()
                .collect(),
        },
        error: FunctionCallError::Fatal(message),
    }
}

#[cfg(test)]
mod scratch_tests {
    use super::*;

    /// A payload past `SCRATCH_KEPT` is handed over (fitted) and one under it copied out; both
    /// are the payload's JSON, and a small one after a big one still is.
    #[test]
    fn payloads_big_and_small_come_out_as_their_json() {
        for length in [3 << 20, 10, 2 << 20, 0] {
            let payload = serde_json::json!({"text": "x".repeat(length)});
            let text = scratch_text(|out| write_payload(out, &payload, &[])).expect("json");
            assert_eq!(text, serde_json::to_vec(&payload).expect("json"), "{length}");
            assert!(text.capacity() - text.len() <= text.len() / 8, "{length}: fitted");
        }
    }
}
