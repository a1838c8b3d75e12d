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
    async fn elicit(&self, asking: &Asking, request: ElicitRequestParams) -> ElicitResult {
        assert_eq!(asking.server, "d");
        assert!(matches!(request, ElicitRequestParams::FormElicitationParams { .. }));
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"}))
    }

    async fn list_roots(&self, _asking: &Asking) -> ListRootsResult {
        ListRootsResult::new(vec![Root::new("file:///work")])
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
    async fn elicit(&self, asking: &Asking, _request: ElicitRequestParams) -> ElicitResult {
        let content = json!({"name": asking.call_id.clone().unwrap_or_else(|| "?".into())});
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
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
