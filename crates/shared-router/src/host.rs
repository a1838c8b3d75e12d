//! The shared router's host: a server's question goes to the session whose call asked it —
//! never to another session — and fails as an error (never a user's answer) when no one
//! session can be told to be the one asked.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use rmcp::{ErrorData, Peer, RoleServer};

use async_trait::async_trait;
use mcp_connection_manager::{Asking, HostHandler, TrustAnswer};
use mcp_host::{RootsAnswer, roots_answer};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use router_protocol::{ToolApproval, ToolApprovalQuestion};

use super::lock::locked;

/// Sends elicitations and roots requests to the calling session's client.
pub(crate) struct SharedHost {
    pub(crate) calls: Arc<CallOwners>,
    /// For the servers of one session: its client, asked when no call is known to ask.
    pub(crate) client: Option<Arc<Mutex<Option<Owner>>>>,
}

/// Whose user a server's request is for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    /// This session's (by id).
    Session(u64),
    /// No session's: no call of one is in flight there, and the servers are no one session's.
    Nobody,
    /// One of these sessions', and the request does not say which.
    Unclear(Vec<u64>),
}

/// The session a request of a server is for: the one whose call it names; else, when it names
/// none, the one whose calls are all those in flight on that server (`in_flight`); else, with
/// none in flight, the session whose own servers these are (`fallback`).
fn asked(
    call_id: Option<&str>,
    in_flight: &[String],
    session_of: impl Fn(&str) -> Option<u64>,
    fallback: Option<u64>,
) -> Asked {
    if let Some(session) = call_id.and_then(&session_of) {
        return Asked::Session(session);
    }
    let sessions: BTreeSet<u64> = in_flight.iter().filter_map(|c| session_of(c)).collect();
    match (sessions.len(), sessions.first(), fallback) {
        (1, Some(&only), _) => Asked::Session(only),
        (0, _, Some(own)) => Asked::Session(own),
        (0, _, None) => Asked::Nobody,
        _ => Asked::Unclear(sessions.into_iter().collect()),
    }
}

impl SharedHost {
    /// The session a server's request goes to (see [`asked`]), with its client.
    fn owner(&self, asking: &Asking) -> Result<Option<Owner>, ErrorData> {
        let client = self.client.as_ref().and_then(|c| locked(c).clone());
        let fallback = client.as_ref().map(|c| c.session);
        // Each call's owner, looked up once.
        let calls = asking.call_id.iter().chain(&asking.calls_in_flight);
        let known: HashMap<&str, Owner> =
            calls.filter_map(|c| Some((c.as_str(), self.calls.owner(c)?))).collect();
        let session_of = |call: &str| known.get(call).map(|o| o.session);
        match asked(asking.call_id.as_deref(), &asking.calls_in_flight, session_of, fallback) {
            Asked::Session(id) => {
                let owner = known.values().find(|o| o.session == id).cloned();
                Ok(owner.or(client))
            }
            Asked::Nobody => Ok(None),
            Asked::Unclear(sessions) => Err(ErrorData::invalid_request(
                format!(
                    "calls of sessions {sessions:?} are in flight on MCP server '{}' and its request names none of them, so no one user can be asked for it (a 2026-07-28 server ties each request to its call)",
                    asking.server
                ),
                None,
            )),
        }
    }
}

#[async_trait]
impl HostHandler for SharedHost {
    async fn elicit(
        &self,
        asking: &Asking,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(owner) = self.owner(asking)? else {
            return Err(ErrorData::invalid_request(
                format!(
                    "no session's call is in flight on MCP server '{}': no user can be asked",
                    asking.server
                ),
                None,
            ));
        };
        if !owner.elicitation {
            return Err(ErrorData::invalid_request(
                format!("the client of session {} declares no elicitation", owner.session),
                None,
            ));
        }
        tracing::debug!(server = %asking.server, session = owner.session, "elicitation sent to its session");
        owner.peer.create_elicitation(request).await.map_err(|e| {
            tracing::info!(
                session = owner.session,
                "the session did not answer an elicitation: {e}"
            );
            ErrorData::internal_error(
                format!("the client of session {} did not answer: {e}", owner.session),
                None,
            )
        })
    }

    /// A call whose approval is `ask`: the calling session's user is asked, as an elicitation
    /// (accept runs it, once or — `always` checked — while its definition stays the same;
    /// decline or cancel refuses it). A session whose client cannot be asked refuses it.
    /// A held definition met by a call: the user of the session whose call it is is asked
    /// (an elicitation), as for a call set to `ask`; an acceptance approves it. Without the call,
    /// or a client that cannot be asked, it stays held (never approved in a user's name).
    async fn tool_definition_changed(
        &self,
        asking: &Asking,
        change: &router_protocol::McpToolDefinitionChangedEvent,
    ) -> TrustAnswer {
        let call = asking.call_id.as_deref();
        let owner = call.and_then(|id| self.calls.owner(id)).filter(|o| o.elicitation);
        let (Some(owner), Ok(request)) = (owner, definition_request(change)) else {
            return TrustAnswer::Hold;
        };
        match owner.peer.create_elicitation(request).await {
            Ok(answer) if answer.action == ElicitationAction::Accept => TrustAnswer::Approve,
            _ => TrustAnswer::Hold,
        }
    }

    async fn approve_tool_call(
        &self,
        asking: &Asking,
        question: &ToolApprovalQuestion,
    ) -> ToolApproval {
        let call = question.call_id.as_deref().or(asking.call_id.as_deref());
        let owner = call.and_then(|id| self.calls.owner(id)).filter(|o| o.elicitation);
        let Some(owner) = owner else {
            return ToolApproval::Refuse(
                "it needs the user's approval and the calling session's client cannot be asked (it declares no elicitation)".to_string(),
            );
        };
        let Ok(request) = approval_request(question) else {
            return ToolApproval::Refuse("the approval question could not be made".to_string());
        };
        match owner.peer.create_elicitation(request).await {
            Ok(answer) if answer.action == ElicitationAction::Accept => {
                let always = answer.content.as_ref().and_then(|c| c.get("always"));
                match always.and_then(serde_json::Value::as_bool) {
                    Some(true) => ToolApproval::Always,
                    _ => ToolApproval::Once,
                }
            }
            Ok(_) => ToolApproval::Refuse("the user declined the call".to_string()),
            Err(e) => ToolApproval::Refuse(format!("the user could not be asked: {e}")),
        }
    }

    /// The roots of the session asked: none when no session is (a server asking at its
    /// start) or its client declares none; an error when the request could be any of several
    /// sessions'.
    #[allow(deprecated)] // asks the session's client (`roots/list` of protocol 2025-11-25).
    async fn list_roots(&self, asking: &Asking) -> Result<RootsAnswer, ErrorData> {
        match self.owner(asking)?.filter(|o| o.roots) {
            Some(owner) => owner.peer.list_roots().await.map_err(|e| {
                ErrorData::internal_error(
                    format!("the client of session {} did not list its roots: {e}", owner.session),
                    None,
                )
            }),
            None => Ok(roots_answer(std::iter::empty::<&str>())),
        }
    }
}

/// Most characters of the arguments shown in an approval question.
const ARGUMENTS_SHOWN: usize = 400;

/// The elicitation that asks whether `question`'s call may run.
fn approval_request(question: &ToolApprovalQuestion) -> Result<ElicitRequestParams, String> {
    let mut arguments =
        question.arguments.as_ref().map(ToString::to_string).unwrap_or_else(|| "{}".to_string());
    if let Some((cut, _)) = arguments.char_indices().nth(ARGUMENTS_SHOWN) {
        arguments.truncate(cut);
        arguments.push('…');
    }
    let destructive = question
        .annotations
        .as_ref()
        .and_then(|a| a.get("destructiveHint"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let message = format!(
        "Allow the call to tool `{}` of MCP server '{}'{}? Arguments: {arguments}. Check `always` to allow its later calls too while the tool's definition stays the same.",
        question.tool,
        question.server,
        if destructive { " (it says it is destructive)" } else { "" },
    );
    let schema = rmcp::model::ElicitationSchema::builder().required_bool("always").build()?;
    Ok(ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema })
}

/// The question for a held definition: what changed, and whether to let it in.
fn definition_request(
    change: &router_protocol::McpToolDefinitionChangedEvent,
) -> Result<ElicitRequestParams, String> {
    let fields: Vec<&str> = change.diff.iter().map(|d| d.field.as_str()).collect();
    let how = if fields.is_empty() {
        "it is new to a server whose tools are pinned".to_string()
    } else {
        format!("its definition changed since it was pinned ({})", fields.join(", "))
    };
    let flags = if change.flags.is_empty() {
        String::new()
    } else {
        format!(" Flagged: {}.", change.flags.join("; "))
    };
    let message = format!(
        "Tool `{}` of MCP server '{}' is held: {how}.{flags} Let the model use it as it is now (sha256 {})?",
        change.tool, change.server, change.sha256
    );
    let schema = rmcp::model::ElicitationSchema::builder().build()?;
    Ok(ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema })
}

/// The calls in flight, by the call id the shared router gave them: the session whose model
/// made the call is the one a server's question about it goes to, never another.
#[derive(Default)]
pub(crate) struct CallOwners {
    owners: Mutex<HashMap<String, Owner>>,
}

/// The session a call belongs to.
#[derive(Clone)]
pub(crate) struct Owner {
    pub(crate) session: u64,
    pub(crate) peer: Peer<RoleServer>,
    /// Whether the session's client declared elicitation and roots.
    pub(crate) elicitation: bool,
    pub(crate) roots: bool,
}

impl CallOwners {
    /// The session of `call_id`, while the call is in flight.
    pub(crate) fn owner(&self, call_id: &str) -> Option<Owner> {
        locked(&self.owners).get(call_id).cloned()
    }

    pub(crate) fn insert(&self, call_id: String, owner: Owner) {
        locked(&self.owners).insert(call_id, owner);
    }

    pub(crate) fn remove(&self, call_id: &str) {
        locked(&self.owners).remove(call_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls `s<session>-<n>` of sessions 1–3 are in flight; `s9-1` has ended.
    fn check(call: Option<&str>, in_flight: &[&str], fallback: Option<u64>, expected: Asked) {
        let in_flight: Vec<String> = in_flight.iter().map(|c| c.to_string()).collect();
        let session_of = |call: &str| {
            let session = call.strip_prefix('s')?.split_once('-')?.0.parse().ok()?;
            (session != 9).then_some(session)
        };
        assert_eq!(
            asked(call, &in_flight, session_of, fallback),
            expected,
            "{call:?} {in_flight:?}"
        );
    }

    #[test]
    fn a_request_goes_to_the_one_session_it_can_be_for_and_never_guesses() {
        check(Some("s2-1"), &["s1-1", "s2-1"], None, Asked::Session(2));
        check(None, &["s1-1"], None, Asked::Session(1));
        check(None, &["s1-1", "s1-2"], None, Asked::Session(1));
        check(None, &["s1-1", "s2-1", "s3-4"], None, Asked::Unclear(vec![1, 2, 3]));
        check(None, &["s1-1", "s2-1"], Some(1), Asked::Unclear(vec![1, 2]));
        check(None, &[], None, Asked::Nobody);
        check(None, &[], Some(3), Asked::Session(3));
        // A call that has ended names no session: the calls in flight decide.
        check(Some("s9-1"), &["s2-5"], None, Asked::Session(2));
        check(None, &["s9-1"], None, Asked::Nobody);
    }
}
