//! The connection manager: starts every enabled server concurrently, bounds every request by the
//! server's tool timeout, and aggregates all-server lists (each server paged to the end, guarded
//! against cursor cycles and runaway paging, sorted by server name, failures reported).

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, CallToolResult, CompleteRequestParams, CompletionInfo,
    JsonObject, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResult, Reference, Resource, ResourceTemplate, Tool,
};
use router_protocol::{
    EventMsg, EventSender, McpServerFailedEvent, McpServerReadyEvent, McpServerRestartingEvent,
    McpServerStartingEvent, ServerCapabilitySummary,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::client::{self, Connection, RouterClient, SharedConnection};
use crate::config::{ServerConfig, TransportConfig};
use crate::error::McpError;
use crate::host::{DefaultHost, HostHandler};
use crate::qualify::qualified_tool_name;

/// Tunables that are not per server.
#[derive(Debug, Clone)]
pub struct ManagerOptions {
    /// Most pages followed per server by an all-server list; reaching it stops that server's
    /// listing, keeps what was gathered and reports the server in `errors`.
    pub max_list_pages: usize,
    /// How long a stdio server gets to exit after SIGTERM at shutdown before its group is killed.
    pub shutdown_grace: Duration,
    /// Restarts of a server that died or failed to start, before it stays failed.
    pub max_restarts: u32,
    /// Wait after a failed start before the next use may try again; doubles per failure
    /// (capped at 30 s).
    pub restart_backoff: Duration,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        Self {
            max_list_pages: 1_000,
            shutdown_grace: Duration::from_secs(2),
            max_restarts: 5,
            restart_backoff: Duration::from_millis(500),
        }
    }
}

/// A server that stayed up this long has its restart count reset when it dies.
const STABLE_UPTIME: Duration = Duration::from_secs(60);

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// `initialize` has not finished yet.
    Starting,
    /// Usable.
    Ready,
    /// Could not be started; the reason.
    Failed(String),
}

/// An MCP tool with its model-visible qualified name.
#[derive(Debug, Clone)]
pub struct QualifiedTool {
    /// `mcp__{server}__{tool}` after sanitising and hashing.
    pub qualified_name: String,
    /// The configured server name.
    pub server: String,
    /// The tool as the server described it (original name kept for the call).
    pub tool: Tool,
}

/// One server's part of an all-server list.
#[derive(Debug, Clone)]
pub struct ServerListing<T> {
    /// The configured server name.
    pub server: String,
    /// What it returned, in its own order (possibly partial when `error` is set).
    pub items: Vec<T>,
    /// Pages fetched.
    pub pages: usize,
    /// Why the listing is missing or incomplete.
    pub error: Option<String>,
}

/// The answer of every server that offers resources, sorted by server name.
pub type Aggregate<T> = Vec<ServerListing<T>>;

#[derive(Clone)]
enum ServerState {
    Starting,
    Ready { conn: SharedConnection, since: Instant },
    Failed { error: Arc<str>, retry_at: Instant },
}

struct ManagedServer {
    config: ServerConfig,
    state: watch::Sender<ServerState>,
    /// Restarts so far (reset after a stable run).
    restarts: std::sync::atomic::AtomicU32,
}

/// The qualified tools and the ready connections they were computed from.
type ToolCache = (Vec<std::sync::Weak<Connection>>, Arc<Vec<QualifiedTool>>);

/// Runs many MCP servers. Cheap to share behind an `Arc`; every method takes `&self`.
///
/// A server whose connection closed (process exited, HTTP session gone) or that failed to start
/// is started again by the next request that needs it, after a doubling back-off, at most
/// `max_restarts` times; then it stays failed and says so. Each restart is announced with
/// `mcp_server_restarting` and bounded by the startup timeout.
pub struct McpConnectionManager {
    servers: BTreeMap<String, ManagedServer>,
    startups: std::sync::Mutex<Vec<JoinHandle<()>>>,
    options: ManagerOptions,
    events: EventSender,
    host: Arc<dyn HostHandler>,
    /// Qualified tools of the ready servers, and the connections they were computed from (weak,
    /// so an address cannot be reused by a new connection while the entry exists). Tool calls
    /// resolve names against it; it is rebuilt only when a server (re)started.
    tool_cache: std::sync::Mutex<Option<ToolCache>>,
}

impl McpConnectionManager {
    /// Start every enabled server concurrently and return at once: a server still starting is
    /// waited for (bounded by its startup timeout) by the first request that needs it.
    /// Must be called inside a tokio runtime.
    pub fn start(configs: Vec<ServerConfig>, events: EventSender, options: ManagerOptions) -> Self {
        Self::start_with_host(configs, events, options, Arc::new(DefaultHost))
    }

    /// Like [`McpConnectionManager::start`], with `host` answering the servers' elicitation,
    /// sampling and roots requests.
    pub fn start_with_host(
        configs: Vec<ServerConfig>,
        events: EventSender,
        options: ManagerOptions,
        host: Arc<dyn HostHandler>,
    ) -> Self {
        let mut servers = BTreeMap::new();
        let mut startups = Vec::new();
        for config in configs {
            if !config.enabled {
                tracing::info!(server = %config.name, "server disabled in config; not started");
                continue;
            }
            if servers.contains_key(&config.name) {
                tracing::warn!(server = %config.name, "duplicate server name; keeping the first");
                continue;
            }
            let (tx, _) = watch::channel(ServerState::Starting);
            let backoff = options.restart_backoff;
            startups.push(tokio::spawn(start_server(
                config.clone(),
                tx.clone(),
                events.clone(),
                host.clone(),
                backoff,
            )));
            let restarts = std::sync::atomic::AtomicU32::new(0);
            servers.insert(config.name.clone(), ManagedServer { config, state: tx, restarts });
        }
        Self {
            servers,
            startups: std::sync::Mutex::new(startups),
            options,
            events,
            host,
            tool_cache: std::sync::Mutex::new(None),
        }
    }

    /// Configured (enabled) server names, sorted.
    pub fn server_names(&self) -> Vec<String> {
        self.servers.keys().cloned().collect()
    }

    /// A server's current status, `None` if unknown.
    pub fn status(&self, server: &str) -> Option<ServerStatus> {
        let managed = self.servers.get(server)?;
        Some(match &*managed.state.borrow() {
            ServerState::Starting => ServerStatus::Starting,
            ServerState::Ready { conn, .. } if !conn.is_usable() => {
                ServerStatus::Failed("the connection closed".to_string())
            }
            ServerState::Ready { .. } => ServerStatus::Ready,
            ServerState::Failed { error, .. } => ServerStatus::Failed(error.to_string()),
        })
    }

    /// Whether the server declared the `completions` capability (false if unknown or not ready).
    pub async fn supports_completions(&self, server: &str) -> bool {
        self.connection(server).await.is_ok_and(|c| c.capabilities.completions.is_some())
    }

    /// Wait until no server is starting any more (each bounded by its startup timeout).
    pub async fn wait_until_started(&self) {
        join_all(self.servers.keys().map(|name| self.connection(name))).await;
    }

    /// One page of `resources/list` from one server.
    pub async fn list_resources(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, McpError> {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        self.request(server, "resources/list", |conn| async move {
            conn.service.list_resources(params).await
        })
        .await
    }

    /// One page of `resources/templates/list` from one server.
    pub async fn list_resource_templates(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        self.request(server, "resources/templates/list", |conn| async move {
            conn.service.list_resource_templates(params).await
        })
        .await
    }

    /// `resources/read` on one server.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, McpError> {
        let params = ReadResourceRequestParams::new(uri);
        self.request(server, "resources/read", |conn| async move {
            conn.service.read_resource(params).await
        })
        .await
    }

    /// `tools/call` on one server, by the tool's original name.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        self.request(
            server,
            "tools/call",
            |conn| async move { conn.service.call_tool(params).await },
        )
        .await
    }

    /// `completion/complete` for an argument of a resource template on one server.
    pub async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        let params = CompleteRequestParams::new(
            Reference::for_resource(template),
            ArgumentInfo::new(argument, value),
        );
        self.request(server, "completion/complete", |conn| async move {
            conn.service.complete(params).await.map(|r| r.completion)
        })
        .await
    }

    /// Whether any server declares the `completions` capability (after startups settle).
    pub async fn any_supports_completions(&self) -> bool {
        let checks = self.servers.keys().map(|name| self.supports_completions(name));
        join_all(checks).await.into_iter().any(|yes| yes)
    }

    /// Every server's resources, each paged to the end.
    pub async fn list_all_resources(&self) -> Aggregate<Resource> {
        self.aggregate("resources/list", |conn, cursor| async move {
            let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = conn.service.list_resources(params).await?;
            Ok((page.resources, page.next_cursor))
        })
        .await
    }

    /// Every server's resource templates, each paged to the end.
    pub async fn list_all_resource_templates(&self) -> Aggregate<ResourceTemplate> {
        self.aggregate("resources/templates/list", |conn, cursor| async move {
            let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = conn.service.list_resource_templates(params).await?;
            Ok((page.resource_templates, page.next_cursor))
        })
        .await
    }

    /// Every model-visible MCP tool, after all servers finished starting. Sorted by server name,
    /// each server's order kept; a qualified name already taken is skipped with a warning.
    pub async fn list_tools(&self) -> Vec<QualifiedTool> {
        self.wait_until_started().await;
        self.qualified_tools().as_ref().clone()
    }

    /// The server and original tool name behind a qualified name. Answers from the servers that
    /// are ready; only when that fails does it wait for the ones still starting.
    ///
    /// A name no server listed, `mcp__{server}__{tool}` with a configured server and a tool its
    /// filters allow, still resolves to that server (the longest matching server name wins): the
    /// server is the authority on its tools (its list may have changed since it was read), and
    /// for a tool it does not have, its own error result reaches the model.
    pub async fn resolve_tool(&self, qualified: &str) -> Option<(String, String)> {
        let find = |tools: &[QualifiedTool]| {
            tools
                .iter()
                .find(|t| t.qualified_name == qualified)
                .map(|t| (t.server.clone(), t.tool.name.to_string()))
        };
        if let Some(found) = find(&self.qualified_tools()) {
            return Some(found);
        }
        self.wait_until_started().await;
        find(&self.qualified_tools()).or_else(|| self.unlisted_tool(qualified))
    }

    fn unlisted_tool(&self, qualified: &str) -> Option<(String, String)> {
        let rest = qualified.strip_prefix("mcp__")?;
        self.servers
            .iter()
            .filter_map(|(server, managed)| {
                let tool = rest.strip_prefix(server.as_str())?.strip_prefix("__")?;
                (!tool.is_empty() && managed.config.tool_allowed(tool))
                    .then(|| (server.clone(), tool.to_string()))
            })
            .max_by_key(|(server, _)| server.len())
    }

    /// End every server: HTTP sessions closed, stdio process groups sent SIGTERM and, after the
    /// grace period, SIGKILL. Servers still starting are abandoned (their processes killed).
    pub async fn shutdown(&self) {
        self.abort_startups();
        let connections: Vec<SharedConnection> = self
            .servers
            .values()
            .filter_map(|m| match &*m.state.borrow() {
                ServerState::Ready { conn, .. } => Some(conn.clone()),
                _ => None,
            })
            .collect();
        let grace = self.options.shutdown_grace;
        join_all(connections.iter().map(|c| c.close(grace))).await;
    }

    /// Process ids of the stdio servers that are ready (for diagnostics and tests).
    pub fn child_pids(&self) -> Vec<(String, u32)> {
        self.servers
            .iter()
            .filter_map(|(name, m)| match &*m.state.borrow() {
                ServerState::Ready { conn, .. } => {
                    conn.child.as_ref().map(|c| (name.clone(), c.pid()))
                }
                _ => None,
            })
            .collect()
    }

    fn qualified_tools(&self) -> Arc<Vec<QualifiedTool>> {
        let ready: Vec<(&String, SharedConnection)> = self
            .servers
            .iter()
            .filter_map(|(server, managed)| match &*managed.state.borrow() {
                ServerState::Ready { conn, .. } => Some((server, conn.clone())),
                _ => None,
            })
            .collect();
        let same = |cached: &[std::sync::Weak<Connection>]| {
            cached.len() == ready.len()
                && cached
                    .iter()
                    .zip(&ready)
                    .all(|(w, (_, c))| std::ptr::eq(w.as_ptr(), Arc::as_ptr(c)))
        };
        if let Ok(cache) = self.tool_cache.lock()
            && let Some((key, tools)) = &*cache
            && same(key)
        {
            return tools.clone();
        }
        let mut used = HashSet::new();
        let mut out = Vec::new();
        for (server, conn) in &ready {
            for tool in &conn.tools {
                let qualified_name = qualified_tool_name(server, &tool.name);
                if !used.insert(qualified_name.clone()) {
                    tracing::warn!(%server, tool = %tool.name, %qualified_name, "skipping tool: qualified name already taken");
                    continue;
                }
                out.push(QualifiedTool {
                    qualified_name,
                    server: (*server).clone(),
                    tool: tool.clone(),
                });
            }
        }
        let tools = Arc::new(out);
        if let Ok(mut cache) = self.tool_cache.lock() {
            let key = ready.iter().map(|(_, c)| Arc::downgrade(c)).collect();
            *cache = Some((key, tools.clone()));
        }
        tools
    }

    /// The server's connection once it is no longer starting; a dead or failed server is
    /// restarted here (see the type's docs).
    async fn connection(&self, server: &str) -> Result<SharedConnection, McpError> {
        let managed =
            self.servers.get(server).ok_or_else(|| McpError::UnknownServer(server.to_string()))?;
        let not_started =
            |error: String| McpError::NotStarted { server: server.to_string(), error };
        loop {
            let mut rx = managed.state.subscribe();
            let settled = rx
                .wait_for(|s| !matches!(s, ServerState::Starting))
                .await
                .map(|s| s.clone())
                .map_err(|_| not_started("startup was abandoned".to_string()))?;
            let reason = match &settled {
                ServerState::Ready { conn, .. } if conn.is_usable() => {
                    return Ok(conn.clone());
                }
                ServerState::Ready { since, .. } => {
                    if since.elapsed() >= STABLE_UPTIME {
                        managed.restarts.store(0, std::sync::atomic::Ordering::SeqCst);
                    }
                    "the connection closed (the server exited or dropped the session)".to_string()
                }
                ServerState::Failed { error, retry_at } => {
                    let restarts = managed.restarts.load(std::sync::atomic::Ordering::SeqCst);
                    if restarts >= self.options.max_restarts {
                        return Err(not_started(format!(
                            "{error} (gave up after {restarts} restarts)"
                        )));
                    }
                    if Instant::now() < *retry_at {
                        return Err(not_started(error.to_string()));
                    }
                    format!("the last start failed: {error}")
                }
                ServerState::Starting => continue,
            };
            let restarts = managed.restarts.load(std::sync::atomic::Ordering::SeqCst);
            if restarts >= self.options.max_restarts {
                let error = format!("{reason} (gave up after {restarts} restarts)");
                managed.state.send_replace(ServerState::Failed {
                    error: error.clone().into(),
                    retry_at: Instant::now(),
                });
                return Err(not_started(error));
            }
            // Only the caller that moves the state from what it saw to Starting restarts it.
            let won = managed.state.send_if_modified(|state| {
                let same = match (&*state, &settled) {
                    (ServerState::Ready { conn: a, .. }, ServerState::Ready { conn: b, .. }) => {
                        Arc::ptr_eq(a, b)
                    }
                    (
                        ServerState::Failed { retry_at: a, .. },
                        ServerState::Failed { retry_at: b, .. },
                    ) => a == b,
                    _ => false,
                };
                if same {
                    *state = ServerState::Starting;
                }
                same
            });
            if won {
                let attempt =
                    managed.restarts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                tracing::warn!(%server, attempt, %reason, "restarting MCP server");
                self.events.send(EventMsg::McpServerRestarting(McpServerRestartingEvent {
                    server: server.to_string(),
                    attempt,
                    reason,
                }));
                if let ServerState::Ready { conn, .. } = &settled {
                    conn.close(self.options.shutdown_grace).await;
                }
                let backoff = self.options.restart_backoff.saturating_mul(1 << attempt.min(6));
                let task = tokio::spawn(start_server(
                    managed.config.clone(),
                    managed.state.clone(),
                    self.events.clone(),
                    self.host.clone(),
                    backoff,
                ));
                if let Ok(mut startups) = self.startups.lock() {
                    startups.retain(|t| !t.is_finished());
                    startups.push(task);
                }
            }
        }
    }

    fn abort_startups(&self) {
        if let Ok(startups) = self.startups.lock() {
            for startup in startups.iter() {
                startup.abort();
            }
        }
    }

    async fn request<T, F, Fut>(
        &self,
        server: &str,
        method: &'static str,
        f: F,
    ) -> Result<T, McpError>
    where
        F: FnOnce(SharedConnection) -> Fut,
        Fut: Future<Output = Result<T, rmcp::ServiceError>>,
    {
        let conn = self.connection(server).await?;
        let timeout = self.servers[server].config.tool_timeout;
        // Dropping the request future on timeout makes rmcp send notifications/cancelled.
        match tokio::time::timeout(timeout, f(conn.clone())).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => {
                let error = McpError::from_service(server, e);
                if matches!(error, McpError::Transport { .. }) {
                    // Not retried here (a tools/call may have had effects); the next use restarts.
                    conn.mark_dead();
                }
                Err(error)
            }
            Err(_) => Err(McpError::Timeout { server: server.to_string(), method, timeout }),
        }
    }

    async fn aggregate<T, F, Fut>(&self, method: &'static str, fetch: F) -> Aggregate<T>
    where
        F: Fn(SharedConnection, Option<String>) -> Fut + Clone,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), rmcp::ServiceError>>,
    {
        let max_pages = self.options.max_list_pages;
        let listings = self.servers.iter().map(|(name, managed)| {
            let fetch = fetch.clone();
            async move {
                let conn = match self.connection(name).await {
                    Ok(conn) => conn,
                    Err(e) => {
                        return Some(ServerListing {
                            server: name.clone(),
                            items: Vec::new(),
                            pages: 0,
                            error: Some(e.to_string()),
                        });
                    }
                };
                // A server that offers no resources is not asked (nor reported as failing).
                conn.capabilities.resources.as_ref()?;
                let timeout = managed.config.tool_timeout;
                let pages = Paging { method, max_pages, timeout, server: name };
                Some(pages.run(|cursor| fetch(conn.clone(), cursor)).await)
            }
        });
        join_all(listings).await.into_iter().flatten().collect()
    }
}

impl Drop for McpConnectionManager {
    fn drop(&mut self) {
        self.abort_startups();
    }
}

/// Follows one server's pages to the end, with every guard.
struct Paging<'a> {
    method: &'static str,
    max_pages: usize,
    timeout: Duration,
    server: &'a str,
}

impl Paging<'_> {
    async fn run<T, F, Fut>(&self, mut fetch: F) -> ServerListing<T>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), rmcp::ServiceError>>,
    {
        let mut listing = ServerListing {
            server: self.server.to_string(),
            items: Vec::new(),
            pages: 0,
            error: None,
        };
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            if listing.pages >= self.max_pages {
                listing.error = Some(format!(
                    "{} stopped after {} pages (page cap); the list is incomplete",
                    self.method, self.max_pages
                ));
                return listing;
            }
            let page = match tokio::time::timeout(self.timeout, fetch(cursor.take())).await {
                Ok(Ok(page)) => page,
                Ok(Err(e)) => {
                    let e = McpError::from_service(self.server, e);
                    listing.error = Some(format!("{} failed: {e}", self.method));
                    return listing;
                }
                Err(_) => {
                    let e = McpError::Timeout {
                        server: self.server.to_string(),
                        method: self.method,
                        timeout: self.timeout,
                    };
                    listing.error = Some(e.to_string());
                    return listing;
                }
            };
            listing.pages += 1;
            listing.items.extend(page.0);
            match page.1 {
                None => return listing,
                Some(next) if !seen.insert(next.clone()) => {
                    listing.error = Some(format!(
                        "{} stopped: the server repeated cursor {} (a cursor cycle); the list is incomplete",
                        self.method,
                        preview(&next)
                    ));
                    return listing;
                }
                Some(next) => cursor = Some(next),
            }
        }
    }
}

/// A cursor shown in a message: quoted, and cut if long (cursors are opaque and may be huge).
fn preview(cursor: &str) -> String {
    const MAX: usize = 64;
    if cursor.chars().count() <= MAX {
        return format!("{cursor:?}");
    }
    let cut: String = cursor.chars().take(MAX).collect();
    format!("{cut:?}…")
}

fn transport_name(transport: &TransportConfig) -> &'static str {
    match transport {
        TransportConfig::Stdio { .. } => "stdio",
        TransportConfig::StreamableHttp { .. } => "streamable_http",
    }
}

/// Start (or restart) one server and publish the outcome. After a failure, the next use may
/// retry once `failure_backoff` has passed.
async fn start_server(
    config: ServerConfig,
    state: watch::Sender<ServerState>,
    events: EventSender,
    host: Arc<dyn HostHandler>,
    failure_backoff: Duration,
) {
    events.send(EventMsg::McpServerStarting(McpServerStartingEvent {
        server: config.name.clone(),
        transport: transport_name(&config.transport).to_string(),
    }));
    let started = Instant::now();
    let client = RouterClient { server: config.name.clone(), events: events.clone(), host };
    let result = match tokio::time::timeout(
        config.startup_timeout,
        client::connect(&config, client),
    )
    .await
    {
        Ok(result) => result,
        Err(_) => Err(format!("startup timed out after {:?}", config.startup_timeout)),
    };
    let elapsed = started.elapsed();
    match result {
        Ok(conn) => {
            tracing::info!(server = %config.name, ?elapsed, tools = conn.tools.len(), "MCP server ready");
            events.send(EventMsg::McpServerReady(ready_event(&config.name, elapsed, &conn)));
            state.send_replace(ServerState::Ready { conn: Arc::new(conn), since: Instant::now() });
        }
        Err(error) => {
            tracing::warn!(server = %config.name, ?elapsed, %error, "MCP server failed to start");
            events.send(EventMsg::McpServerFailed(McpServerFailedEvent {
                server: config.name.clone(),
                elapsed,
                error: error.clone(),
            }));
            let retry_at = Instant::now() + failure_backoff.min(Duration::from_secs(30));
            state.send_replace(ServerState::Failed { error: error.into(), retry_at });
        }
    }
}

fn ready_event(server: &str, elapsed: Duration, conn: &Connection) -> McpServerReadyEvent {
    let caps = &conn.capabilities;
    let resources = caps.resources.as_ref();
    McpServerReadyEvent {
        server: server.to_string(),
        elapsed,
        server_info: conn.server_info.clone(),
        protocol_version: conn.protocol_version.clone(),
        capabilities: ServerCapabilitySummary {
            tools: caps.tools.is_some(),
            resources: resources.is_some(),
            resource_subscribe: resources.and_then(|r| r.subscribe).unwrap_or(false),
            resource_list_changed: resources.and_then(|r| r.list_changed).unwrap_or(false),
            completions: caps.completions.is_some(),
            prompts: caps.prompts.is_some(),
        },
        tools: conn.tools.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paging(max_pages: usize) -> Paging<'static> {
        Paging { method: "resources/list", max_pages, timeout: Duration::from_secs(5), server: "s" }
    }

    /// A server whose page `i` holds item `i` and points to `next[i]`.
    async fn run(max_pages: usize, next: &[Option<&str>]) -> ServerListing<usize> {
        let next: Vec<Option<String>> = next.iter().map(|c| c.map(str::to_string)).collect();
        let mut page = 0usize;
        paging(max_pages)
            .run(|_cursor| {
                let i = page;
                page += 1;
                let next = next.get(i).cloned().flatten();
                async move { Ok((vec![i], next)) }
            })
            .await
    }

    #[tokio::test]
    async fn follows_pages_to_the_end() {
        let listing = run(10, &[Some("a"), Some("b"), None]).await;
        assert_eq!(listing.items, vec![0, 1, 2]);
        assert_eq!(listing.pages, 3);
        assert_eq!(listing.error, None);
    }

    #[tokio::test]
    async fn cycle_of_any_length_stops_and_keeps_items() {
        let listing = run(100, &[Some("a"), Some("b"), Some("c"), Some("a")]).await;
        assert_eq!(listing.items, vec![0, 1, 2, 3]);
        assert_eq!(
            listing.error.as_deref(),
            Some(
                "resources/list stopped: the server repeated cursor \"a\" (a cursor cycle); the list is incomplete"
            )
        );
    }

    #[tokio::test]
    async fn page_cap_stops_and_keeps_items() {
        let cursors: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
        let next: Vec<Option<&str>> = cursors.iter().map(|c| Some(c.as_str())).collect();
        let listing = run(3, &next).await;
        assert_eq!(listing.items, vec![0, 1, 2]);
        assert_eq!(
            listing.error.as_deref(),
            Some("resources/list stopped after 3 pages (page cap); the list is incomplete")
        );
    }

    #[tokio::test]
    async fn a_failing_page_keeps_earlier_items() {
        let mut calls = 0;
        let listing: ServerListing<u8> = paging(10)
            .run(|_c| {
                calls += 1;
                let n = calls;
                async move {
                    if n == 1 {
                        Ok((vec![1], Some("x".to_string())))
                    } else {
                        Err(rmcp::ServiceError::TransportClosed)
                    }
                }
            })
            .await;
        assert_eq!(listing.items, vec![1]);
        assert_eq!(
            listing.error.as_deref(),
            Some(
                "resources/list failed: connection to MCP server 's' failed: the connection is closed"
            )
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_page_times_out() {
        let listing: ServerListing<u8> = paging(10)
            .run(|_c| {
                futures::future::pending::<Result<(Vec<u8>, Option<String>), rmcp::ServiceError>>()
            })
            .await;
        assert_eq!(
            listing.error.as_deref(),
            Some("timed out awaiting resources/list after 5s (MCP server 's')")
        );
    }

    #[test]
    fn long_cursors_are_cut_in_messages() {
        let shown = preview(&"x".repeat(10_000));
        assert!(shown.len() < 80, "{shown}");
    }
}
