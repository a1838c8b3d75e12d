//! `RouterClient`: the client side rmcp drives for one connection, and the state every
//! transport and handler of that connection reports to (events, host, cache, watching,
//! spans, progress, logs).

use std::sync::Arc;

use router_protocol::{EventMsg, EventSender, McpServerRequestBeginEvent, McpServerRequestEvent};

use crate::client::cache::ResponseCache;
use crate::client::traced::Traced;
use crate::config::TransportConfig;
use crate::host::HostHandler;
use crate::watch::Changes;

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
    /// `host:port` of an HTTP server (see `errors::address_of`), named by failures.
    pub address: Option<String>,
    /// This connection's progress tokens and the calls they stand for (see `progress`).
    pub progress: Arc<crate::progress::Progress>,
    /// Set when the transport's incoming stream ends — a stdio server exited or closed its
    /// output, an HTTP transport gave up — so the next request restarts the server instead of
    /// failing on the dead connection.
    pub closed: Arc<std::sync::atomic::AtomicBool>,
    /// This connection's log events, rate-limited (see `server_log`).
    pub logs: Arc<crate::server_log::LogBudget>,
    /// How far this connection's start has come (see `startup`).
    pub(crate) startup: Arc<crate::client::startup::StartupPhase>,
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
            startup: Default::default(),
        }
    }

    /// Why this connection's start failed when it ran out of time after `after`: the phase it
    /// was in (spawn, `server/discover`, `initialize`, the first `tools/list`) and what a stdio
    /// server printed on stderr.
    pub fn startup_timed_out(&self, after: std::time::Duration) -> String {
        self.startup.timed_out(after)
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
