//! Server lifecycle: every server's state (starting, ready, failed), the startup task that
//! publishes it, and the executor of the restart decision. [`Servers::connection`] observes a
//! server, asks `restart::decide` what to do, and carries the step out; [`Servers::settled`]
//! only waits and looks (it never starts anything).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use mcp_backend::{McpError, SignIn};
use router_protocol::{
    EventMsg, EventSender, McpServerFailedEvent, McpServerIdleEvent, McpServerRestartingEvent,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::options::ManagerOptions;
use crate::restart::{self, Observed, RestartPolicy, STABLE_UPTIME, Step};
use crate::server_map::{ServerMap, Snapshot};
use crate::start::StartServer;
use crate::toolcache::CatalogSlot;
use mcp_connection::HostHandler;
use mcp_connection::ServerConfig;
use mcp_connection::{Connector, SharedConnection};

/// Where a server is.
#[derive(Clone)]
pub(crate) enum ServerState {
    /// A lazy server that nothing has needed yet.
    Lazy,
    Starting,
    Ready {
        conn: SharedConnection,
        since: Instant,
    },
    /// `signed_out`: a failure for want of sign-in (then `error` is its advice).
    Failed {
        error: Arc<str>,
        retry_at: Instant,
        signed_out: Option<SignedOut>,
    },
}

/// A server failed for want of sign-in.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SignedOut {
    /// What it needs.
    pub(crate) sign_in: SignIn,
    /// The fingerprint of the stored credentials then (see `TokenStore::fingerprint`): a new
    /// sign-in changes it, and the next use starts the server at once.
    pub(crate) credentials: u64,
}

pub(crate) struct ManagedServer {
    pub(crate) config: ServerConfig,
    /// Its identity: its name, or for a scoped instance its name and scope
    /// (`scope::instance_key`); what the trust store keys it by.
    pub(crate) key: String,
    /// Answers its requests (the manager's host, or its scope's).
    pub(crate) host: Arc<dyn HostHandler>,
    pub(crate) state: watch::Sender<ServerState>,
    /// Restarts so far (reset after a stable run).
    restarts: AtomicU32,
    /// Every restart since the manager started (never reset): what the ledger counts.
    pub(crate) restarted: AtomicU32,
    /// The resources the model read from this server, watched across restarts.
    pub(crate) watched: Arc<mcp_connection::Watched>,
    /// The last `WWW-Authenticate` challenge a request to it met (a 401 or a 403
    /// `insufficient_scope`), for a sign-in that asks for what the server wants.
    pub(crate) challenge: Arc<Mutex<Option<String>>>,
    /// Bumped when the server's lists may have changed: `resources/list_changed`, or a new
    /// connection; a kept listing of an older generation is not used (see `KeptListings`).
    pub(crate) list_generation: Arc<std::sync::atomic::AtomicU64>,
    /// Its tool catalog: the last known tool list, from the cache until it is ready.
    pub(crate) catalog: Arc<CatalogSlot>,
    /// Taken out by a config change: nothing starts it again (see `reconfigure`).
    pub(crate) retired: AtomicBool,
}

/// Where a scoped instance runs: its identity, its host, and the directory its held
/// definitions are approved from (see `scope::Instances::placed`).
pub(crate) struct Placed {
    pub(crate) key: String,
    pub(crate) host: Arc<dyn HostHandler>,
    pub(crate) approve_in: Option<std::path::PathBuf>,
}

/// Everything the lifecycle of the servers needs.
pub(crate) struct Servers {
    /// The servers shared by everyone, by name (a request of a view sees its instances too:
    /// `Servers::get`, `Servers::snapshot`).
    pub(crate) base: ServerMap<ManagedServer>,
    startups: Mutex<Vec<JoinHandle<()>>>,
    pub(crate) options: ManagerOptions,
    pub(crate) events: EventSender,
    pub(crate) host: Arc<dyn HostHandler>,
    connector: Arc<dyn Connector>,
    shut_down: AtomicBool,
    /// `mcp_server_stopped` was sent (once per manager, by the first shutdown to finish).
    pub(crate) stopped_announced: AtomicBool,
    /// Every server's pinned tool definitions and what they admit.
    pub(crate) trust: Arc<crate::trust::Trust>,
}

impl Servers {
    /// Start every enabled server concurrently (a disabled or duplicate one is skipped).
    pub(crate) fn start(
        configs: Vec<ServerConfig>,
        events: EventSender,
        options: ManagerOptions,
        host: Arc<dyn HostHandler>,
        connector: Arc<dyn Connector>,
    ) -> Self {
        let trust = crate::trust::Trust::new(
            options.trust.pins.clone(),
            events.clone(),
            host.clone(),
            options.trust.approve_command.clone(),
        );
        let mut this = Self {
            base: ServerMap::default(),
            startups: Mutex::new(Vec::new()),
            trust,
            options,
            events,
            host,
            connector,
            shut_down: AtomicBool::new(false),
            stopped_announced: AtomicBool::new(false),
        };
        let chosen = chosen(configs, &this.options);
        let idle = crate::idle::idle_servers(&this.options, chosen.iter().map(|(c, s)| (c, s)));
        for (config, catalog) in chosen {
            let lazy = idle.contains(&config.name);
            let managed = this.launch(config, catalog, lazy, Arc::default(), None);
            this.base.update(|map| {
                map.insert(managed.config.name.clone(), managed);
            });
        }
        for (name, why) in this.options.unusable.clone() {
            this.unusable(name, why);
        }
        this
    }

    /// `config` with what its entry leaves to the manager filled in (the sandbox), as it runs.
    pub(crate) fn with_defaults(&self, mut config: ServerConfig) -> ServerConfig {
        let sandbox = config.sandbox.get_or_insert_with(|| self.options.sandbox.clone());
        if sandbox.helper.is_none() {
            sandbox.helper.clone_from(&self.options.sandbox.helper);
        }
        // Wherever the host keeps the router's state, no server reads it.
        sandbox.deny.extend(crate::options::state_paths(&self.options));
        config
    }

    /// A server of `config` started (or left idle, `lazy`), its lists of generation
    /// `list_generation` (a server replaced by a config change carries its predecessor's, one
    /// further on, so nothing kept of the old one is taken for the new one's); a scoped
    /// instance where `placed` says (else a shared server, known by its name).
    pub(crate) fn launch(
        &self,
        config: ServerConfig,
        catalog: CatalogSlot,
        lazy: bool,
        list_generation: Arc<std::sync::atomic::AtomicU64>,
        placed: Option<Placed>,
    ) -> Arc<ManagedServer> {
        let config = self.with_defaults(config);
        let Placed { key, host, approve_in } = placed.unwrap_or_else(|| Placed {
            key: config.name.clone(),
            host: self.host.clone(),
            approve_in: None,
        });
        self.trust.identify(&key, &config, approve_in);
        let initial = if lazy { ServerState::Lazy } else { ServerState::Starting };
        let (state, _) = watch::channel(initial);
        let watched = Arc::new(mcp_connection::Watched::new(self.options.watching.max_resources));
        let managed = ManagedServer {
            config,
            key,
            host,
            state,
            restarts: AtomicU32::new(0),
            restarted: AtomicU32::new(0),
            watched,
            challenge: Arc::default(),
            list_generation,
            catalog: Arc::new(catalog),
            retired: AtomicBool::new(false),
        };
        if lazy {
            self.events.send(EventMsg::McpServerIdle(McpServerIdleEvent {
                server: managed.config.name.clone(),
                transport: crate::start::transport_name(&managed.config.transport).to_string(),
                tools: managed.catalog.get().map(|c| c.tools.len()),
            }));
        } else {
            self.spawn_start(&managed, self.options.lifecycle.restart_backoff);
        }
        Arc::new(managed)
    }

    /// A server whose config entry cannot be used: failed for good (never started), so calls
    /// and all-server lists say why.
    fn unusable(&mut self, name: String, why: String) {
        if self.base.get(&name).is_some() {
            return;
        }
        let error = format!("its config entry cannot be used: {why}");
        self.events.send(EventMsg::McpServerFailed(McpServerFailedEvent {
            server: name.clone(),
            elapsed: Duration::ZERO,
            error: error.clone(),
        }));
        let never = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        let failed = ServerState::Failed { error: error.into(), retry_at: never, signed_out: None };
        let config = ServerConfig::stdio(&name, "", Vec::new());
        let managed = ManagedServer {
            key: name.clone(),
            host: self.host.clone(),
            state: watch::channel(failed).0,
            restarts: AtomicU32::new(0),
            restarted: AtomicU32::new(0),
            watched: Arc::new(mcp_connection::Watched::new(0)),
            challenge: Arc::default(),
            list_generation: Arc::default(),
            // No tools from a cache kept under this name for another entry.
            catalog: Arc::new(CatalogSlot::load(None, &config)),
            retired: AtomicBool::new(false),
            config,
        };
        self.base.update(|map| {
            map.insert(name, Arc::new(managed));
        });
    }

    /// What the restart rules see in a settled state; `None` while it is still starting (a lazy
    /// server is started here). `restarted`: this request restarted the server already.
    fn observe<'a>(
        &self,
        managed: &ManagedServer,
        settled: &'a ServerState,
        restarted: bool,
    ) -> Option<Observed<'a>> {
        Some(match settled {
            ServerState::Ready { conn, .. } if conn.is_usable() => Observed::Usable,
            ServerState::Ready { since, .. } => Observed::Closed { since: *since },
            ServerState::Failed { error, signed_out: Some(out), .. } => {
                let now = self.fingerprint(&managed.config);
                Observed::SignedOut { error, signed_in_since: now != out.credentials }
            }
            ServerState::Failed { error, retry_at, signed_out: None } => {
                Observed::Failed { error, retry_at: *retry_at, again: restarted }
            }
            ServerState::Starting => return None,
            ServerState::Lazy => {
                self.start_lazy(managed);
                return None;
            }
        })
    }

    /// The server's connection once it is no longer starting; a dead or failed server is
    /// restarted here, as `restart::decide` says.
    pub(crate) async fn connection(&self, server: &str) -> Result<SharedConnection, McpError> {
        let managed = self.managed(server)?;
        let not_started =
            |error: String| McpError::NotStarted { server: server.to_string(), error };
        if managed.retired.load(Ordering::SeqCst) {
            return Err(McpError::UnknownServer(server.to_string()));
        }
        let policy = RestartPolicy {
            max_restarts: self.options.lifecycle.max_restarts,
            stable_uptime: STABLE_UPTIME,
            remote: matches!(
                managed.config.transport,
                mcp_connection::TransportConfig::StreamableHttp { .. }
            ),
        };
        // Whether this request restarted the server already: it does so at most once.
        let mut restarted = false;
        loop {
            let settled = self.settled(server).await?;
            let Some(observed) = self.observe(&managed, &settled, restarted) else { continue };
            let restarts = managed.restarts.load(Ordering::SeqCst);
            match restart::decide(observed, restarts, Instant::now(), policy) {
                Step::Use => {
                    if let ServerState::Ready { conn, .. } = settled {
                        return Ok(conn);
                    }
                }
                Step::Refuse(error) => {
                    return Err(match settled {
                        ServerState::Failed { signed_out: Some(out), .. } => {
                            McpError::SignInRequired {
                                server: server.to_string(),
                                sign_in: out.sign_in,
                            }
                        }
                        _ => not_started(error),
                    });
                }
                Step::GiveUp(error) => {
                    managed.state.send_replace(ServerState::Failed {
                        error: error.clone().into(),
                        retry_at: Instant::now(),
                        signed_out: None,
                    });
                    return Err(not_started(error));
                }
                Step::Restart { reason, reset_restarts } => {
                    if reset_restarts {
                        managed.restarts.store(0, Ordering::SeqCst);
                    }
                    // Boxed: a restart's future is large and rare; every request's would be
                    // as large.
                    Box::pin(self.restart(&managed, &settled, reason)).await;
                    restarted = true;
                }
            }
        }
    }

    /// Start a lazy server that nothing has started yet (only one caller does).
    pub(crate) fn start_lazy(&self, managed: &ManagedServer) {
        let won = managed.state.send_if_modified(|state| {
            let lazy = matches!(state, ServerState::Lazy);
            if lazy {
                *state = ServerState::Starting;
            }
            lazy
        });
        if won {
            tracing::info!(server = %managed.config.name, "starting lazy MCP server on first use");
            self.spawn_start(managed, self.options.lifecycle.restart_backoff);
        }
    }

    /// The server's state once it is no longer starting. Only waits and looks.
    pub(crate) async fn settled(&self, server: &str) -> Result<ServerState, McpError> {
        let managed = self.managed(server)?;
        let mut rx = managed.state.subscribe();
        let state =
            rx.wait_for(|s| !matches!(s, ServerState::Starting)).await.map(|s| s.clone()).map_err(
                |_| McpError::NotStarted {
                    server: server.to_string(),
                    error: "startup was abandoned".to_string(),
                },
            )?;
        self.check_live()?;
        Ok(state)
    }

    /// Restart the server, unless another request already did: only the caller that moves the
    /// state from what it saw to `Starting` restarts it.
    async fn restart(&self, managed: &ManagedServer, seen: &ServerState, reason: String) {
        let won = managed.state.send_if_modified(|state| {
            let same = match (&*state, seen) {
                (ServerState::Ready { conn: a, .. }, ServerState::Ready { conn: b, .. }) => {
                    Arc::ptr_eq(a, b)
                }
                (
                    ServerState::Failed { retry_at: a, error: x, .. },
                    ServerState::Failed { retry_at: b, error: y, .. },
                ) => a == b && Arc::ptr_eq(x, y),
                _ => false,
            };
            if same {
                *state = ServerState::Starting;
            }
            same
        });
        if !won {
            return;
        }
        let server = &managed.config.name;
        let attempt = managed.restarts.fetch_add(1, Ordering::SeqCst) + 1;
        managed.restarted.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(%server, attempt, %reason, "restarting MCP server");
        self.events.send(EventMsg::McpServerRestarting(McpServerRestartingEvent {
            server: server.clone(),
            attempt,
            reason,
        }));
        if let ServerState::Ready { conn, .. } = seen {
            conn.close(self.options.lifecycle.shutdown_grace).await;
        }
        self.spawn_start(
            managed,
            restart::backoff(self.options.lifecycle.restart_backoff, attempt),
        );
    }

    fn spawn_start(&self, managed: &ManagedServer, failure_backoff: Duration) {
        let start = StartServer {
            config: managed.config.clone(),
            state: managed.state.clone(),
            key: managed.key.clone(),
            events: self.events.clone(),
            host: managed.host.clone(),
            connector: self.connector.clone(),
            failure_backoff,
            response_cache: self.options.requests.response_cache,
            watched: managed.watched.clone(),
            tokens: self.options.token_store.clone(),
            challenge: managed.challenge.clone(),
            list_generation: managed.list_generation.clone(),
            catalog: managed.catalog.clone(),
            progress_interval: self.options.requests.progress_interval,
            trust: self.trust.clone(),
        };
        let task = tokio::spawn(start.run());
        if let Ok(mut startups) = self.startups.lock() {
            startups.retain(|t| !t.is_finished());
            startups.push(task);
        }
    }

    pub(crate) fn managed(&self, server: &str) -> Result<Arc<ManagedServer>, McpError> {
        self.check_live()?;
        self.get(server).ok_or_else(|| McpError::UnknownServer(server.to_string()))
    }

    /// Whether the manager was shut down.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::SeqCst)
    }

    fn check_live(&self) -> Result<(), McpError> {
        if self.shut_down.load(Ordering::SeqCst) { Err(McpError::ShutDown) } else { Ok(()) }
    }

    /// From now on every request fails with `McpError::ShutDown` and nothing is (re)started;
    /// startups in flight are abandoned. Returns the connections to close.
    pub(crate) fn begin_shutdown(&self) -> Vec<(String, SharedConnection)> {
        self.shut_down.store(true, Ordering::SeqCst);
        self.abort_startups();
        let all = self.base.snapshot();
        ready_connections(&all).into_iter().map(|(name, conn)| (name.clone(), conn)).collect()
    }

    /// What `server`'s tool definitions that are not its pins do (`tool_changes`).
    pub(crate) fn policy(&self, server: &str) -> mcp_connection::ToolChanges {
        self.get(server).map(|m| m.config.tool_changes).unwrap_or_default()
    }

    pub(crate) fn abort_startups(&self) {
        if let Ok(startups) = self.startups.lock() {
            for startup in startups.iter() {
                startup.abort();
            }
        }
    }

    /// The startups in flight, taken: awaiting them after [`Servers::abort_startups`] returns
    /// once each abandoned start has dropped (and so ended) its server's processes.
    pub(crate) fn take_startups(&self) -> Vec<JoinHandle<()>> {
        self.startups.lock().map(|mut s| std::mem::take(&mut *s)).unwrap_or_default()
    }
}

/// The ready servers' connections in `all`, in server-name order (whether still usable or
/// not).
pub(crate) fn ready_connections(all: &Snapshot<ManagedServer>) -> Vec<(&String, SharedConnection)> {
    all.iter()
        .filter_map(|(name, m)| match &*m.state.borrow() {
            ServerState::Ready { conn, .. } => Some((name, conn.clone())),
            _ => None,
        })
        .collect()
}

/// The enabled servers of `configs` (the first of a duplicate name), each with its catalog.
pub(crate) fn chosen(
    configs: Vec<ServerConfig>,
    options: &ManagerOptions,
) -> Vec<(ServerConfig, CatalogSlot)> {
    let mut chosen: Vec<(ServerConfig, CatalogSlot)> = Vec::new();
    for config in configs {
        if !config.enabled {
            tracing::info!(server = %config.name, "server disabled in config; not started");
            continue;
        }
        if chosen.iter().any(|(c, _)| c.name == config.name) {
            tracing::warn!(server = %config.name, "duplicate server name; keeping the first");
            continue;
        }
        let catalog = CatalogSlot::load(options.startup.tool_cache.clone(), &config);
        chosen.push((config, catalog));
    }
    chosen
}
