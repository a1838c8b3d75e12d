//! A host approval that a model's call waits on, told as a server's request is:
//! `mcp_server_request_begin` when the host is asked, `mcp_server_request` with its answer — so a
//! UI shows the call waiting on the user (the live view's "waiting on the host: …"). The
//! methods are the router's own, not MCP's: `approval/tool_call` (a tool whose policy is `ask`),
//! `approval/skill` (loading a skill), `approval/definition` (a held definition met by a call).

use std::future::Future;

use mcp_connection::Asking;
use router_protocol::{EventMsg, EventSender, McpServerRequestBeginEvent, McpServerRequestEvent};
use serde_json::Value;

/// `ask`'s answer, with the events around it: `params` is what the host is asked about,
/// `answer` how its answer is told.
pub(crate) async fn waiting<T>(
    events: &EventSender,
    asking: &Asking,
    method: &str,
    params: Value,
    ask: impl Future<Output = T>,
    answer: impl FnOnce(&T) -> Value,
) -> T {
    events.send(EventMsg::McpServerRequestBegin(McpServerRequestBeginEvent {
        server: asking.server.clone(),
        call_id: asking.call_id.clone(),
        method: method.to_string(),
        params: params.clone(),
    }));
    let answered = ask.await;
    events.send(EventMsg::McpServerRequest(McpServerRequestEvent {
        server: asking.server.clone(),
        call_id: asking.call_id.clone(),
        method: method.to_string(),
        params,
        response: Ok(answer(&answered)),
    }));
    answered
}
