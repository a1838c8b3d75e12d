//! `Connection`: one live, initialized connection and every method a caller uses. Each read
//! and tool call goes one named way per transport: straight on stdio
//! (`transport::straight`), through rmcp's `Peer` on HTTP (`direct`). `finish` builds one
//! after the handshake: the server's facts, its first tool listing, its listen stream.

use std::sync::Arc;

use mcp_backend::McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, Tool,
};
use rmcp::service::RunningService;
use rmcp::{ClientCacheConfig, RoleClient, ServiceError};

use crate::client::cache::ResponseCache;
use crate::client::direct;
use crate::client::router_client::RouterClient;
use crate::config::ServerConfig;
use crate::errors::{ConnectError, initialize_failed, service_error};
use crate::transport::stdio::{ChildGroup, EXIT_GRACE};

/// A stdio connection's straight requests (see `straight`).
pub(crate) type Straight = Arc<crate::transport::straight::Straight<tokio::process::ChildStdin>>;

pub(crate) type Opened = (RunningService<RoleClient, RouterClient>, Option<(ChildGroup, Straight)>);

/// A live, initialized connection.
pub struct Connection {
    /// The rmcp service: requests go through it.
    pub service: RunningService<RoleClient, RouterClient>,
    /// Tools after the enabled/disabled filters, in the server's order; replaced when the
    /// server says its list changed (see `watch`).
    tools: std::sync::RwLock<Arc<Vec<Tool>>>,
    /// The tools for an MCP App alone (`_meta.ui.visibility` without `"model"`): never the
    /// model's; replaced with `tools`.
    pub(crate) app_only: std::sync::RwLock<Arc<Vec<Tool>>>,
    /// The tools the enabled/disabled filters leave out: pinned with the others on first
    /// sight, so that letting one in later does not hold it. Replaced with `tools`.
    pub(crate) filtered: std::sync::RwLock<Arc<Vec<Tool>>>,
    /// Bumped on every replacement, so the catalog knows to rebuild.
    tools_version: std::sync::atomic::AtomicU64,
    /// The `subscriptions/listen` stream opened at connect (2026-07-28), until the watcher
    /// takes it.
    pub(crate) subscription: std::sync::Mutex<Option<rmcp::service::Subscription>>,
    /// What the server declared.
    pub capabilities: ServerCapabilities,
    /// `name version` of the server, as it introduced itself.
    pub server_info: String,
    /// The negotiated protocol revision.
    pub protocol_version: String,
    /// Negotiated 2026-07-28 or later (per-request metadata, input rounds, cache hints).
    pub modern: bool,
    /// The process group of a stdio server; `None` for HTTP.
    pub child: Option<ChildGroup>,
    /// A stdio server's reads and tool calls sent past rmcp (see `straight`); `None` for HTTP.
    pub(crate) straight: Option<Straight>,
    /// Set when a request failed in the transport: the next use restarts the server rather
    /// than waiting for rmcp to notice the closed connection.
    pub(crate) dead: std::sync::atomic::AtomicBool,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.client().changes.close();
    }
}

impl Connection {
    /// Whether requests can still go through this connection: not marked dead by a failed
    /// request, not closed by the server (its process exited, its stream ended), not cancelled.
    pub fn is_usable(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        !self.dead.load(SeqCst)
            && !self.client().closed.load(SeqCst)
            && !self.service.is_closed()
            && !self.service.peer().is_transport_closed()
    }

    /// A failed request as the model reads it: the cause in words, the HTTP server's address,
    /// a stdio server's exit status when it exited — waited for up to `EXIT_GRACE` (its
    /// output can end before its guard is seen exiting on a loaded machine).
    pub async fn failure(&self, error: rmcp::ServiceError) -> McpError {
        let client = self.client();
        let error = service_error(&client.server, client.address.as_deref(), error);
        let (McpError::Transport { server, .. }, Some(child)) = (&error, self.child.as_ref())
        else {
            return error;
        };
        match child.why_ended(EXIT_GRACE).await {
            Some(why) => McpError::Transport { server: server.clone(), error: why },
            None => error,
        }
    }

    /// This connection's response cache.
    pub fn cache(&self) -> &ResponseCache {
        &self.service.service().cache
    }

    /// This connection's progress tokens (see `progress`).
    pub fn progress(&self) -> &crate::progress::Progress {
        &self.client().progress
    }

    /// This connection's request spans.
    pub fn telemetry(&self) -> &Arc<crate::telemetry::Telemetry> {
        &self.service.service().telemetry
    }

    /// The client side of this connection.
    pub(crate) fn client(&self) -> &RouterClient {
        self.service.service()
    }

    /// The server's tools now (after the config's filters).
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        self.tools.read().map(|t| t.clone()).unwrap_or_default()
    }

    /// How often the tool list was replaced.
    pub fn tools_version(&self) -> u64 {
        self.tools_version.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub(crate) fn set_tools(&self, tools: Vec<Tool>) {
        if let Ok(mut current) = self.tools.write() {
            *current = Arc::new(tools);
        }
        self.tools_version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// A request failed in the transport: the next use restarts the server.
    pub fn mark_dead(&self) {
        self.dead.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// End the session; a stdio server's group gets SIGTERM, then SIGKILL after `grace`.
    pub async fn close(&self, grace: std::time::Duration) {
        self.service.cancellation_token().cancel();
        if let Some(child) = &self.child {
            child.terminate(grace).await;
        }
    }

    /// A connection over a transport a custom [`Connector`](crate::Connector) opened (in memory, a socket…):
    /// rmcp's handshake with `client`, then what every connection reads first.
    pub async fn over<T, E, A>(
        config: &ServerConfig,
        client: RouterClient,
        transport: T,
    ) -> Result<Connection, ConnectError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        use rmcp::ServiceExt as _;
        let service = client.serve(transport).await.map_err(|e| initialize_failed(&e, None))?;
        finish(config, service, None).await
    }

    /// The tools for an MCP App alone, which the model never sees.
    pub fn app_only_tools(&self) -> Arc<Vec<Tool>> {
        self.app_only.read().map(|t| t.clone()).unwrap_or_default()
    }

    pub(crate) fn set_app_only_tools(&self, tools: Vec<Tool>) {
        if let Ok(mut current) = self.app_only.write() {
            *current = Arc::new(tools);
        }
    }

    /// The tools the config's enabled/disabled filters leave out (never the model's).
    pub fn filtered_tools(&self) -> Arc<Vec<Tool>> {
        self.filtered.read().map(|t| t.clone()).unwrap_or_default()
    }

    pub(crate) fn set_filtered_tools(&self, tools: Vec<Tool>) {
        if let Ok(mut current) = self.filtered.write() {
            *current = Arc::new(tools);
        }
    }

    /// One `tools/call` round, as rmcp's `call_tool_once`: sent straight on a stdio connection,
    /// through rmcp's `Peer` on an HTTP one. Made for a model's call, its progress is that
    /// call's.
    pub async fn call_tool_once(
        &self,
        params: CallToolRequestParams,
    ) -> Result<CallToolResponse, ServiceError> {
        match &self.straight {
            Some(straight) => straight.call_tool(params).await,
            None => {
                let mut params = params;
                let _tracked = self.progress().track(&mut params.meta);
                self.service.call_tool_once(params).await
            }
        }
    }

    /// One `resources/read` round: sent straight on a stdio connection, through rmcp's `Peer`
    /// (around its response cache, see `direct`) on an HTTP one. Made for a model's call
    /// (`mcp_backend::current_call_id`), its progress is that call's.
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ServiceError> {
        match &self.straight {
            Some(straight) => straight.read(params).await,
            None => {
                let mut params = params;
                let _tracked = self.progress().track(&mut params.meta);
                direct::read_resource(self.service.peer(), params).await
            }
        }
    }
}

/// Shared handle type used by the manager.
pub type SharedConnection = Arc<Connection>;

/// After `initialize`: rmcp's cache off, the server's facts read, its tools listed (filtered).
pub(crate) async fn finish(
    config: &ServerConfig,
    service: RunningService<RoleClient, RouterClient>,
    child: Option<ChildGroup>,
) -> Result<Connection, ConnectError> {
    let mut connection = finish_opened(config, (service, None)).await?;
    connection.child = child;
    Ok(connection)
}

/// [`finish`] for a connection opened here (a stdio one with its straight requests).
pub(super) async fn finish_opened(
    config: &ServerConfig,
    opened: Opened,
) -> Result<Connection, ConnectError> {
    let (service, stdio) = opened;
    let (child, straight) = stdio.unzip();
    // rmcp's cache may serve stale lists on error; the router must see every answer fresh.
    service.set_response_cache_config(ClientCacheConfig::disabled()).await;
    let info = service.peer_info().ok_or("server sent no initialize or discover result")?;
    let capabilities = info.capabilities.clone();
    let server_info =
        info.server_info.as_ref().map(|i| format!("{} {}", i.name, i.version)).unwrap_or_default();
    let modern = info.protocol_version >= ProtocolVersion::V_2026_07_28;
    let protocol_version = info.protocol_version.to_string();
    if let Some(straight) = &straight {
        use rmcp::ClientHandler as _;
        straight.negotiated(&info.protocol_version, &service.service().get_info());
    }
    service.service().telemetry.set_protocol_version(&protocol_version);
    // In 2026-07-28, list changes come only through `subscriptions/listen`: open it before the
    // first listing, so no change between the listing and the stream is missed.
    let subscription =
        if modern { crate::watch::open_listen(&service, &capabilities).await } else { None };
    let tools = if capabilities.tools.is_some() {
        let tools = crate::client::direct::all_tools(&service).await.map_err(|e| match e {
            McpError::SignInRequired { sign_in, .. } => ConnectError::SignIn(sign_in),
            other => ConnectError::Failed(format!("tools/list failed: {other}")),
        })?;
        config.warn_filters_naming_no_tool(&tools);
        config.split_tools(tools)
    } else {
        (Vec::new(), Vec::new(), Vec::new())
    };
    let (tools, app_only, filtered) = tools;
    crate::client::handler::set_log_level(&service, config, modern, &capabilities).await;
    service.service().startup.done();
    Ok(Connection {
        service,
        tools: std::sync::RwLock::new(Arc::new(tools)),
        app_only: std::sync::RwLock::new(Arc::new(app_only)),
        filtered: std::sync::RwLock::new(Arc::new(filtered)),
        tools_version: Default::default(),
        subscription: std::sync::Mutex::new(subscription),
        capabilities,
        server_info,
        protocol_version,
        modern,
        child,
        straight,
        dead: Default::default(),
    })
}
