//! The handlers, one per file, each with its specs and tests beside it; and the begin/end event
//! bracket they share.

pub(crate) mod args;
pub(crate) mod data;
pub(crate) mod mcp;
pub(crate) mod mcp_completion;
pub(crate) mod mcp_resource;

use std::future::Future;
use std::time::Instant;

use rmcp::model::CallToolResult;
use router_protocol::{
    EventMsg, McpInvocation, McpToolCallBeginEvent, McpToolCallEndEvent, ResourceCallSummary,
};

use crate::invocation::CallContext;

/// Emit `mcp_tool_call_begin`, run `work`, emit `mcp_tool_call_end` with its duration, result and
/// summary. Every begin gets exactly one end, whatever `work` returns.
pub(crate) async fn bracket<T, E, F>(
    ctx: &CallContext,
    call_id: &str,
    invocation: McpInvocation,
    work: F,
    to_event: impl FnOnce(
        &Result<T, E>,
    ) -> (Result<CallToolResult, String>, Option<ResourceCallSummary>),
) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    if !ctx.has_listener() {
        // Nobody listens: skip building the events (the end event copies the whole payload).
        return work.await;
    }
    ctx.emit(EventMsg::McpToolCallBegin(McpToolCallBeginEvent {
        call_id: call_id.to_string(),
        invocation: invocation.clone(),
    }));
    let started = Instant::now();
    let outcome = work.await;
    let duration = started.elapsed();
    let (result, summary) = to_event(&outcome);
    ctx.emit(EventMsg::McpToolCallEnd(Box::new(McpToolCallEndEvent {
        call_id: call_id.to_string(),
        invocation,
        duration,
        result,
        summary,
    })));
    outcome
}
