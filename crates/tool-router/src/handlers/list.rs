//! `list_mcp_resources` and `list_mcp_resource_templates`, as Codex's `mcp_resource` handler
//! has them: argument shapes, payload field names, error strings, sorting and events. One
//! handler type, one instance per list kind. Beyond Codex, all-server lists page every server
//! to the end, report failing servers in an additive `errors` array, and end events carry a
//! [`ResourceCallSummary`].

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::{Aggregate, Items, ListKind, McpBackend, ServerListing};
use rmcp::model::{Resource, ResourceTemplate};
use router_protocol::{McpInvocation, ResourceCallSummary, ServerFailure};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::content::ContentPolicy;
use crate::handler::ToolHandler;
use crate::handlers::args::{normalize_optional_string, parse_args_with_default, respond};
use crate::handlers::catalog::{
    Cached, Continuation, Filter, Listed, ListingCache, fit, for_assistant, json_len, model_view,
    position, share, sort_by_priority,
};
use crate::handlers::{
    Failed, Produced, backend_failure, one_server, produced, run, shut_down, single_failure,
};
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
    /// Most bytes of one payload (`list_budget_bytes`).
    budget: usize,
    /// Show items whose audience leaves out the assistant (`show_user_audience`).
    every_audience: bool,
    /// Complete listings kept behind continuations and filters.
    cache: ListingCache,
}

#[derive(Debug, Default, Deserialize)]
struct ListArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default, rename = "mimeType")]
    mime_type: Option<String>,
    #[serde(default)]
    limit: Option<Value>,
    #[serde(default)]
    sort: Option<String>,
}

/// Pages one continuation of a filtered list may follow before it stops.
const MAX_SCAN_PAGES: usize = 1_000;

/// An item with the server it came from, next to the item's own MCP fields.
#[derive(Serialize)]
struct WithServer<'a, T: Listed> {
    server: &'a str,
    #[serde(flatten)]
    item: Cow<'a, T>,
}

/// Items of one kind, as the list tools see them.
trait Kind: Listed + Sized {
    /// Codex's key for them in a payload.
    const KEY: &'static str;
    fn slice(items: &Items) -> &[Self];
    fn take(items: Items) -> Vec<Self>;
    fn wrap(items: Vec<Self>) -> Items;
}

/// `Kind` for the item type held by `Items::$variant`.
macro_rules! kind {
    ($type:ty, $variant:ident, $key:literal) => {
        impl Kind for $type {
            const KEY: &'static str = $key;
            fn slice(items: &Items) -> &[Self] {
                match items {
                    Items::$variant(items) => items,
                    _ => &[],
                }
            }
            fn take(items: Items) -> Vec<Self> {
                match items {
                    Items::$variant(items) => items,
                    _ => Vec::new(),
                }
            }
            fn wrap(items: Vec<Self>) -> Items {
                Items::$variant(items)
            }
        }
    };
}

kind!(Resource, Resources, "resources");
kind!(ResourceTemplate, Templates, "resourceTemplates");

/// A server not shown in full in an all-server list, and how to go on.
#[derive(Serialize)]
struct Incomplete {
    server: String,
    shown: usize,
    total: usize,
    #[serde(rename = "nextCursor")]
    next_cursor: String,
}

/// A list payload in Codex's shape — `{"server", "resources"|"resourceTemplates", "nextCursor"}`
/// for one server, `{"server": null, …, "errors"?}` for all — plus, only when they apply,
/// `incomplete` (servers not shown in full) and `matched` (how many items a query or type
/// matched).
struct Payload<'a, T: Kind> {
    server: Option<&'a str>,
    items: Vec<WithServer<'a, T>>,
    /// `Some` for a single-server payload (the key is always there, `null` at the end).
    next_cursor: Option<Option<String>>,
    errors: Vec<ServerFailure>,
    incomplete: Vec<Incomplete>,
    matched: Option<usize>,
    /// When the listing was taken, if it came from the cache.
    listed_at: Option<String>,
}

impl<T: Kind> Serialize for Payload<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("server", &self.server)?;
        map.serialize_entry(T::KEY, &self.items)?;
        if let Some(next) = &self.next_cursor {
            map.serialize_entry("nextCursor", next)?;
        }
        if !self.errors.is_empty() {
            map.serialize_entry("errors", &self.errors)?;
        }
        if !self.incomplete.is_empty() {
            map.serialize_entry("incomplete", &self.incomplete)?;
        }
        if let Some(matched) = self.matched {
            map.serialize_entry("matched", &matched)?;
        }
        if let Some(listed_at) = &self.listed_at {
            map.serialize_entry("listed_at", listed_at)?;
        }
        map.end()
    }
}

impl<'a, T: Kind> Payload<'a, T> {
    fn new(server: Option<&'a str>) -> Self {
        Self {
            server,
            items: Vec::new(),
            next_cursor: None,
            errors: Vec::new(),
            incomplete: Vec::new(),
            matched: None,
            listed_at: None,
        }
    }
}

/// The servers whose listing failed or stopped, with why.
fn failures<'a>(listings: impl IntoIterator<Item = &'a ServerListing>) -> Vec<ServerFailure> {
    listings
        .into_iter()
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
        failed_servers: failures(listings.iter()),
    }
}

/// The filters and limit of a call, checked.
struct Request {
    filter: Filter,
    limit: usize,
}

fn request(args: &mut ListArgs) -> Result<Request, FunctionCallError> {
    let limit = match args.limit.take() {
        None | Some(Value::Null) => usize::MAX,
        Some(value) => value
            .as_u64()
            .filter(|n| *n >= 1)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| respond(format!("limit must be a positive integer, got {value}")))?,
    };
    let by_priority = match normalize_optional_string(args.sort.take()).as_deref() {
        None => false,
        Some("priority") => true,
        Some(other) => {
            return Err(respond(format!("sort must be \"priority\" (or absent), got \"{other}\"")));
        }
    };
    let filter = Filter {
        query: normalize_optional_string(args.query.take()),
        mime_type: normalize_optional_string(args.mime_type.take()),
        by_priority,
    };
    Ok(Request { filter, limit })
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
            cache: ListingCache::new(policy.list_cache, policy.list_cache_bytes),
        }
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

    async fn all_servers(&self, request: Request) -> Result<Produced, Failed> {
        // A filtered list is served from the kept listings when every server of the last
        // complete all-server listing still has a fresh one; a plain list always asks.
        if !request.filter.is_empty()
            && let Some((kept, oldest)) = self.cached_all()
        {
            let listings: Vec<Arc<ServerListing>> =
                kept.iter().map(|k| k.listing.clone()).collect();
            let kept: Vec<Option<Arc<Cached>>> = kept.into_iter().map(Some).collect();
            let summary = ResourceCallSummary {
                items: listings.iter().map(|l| l.items.len()).sum(),
                pages: 0,
                servers: listings.len(),
                failed_servers: Vec::new(),
            };
            let listed_at = Some(mcp_backend::rfc3339(oldest));
            return self.all_servers_from(&listings, &kept, &request, summary, listed_at);
        }
        let listings = self.backend.list_all(self.kind).await.map_err(|_| shut_down(None))?;
        let summary = aggregate_summary(&listings);
        let complete = listings.iter().all(|l| l.error.is_none());
        let listings: Vec<Arc<ServerListing>> = listings.into_iter().map(Arc::new).collect();
        let produced = self.all_servers_from(&listings, &[], &request, summary, None);
        self.cache
            .set_last_all(complete.then(|| listings.iter().map(|l| l.server.clone()).collect()));
        for listing in listings {
            let generation = self.backend.listing_generation(&listing.server);
            self.cache.put(listing, generation);
        }
        produced
    }

    fn all_servers_from(
        &self,
        listings: &[Arc<ServerListing>],
        kept: &[Option<Arc<Cached>>],
        request: &Request,
        summary: ResourceCallSummary,
        listed_at: Option<String>,
    ) -> Result<Produced, Failed> {
        match self.kind {
            ListKind::Resources => {
                self.all_servers_of::<Resource>(listings, kept, request, summary, listed_at)
            }
            ListKind::Templates => {
                self.all_servers_of::<ResourceTemplate>(listings, kept, request, summary, listed_at)
            }
        }
    }

    /// Every server's kept listing, if the last all-server listing's servers all have a fresh
    /// one, and when the oldest was taken.
    fn cached_all(&self) -> Option<(Vec<Arc<Cached>>, std::time::SystemTime)> {
        let servers = self.cache.last_all()?;
        let mut kept = Vec::with_capacity(servers.len());
        let mut oldest = std::time::SystemTime::now();
        for server in servers {
            let cached = self.cache.get(&server, self.backend.listing_generation(&server))?;
            oldest = oldest.min(cached.listed_at);
            kept.push(cached);
        }
        Some((kept, oldest))
    }

    /// The all-server payload: every server's visible (and matching) items, as many as fit,
    /// the budget shared so that every server with items is represented.
    fn all_servers_of<T: Kind>(
        &self,
        listings: &[Arc<ServerListing>],
        kept: &[Option<Arc<Cached>>],
        request: &Request,
        summary: ResourceCallSummary,
        listed_at: Option<String>,
    ) -> Result<Produced, Failed> {
        let filter = &request.filter;
        let matcher = filter.matcher();
        // Per server: the indices of the items the model may see, in the order shown.
        let candidates: Vec<Vec<usize>> = listings
            .iter()
            .enumerate()
            .map(|(s, listing)| {
                let items = T::slice(&listing.items);
                // A kept listing answers a query from its search index; the rest is checked
                // item by item.
                let searched = matcher.query().and_then(|query| {
                    kept.get(s).and_then(Option::as_ref).and_then(|k| k.search(items, query))
                });
                let all: Box<dyn Iterator<Item = usize>> = match searched {
                    Some(found) => Box::new(found.into_iter()),
                    None => Box::new(0..items.len()),
                };
                let mut chosen: Vec<usize> = all
                    .filter(|i| {
                        for_assistant(&items[*i], self.every_audience)
                            && matcher.matches(&items[*i])
                    })
                    .collect();
                if filter.by_priority {
                    sort_by_priority(items, &mut chosen);
                }
                chosen
            })
            .collect();
        let continuation = |s: usize, next: usize| -> Continuation {
            let listing = &listings[s];
            if filter.by_priority {
                return Continuation { page: None, offset: next, filter: filter.clone() };
            }
            let index = candidates[s].get(next).copied().unwrap_or(T::slice(&listing.items).len());
            let (page, offset) = position(&listing.page_starts, index);
            Continuation { page, offset, filter: filter.clone() }
        };
        // What the payload costs besides items, at most: every server with items incomplete,
        // with the longest cursor it could get.
        let mut envelope = Payload::<T>::new(None);
        envelope.errors = failures(listings.iter().map(|l| &**l));
        envelope.matched = filter.selects().then_some(usize::MAX);
        envelope.listed_at = listed_at.clone();
        for (s, listing) in listings.iter().enumerate() {
            if candidates[s].is_empty() {
                continue;
            }
            let longest =
                listing.page_starts.iter().filter_map(|p| p.cursor.clone()).max_by_key(String::len);
            let worst = Continuation { page: longest, offset: usize::MAX, filter: filter.clone() };
            envelope.incomplete.push(Incomplete {
                server: listing.server.clone(),
                shown: usize::MAX,
                total: usize::MAX,
                next_cursor: worst.encode(),
            });
        }
        let room = self.budget.saturating_sub(json_len(&envelope));
        let sizes: Vec<Vec<usize>> = listings
            .iter()
            .zip(&candidates)
            .map(|(listing, chosen)| {
                let items = T::slice(&listing.items);
                chosen
                    .iter()
                    .map(|i| {
                        json_len(&WithServer {
                            server: &listing.server,
                            item: model_view(&items[*i]),
                        })
                    })
                    .collect()
            })
            .collect();
        let shown = share(&sizes, room, request.limit);
        let mut payload = Payload::<T>::new(None);
        payload.errors = envelope.errors;
        payload.listed_at = listed_at;
        payload.matched = filter.selects().then(|| candidates.iter().map(Vec::len).sum());
        for (s, listing) in listings.iter().enumerate() {
            let items = T::slice(&listing.items);
            payload.items.extend(candidates[s][..shown[s]].iter().map(|i| WithServer {
                server: listing.server.as_str(),
                item: model_view(&items[*i]),
            }));
            if shown[s] < candidates[s].len() {
                payload.incomplete.push(Incomplete {
                    server: listing.server.clone(),
                    shown: shown[s],
                    total: candidates[s].len(),
                    next_cursor: continuation(s, shown[s]).encode(),
                });
            }
        }
        produced(&payload, summary)
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
        let request = Request { filter, limit: request.limit };
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
        let kept = self.cache.get(server, self.backend.listing_generation(server));
        let start_was_ours = start.is_some();
        if request.filter.is_empty() && (start.is_none() || kept.is_none()) {
            // One page of the server, as Codex asks for it; cut if it does not fit.
            let (page_cursor, offset) = match start {
                Some(start) => (start.page, start.offset),
                None => (cursor, 0),
            };
            let continuing = start_was_ours;
            return self
                .one_page::<T>(server, page_cursor, offset, request.limit, continuing)
                .await;
        }
        self.scan::<T>(server, start, request, kept).await
    }

    /// One page of the server. `continuing`: the page was named by a continuation of ours, so
    /// a server refusing its cursor (the list changed, the cursor expired) gets the advice to
    /// list again.
    async fn fetch<T: Kind>(
        &self,
        server: &str,
        cursor: Option<String>,
        continuing: bool,
    ) -> Result<(Vec<T>, Option<String>), Failed> {
        let method = self.kind.method();
        let page = self.backend.list(server, self.kind, cursor).await.map_err(|e| match e {
            e @ mcp_backend::McpError::Server { .. } if continuing => single_failure(
                server,
                format!("{method} failed: {e}; the page this cursor continues is gone: list again without a cursor"),
            ),
            e => backend_failure(server, method, e),
        })?;
        Ok((T::take(page.items), page.next_cursor))
    }

    async fn one_page<T: Kind>(
        &self,
        server: &str,
        page_cursor: Option<String>,
        offset: usize,
        limit: usize,
        continuing: bool,
    ) -> Result<Produced, Failed> {
        let (items, next_cursor) = self.fetch::<T>(server, page_cursor.clone(), continuing).await?;
        if offset > items.len() {
            return Err(single_failure(server, stale_cursor()));
        }
        let visible: Vec<usize> = (offset..items.len())
            .filter(|i| for_assistant(&items[*i], self.every_audience))
            .collect();
        let longest =
            Continuation { page: page_cursor.clone(), offset: usize::MAX, ..Default::default() };
        let mut envelope = Payload::<T>::new(Some(server));
        let worst = [next_cursor.clone().unwrap_or_default(), longest.encode()]
            .into_iter()
            .max_by_key(String::len);
        envelope.next_cursor = Some(worst);
        let room = self.budget.saturating_sub(json_len(&envelope));
        let sizes: Vec<usize> = visible
            .iter()
            .map(|i| json_len(&WithServer { server, item: model_view(&items[*i]) }))
            .collect();
        let shown = fit(&sizes, room, limit);
        let mut payload = Payload::<T>::new(Some(server));
        payload.items = visible[..shown]
            .iter()
            .map(|i| WithServer { server, item: model_view(&items[*i]) })
            .collect();
        payload.next_cursor = Some(match visible.get(shown) {
            // Everything of the page fits: the server's own cursor, as Codex passes it on.
            None => next_cursor.clone(),
            Some(next) => Some(
                Continuation { page: page_cursor, offset: *next, ..Default::default() }.encode(),
            ),
        });
        produced(&payload, one_server(items.len()))
    }

    /// A filtered or sorted list of one server: its pages followed from the start position to
    /// the end (the count of matches needs them all), then as many matches as fit.
    async fn scan<T: Kind>(
        &self,
        server: &str,
        start: Option<Continuation>,
        request: Request,
        kept: Option<std::sync::Arc<Cached>>,
    ) -> Result<Produced, Failed> {
        let filter = &request.filter;
        let continuing = start.is_some();
        let start = start.unwrap_or_default();
        // With a sort the offset counts sorted matches: list from the first page.
        let (mut page_cursor, mut skip, sorted_skip) = if filter.by_priority {
            (None, 0, start.offset)
        } else {
            (start.page.clone(), start.offset, 0)
        };
        // Every item from the start position on, with where it sits: from the kept listing
        // when there is one (and it has the page the position names), else from the server.
        let mut items: Vec<T> = Vec::new();
        let mut places: Vec<(Option<String>, usize)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut pages = 0;
        let mut stopped = None;
        let mut listed_at = None;
        let from_start = page_cursor.is_none() && skip == 0;
        // From a kept listing, the items are read where they are (never copied).
        let mut kept_from: Option<(Arc<ServerListing>, usize)> = None;
        if let Some(kept) = kept.as_deref()
            && let Some(first) = kept_position(kept, page_cursor.as_ref(), skip)
        {
            if first > T::slice(&kept.listing.items).len() {
                return Err(single_failure(server, stale_cursor()));
            }
            kept_from = Some((kept.listing.clone(), first));
            listed_at = Some(mcp_backend::rfc3339(kept.listed_at));
        } else {
            loop {
                let (page, next) = self.fetch::<T>(server, page_cursor.clone(), continuing).await?;
                pages += 1;
                if skip > page.len() {
                    return Err(single_failure(server, stale_cursor()));
                }
                for (index, item) in page.into_iter().enumerate().skip(skip) {
                    items.push(item);
                    places.push((page_cursor.clone(), index));
                }
                skip = 0;
                match next {
                    None => break,
                    Some(next) if !seen.insert(next.clone()) || pages >= MAX_SCAN_PAGES => {
                        stopped = Some(format!(
                            "{} stopped after {pages} pages (a repeated cursor or the page cap); the matches are incomplete",
                            self.kind.method()
                        ));
                        break;
                    }
                    Some(next) => page_cursor = Some(next),
                }
            }
            if from_start && stopped.is_none() {
                let listing = self.keep(server, std::mem::take(&mut items), &places);
                kept_from = Some((listing, 0));
            }
        }
        // The items from the start position on, and where item `i` of them sits.
        let items: &[T] = match &kept_from {
            Some((listing, first)) => T::slice(&listing.items).get(*first..).unwrap_or(&[]),
            None => &items,
        };
        let place = |i: usize| -> (Option<String>, usize) {
            match &kept_from {
                Some((listing, first)) => position(&listing.page_starts, first + i),
                None => places[i].clone(),
            }
        };
        let matcher = filter.matcher();
        // A kept listing answers a query from its search index.
        let searched = match (&kept_from, kept.as_deref(), matcher.query()) {
            (Some((listing, first)), Some(k), Some(query)) if Arc::ptr_eq(listing, &k.listing) => k
                .search(T::slice(&listing.items), query)
                .map(|found| found.into_iter().filter(|i| i >= first).map(|i| i - first).collect()),
            _ => None,
        };
        let all: Vec<usize> = searched.unwrap_or_else(|| (0..items.len()).collect());
        let mut chosen: Vec<usize> = all
            .into_iter()
            .filter(|i| {
                for_assistant(&items[*i], self.every_audience) && matcher.matches(&items[*i])
            })
            .collect();
        if filter.by_priority {
            sort_by_priority(items, &mut chosen);
        }
        let matched = chosen.len();
        if sorted_skip > chosen.len() {
            return Err(single_failure(server, stale_cursor()));
        }
        let window = &chosen[sorted_skip..];
        let longest = match &kept_from {
            Some((listing, _)) => {
                listing.page_starts.iter().filter_map(|p| p.cursor.clone()).max_by_key(String::len)
            }
            None => places.iter().filter_map(|(c, _)| c.clone()).max_by_key(String::len),
        };
        let worst = Continuation { page: longest, offset: usize::MAX, filter: filter.clone() };
        let mut envelope = Payload::<T>::new(Some(server));
        envelope.next_cursor = Some(Some(worst.encode()));
        envelope.matched = filter.selects().then_some(usize::MAX);
        envelope.listed_at = listed_at.clone();
        if let Some(error) = &stopped {
            envelope
                .errors
                .push(ServerFailure { server: server.to_string(), error: error.clone() });
        }
        let room = self.budget.saturating_sub(json_len(&envelope));
        let sizes: Vec<usize> = window
            .iter()
            .map(|i| json_len(&WithServer { server, item: model_view(&items[*i]) }))
            .collect();
        let shown = fit(&sizes, room, request.limit);
        let mut payload = Payload::<T>::new(Some(server));
        payload.items = window[..shown]
            .iter()
            .map(|i| WithServer { server, item: model_view(&items[*i]) })
            .collect();
        payload.next_cursor = Some(window.get(shown).map(|next| {
            let continuation = if filter.by_priority {
                Continuation { page: None, offset: sorted_skip + shown, filter: filter.clone() }
            } else {
                let (page, offset) = place(*next);
                Continuation { page, offset, filter: filter.clone() }
            };
            continuation.encode()
        }));
        payload.matched = filter.selects().then_some(matched);
        payload.errors = envelope.errors;
        payload.listed_at = listed_at;
        let summary = ResourceCallSummary {
            items: items.len(),
            pages,
            servers: 1,
            failed_servers: payload.errors.clone(),
        };
        produced(&payload, summary)
    }
}

impl McpListHandler {
    /// Keep a complete scan of `server` as its listing (the scan started at the first page).
    fn keep<T: Kind>(
        &self,
        server: &str,
        items: Vec<T>,
        places: &[(Option<String>, usize)],
    ) -> Arc<ServerListing> {
        let page_starts = places
            .iter()
            .enumerate()
            .filter(|(_, (_, in_page))| *in_page == 0)
            .map(|(index, (cursor, _))| mcp_backend::PageStart { index, cursor: cursor.clone() })
            .collect();
        let listing = ServerListing {
            server: server.to_string(),
            items: T::wrap(items),
            pages: 0,
            error: None,
            page_starts,
            ttl_ms: None,
        };
        let listing = Arc::new(listing);
        self.cache.put(listing.clone(), self.backend.listing_generation(server));
        listing
    }
}

/// The index in a kept listing of "page `cursor`, `offset` items in"; `None` when the listing
/// has no such page (the position came from another listing).
fn kept_position(kept: &Cached, cursor: Option<&String>, offset: usize) -> Option<usize> {
    if cursor.is_none() && kept.listing.page_starts.is_empty() {
        return Some(offset);
    }
    let start = kept.listing.page_starts.iter().find(|p| p.cursor.as_ref() == cursor)?;
    Some(start.index + offset)
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
        let event_invocation = McpInvocation {
            server: server.clone(),
            tool: invocation.tool_name,
            arguments: invocation.arguments,
        };
        let work = async {
            match &server {
                None => self.all_servers(request).await,
                Some(server) => self.one_server(server, cursor, request).await,
            }
        };
        run(ctx, &invocation.call_id, event_invocation, self.backend.as_ref(), work).await.0
    }
}
