//! Opening one MCP connection on rmcp: the transport (stdio child or streamable HTTP), the
//! handshake of the era the `protocol` key chooses (`server/discover` for 2026-07-28, with
//! fallback to `initialize` for 2025-11-25 under `auto`), rmcp's response cache turned off, and
//! the first tool listing. Everything here is bounded by the caller's startup timeout. Errors are
//! translated in `errors`.

pub(crate) mod cache;
pub(crate) mod direct;
mod handler;

use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::McpError;

pub use crate::errors::ConnectError;
use crate::errors::HandshakeError;
use crate::errors::{initialize_failed, service_error};
use rmcp::model::{ProtocolVersion, ServerCapabilities, Tool};

use crate::client::cache::ResponseCache;
use crate::watch::Changes;
use router_protocol::{EventMsg, EventSender, McpServerRequestBeginEvent, McpServerRequestEvent};

use crate::host::HostHandler;
use rmcp::service::RunningService;

use crate::auth::TokenStore;
use rmcp::{ClientCacheConfig, ClientLifecycleMode, ClientServiceExt, RoleClient};

use crate::config::{ProtocolChoice, ServerConfig, TransportConfig};
use crate::transport::stdio::{self, ChildGroup, Launch};
use crate::transport::traced::Traced;
use tracing::Instrument as _;

/// Most pages of `tools/list` followed at startup.
/// Largest single message accepted from a server (rmcp's default is 16 MiB). Bigger messages
/// are dropped by the transport and the request runs into its timeout; what is accepted is
/// cut to the read budget before the model sees it.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Longest a failed request on a broken stdio connection waits to see its server's exit status.
pub(crate) const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// The client side of every connection: says who we are and which protocol we speak, and
/// passes server-to-client requests to the host (announcing each with an event).
#[derive(Clone)]
pub struct RouterClient {
    /// The configured server name.
    pub server: String,
    /// Where lifecycle, request and change events go.
    pub events: EventSender,
    /// Who answers the server's elicitation, sampling and roots requests.
    pub host: Arc<dyn HostHandler>,
    /// This connection's answers kept under the server's cache hints (see `cache`).
    pub cache: Arc<ResponseCache>,
    /// What the notification handlers tell this connection's watcher (see `watch`).
    pub changes: Arc<Changes>,
    /// The server's watched resources (shared by all its connections, see `watch`).
    pub watched: Arc<crate::watch::Watched>,
    /// Where the last `WWW-Authenticate` challenge the server sent is kept (shared by all its
    /// connections; see `McpConnectionManager::auth_challenge`).
    pub challenge: Arc<std::sync::Mutex<Option<String>>>,
    /// The server's listing generation (shared by all its connections).
    pub list_generation: Arc<std::sync::atomic::AtomicU64>,
    /// This connection's request spans (see `telemetry`).
    pub telemetry: Arc<crate::telemetry::Telemetry>,
    /// `host:port` of an HTTP server (see [`crate::errors::address_of`]), named by failures.
    pub address: Option<String>,
    /// This connection's progress tokens and the calls they stand for (see `progress`).
    pub progress: Arc<crate::progress::Progress>,
    /// Set when the transport's incoming stream ends — a stdio server exited or closed its
    /// output, an HTTP transport gave up — so the next request restarts the server instead of
    /// failing on the dead connection.
    pub closed: Arc<std::sync::atomic::AtomicBool>,
    /// This connection's log events, rate-limited (see `server_log`).
    pub logs: Arc<crate::server_log::LogBudget>,
}

impl RouterClient {
    /// A client for one connection to `config`'s server: `watched`, `challenge` and
    /// `list_generation` are shared by all the server's connections; the rest is this
    /// connection's own (its spans, its progress tokens reported at most every
    /// `progress_interval`, its answer cache, its log budget).
    pub fn new(
        config: &crate::config::ServerConfig,
        events: EventSender,
        host: Arc<dyn HostHandler>,
        watched: Arc<crate::watch::Watched>,
        challenge: Arc<std::sync::Mutex<Option<String>>>,
        list_generation: Arc<std::sync::atomic::AtomicU64>,
        progress_interval: std::time::Duration,
    ) -> Self {
        Self {
            server: config.name.clone(),
            events,
            host,
            cache: Default::default(),
            changes: Default::default(),
            watched,
            challenge,
            list_generation,
            telemetry: crate::telemetry::Telemetry::new(config),
            address: match &config.transport {
                TransportConfig::StreamableHttp { url, .. } => crate::errors::address_of(url),
                TransportConfig::Stdio { .. } => None,
            },
            progress: Arc::new(crate::progress::Progress::new(progress_interval)),
            closed: Default::default(),
            logs: Default::default(),
        }
    }

    /// `transport` wrapped for this connection: request spans, the end of the stream, the
    /// progress tokens of calls, notifications handled in order (see `Traced`).
    pub(crate) fn traced<T>(&self, transport: T) -> Traced<T> {
        Traced::new(transport, self.clone())
    }

    pub(crate) fn announce<P: serde::Serialize, R: serde::Serialize>(
        &self,
        asking: &crate::host::Asking,
        method: &str,
        params: &P,
        response: Result<&R, String>,
    ) {
        self.events.send(EventMsg::McpServerRequest(McpServerRequestEvent {
            server: self.server.clone(),
            call_id: asking.call_id.clone(),
            method: method.to_string(),
            params: serde_json::to_value(params).unwrap_or_default(),
            response: response.map(|r| serde_json::to_value(r).unwrap_or_default()),
        }));
    }

    /// `mcp_server_request_begin`: the request is handed to the host; the call named waits.
    pub(crate) fn announce_begin<P: serde::Serialize>(
        &self,
        asking: &crate::host::Asking,
        method: &str,
        params: &P,
    ) {
        self.events.send(EventMsg::McpServerRequestBegin(McpServerRequestBeginEvent {
            server: self.server.clone(),
            call_id: asking.call_id.clone(),
            method: method.to_string(),
            params: serde_json::to_value(params).unwrap_or_default(),
        }));
    }
}

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
    /// a stdio server's exit status when it exited — waited for up to [`EXIT_GRACE`] (its
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
}

/// Opens connections. The manager uses [`Transports`]; tests connect in memory.
#[async_trait]
pub trait Connector: Send + Sync {
    /// Connect, initialize and list tools. A failure becomes a lifecycle event and the reason
    /// every later call to this server fails with.
    async fn connect(
        &self,
        config: &ServerConfig,
        client: RouterClient,
    ) -> Result<Connection, ConnectError>;
}

/// The real transports: a stdio child process or streamable HTTP, as configured; HTTP servers
/// sign in with the credentials in `tokens`.
pub struct Transports {
    /// Where HTTP servers' sign-in credentials are kept; `None` reaches them without sign-in.
    pub tokens: Option<TokenStore>,
}

#[async_trait]
impl Connector for Transports {
    async fn connect(
        &self,
        config: &ServerConfig,
        client: RouterClient,
    ) -> Result<Connection, ConnectError> {
        connect(config, client, self.tokens.as_ref()).await
    }
}

/// Connects in the era the config asks for. `auto` probes `server/discover` (rmcp's `Auto`
/// mode: a correlated JSON-RPC error falls back to `initialize` on the same connection, and
/// -32022 retries with a version the server listed); any other failure of the probe (an HTTP
/// error without a JSON-RPC body, a closed pipe, no version in common, no answer within half
/// the startup timeout) connects again from scratch with `initialize`.
async fn connect(
    config: &ServerConfig,
    client: RouterClient,
    tokens: Option<&TokenStore>,
) -> Result<Connection, ConnectError> {
    let opened = match config.protocol {
        ProtocolChoice::Legacy => {
            handshake(config, client, ClientLifecycleMode::Initialize, tokens).await?
        }
        ProtocolChoice::Modern => handshake(config, client, modern_lifecycle(), tokens).await?,
        ProtocolChoice::Auto => {
            let probe_budget = config.startup_timeout / 2;
            let probe = handshake(config, client.clone(), auto_lifecycle(), tokens);
            let reason = match tokio::time::timeout(probe_budget, probe).await {
                Ok(Ok(opened)) => return finish_opened(config, opened).await,
                Ok(Err(e @ (HandshakeError::Launch(_) | HandshakeError::SignIn(_)))) => {
                    return Err(e.into());
                }
                Ok(Err(HandshakeError::Handshake(message))) => message,
                Err(_) => format!("no answer to server/discover within {probe_budget:?}"),
            };
            tracing::info!(server = %config.name, %reason, "server/discover probe failed; connecting again with initialize (2025-11-25)");
            handshake(config, client, ClientLifecycleMode::Initialize, tokens).await.map_err(
                |e| match ConnectError::from(e) {
                    // The same cause twice (a closed port) is said once.
                    ConnectError::Failed(message) if same_cause(&message, &reason) => {
                        ConnectError::Failed(message)
                    }
                    ConnectError::Failed(message) => ConnectError::Failed(format!(
                        "{message} (server/discover was tried first: {reason})"
                    )),
                    sign_in => sign_in,
                },
            )?
        }
    };
    finish_opened(config, opened).await
}

/// Whether two handshake failures have the same cause (what follows their `(context): `).
fn same_cause(a: &str, b: &str) -> bool {
    let cause = |m: &str| m.rsplit_once("): ").map_or(m, |(_, c)| c).to_string();
    cause(a) == cause(b)
}

fn modern_lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
}

fn auto_lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// A stdio connection's straight requests (see `straight`).
pub(crate) type Straight = Arc<crate::transport::straight::Straight<tokio::process::ChildStdin>>;

pub(crate) type Opened = (RunningService<RoleClient, RouterClient>, Option<(ChildGroup, Straight)>);

/// Opens the transport and runs one lifecycle's handshake on it, in a request span named after
/// the lifecycle's first request.
async fn handshake(
    config: &ServerConfig,
    client: RouterClient,
    lifecycle: ClientLifecycleMode,
    tokens: Option<&TokenStore>,
) -> Result<Opened, HandshakeError> {
    let method = match lifecycle {
        ClientLifecycleMode::Initialize => "initialize",
        _ => "server/discover",
    };
    let span = client.telemetry.start(method, None, None);
    let result = open(config, client, lifecycle, tokens).instrument(span.span()).await;
    if let Ok((service, ..)) = &result
        && let Some(info) = service.peer_info()
    {
        span.record_protocol_version(&info.protocol_version.to_string());
    }
    span.finish(match &result {
        Ok(_) => Ok(()),
        Err(HandshakeError::Launch(m)) => Err(("launch_failed".to_string(), m.clone())),
        Err(HandshakeError::Handshake(m)) => Err(("handshake_failed".to_string(), m.clone())),
        Err(HandshakeError::SignIn(s)) => {
            Err(("sign_in_required".to_string(), s.advice(&config.name)))
        }
    });
    result
}

async fn open(
    config: &ServerConfig,
    client: RouterClient,
    lifecycle: ClientLifecycleMode,
    tokens: Option<&TokenStore>,
) -> Result<Opened, HandshakeError> {
    match &config.transport {
        TransportConfig::Stdio { command, args, env, cwd } => {
            let launch = Launch { server: &config.name, command, args, env, cwd: cwd.as_ref() };
            open_stdio(launch, client, lifecycle).await
        }
        TransportConfig::StreamableHttp { .. } => {
            crate::transport::remote::open_http(config, client, lifecycle, tokens).await
        }
    }
}

/// Starts a stdio server and runs the handshake on its pipes. A server that exits meanwhile is
/// named with its status and its last stderr lines; on failure the process group is killed.
async fn open_stdio(
    launch: Launch<'_>,
    client: RouterClient,
    lifecycle: ClientLifecycleMode,
) -> Result<Opened, HandshakeError> {
    let command = launch.command;
    let spawned = stdio::spawn(launch)
        .map_err(|e| HandshakeError::Launch(format!("failed to spawn `{command}`: {e}")))?;
    let (transport, straight) = crate::transport::lines::LineTransport::with_straight(
        spawned.stdout,
        spawned.stdin,
        MAX_MESSAGE_BYTES,
        client.telemetry.clone(),
        client.progress.clone(),
    );
    let transport = client.traced(transport);
    let service = match client.serve_with_lifecycle(transport, lifecycle).await {
        Ok(service) => service,
        Err(e) => {
            let message = match spawned.group.why_ended(EXIT_GRACE).await {
                Some(why) => crate::errors::initialize_failed_after_exit(&e, &why),
                None => initialize_failed(&e, None),
            };
            return Err(HandshakeError::Handshake(message));
        }
    };
    Ok((service, Some((spawned.group, straight))))
}

impl Connection {
    /// A connection over a transport a custom [`Connector`] opened (in memory, a socket…):
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
}

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
async fn finish_opened(config: &ServerConfig, opened: Opened) -> Result<Connection, ConnectError> {
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
        (Vec::new(), Vec::new())
    };
    let (tools, app_only) = tools;
    crate::client::handler::set_log_level(&service, config, modern, &capabilities).await;
    Ok(Connection {
        service,
        tools: std::sync::RwLock::new(Arc::new(tools)),
        app_only: std::sync::RwLock::new(Arc::new(app_only)),
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

/// Shared handle type used by the manager.
pub type SharedConnection = Arc<Connection>;
