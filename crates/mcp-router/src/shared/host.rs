//! The shared router's host: a server's question goes to the session whose call asked it —
//! never to another session — and is declined when no call of a session is known to ask.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::{Peer, RoleServer};

use async_trait::async_trait;
use mcp_connection_manager::{Asking, HostHandler};
#[allow(deprecated)]
use rmcp::model::ListRootsResult;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use router_protocol::{ToolApproval, ToolApprovalQuestion};

/// Sends elicitations and roots requests to the calling session's client.
pub(crate) struct SharedHost {
    pub(crate) calls: Arc<CallOwners>,
    /// For the servers of one session: its client, asked when no call is known to ask.
    pub(crate) client: Option<Arc<Mutex<Option<Owner>>>>,
}

impl SharedHost {
    /// The session a server's request goes to: the one whose call asked, else the session
    /// whose own servers these are.
    fn owner(&self, asking: &Asking) -> Option<Owner> {
        let calling = asking.call_id.as_deref().and_then(|id| self.calls.owner(id));
        calling.or_else(|| self.client.as_ref()?.lock().expect("client").clone())
    }
}

#[async_trait]
impl HostHandler for SharedHost {
    async fn elicit(&self, asking: &Asking, request: ElicitRequestParams) -> ElicitResult {
        let owner = self.owner(asking);
        let Some(owner) = owner.filter(|o| o.elicitation) else {
            tracing::info!(server = %asking.server, "an elicitation no session can answer is declined");
            return ElicitResult::new(ElicitationAction::Decline);
        };
        tracing::debug!(server = %asking.server, session = owner.session, "elicitation sent to its session");
        match owner.peer.create_elicitation(request).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::info!(
                    session = owner.session,
                    "the session did not answer an elicitation: {e}"
                );
                ElicitResult::new(ElicitationAction::Cancel)
            }
        }
    }

    /// A call whose approval is `ask`: the calling session's user is asked, as an elicitation
    /// (accept runs it, once or — `always` checked — while its definition stays the same;
    /// decline or cancel refuses it). A session whose client cannot be asked refuses it.
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

    #[allow(deprecated)]
    async fn list_roots(&self, asking: &Asking) -> ListRootsResult {
        let owner = self.owner(asking);
        match owner.filter(|o| o.roots) {
            Some(owner) => owner.peer.list_roots().await.unwrap_or_default(),
            None => ListRootsResult::default(),
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
        self.owners.lock().expect("call owners").get(call_id).cloned()
    }

    pub(crate) fn insert(&self, call_id: String, owner: Owner) {
        self.owners.lock().expect("call owners").insert(call_id, owner);
    }

    pub(crate) fn remove(&self, call_id: &str) {
        self.owners.lock().expect("call owners").remove(call_id);
    }
}
