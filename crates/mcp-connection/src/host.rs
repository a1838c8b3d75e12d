//! Requests a server sends to the client (elicitation, sampling, roots) — as requests in
//! 2025-11-25, as `input_required` answers in 2026-07-28 (see `input`) — go to the embedding
//! application through [`HostHandler`], as does the approval of a server's skill before it is
//! first loaded. The defaults are safe for an unattended agent: decline
//! every elicitation, refuse sampling (and do not even declare it), list no roots. Each request
//! and its answer also appear as an `mcp_server_request` event.

// Sampling and roots are deprecated in rmcp's 2026-07-28 API (SEP-2577) but are part of protocol
// 2025-11-25, which the router still speaks (and 2026-07-28 input requests carry the same
// shapes): the imports and the two methods that use them allow it.
use async_trait::async_trait;
use rmcp::ErrorData;
#[allow(deprecated)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ListRootsResult};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

/// What the host declares to servers (at `initialize`, or in every request's `_meta` in
/// 2026-07-28).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCapabilities {
    /// Declare form elicitation.
    pub elicitation: bool,
    /// Declare sampling.
    pub sampling: bool,
    /// Declare roots.
    pub roots: bool,
    /// Declare MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) with the mime type apps use,
    /// [`APPS_MIME_TYPE`]: the host renders a tool's `ui://` resource.
    pub apps: bool,
}

/// The one mime type of MCP Apps' `ui://` resources.
pub const APPS_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// Who asks the host, and for which of the model's calls: what a [`HostHandler`] is told with
/// every request (a host shows the user which server asks, and which call waits on them).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Asking {
    /// The configured server name.
    pub server: String,
    /// The model's call that waits for the answer, when one does and it is known: always in
    /// 2026-07-28 (the request is part of the call's answer) and for a skill approval; in
    /// 2025-11-25 (a request of the server's own) when exactly one of the model's calls is in
    /// flight on that server's connection.
    pub call_id: Option<String>,
    /// Without a `call_id`: the model's calls in flight on that server's connection when the
    /// server asked (none, or several: the request is for one of them, or for none). A host
    /// serving several users tells from these whose user may be asked.
    pub calls_in_flight: Vec<String>,
}

impl Asking {
    /// `server` asks, for `call_id`.
    pub fn new(server: impl Into<String>, call_id: Option<String>) -> Self {
        Self { server: server.into(), call_id, calls_in_flight: Vec::new() }
    }

    /// With `calls` in flight on the server's connection (a request that names no call).
    pub fn in_flight(mut self, calls: Vec<String>) -> Self {
        self.calls_in_flight = calls;
        self
    }
}

/// The embedding application's side of server-to-client requests. Each method is told who
/// asks ([`Asking`]); while it runs, the call waits (between an `mcp_server_request_begin` and an
/// `mcp_server_request` event naming the call).
#[async_trait]
pub trait HostHandler: Send + Sync {
    /// Capabilities declared to every server (default: elicitation and roots; no sampling, no
    /// apps).
    fn capabilities(&self) -> HostCapabilities {
        HostCapabilities { elicitation: true, sampling: false, roots: true, apps: false }
    }

    /// A server asks the user for input. Default: decline. An error is for a host that cannot
    /// ask anyone (it never stands for a user's answer): the server gets it as a JSON-RPC error
    /// (2025-11-25) or no answer to that input (2026-07-28).
    async fn elicit(
        &self,
        asking: &Asking,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let _ = (asking, request);
        Ok(ElicitResult::new(ElicitationAction::Decline))
    }

    /// A server asks for an LLM completion. Default: refused.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        asking: &Asking,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let _ = request;
        Err(ErrorData::invalid_request(
            format!("sampling is not available to MCP server '{}' in this host", asking.server),
            None,
        ))
    }

    /// A server asks which roots the client exposes. Default: none. An error, as for
    /// [`HostHandler::elicit`], when the host cannot tell whose roots are asked for.
    #[allow(deprecated)]
    async fn list_roots(&self, asking: &Asking) -> Result<ListRootsResult, ErrorData> {
        let _ = asking;
        Ok(ListRootsResult::default())
    }

    /// Before a server's skill is first loaded by the model (SEP-2640): its entry, frontmatter
    /// (`allowed-tools` included) and manifest, to allow or refuse. Default: allow. The
    /// router never acts on `allowed-tools` itself.
    async fn approve_skill(
        &self,
        asking: &Asking,
        skill: &rmcp::model::Skill,
    ) -> mcp_backend::SkillApproval {
        let _ = (asking, skill);
        mcp_backend::SkillApproval::Allow
    }

    /// A tool whose definition is not the one pinned for its server (`change.diff` says what
    /// differs, `change.flags` what looks suspicious), held from the model meanwhile: approve
    /// it (it is pinned as it is now), refuse it, or keep holding it. Default: keep holding;
    /// `mcp-router trust approve` can approve it later.
    async fn tool_definition_changed(
        &self,
        asking: &Asking,
        change: &router_protocol::McpToolDefinitionChangedEvent,
    ) -> TrustAnswer {
        let _ = (asking, change);
        TrustAnswer::Hold
    }

    /// A call to a tool whose approval policy is `ask` (its server's `approval`, its own entry
    /// in `tool_approvals`, or `destructive_tools` for a tool annotated destructive): run it
    /// once, always (while its definition stays the same), or refuse it with a reason for the
    /// model. Default: refuse — a host that cannot ask the user runs nothing that needs asking.
    async fn approve_tool_call(
        &self,
        asking: &Asking,
        question: &router_protocol::ToolApprovalQuestion,
    ) -> router_protocol::ToolApproval {
        let _ = (asking, question);
        router_protocol::ToolApproval::Refuse(
            "it needs the user's approval and this host cannot ask".to_string(),
        )
    }
}

/// A host's answer about a tool definition that is not the pinned one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustAnswer {
    /// Pin it as it is now: the model sees it.
    Approve,
    /// Keep it from the model and do not ask again while the router runs.
    Refuse,
    /// Keep it from the model until it is approved.
    Hold,
}

/// The safe defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultHost;

impl HostHandler for DefaultHost {}

/// The safe defaults, and MCP Apps declared: a host that renders apps (`apps_ui = true`) but
/// leaves every server request to the defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppsHost;

impl HostHandler for AppsHost {
    fn capabilities(&self) -> HostCapabilities {
        HostCapabilities { apps: true, ..DefaultHost.capabilities() }
    }
}
