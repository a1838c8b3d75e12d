//! Server-to-client requests reach the embedding application through `HostHandler`, with safe
//! defaults, and appear as `mcp_server_request` events.
#![allow(deprecated)] // Roots are deprecated in rmcp's 2026 API, current in protocol 2025-11-25.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_connection_manager::{Asking, HostHandler, ManagerOptions};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ListRootsResult, Root};
use router_protocol::EventMsg;
use serde_json::json;

use crate::support::{Harness, demo, mcp_text};

fn requests(events: &[EventMsg]) -> Vec<(String, String, serde_json::Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            EventMsg::McpServerRequest(r) => {
                Some((r.server.clone(), r.method.clone(), r.response.clone().unwrap_or_default()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_default_host_declines_and_lists_no_roots() {
    let mut h = Harness::start(vec![demo("d", 100)]);
    assert_eq!(mcp_text(&h.call("mcp__d__ask", "{}").await), "decline");
    assert_eq!(mcp_text(&h.call("mcp__d__roots", "{}").await), "0 roots: ");
    let seen = requests(&h.drain());
    assert_eq!(
        seen,
        [
            ("d".to_string(), "elicitation/create".to_string(), json!({"action": "decline"})),
            ("d".to_string(), "roots/list".to_string(), json!({"roots": []})),
        ]
    );
    h.manager.shutdown().await;
}

/// A host that answers with what the user would have typed.
struct Answering;

#[async_trait]
impl HostHandler for Answering {
    async fn elicit(
        &self,
        asking: &Asking,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        assert_eq!(asking.server, "d");
        assert!(matches!(request, ElicitRequestParams::FormElicitationParams { .. }));
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"})))
    }

    async fn list_roots(&self, _asking: &Asking) -> Result<ListRootsResult, rmcp::ErrorData> {
        Ok(ListRootsResult::new(vec![Root::new("file:///work")]))
    }
}

#[tokio::test]
async fn a_host_handler_answers_elicitation_and_roots() {
    let mut h = Harness::start_with_host(
        vec![demo("d", 100)],
        ManagerOptions::default(),
        Arc::new(Answering),
    );
    assert_eq!(mcp_text(&h.call("mcp__d__ask", "{}").await), "accepted: {\"name\":\"Ada\"}");
    assert_eq!(mcp_text(&h.call("mcp__d__roots", "{}").await), "1 roots: file:///work");
    let seen = requests(&h.drain());
    assert_eq!(seen[0].2, json!({"action": "accept", "content": {"name": "Ada"}}));
    h.manager.shutdown().await;
}

/// A host that checks it is told which call waits, then answers.
struct Named;

#[async_trait]
impl HostHandler for Named {
    async fn elicit(
        &self,
        asking: &Asking,
        _request: ElicitRequestParams,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let content = json!({"name": asking.call_id.clone().unwrap_or_else(|| "?".into())});
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }
}

#[tokio::test]
async fn the_host_is_told_which_call_waits_and_the_events_bracket_the_wait_in_both_eras() {
    for (era, protocol) in [
        ("2026-07-28", mcp_connection_manager::ProtocolChoice::Modern),
        ("2025-11-25", mcp_connection_manager::ProtocolChoice::Legacy),
    ] {
        let mut server = demo("d", 100);
        server.protocol = protocol;
        let mut h =
            Harness::start_with_host(vec![server], ManagerOptions::default(), Arc::new(Named));
        // The host learned the call's id (the demo echoes the name it was given).
        let text = mcp_text(&h.call("mcp__d__ask", "{}").await);
        assert_eq!(text, "accepted: {\"name\":\"mcp__d__ask-call\"}", "{era}");
        let events = h.drain();
        let begin = events.iter().position(|e| {
            matches!(e, EventMsg::McpServerRequestBegin(b)
                if b.call_id.as_deref() == Some("mcp__d__ask-call") && b.method == "elicitation/create")
        });
        let answered = events.iter().position(|e| {
            matches!(e, EventMsg::McpServerRequest(r)
                if r.call_id.as_deref() == Some("mcp__d__ask-call") && r.response.is_ok())
        });
        let end = events.iter().position(|e| matches!(e, EventMsg::McpToolCallEnd(_)));
        match (begin, answered, end) {
            (Some(b), Some(a), Some(e)) => assert!(b < a && a < e, "{era}: {events:#?}"),
            _ => panic!("{era}: no bracketed wait in {events:#?}"),
        }
        h.manager.shutdown().await;
    }
}

/// A host whose events go to a callback (`EventSender::inline`), through the front door as a
/// host starts it: every event reaches it on the thread that emitted it, before the call
/// returns — begin, the progress the server sent, end, in that order — with no consumer task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_events_arrive_in_order_before_the_call_returns() {
    use std::sync::Mutex;

    use mcp_host::{Assembly, ConfigFile, EventSender, ToolCall};

    type Seen = Vec<(EventMsg, std::thread::ThreadId)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let into = seen.clone();
    let events = EventSender::inline(move |event| {
        into.lock().expect("lock").push((event, std::thread::current().id()));
    });
    let config = ConfigFile::from_servers(vec![crate::support::demo("d", 100)]);
    let mut running = Assembly::new(config).events(events).start().expect("started");
    assert!(running.take_events().is_none(), "the host's own sink, no channel");
    running.manager.wait_until_started().await;
    let ctx = running.call_context();
    let call = |id: &str, name: &str, arguments: &str| ToolCall {
        call_id: id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string().into(),
    };
    let progress = call("p1", "mcp__d__progress", r#"{"steps": 3, "ms": 5}"#);
    let read = call("r1", "list_mcp_resources", r#"{"server": "d"}"#);
    for c in [progress, read] {
        let id = c.call_id.clone();
        // The call runs on this task's thread up to its first wait; the answer may be taken
        // on another worker. What counts: every event is there when the call returns.
        let output = running.router.dispatch_to_output(&ctx, c).await.expect("output");
        assert!(output.is_success(), "{id}: {output:?}");
        let kinds: Vec<String> = seen
            .lock()
            .expect("lock")
            .iter()
            .filter_map(|(e, _)| match e {
                EventMsg::McpToolCallBegin(b) if b.call_id == id => Some("begin".into()),
                EventMsg::McpToolCallProgress(p) if p.call_id == id => {
                    Some(format!("progress {}", p.progress))
                }
                EventMsg::McpToolCallEnd(end) if end.call_id == id => Some("end".into()),
                _ => None,
            })
            .collect();
        assert_eq!(kinds.first().map(String::as_str), Some("begin"), "{id}: {kinds:?}");
        assert_eq!(kinds.last().map(String::as_str), Some("end"), "{id}: {kinds:?}");
        if id == "p1" {
            // Progress may be thinned per interval; the last report is never held back.
            assert!(kinds.contains(&"progress 3".to_string()), "{kinds:?}");
        } else {
            assert_eq!(kinds.len(), 2, "{kinds:?}");
        }
    }
    // The begin events ran on the calling task's thread (where `dispatch` emitted them).
    let here = std::thread::current().id();
    let begins_here = seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|(e, thread)| matches!(e, EventMsg::McpToolCallBegin(_)) && *thread == here)
        .count();
    assert_eq!(begins_here, 2);
    running.shutdown().await;
    let stopped = seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|(e, _)| matches!(e, EventMsg::McpServerStopped(s) if s.server == "d"))
        .count();
    assert_eq!(stopped, 1, "the shutdown's last event reached the callback");
}
