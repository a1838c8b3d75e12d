//! A scripted [`McpBackend`] for unit tests of exact strings and shapes. Real servers are
//! exercised by the integration tests of the `mcp-router` crate.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_backend::{
    Aggregate, Follow, Items, KeptListings, ListKind, ListingStop, McpBackend, McpError, Page,
    QualifiedTool, Reuse, ServerListing, SharedListing, qualified_tool_name, resolve_tool_name,
};
use rmcp::model::{
    CallToolResult, CompletionInfo, ContentBlock, JsonObject, ReadResourceResult, Resource,
    ResourceContents, Tool,
};
use router_protocol::{EventMsg, EventReceiver, ResourceChange, event_channel};

use crate::invocation::{CallContext, FunctionCallError, ToolCall, ToolOutput};
use crate::results::content::ContentPolicy;
use crate::router::ToolRouter;

#[derive(Default, Clone)]
pub(crate) struct FakeServer {
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<rmcp::model::ResourceTemplate>,
    pub(crate) page_size: usize,
    pub(crate) fail: Option<McpError>,
    pub(crate) tools: Vec<Tool>,
    /// Completion candidates; `Some` declares the completions capability.
    pub(crate) completions: Option<Vec<String>>,
    /// Exact read answers by URI (checked before the generated text).
    pub(crate) reads: Vec<(String, Vec<ResourceContents>)>,
    /// Skills (SEP-2640); `Some` declares the extension.
    pub(crate) skills: Option<Vec<rmcp::model::Skill>>,
    /// The host's answer to a skill's approval (`None`: allow).
    pub(crate) refuse_skills: Option<String>,
    /// Prompts; `Some` declares the capability.
    pub(crate) prompts: Option<Vec<rmcp::model::Prompt>>,
    /// Tools only its app may call (MCP Apps).
    pub(crate) app_tools: Vec<Tool>,
}

pub(crate) struct FakeBackend {
    pub(crate) servers: BTreeMap<String, FakeServer>,
    shut_down: AtomicBool,
    /// Listings kept as the manager keeps them (30 s window).
    kept: KeptListings,
    /// Per server, bumped by [`FakeBackend::lists_changed`].
    generations: Mutex<BTreeMap<String, u64>>,
    /// Pages asked of any server so far.
    pub(crate) pages_asked: AtomicUsize,
    /// Changes waiting for `take_resource_changes`.
    changes: Mutex<Vec<ResourceChange>>,
    /// With `Some`, calls go to the background: the tasks there (server, task, its result).
    pub(crate) background: Option<Mutex<Vec<(String, String, CallToolResult)>>>,
    /// Exposes no optional capability (skills, prompts, tasks, apps): a backend with the core
    /// only.
    pub(crate) core_only: bool,
}

impl FakeBackend {
    pub(crate) fn with(servers: Vec<(&str, FakeServer)>) -> Arc<Self> {
        let servers = servers.into_iter().map(|(n, s)| (n.to_string(), s)).collect();
        Arc::new(Self {
            servers,
            shut_down: AtomicBool::new(false),
            kept: KeptListings::new(std::time::Duration::from_secs(30), usize::MAX),
            generations: Mutex::default(),
            pages_asked: AtomicUsize::new(0),
            changes: Mutex::default(),
            background: None,
            core_only: false,
        })
    }

    /// A backend with the core only: no skills, prompts, tasks or apps, whatever its servers
    /// would offer.
    pub(crate) fn core_only(servers: Vec<(&str, FakeServer)>) -> Arc<Self> {
        let mut backend = Arc::try_unwrap(Self::with(servers)).ok().expect("just made");
        backend.core_only = true;
        Arc::new(backend)
    }

    /// A backend that hands calls to the background, with `tasks` (server, task, result)
    /// there already.
    pub(crate) fn backgrounding(
        servers: Vec<(&str, FakeServer)>,
        tasks: Vec<(&str, &str, CallToolResult)>,
    ) -> Arc<Self> {
        let mut backend = Arc::try_unwrap(Self::with(servers)).ok().expect("just made");
        let tasks = tasks.into_iter().map(|(s, t, r)| (s.to_string(), t.to_string(), r));
        backend.background = Some(Mutex::new(tasks.collect()));
        Arc::new(backend)
    }

    /// `server`'s list from the page `from` names, asked page by page (kept when from the
    /// first page), as the manager does: an all-server list asks afresh too.
    async fn fresh(
        &self,
        server: &str,
        kind: ListKind,
        from: Option<String>,
    ) -> Result<SharedListing, McpError> {
        self.server(server)?;
        let generation = self.generation(server);
        let follow = Follow { server, max_pages: mcp_backend::DEFAULT_MAX_PAGES };
        let listing = follow.listing(kind, from.clone(), |c| self.list(server, kind, c)).await;
        let listing = Arc::new(listing);
        if from.is_none() {
            self.kept.put(&listing, generation);
        }
        Ok(SharedListing { listing, kept_at: None })
    }

    /// `server` says its lists changed: what was kept of them is stale.
    pub(crate) fn lists_changed(&self, server: &str) {
        *self.generations.lock().expect("generations").entry(server.to_string()).or_default() += 1;
    }

    fn generation(&self, server: &str) -> u64 {
        self.generations.lock().expect("generations").get(server).copied().unwrap_or(0)
    }

    /// `uri` of `server`, read before, changed (as `resources/updated` reports it).
    pub(crate) fn resource_changed(&self, server: &str, uri: &str) {
        self.changes.lock().expect("changes").push(ResourceChange {
            server: server.to_string(),
            uri: uri.to_string(),
            detected_at: "2026-11-24T00:00:00.000Z".to_string(),
        });
    }

    /// From now on every request fails with `McpError::ShutDown`, as the manager's do.
    pub(crate) fn shut_down(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
    }

    fn live(&self) -> Result<(), McpError> {
        if self.shut_down.load(Ordering::SeqCst) { Err(McpError::ShutDown) } else { Ok(()) }
    }

    pub(crate) fn server(&self, name: &str) -> Result<&FakeServer, McpError> {
        self.live()?;
        let server =
            self.servers.get(name).ok_or_else(|| McpError::UnknownServer(name.to_string()))?;
        match &server.fail {
            Some(e) => Err(e.clone()),
            None => Ok(server),
        }
    }
}

/// A page at `cursor` (an offset; any other cursor, `""` included, is refused as servers do).
fn page<T: Clone>(
    items: &[T],
    size: usize,
    cursor: Option<String>,
) -> Result<(Vec<T>, Option<String>), McpError> {
    let size = if size == 0 { items.len().max(1) } else { size };
    let start: usize = match cursor {
        None => 0,
        Some(c) => c.parse().map_err(|_| McpError::Server {
            code: -32602,
            message: format!("Invalid cursor: {c:?}"),
            data: None,
        })?,
    };
    let start = start.min(items.len());
    let end = (start + size).min(items.len());
    Ok((items[start..end].to_vec(), (end < items.len()).then(|| end.to_string())))
}

#[async_trait]
impl McpBackend for FakeBackend {
    async fn list(
        &self,
        server: &str,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page, McpError> {
        let s = self.server(server)?;
        self.pages_asked.fetch_add(1, Ordering::SeqCst);
        let (items, next_cursor) = match kind {
            ListKind::Resources => {
                let (items, next) = page(&s.resources, s.page_size, cursor)?;
                (Items::Resources(items), next)
            }
            ListKind::Templates => {
                let (items, next) = page(&s.templates, s.page_size, cursor)?;
                (Items::Templates(items), next)
            }
        };
        Ok(Page { items, next_cursor, ttl_ms: None })
    }
    async fn listing(
        &self,
        server: &str,
        kind: ListKind,
        from: Option<String>,
    ) -> Result<SharedListing, McpError> {
        if let Some(kept) = self.kept_listing(server, kind)
            && kept.listing.page_starts.iter().any(|p| p.cursor == from)
        {
            return Ok(kept);
        }
        self.fresh(server, kind, from).await
    }
    fn kept_listing(&self, server: &str, kind: ListKind) -> Option<SharedListing> {
        self.kept.get(server, kind, self.generation(server))
    }
    async fn list_all(&self, kind: ListKind, reuse: Reuse) -> Result<Aggregate, McpError> {
        self.live()?;
        if reuse == Reuse::Kept
            && let Some(kept) = self.kept.all_kept(kind, |server| Some(self.generation(server)))
        {
            return Ok(kept);
        }
        let mut all = Vec::new();
        for name in self.servers.keys() {
            let shared = match self.server(name) {
                Err(e) => {
                    let mut listing = ServerListing::empty(name, kind);
                    listing.error = Some(ListingStop::Unreachable(e));
                    SharedListing::fresh(listing)
                }
                Ok(_) => self.fresh(name, kind, None).await?,
            };
            all.push(shared);
        }
        let complete = all.iter().all(|l| l.listing.error.is_none());
        let servers = complete.then(|| self.servers.keys().cloned().collect());
        self.kept.set_last_all(kind, servers);
        Ok(all)
    }
    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
        let s = self.server(server)?;
        if let Some((_, contents)) = s.reads.iter().find(|(u, _)| u == uri) {
            return Ok(ReadResourceResult::new(contents.clone()));
        }
        let by_template = s.templates.iter().any(|t| {
            uri_template::UriTemplate::parse(&t.uri_template)
                .is_ok_and(|p| p.match_uri(uri).is_some())
        });
        if by_template || s.resources.iter().any(|r| r.uri == uri) {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(format!("text of {uri}"), uri)]))
        } else {
            Err(McpError::Server {
                code: -32002,
                message: format!("Resource not found: {uri}"),
                data: None,
            })
        }
    }
    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        let _ = self.server(server)?;
        match tool {
            "echo" => {
                let text = arguments
                    .as_ref()
                    .and_then(|a| a.get("text"))
                    .and_then(|t| t.as_str())
                    .unwrap_or("");
                Ok(CallToolResult::success(vec![ContentBlock::text(format!("Echo: {text}"))]))
            }
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("this tool always fails")])),
            "link" => {
                let uri = arguments.as_ref().and_then(|a| a.get("text")).and_then(|t| t.as_str());
                let link = Resource::new(uri.unwrap_or("memo://linked"), "linked");
                Ok(CallToolResult::success(vec![ContentBlock::resource_link(link)]))
            }
            "slow" => Err(McpError::Timeout {
                server: "figma".into(),
                method: "tools/call",
                timeout: std::time::Duration::from_secs(60),
            }),
            other => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "unknown tool: {other}"
            ))])),
        }
    }
    async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        let s = self.server(server)?;
        let Some(all) = &s.completions else {
            return Err(McpError::Server {
                code: -32601,
                message: "Method not found".into(),
                data: None,
            });
        };
        if !s.templates.iter().any(|t| t.uri_template == template) || argument.is_empty() {
            return Err(McpError::Server {
                code: -32602,
                message: format!("Unknown resource template: {template}"),
                data: None,
            });
        }
        let mut info = CompletionInfo::default();
        info.values = all.iter().filter(|v| v.starts_with(value)).cloned().collect();
        info.total = u32::try_from(info.values.len()).ok();
        info.has_more = Some(false);
        Ok(info)
    }
    async fn supports_completions(&self) -> bool {
        self.servers.values().any(|s| s.completions.is_some())
    }
    async fn list_tools(&self) -> Vec<QualifiedTool> {
        self.servers
            .iter()
            .flat_map(|(name, s)| {
                s.tools.iter().map(move |t| QualifiedTool {
                    qualified_name: qualified_tool_name(name, &t.name),
                    server: name.clone(),
                    tool: t.clone(),
                })
            })
            .collect()
    }
    fn take_resource_changes(&self) -> Vec<ResourceChange> {
        std::mem::take(&mut *self.changes.lock().expect("changes"))
    }
    async fn resolve_tool(&self, qualified_name: &str) -> Option<(String, String)> {
        // The manager's rule, with every tool allowed (the fake has no filters).
        let listed = self.list_tools().await;
        let servers = self.servers.keys().map(String::as_str);
        resolve_tool_name(qualified_name, &listed, servers, |_, _| true)
    }
    fn skills(&self) -> Option<&dyn mcp_backend::SkillsBackend> {
        (!self.core_only).then_some(self as &dyn mcp_backend::SkillsBackend)
    }
    fn prompts(&self) -> Option<&dyn mcp_backend::PromptsBackend> {
        (!self.core_only).then_some(self as &dyn mcp_backend::PromptsBackend)
    }
    fn tasks(&self) -> Option<&dyn mcp_backend::TasksBackend> {
        let backgrounding = self.background.is_some() && !self.core_only;
        backgrounding.then_some(self as &dyn mcp_backend::TasksBackend)
    }
    fn apps(&self) -> Option<&dyn mcp_backend::AppsBackend> {
        (!self.core_only).then_some(self as &dyn mcp_backend::AppsBackend)
    }
}

pub(crate) fn resource(uri: &str, name: &str) -> Resource {
    Resource::new(uri, name).with_mime_type("text/plain")
}

pub(crate) fn tool(name: &str) -> Tool {
    let schema: JsonObject = serde_json::from_value(
        serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    )
    .unwrap_or_default();
    Tool::new(name.to_string(), format!("The {name} tool."), schema)
}

/// Run one call through the standard router over `backend` (data sources when `data` is given),
/// as the model would: the router parses the arguments and picks the handler.
pub(crate) async fn dispatch(
    backend: Arc<FakeBackend>,
    data: Option<Arc<data_sources::DataSources>>,
    name: &str,
    arguments: &str,
) -> (Result<ToolOutput, FunctionCallError>, Vec<EventMsg>) {
    let router = ToolRouter::build(
        backend,
        ContentPolicy::default(),
        data,
        Default::default(),
        Default::default(),
    );
    let (ctx, mut rx) = context();
    let call =
        ToolCall { call_id: "call-1".into(), name: name.into(), arguments: arguments.into() };
    let result = router.dispatch(&ctx, call).await;
    (result, drain(&mut rx))
}

/// A context and the events it received.
pub(crate) fn context() -> (CallContext, EventReceiver) {
    let (tx, rx) = event_channel();
    (CallContext::new(tx), rx)
}

pub(crate) fn drain(rx: &mut EventReceiver) -> Vec<EventMsg> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}
