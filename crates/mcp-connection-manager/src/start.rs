//! One start (or restart) of one server: connect within the startup timeout, then publish
//! the outcome — a ready connection (its watcher spawned, its catalog compared with the one
//! served while it started) or a failure (with its back-off, a sign-in failure's credentials,
//! and the note in its tool catalog).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use router_protocol::{
    EventMsg, EventSender, McpServerFailedEvent, McpServerReadyEvent, McpServerStartingEvent,
    ServerCapabilitySummary,
};

use crate::lifecycle::{ServerState, SignedOut};
use crate::restart;
use crate::toolcache::{CachedCatalog, CatalogSlot};
use mcp_connection::HostHandler;
use mcp_connection::{ConnectError, Connection, Connector, RouterClient};
use mcp_connection::{ServerConfig, TransportConfig};

/// One start (or restart) of one server; publishes the outcome. After a failure, the next use
/// may retry once `failure_backoff` has passed.
pub(crate) struct StartServer {
    pub(crate) config: ServerConfig,
    /// Its identity in the trust store (`ManagedServer::key`).
    pub(crate) key: String,
    pub(crate) state: watch::Sender<ServerState>,
    pub(crate) events: EventSender,
    pub(crate) host: Arc<dyn HostHandler>,
    pub(crate) connector: Arc<dyn Connector>,
    pub(crate) failure_backoff: Duration,
    /// `RequestOptions::response_cache`.
    pub(crate) response_cache: bool,
    pub(crate) watched: Arc<mcp_connection::Watched>,
    /// Where sign-in credentials are kept (`ManagerOptions::token_store`).
    pub(crate) tokens: Option<mcp_connection::oauth::TokenStore>,
    pub(crate) challenge: Arc<Mutex<Option<String>>>,
    pub(crate) list_generation: Arc<std::sync::atomic::AtomicU64>,
    pub(crate) catalog: Arc<CatalogSlot>,
    /// `RequestOptions::progress_interval`.
    pub(crate) progress_interval: Duration,
    /// The pinned tool definitions (`tool_changes = "refuse"` is decided at start).
    pub(crate) trust: Arc<crate::trust::Trust>,
}

impl StartServer {
    pub(crate) async fn run(self) {
        self.events.send(EventMsg::McpServerStarting(McpServerStartingEvent {
            server: self.config.name.clone(),
            transport: transport_name(&self.config.transport).to_string(),
        }));
        let started = Instant::now();
        if let Some(integrity) = &self.config.integrity
            && let Err(why) = crate::integrity::check(&self.config.name, integrity).await
        {
            return self.failed(&ConnectError::Failed(why), started.elapsed());
        }
        let client = RouterClient::new(
            &self.config,
            self.events.clone(),
            self.host.clone(),
            self.watched.clone(),
            self.challenge.clone(),
            self.list_generation.clone(),
            self.progress_interval,
        );
        let connect = self.connector.connect(&self.config, client.clone());
        let timeout = self.config.startup_timeout;
        let result = match tokio::time::timeout(timeout, connect).await {
            Ok(result) => result,
            Err(_) => Err(client.startup_timed_out(timeout).into()),
        };
        match result {
            Ok(conn) => match self.refused(&conn) {
                None => self.ready(conn, started.elapsed()),
                Some(failure) => {
                    conn.close(Duration::from_millis(500)).await;
                    self.failed(&failure, started.elapsed())
                }
            },
            Err(failure) => self.failed(&failure, started.elapsed()),
        }
    }

    /// With `tool_changes = "refuse"`: why the server is refused, when one of its tools is not
    /// the pinned one.
    fn refused(&self, conn: &Connection) -> Option<ConnectError> {
        if self.config.tool_changes != mcp_connection::ToolChanges::Refuse {
            return None;
        }
        let (tools, unshown) = (conn.tools(), conn.filtered_tools());
        let policy = self.config.tool_changes;
        let admitted = self.trust.admit(&self.key, policy, tools.clone(), &tools, &unshown);
        let held: Vec<&str> = admitted.held.iter().map(|h| h.tool.as_str()).collect();
        (!held.is_empty()).then(|| {
            ConnectError::Failed(format!(
                "its tools {} are not the ones pinned for it, and its config refuses changes (tool_changes = \"refuse\"); run `{} {}` to accept them",
                held.join(", "),
                self.trust.approve_command(),
                self.config.name
            ))
        })
    }

    /// Publish the new connection.
    fn ready(self, conn: Connection, elapsed: Duration) {
        let Self {
            config,
            key,
            state,
            events,
            response_cache,
            list_generation,
            catalog,
            trust,
            ..
        } = self;
        if response_cache && conn.modern {
            conn.cache().enable();
        }
        tracing::info!(server = %config.name, ?elapsed, tools = conn.tools().len(), "MCP server ready");
        let ready = EventMsg::McpServerReady(ready_event(&config.name, elapsed, &conn));
        let conn = Arc::new(conn);
        // A new connection: whatever was listed before may be out of date.
        list_generation.fetch_add(1, Ordering::SeqCst);
        mcp_connection::watch(&conn, config.clone());
        let live = CachedCatalog::of(&conn);
        let (tools, unshown) = (conn.tools(), conn.filtered_tools());
        state.send_replace(ServerState::Ready { conn, since: Instant::now() });
        // Announced once it is so: a host that acts on `mcp_server_ready` finds it ready.
        events.send(ready);
        // Its tools against their pins now, so a definition held is announced at start.
        let admitted = trust.admit(&key, config.tool_changes, tools.clone(), &tools, &unshown);
        // Tools listed from the catalog while it started: say so if what the model may see
        // now differs (after the switch, so the specs asked for next are the live ones).
        if let Some(served) = catalog.live(live) {
            mcp_connection::announce_tools_change(
                &events,
                &config.name,
                &served.tools,
                admitted.visible.get(),
            );
        }
    }

    /// Publish the failure; a sign-in failure remembers the credentials it saw.
    fn failed(self, failure: &ConnectError, elapsed: Duration) {
        let Self { config, state, events, failure_backoff, tokens, catalog, .. } = self;
        let error = failure.message(&config.name);
        tracing::warn!(server = %config.name, ?elapsed, %error, "MCP server failed to start");
        events.send(EventMsg::McpServerFailed(McpServerFailedEvent {
            server: config.name.clone(),
            elapsed,
            error: error.clone(),
        }));
        let retry_at = Instant::now() + failure_backoff.min(restart::MAX_BACKOFF);
        let signed_out = match failure {
            ConnectError::SignIn(sign_in) => Some(SignedOut {
                sign_in: sign_in.clone(),
                credentials: fingerprint(tokens.as_ref(), &config),
            }),
            _ => None,
        };
        catalog.failed(&error);
        state.send_replace(ServerState::Failed { error: error.into(), retry_at, signed_out });
        // Its tools were listed from the catalog while it started: they are gone now.
        if let Some(served) = catalog.take_served() {
            mcp_connection::announce_tools_change(&events, &config.name, &served.tools, &[]);
        }
    }
}

pub(crate) fn fingerprint(
    tokens: Option<&mcp_connection::oauth::TokenStore>,
    config: &ServerConfig,
) -> u64 {
    match (&config.transport, tokens) {
        (TransportConfig::StreamableHttp { url, .. }, Some(tokens)) => tokens.fingerprint(url),
        _ => 0,
    }
}

pub(crate) fn transport_name(transport: &TransportConfig) -> &'static str {
    match transport {
        TransportConfig::Stdio { .. } => "stdio",
        TransportConfig::StreamableHttp { .. } => "streamable_http",
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
        tools: conn.tools().len(),
        sandbox: conn.child.as_ref().map(|child| child.sandbox().to_string()),
    }
}
