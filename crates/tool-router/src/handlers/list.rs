//! `list_mcp_resources` and `list_mcp_resource_templates`, as Codex's `mcp_resource` handler
//! has them: argument shapes, payload field names, error strings, sorting and events. One
//! handler type, one instance per list kind. Beyond Codex, all-server lists page every server
//! to the end, report failing servers in an additive `errors` array, and end events carry a
//! [`ResourceCallSummary`].

use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::{Aggregate, Items, ListKind, McpBackend, ServerListing};
use rmcp::model::{Resource, ResourceTemplate};
use router_protocol::{McpInvocation, ResourceCallSummary, ServerFailure};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::handler::ToolHandler;
use crate::handlers::args::{normalize_optional_string, parse_args_with_default, respond};
use crate::handlers::{Failed, Produced, backend_failure, one_server, produced, run, shut_down};
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};
use crate::spec::ToolSpec;

/// Name of the resource-listing tool.
pub const LIST_MCP_RESOURCES: &str = "list_mcp_resources";
/// Name of the template-listing tool.
pub const LIST_MCP_RESOURCE_TEMPLATES: &str = "list_mcp_resource_templates";

/// Handles one of the two list tools.
pub(crate) struct McpListHandler {
    backend: Arc<dyn McpBackend>,
    kind: ListKind,
}

#[derive(Debug, Default, Deserialize)]
struct ListArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
}

/// An item with the server it came from, next to the item's own MCP fields.
#[derive(Serialize)]
struct WithServer<'a, T> {
    server: &'a str,
    #[serde(flatten)]
    item: &'a T,
}

/// The items of a list payload, under the key Codex uses for them.
#[derive(Serialize)]
enum PayloadItems<'a> {
    #[serde(rename = "resources")]
    Resources(Vec<WithServer<'a, Resource>>),
    #[serde(rename = "resourceTemplates")]
    Templates(Vec<WithServer<'a, ResourceTemplate>>),
}

impl<'a> PayloadItems<'a> {
    fn empty(kind: ListKind) -> Self {
        match kind {
            ListKind::Resources => Self::Resources(Vec::new()),
            ListKind::Templates => Self::Templates(Vec::new()),
        }
    }

    /// Append `items`, each tagged with `server`.
    fn push(&mut self, server: &'a str, items: &'a Items) {
        match (self, items) {
            (Self::Resources(out), Items::Resources(items)) => {
                out.extend(items.iter().map(|item| WithServer { server, item }))
            }
            (Self::Templates(out), Items::Templates(items)) => {
                out.extend(items.iter().map(|item| WithServer { server, item }))
            }
            _ => {}
        }
    }
}

/// `{"server": "…", "resources"|"resourceTemplates": […], "nextCursor": "…" | null}`
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SingleServerPayload<'a> {
    server: &'a str,
    #[serde(flatten)]
    items: PayloadItems<'a>,
    next_cursor: Option<&'a str>,
}

/// `{"server": null, "resources"|"resourceTemplates": […], "errors": [{server, error}]}`;
/// `errors` only when some server failed.
#[derive(Serialize)]
struct AllServersPayload<'a> {
    server: Option<&'a str>,
    #[serde(flatten)]
    items: PayloadItems<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<ServerFailure>,
}

fn failures(listings: &[ServerListing]) -> Vec<ServerFailure> {
    listings
        .iter()
        .filter_map(|l| {
            l.error
                .as_ref()
                .map(|error| ServerFailure { server: l.server.clone(), error: error.clone() })
        })
        .collect()
}

fn aggregate_summary(listings: &Aggregate) -> ResourceCallSummary {
    ResourceCallSummary {
        items: listings.iter().map(|l| l.items.len()).sum(),
        pages: listings.iter().map(|l| l.pages).sum(),
        servers: listings.len(),
        failed_servers: failures(listings),
    }
}

impl McpListHandler {
    pub(crate) fn new(backend: Arc<dyn McpBackend>, kind: ListKind) -> Self {
        Self { backend, kind }
    }

    /// The tool's name.
    pub(crate) fn name(kind: ListKind) -> &'static str {
        match kind {
            ListKind::Resources => LIST_MCP_RESOURCES,
            ListKind::Templates => LIST_MCP_RESOURCE_TEMPLATES,
        }
    }

    /// The tool's spec (Codex's wording).
    pub(crate) fn spec(kind: ListKind) -> ToolSpec {
        let (description, server, cursor) = match kind {
            ListKind::Resources => (
                "Lists resources provided by MCP servers. Resources allow servers to share data that provides context to language models, such as files, database schemas, or application-specific information. Prefer resources over web search when possible.",
                "Optional MCP server name. When omitted, lists resources from every configured server.",
                "Opaque cursor returned by a previous list_mcp_resources call for the same server.",
            ),
            ListKind::Templates => (
                "Lists resource templates provided by MCP servers. Parameterized resource templates allow servers to share data that takes parameters and provides context to language models, such as files, database schemas, or application-specific information. Prefer resource templates over web search when possible.",
                "Optional MCP server name. When omitted, lists resource templates from all configured servers.",
                "Opaque cursor returned by a previous list_mcp_resource_templates call for the same server.",
            ),
        };
        ToolSpec {
            name: Self::name(kind).to_string(),
            description: description.to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": server},
                    "cursor": {"type": "string", "description": cursor}
                },
                "additionalProperties": false
            }),
        }
    }

    async fn all_servers(&self) -> Result<Produced, Failed> {
        let listings = self.backend.list_all(self.kind).await.map_err(|_| shut_down(None))?;
        let mut items = PayloadItems::empty(self.kind);
        for listing in &listings {
            items.push(&listing.server, &listing.items);
        }
        let payload = AllServersPayload { server: None, items, errors: failures(&listings) };
        produced(&payload, aggregate_summary(&listings))
    }

    async fn one_page(&self, server: &str, cursor: Option<String>) -> Result<Produced, Failed> {
        let page = self
            .backend
            .list(server, self.kind, cursor)
            .await
            .map_err(|e| backend_failure(server, self.kind.method(), e))?;
        let mut items = PayloadItems::empty(self.kind);
        items.push(server, &page.items);
        let payload =
            SingleServerPayload { server, items, next_cursor: page.next_cursor.as_deref() };
        produced(&payload, one_server(page.items.len()))
    }
}

#[async_trait]
impl ToolHandler for McpListHandler {
    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let args: ListArgs = parse_args_with_default(invocation.arguments.as_ref())?;
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
        let event_invocation = McpInvocation {
            server: server.clone(),
            tool: invocation.tool_name,
            arguments: invocation.arguments,
        };
        let work = async {
            match &server {
                None => self.all_servers().await,
                Some(server) => self.one_page(server, cursor).await,
            }
        };
        run(ctx, &invocation.call_id, event_invocation, self.backend.as_ref(), work).await.0
    }
}
