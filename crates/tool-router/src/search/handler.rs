//! `search_mcp_tools {query, limit?, server?}` (tool search on): the MCP tools that match,
//! best first, each with what the model needs to call it at once (qualified name, server,
//! description, input schema), and `total` matches; the hits join the specs (revealed). Served
//! from what is known — live lists and tool catalogs; only servers whose tools nothing knows
//! yet are waited for, a few seconds at most —; servers whose tools are still not known are
//! named in `not_searchable_yet` (a lazy one without a catalog is started in the background,
//! so a later search finds its tools).

use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::{KnownTools, McpBackend};
use router_protocol::{EventMsg, McpToolsRevealedEvent, ResourceCallSummary};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::handler::ToolHandler;
use crate::handlers::args::{normalize_optional_string, parse_args, respond};
use crate::handlers::{Failed, Produced, produced, run, single_failure};
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};
use crate::search::mode::ToolSearch;
use crate::spec::ToolSpec;

/// Name of the search tool.
pub const SEARCH_MCP_TOOLS: &str = "search_mcp_tools";

const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 50;

/// Hits named after the revealed ones (`more`): the model may call or search for one by name.
pub(crate) const MORE_NAMES: usize = 10;

/// Most bytes of those names and their lines together.
pub(crate) const MORE_BYTES: usize = 1024;

/// Most characters of a named hit's line (its description's first sentence).
const MORE_LINE_CHARS: usize = 60;

#[derive(Debug, Default, Deserialize)]
struct SearchArgs {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    limit: Option<Value>,
    #[serde(default)]
    server: Option<String>,
}

#[derive(Serialize)]
struct Found<'a> {
    name: &'a str,
    server: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// A hit past the limit: its name and a line of what it does.
#[derive(Serialize)]
struct Named<'a> {
    name: &'a str,
    summary: String,
}

#[derive(Serialize)]
struct SearchPayload<'a> {
    query: &'a str,
    tools: Vec<Found<'a>>,
    /// The next hits, named (not revealed): callable by name, which reveals them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    more: Vec<Named<'a>>,
    total: usize,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    not_searchable_yet: &'a [String],
    /// Tools held from the model (not searched), with the command that allows them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    held: Vec<router_protocol::HeldNote>,
}

/// Handles `search_mcp_tools`; offered while tool search is on.
pub(crate) struct SearchToolsHandler {
    backend: Arc<dyn McpBackend>,
    search: Arc<ToolSearch>,
    /// Until when searches wait for servers whose tools nothing knows: set by the first
    /// search that waits, so that searches one after another do not each wait again.
    wait_until: std::sync::OnceLock<tokio::time::Instant>,
}

impl SearchToolsHandler {
    pub(crate) fn new(backend: Arc<dyn McpBackend>, search: Arc<ToolSearch>) -> Self {
        Self { backend, search, wait_until: std::sync::OnceLock::new() }
    }

    pub(crate) fn spec() -> ToolSpec {
        ToolSpec {
            name: SEARCH_MCP_TOOLS.to_string(),
            description: "Search the tools of the connected MCP servers, which are not all listed. Describe what you want to do in a few words; the best matches come back with their names and input schemas and can be called at once by name.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, e.g. \"current time in a timezone\"."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most tools to return (default 5)."},
                    "server": {"type": "string", "description": "Only this MCP server's tools."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    /// Every server's tools; servers whose tools nothing knows yet (no catalog: a first run)
    /// are waited for, or started when idle, as a full tool listing does — a search made first
    /// thing finds what they offer instead of nothing —, until [`FIRST_SEARCH_WAIT`] after the
    /// first search that waited (all searches together wait no longer): a server slower than
    /// that (or one that will fail at its startup timeout) is named in `not_searchable_yet` and
    /// goes on starting.
    async fn known(&self) -> KnownTools {
        let known = self.backend.known_tools().await;
        if known.unknown.is_empty() {
            return known;
        }
        let until =
            *self.wait_until.get_or_init(|| tokio::time::Instant::now() + FIRST_SEARCH_WAIT);
        let _ = tokio::time::timeout_at(until, self.backend.list_tools()).await;
        self.backend.known_tools().await
    }

    async fn search(&self, ctx: &CallContext, args: &Request) -> Result<Produced, Failed> {
        let known = self.known().await;
        if let Some(server) = &args.server {
            offered(&known, server)?;
        }
        let indexed = self.search.index(known.tools);
        let hits: Vec<_> = ranked(&indexed, &args.query)
            .await
            .into_iter()
            .map(|h| &indexed.tools[h.tool])
            .filter(|t| args.server.as_ref().is_none_or(|s| *s == t.server))
            .collect();
        let shown = &hits[..hits.len().min(args.limit)];
        let added = self.search.reveal(shown.iter().copied());
        if !added.is_empty() {
            ctx.emit(EventMsg::McpToolsRevealed(McpToolsRevealedEvent { tools: added }));
        }
        let specs: Vec<ToolSpec> =
            shown.iter().map(|t| ToolSpec::for_mcp_tool(&t.qualified_name, &t.tool)).collect();
        let tools = shown
            .iter()
            .zip(&specs)
            .map(|(t, spec)| Found {
                name: &t.qualified_name,
                server: &t.server,
                description: &spec.description,
                input_schema: &spec.parameters,
            })
            .collect();
        let unknown: Vec<String> = match &args.server {
            Some(server) => known.unknown.iter().filter(|s| *s == server).cloned().collect(),
            None => known.unknown.clone(),
        };
        let payload = SearchPayload {
            query: &args.query,
            tools,
            more: named(&hits[shown.len()..]),
            total: hits.len(),
            not_searchable_yet: &unknown,
            held: {
                let mut held = self.backend.held(router_protocol::DefinitionKind::Tool);
                held.retain(|note| args.server.as_ref().is_none_or(|s| *s == note.server));
                held
            },
        };
        let summary = ResourceCallSummary {
            items: shown.len(),
            pages: 1,
            servers: 1,
            failed_servers: vec![],
        };
        produced(self.backend.as_ref(), &payload, summary)
    }
}

/// Up to [`MORE_NAMES`] of `hits`, each with the start of its description's first sentence,
/// within [`MORE_BYTES`] together.
fn named<'a>(hits: &[&'a mcp_backend::QualifiedTool]) -> Vec<Named<'a>> {
    let mut used = 0;
    let mut named = Vec::new();
    for hit in hits.iter().take(MORE_NAMES) {
        let description = hit.tool.description.as_deref().unwrap_or_default();
        let summary = crate::search::mode::first_sentence(description, MORE_LINE_CHARS);
        used += hit.qualified_name.len() + summary.len();
        if used > MORE_BYTES {
            break;
        }
        named.push(Named { name: &hit.qualified_name, summary });
    }
    named
}

/// A search the model asked for, validated.
struct Request {
    query: String,
    limit: usize,
    server: Option<String>,
}

impl Request {
    fn from_args(args: SearchArgs) -> Result<Self, FunctionCallError> {
        let query = normalize_optional_string(args.query)
            .ok_or_else(|| respond("query must be provided: describe the tool you need"))?;
        let limit = match args.limit {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(value) => match value.as_u64() {
                Some(n) if n >= 1 => (n as usize).min(MAX_LIMIT),
                _ => return Err(respond(format!("limit must be a positive integer, got {value}"))),
            },
        };
        Ok(Self { query, limit, server: normalize_optional_string(args.server) })
    }
}

#[async_trait]
impl ToolHandler for SearchToolsHandler {
    async fn offered(&self) -> bool {
        self.search.settle(self.backend.as_ref()).await;
        self.search.router_searches()
    }

    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let args: SearchArgs = parse_args(invocation.arguments.as_ref())?;
        let request = Request::from_args(args)?;
        let (call_id, event_invocation) = invocation.into_event(request.server.clone());
        let work = self.search(ctx, &request);
        run(ctx, call_id, event_invocation, work).await.0
    }
}

/// How long a search waits for the servers whose tools nothing knows yet.
const FIRST_SEARCH_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Refuse a search on `server` when no server of that name has tools.
fn offered(known: &KnownTools, server: &str) -> Result<(), Failed> {
    let mut names: Vec<&str> = known.tools.iter().map(|t| t.server.as_str()).collect();
    names.extend(known.unknown.iter().map(String::as_str));
    names.sort_unstable();
    names.dedup();
    if names.contains(&server) {
        return Ok(());
    }
    let message =
        format!("unknown server \"{server}\": the servers with tools are {}", names.join(", "));
    Err(single_failure(server, message))
}

/// The hits for `query`. With the retrieval model the query is embedded first (milliseconds of
/// CPU): that runs on a blocking thread, not on the runtime's worker.
async fn ranked(
    indexed: &std::sync::Arc<super::mode::Indexed>,
    query: &str,
) -> Vec<super::index::Hit> {
    #[cfg(feature = "e5")]
    if indexed.index.embeds_queries() {
        let (owned, query) = (indexed.clone(), query.to_string());
        let search = move || owned.index.search(&query);
        if let Ok(hits) = tokio::task::spawn_blocking(search).await {
            return hits;
        }
    }
    indexed.index.search(query)
}
