//! `list_mcp_resources` and `list_mcp_resource_templates`, as Codex's `mcp_resource` handler
//! has them: argument shapes, payload field names, error strings, sorting and events. One
//! handler type, one instance per list kind. Beyond Codex, all-server lists page every server
//! to the end, report failing servers in an additive `errors` array, and end events carry a
//! [`ResourceCallSummary`].

use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::{ListKind, McpBackend, McpError, ServerListing};
use rmcp::model::{Resource, ResourceTemplate};
use router_protocol::{ResourceCallSummary, ServerFailure};
use serde_json::json;

use crate::handler::ToolHandler;
use crate::handlers::args::{normalize_optional_string, parse_args_with_default, respond};
use crate::handlers::{
    Failed, Produced, backend_failure, one_server, produced, run, single_failure,
};
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};
use crate::lists::payload::{Kind, Payload};
use crate::lists::shape::{
    Continuation, ListArgs, Request, SearchMemo, carried, for_assistant, locate, position, request,
};
use crate::results::content::ContentPolicy;
use crate::spec::ToolSpec;

/// Name of the resource-listing tool.
pub const LIST_MCP_RESOURCES: &str = "list_mcp_resources";
/// Name of the template-listing tool.
pub const LIST_MCP_RESOURCE_TEMPLATES: &str = "list_mcp_resource_templates";

/// Handles one of the two list tools.
pub(crate) struct McpListHandler {
    pub(super) backend: Arc<dyn McpBackend>,
    pub(super) kind: ListKind,
    /// Most bytes of one payload (`list_budget_bytes`).
    pub(super) budget: usize,
    /// Show items whose audience leaves out the assistant (`show_user_audience`).
    pub(super) every_audience: bool,
    /// Search indexes of the backend's kept listings.
    pub(super) search: SearchMemo,
}

impl McpListHandler {
    pub(crate) fn new(
        backend: Arc<dyn McpBackend>,
        kind: ListKind,
        policy: &ContentPolicy,
    ) -> Self {
        Self {
            backend,
            kind,
            budget: policy.list_budget_bytes,
            every_audience: policy.show_user_audience,
            search: SearchMemo::default(),
        }
    }

    /// A one-server payload's envelope: no items yet, what is held of `server`.
    pub(super) fn envelope<'a, T: Kind>(&self, server: &'a str) -> Payload<'a, T> {
        let mut envelope = Payload::<T>::new(Some(server));
        envelope.held = self.held(Some(server));
        envelope
    }

    /// What the payload says is held: the held templates of `server` (every server's for
    /// `None`); nothing for resources, which are not pinned.
    pub(super) fn held(&self, server: Option<&str>) -> Vec<router_protocol::HeldNote> {
        if self.kind != ListKind::Templates {
            return Vec::new();
        }
        let mut notes = self.backend.held(router_protocol::DefinitionKind::ResourceTemplate);
        notes.retain(|note| server.is_none_or(|s| s == note.server));
        notes
    }

    /// The tool's name.
    pub(crate) fn name(kind: ListKind) -> &'static str {
        match kind {
            ListKind::Resources => LIST_MCP_RESOURCES,
            ListKind::Templates => LIST_MCP_RESOURCE_TEMPLATES,
        }
    }

    /// The tool's spec (Codex's wording, plus the filters).
    pub(crate) fn spec(kind: ListKind) -> ToolSpec {
        let (description, server, cursor, what) = match kind {
            ListKind::Resources => (
                "Lists resources provided by MCP servers. Resources allow servers to share data that provides context to language models, such as files, database schemas, or application-specific information. Prefer resources over web search when possible.",
                "Optional MCP server name. When omitted, lists resources from every configured server.",
                "Opaque cursor returned by a previous list_mcp_resources call for the same server.",
                "resources",
            ),
            ListKind::Templates => (
                "Lists resource templates provided by MCP servers. Parameterized resource templates allow servers to share data that takes parameters and provides context to language models, such as files, database schemas, or application-specific information. Prefer resource templates over web search when possible.",
                "Optional MCP server name. When omitted, lists resource templates from all configured servers.",
                "Opaque cursor returned by a previous list_mcp_resource_templates call for the same server.",
                "templates",
            ),
        };
        let description = format!(
            "{description} Large lists are cut to fit: servers not shown in full are listed under `incomplete` with a `nextCursor`; pass it with that `server` to continue."
        );
        ToolSpec {
            name: Self::name(kind).to_string(),
            description,
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": server},
                    "cursor": {"type": "string", "description": cursor},
                    "query": {
                        "type": "string",
                        "description": format!("Optional text to search for: only {what} whose uri, name, title or description contains it (case-insensitive).")
                    },
                    "mimeType": {
                        "type": "string",
                        "description": format!("Optional MIME type: only {what} of this type; a value ending in '/' (such as 'text/') matches every subtype.")
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": format!("Optional: at most this many {what} in this answer (fewer when they do not fit).")
                    },
                    "sort": {
                        "type": "string",
                        "enum": ["priority"],
                        "description": "Optional: 'priority' orders each server's items by their annotated priority, highest first (default: the server's order)."
                    }
                },
                "additionalProperties": false
            }),
        }
    }

    async fn one_server(
        &self,
        server: &str,
        cursor: Option<String>,
        request: Request,
    ) -> Result<Produced, Failed> {
        let invalid = |message: String| single_failure(server, message);
        let (start, filter) = match cursor.as_deref().map(Continuation::decode) {
            Some(Some(Ok(start))) => {
                if !request.filter.is_empty() && request.filter != start.filter {
                    return Err(invalid(
                        "this cursor continues a list with other filters: repeat the same query, mimeType and sort, or leave them out"
                            .to_string(),
                    ));
                }
                let filter = start.filter.clone();
                (Some(start), filter)
            }
            Some(Some(Err(message))) => return Err(invalid(message)),
            _ => (None, request.filter.clone()),
        };
        // An explicit limit wins; otherwise the one the cursor carries.
        let limit = match (request.limit, start.as_ref().and_then(|s| s.limit)) {
            (usize::MAX, Some(carried)) => carried,
            (limit, _) => limit,
        };
        let request = Request { filter, limit };
        match self.kind {
            ListKind::Resources => {
                self.one_server_of::<Resource>(server, cursor, start, request).await
            }
            ListKind::Templates => {
                self.one_server_of::<ResourceTemplate>(server, cursor, start, request).await
            }
        }
    }

    async fn one_server_of<T: Kind>(
        &self,
        server: &str,
        cursor: Option<String>,
        start: Option<Continuation>,
        request: Request,
    ) -> Result<Produced, Failed> {
        let kept = self.backend.kept_listing(server, self.kind).is_some();
        if request.filter.is_empty() && (start.is_none() || !kept) {
            // One page of the server, as Codex asks for it; cut if it does not fit.
            let continuing = start.is_some();
            let (page_cursor, offset) = match start {
                Some(start) => (start.page, start.offset),
                None => (cursor, 0),
            };
            return self
                .one_page::<T>(server, page_cursor, offset, request.limit, continuing)
                .await;
        }
        self.scan::<T>(server, start, request).await
    }

    /// A failed request of one server's list. `continuing`: the list was named by a
    /// continuation of ours, so a server refusing its cursor (the list changed, the cursor
    /// expired) gets the advice to list again.
    /// Why a kept listing stopped short, as the payload reports it; a stop that was a failed
    /// request fails the call.
    fn stopped(
        &self,
        server: &str,
        listing: &ServerListing,
        continuing: bool,
    ) -> Result<Option<String>, Failed> {
        match &listing.error {
            Some(stop) => match stop.request_error() {
                Some(e) => Err(self.list_failure(server, e.clone(), continuing)),
                None => Ok(Some(stop.message(self.kind.method()))),
            },
            None => Ok(None),
        }
    }

    fn list_failure(&self, server: &str, error: McpError, continuing: bool) -> Failed {
        let method = self.kind.method();
        match error {
            e @ McpError::Server { .. } if continuing => single_failure(
                server,
                format!(
                    "{method} failed: {e}; the page this cursor continues is gone: list again without a cursor"
                ),
            ),
            e => backend_failure(server, method, e),
        }
    }

    async fn one_page<T: Kind>(
        &self,
        server: &str,
        page_cursor: Option<String>,
        offset: usize,
        limit: usize,
        continuing: bool,
    ) -> Result<Produced, Failed> {
        let page = self.backend.list(server, self.kind, page_cursor.clone()).await;
        let page = page.map_err(|e| self.list_failure(server, e, continuing))?;
        let (items, next_cursor) = (T::take(page.items), page.next_cursor);
        if offset > items.len() {
            return Err(single_failure(server, stale_cursor()));
        }
        let visible: Vec<usize> = (offset..items.len())
            .filter(|i| for_assistant(&items[*i], self.every_audience))
            .collect();
        let carried = carried(limit);
        let longest = Continuation {
            page: page_cursor.clone(),
            offset: usize::MAX,
            limit: carried,
            ..Default::default()
        };
        let mut envelope = self.envelope::<T>(server);
        let worst = [next_cursor.clone().unwrap_or_default(), longest.encode()]
            .into_iter()
            .max_by_key(String::len);
        envelope.next_cursor = Some(worst);
        let (mut payload, shown) =
            Payload::fitted(&envelope, self.budget, server, &items, &visible, limit);
        payload.next_cursor = Some(match visible.get(shown) {
            // Everything of the page fits: the server's own cursor, as Codex passes it on.
            None => next_cursor.clone(),
            Some(next) => Some(
                Continuation {
                    page: page_cursor,
                    offset: *next,
                    limit: carried,
                    ..Default::default()
                }
                .encode(),
            ),
        });
        produced(self.backend.as_ref(), &payload, one_server(payload.items.len()))
    }

    /// A filtered or sorted list of one server, or a continuation over a kept listing: the
    /// backend's listing from the start position's page to the end (the count of matches needs
    /// it all), then as many matches as fit.
    async fn scan<T: Kind>(
        &self,
        server: &str,
        start: Option<Continuation>,
        request: Request,
    ) -> Result<Produced, Failed> {
        let filter = &request.filter;
        let continuing = start.is_some();
        let start = start.unwrap_or_default();
        // With a sort the offset counts sorted matches: list from the first page.
        let (page_cursor, skip, sorted_skip) = if filter.by_priority {
            (None, 0, start.offset)
        } else {
            (start.page.clone(), start.offset, 0)
        };
        let shared = self.backend.listing(server, self.kind, page_cursor.clone()).await;
        let shared = shared.map_err(|e| self.list_failure(server, e, continuing))?;
        let listing = &shared.listing;
        let stopped = self.stopped(server, listing, continuing)?;
        let all = T::slice(&listing.items);
        let first = locate(&listing.page_starts, all.len(), page_cursor.as_ref(), skip)
            .ok_or_else(|| single_failure(server, stale_cursor()))?;
        let chosen: Vec<usize> =
            self.candidates::<T>(&shared, filter).into_iter().filter(|i| *i >= first).collect();
        let matched = chosen.len();
        if sorted_skip > chosen.len() {
            return Err(single_failure(server, stale_cursor()));
        }
        let window = &chosen[sorted_skip..];
        let listed_at = shared.kept_at.map(mcp_backend::rfc3339);
        let mut envelope = self.envelope::<T>(server);
        envelope.next_cursor = Some(Some(worst_continuation(listing, &request).encode()));
        envelope.matched = filter.selects().then_some(usize::MAX);
        envelope.listed_at = listed_at.clone();
        if let Some(error) = &stopped {
            envelope
                .errors
                .push(ServerFailure { server: server.to_string(), error: error.clone() });
        }
        let (mut payload, shown) =
            Payload::fitted(&envelope, self.budget, server, all, window, request.limit);
        payload.next_cursor = Some(window.get(shown).map(|next| {
            let (page, offset) = if filter.by_priority {
                (None, sorted_skip + shown)
            } else {
                position(&listing.page_starts, *next)
            };
            Continuation { page, offset, filter: filter.clone(), limit: carried(request.limit) }
                .encode()
        }));
        payload.matched = filter.selects().then_some(matched);
        payload.errors = envelope.errors;
        payload.listed_at = listed_at;
        let summary = ResourceCallSummary {
            items: payload.items.len(),
            pages: if shared.kept_at.is_some() { 0 } else { listing.pages },
            servers: 1,
            failed_servers: payload.errors.clone(),
        };
        produced(self.backend.as_ref(), &payload, summary)
    }
}

/// The longest continuation a listing could get, for reserving its room in the budget.
pub(super) fn worst_continuation(listing: &ServerListing, request: &Request) -> Continuation {
    let longest =
        listing.page_starts.iter().filter_map(|p| p.cursor.clone()).max_by_key(String::len);
    let filter = request.filter.clone();
    Continuation { page: longest, offset: usize::MAX, filter, limit: carried(request.limit) }
}

fn stale_cursor() -> String {
    "the cursor no longer matches the server's list (it changed since): list again without a cursor"
        .to_string()
}

#[async_trait]
impl ToolHandler for McpListHandler {
    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let mut args: ListArgs = parse_args_with_default(invocation.arguments.as_ref())?;
        let request = request(&mut args)?;
        let server = normalize_optional_string(args.server);
        // `""` is a valid cursor in protocol 2026-07-28 (a server may hand it out as
        // `nextCursor`): it is passed on as it is; other cursors are trimmed as before.
        let cursor = match args.cursor {
            Some(empty) if empty.is_empty() => Some(empty),
            other => normalize_optional_string(other),
        };
        if server.is_none() && cursor.as_deref().is_some_and(|c| !c.is_empty()) {
            return Err(respond("cursor can only be used when a server is specified"));
        }
        let (call_id, event_invocation) = invocation.into_event(server.clone());
        let work = async {
            match &server {
                None => self.all_servers(request).await,
                Some(server) => self.one_server(server, cursor, request).await,
            }
        };
        run(ctx, call_id, event_invocation, work).await.0
    }
}
