//! The connection manager's public face: starts every enabled server concurrently, answers the
//! look-only queries, and holds the one path every request takes (`request`/`exchange`: the
//! tool timeout, and the `failed()` step that marks a broken connection dead and records a
//! refused sign-in). The requests themselves are its `McpBackend` implementation (`backend`);
//! lists live in `listings`, the lifecycle in `lifecycle`, the restart decision in `restart`,
//! the qualified tool set in `catalog`.

use router_protocol::DefinitionKind;
use std::sync::Arc;

use futures::future::join_all;
use mcp_backend::{KnownTools, McpError, QualifiedTool, SignIn};
use router_protocol::EventSender;

use crate::lifecycle::{ServerState, Servers};
use crate::options::ManagerOptions;
use crate::scope::ViewState;
use crate::trust::Judged;
use mcp_connection::ServerConfig;
use mcp_connection::{Connector, Transports};
use mcp_connection::{DefaultHost, HostHandler};

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// `initialize` has not finished yet.
    Starting,
    /// Usable.
    Ready,
    /// Could not be started, or its connection closed; the reason.
    Failed(String),
    /// Refused for want of sign-in: a new sign-in (`oauth::Login`) lets the next use start
    /// it without a restart.
    SignInRequired(SignIn),
    /// A lazy server not started yet (its first use starts it).
    NotStarted,
}

/// Runs many MCP servers. Cheap to share behind an `Arc`; every method takes `&self`.
///
/// A server whose connection closed (process exited, HTTP session gone) or that failed to start
/// is started again by the next request that needs it, after a doubling back-off, at most
/// `max_restarts` times; then it stays failed and says so. Each restart is announced with
/// `mcp_server_restarting` and bounded by the startup timeout. Queries that only look
/// (`status`, `list_tools`, `supports_completions`, `wait_until_started`) never restart a
/// server; `list_tools` starts a lazy server that has no tool catalog, to learn its tools. After [`McpConnectionManager::shutdown`] every request fails with
/// [`McpError::ShutDown`].
pub struct McpConnectionManager {
    pub(crate) servers: Arc<Servers>,
    /// What the manager keeps for a request of no view (each view keeps its own): complete
    /// resource and template listings behind continuations and filtered lists, the qualified
    /// tools.
    base: Arc<ViewState>,
    /// Each server's kept skill listing (SEP-2640), by identity.
    pub(crate) skill_cache: crate::skills::cache::SkillCache,
    /// Tool calls' tasks handed to the background (`background_tasks_after`).
    pub(crate) backgrounded: crate::tasks::follow::Backgrounded,
    /// The entries run per session or per directory, and their instances now.
    pub(crate) scoped: std::sync::Mutex<crate::scope::ScopedEntries>,
    /// Scoped instances ending: awaited by the shutdown.
    pub(crate) closing: Arc<crate::scope::Closing>,
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
        let mut options = options;
        options.token_store =
            options.token_store.take().or_else(mcp_connection::oauth::TokenStore::default_location);
        let tokens = options.token_store.clone();
        Self::start_with_connector(configs, events, options, host, Arc::new(Transports { tokens }))
    }

    pub(crate) fn start_with_connector(
        configs: Vec<ServerConfig>,
        events: EventSender,
        options: ManagerOptions,
        host: Arc<dyn HostHandler>,
        connector: Arc<dyn Connector>,
    ) -> Self {
        let servers = Arc::new(Servers::start(configs, events, options, host, connector));
        let base = Arc::new(ViewState::new(Vec::new(), &servers.options));
        Self {
            servers,
            base,
            skill_cache: Default::default(),
            backgrounded: Default::default(),
            scoped: Default::default(),
            closing: Default::default(),
        }
    }

    /// What the current request's view keeps (the manager's own outside a view).
    pub(crate) fn state(&self) -> Arc<ViewState> {
        crate::scope::current().unwrap_or_else(|| self.base.clone())
    }

    /// Configured (enabled) server names, sorted.
    pub fn server_names(&self) -> Vec<String> {
        self.servers.names()
    }

    /// A server's current status, `None` if unknown.
    pub fn status(&self, server: &str) -> Option<ServerStatus> {
        let managed = self.servers.get(server)?;
        Some(match &*managed.state.borrow() {
            ServerState::Starting => ServerStatus::Starting,
            ServerState::Lazy => ServerStatus::NotStarted,
            ServerState::Ready { conn, .. } if !conn.is_usable() => {
                ServerStatus::Failed("the connection closed".to_string())
            }
            ServerState::Ready { .. } => ServerStatus::Ready,
            ServerState::Failed { signed_out: Some(out), .. } => {
                ServerStatus::SignInRequired(out.sign_in.clone())
            }
            ServerState::Failed { error, .. } => ServerStatus::Failed(error.to_string()),
        })
    }

    /// Whether the server declared the `completions` capability: by its catalog while it is
    /// starting or idle, else once it is no longer starting (false if failed). An idle server
    /// nothing is known of (no catalog: a first run) is started to learn it, as a listing of
    /// its tools does.
    pub(crate) async fn server_supports_completions(&self, server: &str) -> bool {
        if let Some(managed) = self.servers.get(server) {
            let state = managed.state.borrow().clone();
            if matches!(state, ServerState::Starting | ServerState::Lazy)
                && let Some(catalog) = managed.catalog.get()
            {
                return catalog.completions;
            }
            if matches!(state, ServerState::Lazy) {
                self.servers.start_lazy(&managed);
            }
        }
        matches!(
            self.servers.settled(server).await,
            Ok(ServerState::Ready { conn, .. }) if conn.capabilities.completions.is_some()
        )
    }

    /// Wait until no server is starting any more (each bounded by its startup timeout). Only
    /// waits: a failed or dead server is not restarted.
    pub async fn wait_until_started(&self) {
        let names = self.servers.names();
        join_all(names.iter().map(|name| self.servers.settled(name))).await;
    }

    /// The model read `uri`: watch it (see `watch`), and forget a pending change of it.
    pub(crate) fn watch_read(&self, server: &str, uri: &str) {
        let Some(managed) = self.servers.get(server) else { return };
        // Only a URI that joined the watched set costs a request (see `Watched`'s policy).
        let Some(touch) = managed.watched.read(uri) else { return };
        let conn = match &*managed.state.borrow() {
            ServerState::Ready { conn, .. } => conn.clone(),
            _ => return,
        };
        mcp_connection::follow(&conn, touch, uri, managed.config.tool_timeout);
    }

    /// End every server and return once each has exited: HTTP sessions closed, stdio servers
    /// sent SIGTERM (the process group and every process the server started, even one that
    /// left the group) and, after the grace period, SIGKILL. Servers still starting are
    /// abandoned (their processes killed, from the bottom up, before this returns). Afterwards every request fails with
    /// [`McpError::ShutDown`].
    pub async fn shutdown(&self) {
        let mut connections = self.servers.begin_shutdown();
        let scoped = self.scoped.lock().map(|scoped| scoped.live()).unwrap_or_default();
        for instances in scoped {
            let all = instances.map.snapshot();
            let ready = crate::lifecycle::ready_connections(&all).into_iter();
            connections.extend(ready.map(|(_, conn)| (String::new(), conn)));
        }
        let grace = self.servers.options.lifecycle.shutdown_grace;
        // The starts abandoned end their processes as they are dropped: waited for too.
        let abandoned = join_all(self.servers.take_startups());
        join_all(connections.iter().map(|(_, c)| c.close(grace))).await;
        abandoned.await;
        // Scoped instances that no view holds any more end on tasks of their own.
        let closing = std::mem::take(&mut *self.closing.lock().unwrap_or_else(|p| p.into_inner()));
        join_all(closing).await;
        // Once per shutdown: a second call (or a clone's) finds nothing left to announce.
        if self.servers.stopped_announced.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let running: std::collections::BTreeSet<&String> =
            connections.iter().map(|(name, _)| name).collect();
        for server in self.servers.names().iter() {
            self.servers.events.send(router_protocol::EventMsg::McpServerStopped(
                router_protocol::McpServerStoppedEvent {
                    server: server.clone(),
                    was_running: running.contains(server),
                },
            ));
        }
    }

    /// The last `WWW-Authenticate` challenge a request to `server` met (a 401, or a 403
    /// `insufficient_scope` naming the scopes it wants): pass it to
    /// [`mcp_connection::oauth::Login::start`] so the new sign-in asks for them.
    pub fn auth_challenge(&self, server: &str) -> Option<String> {
        self.servers.get(server)?.challenge.lock().ok()?.clone()
    }

    /// The rmcp peer of a ready server, for the benchmarks' measurements on the very same
    /// connection (the `bench` feature). `None` unless the server is ready. Requests sent
    /// through it bypass the router (no events, no cache, no restart on failure).
    #[cfg(feature = "bench")]
    pub fn peer(&self, server: &str) -> Option<rmcp::service::Peer<rmcp::RoleClient>> {
        let managed = self.servers.get(server)?;
        match &*managed.state.borrow() {
            ServerState::Ready { conn, .. } => Some(conn.service.peer().clone()),
            _ => None,
        }
    }

    /// The host's roots changed: every ready server is sent `notifications/roots/list_changed`
    /// (one that cares asks `roots/list` again). Returns how many were told; a server not
    /// started yet asks when it starts.
    pub async fn roots_changed(&self) -> usize {
        let ready: Vec<_> = {
            let all = self.servers.snapshot();
            crate::lifecycle::ready_connections(&all).into_iter().map(|(_, conn)| conn).collect()
        };
        let mut told = 0;
        for conn in ready {
            if conn.service.peer().notify_roots_list_changed().await.is_ok() {
                told += 1;
            }
        }
        told
    }

    /// Each server's restarts since this manager started, by name (what the ledger counts).
    pub fn restart_counts(&self) -> Vec<(String, u32)> {
        let all = self.servers.snapshot();
        let count = |m: &crate::lifecycle::ManagedServer| {
            m.restarted.load(std::sync::atomic::Ordering::Relaxed)
        };
        all.iter().map(|(name, managed)| (name.clone(), count(managed))).collect()
    }

    /// For each ready stdio server, the process id of the server itself (for diagnostics and
    /// tests; see [`McpConnectionManager::process_groups`] for the guard heading its group).
    pub fn child_pids(&self) -> Vec<(String, u32)> {
        let all = self.servers.snapshot();
        crate::lifecycle::ready_connections(&all)
            .into_iter()
            .filter_map(|(name, conn)| Some((name.clone(), conn.child.as_ref()?.server_pid()?)))
            .collect()
    }

    /// For each ready stdio server, its sandbox in words (`mcp_server_ready`'s `sandbox`).
    pub fn sandboxes(&self) -> Vec<(String, String)> {
        let all = self.servers.snapshot();
        crate::lifecycle::ready_connections(&all)
            .into_iter()
            .filter_map(|(name, conn)| Some((name.clone(), conn.child.as_ref()?.sandbox().into())))
            .collect()
    }

    /// For each ready stdio server, the process id of its guard, which heads the server's
    /// process group (the server is the guard's child; shutdown ends the whole group).
    pub fn process_groups(&self) -> Vec<(String, u32)> {
        let all = self.servers.snapshot();
        crate::lifecycle::ready_connections(&all)
            .into_iter()
            .filter_map(|(name, conn)| conn.child.as_ref().map(|c| (name.clone(), c.pid())))
            .collect()
    }

    pub(crate) fn qualified_tools(&self) -> Arc<Vec<QualifiedTool>> {
        let trust = &self.servers.trust;
        let admit = |server: &str, conn: &mcp_connection::SharedConnection| {
            let (tools, unshown) = (conn.tools(), conn.filtered_tools());
            let policy = self.servers.policy(server);
            let key = self.servers.key(server);
            trust.admit(&key, policy, tools.clone(), &tools, &unshown).visible.clone()
        };
        let all = self.servers.snapshot();
        let ready = crate::lifecycle::ready_connections(&all);
        self.state().catalog.tools(&ready, trust.generation(), admit)
    }

    /// The tools of ready servers and the catalogs of starting or lazy ones; the servers of
    /// neither kind without a catalog are `unknown`. Only looks.
    pub(crate) fn tools_known_now(&self) -> KnownTools {
        let mut from_catalog = false;
        let (mut lists, mut unknown) = (Vec::new(), Vec::new());
        let all = self.servers.snapshot();
        for (name, managed) in all.iter() {
            let policy = managed.config.tool_changes;
            let tools = match &*managed.state.borrow() {
                ServerState::Ready { conn, .. } => {
                    let (tools, unshown) = (conn.tools(), conn.filtered_tools());
                    let trust = &self.servers.trust;
                    let key = &managed.key;
                    trust.admit(key, policy, tools.clone(), &tools, &unshown).visible.clone()
                }
                ServerState::Starting | ServerState::Lazy => match managed.catalog.get() {
                    Some(catalog) => {
                        managed.catalog.mark_served();
                        from_catalog = true;
                        let trust = &self.servers.trust;
                        let owner = catalog.clone();
                        let key = &managed.key;
                        trust.admit(key, policy, owner, &catalog.tools, &[]).visible.clone()
                    }
                    None => {
                        unknown.push(name.clone());
                        continue;
                    }
                },
                ServerState::Failed { .. } => continue,
            };
            lists.push((name, tools));
        }
        let tools = if from_catalog {
            Arc::new(crate::catalog::qualify_lists(&lists))
        } else {
            self.qualified_tools()
        };
        KnownTools { tools, unknown }
    }

    /// A number that changes whenever `server`'s lists may have changed (it said so with
    /// `resources/list_changed`, it was connected anew, or a pin changed while the router
    /// runs): a kept listing taken before a change is not used.
    pub(crate) fn generation(&self, server: &str) -> Result<u64, McpError> {
        let managed =
            self.servers.get(server).ok_or_else(|| McpError::UnknownServer(server.to_string()))?;
        let listed = managed.list_generation.load(std::sync::atomic::Ordering::SeqCst);
        // Both only grow, so their sum changes whenever either does.
        Ok(listed + self.servers.trust.generation())
    }

    /// The `items` (prompts, templates or skills of `kind`, each named by `name`, ending their
    /// list) of `server` that its pins admit (see `Trust::admit_items`).
    pub(crate) fn admitted<T>(
        &self,
        server: &str,
        kind: DefinitionKind,
        items: Vec<T>,
        name: impl Fn(&T) -> String,
    ) -> crate::trust::Shown<Vec<T>>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + Clone,
    {
        let judged = Judged::whole(kind, self.servers.policy(server));
        self.servers.trust.admit_items(&self.servers.key(server), judged, items, name)
    }

    /// Pin `server`'s held definitions as they are now — `names`, or every one with `names`
    /// empty — as `mcp-router trust approve` does: its tools as listed now (the live list, else
    /// the catalog), its prompts, templates and skills as its pins file keeps them. Returns the
    /// names pinned anew; every list is admitted again. Nothing is pinned without a pin store.
    pub fn approve_held(&self, server: &str, names: &[String]) -> Result<Vec<String>, McpError> {
        let managed = self.servers.get(server);
        let managed = managed.ok_or_else(|| McpError::UnknownServer(server.to_string()))?;
        let Some(store) = &self.servers.options.trust.pins else { return Ok(Vec::new()) };
        let tools = match &*managed.state.borrow() {
            ServerState::Ready { conn, .. } => conn.tools().as_ref().clone(),
            _ => managed.catalog.get().map(|c| c.tools.clone()).unwrap_or_default(),
        };
        let key = crate::PinKey::of(&managed.config);
        let approved = store.approve(&key, &tools, names).map_err(|e| McpError::Refused {
            server: server.to_string(),
            message: e.to_string(),
        })?;
        self.servers.trust.refresh();
        Ok(approved)
    }

    /// The definitions held from the model now, as (server, kind, name), sorted: tools by
    /// each server's last tool list admitted, prompts, templates and skills by their last list.
    /// Only looks. `approve_held` (or `mcp-router trust approve`) lets them in.
    pub fn held_definitions(&self) -> Vec<(String, DefinitionKind, String)> {
        let sees = self.identities();
        let held = self.servers.trust.held_now().into_iter().filter(|(key, ..)| sees.contains(key));
        held.map(|(key, kind, name)| (crate::identity::name_of(&key).to_string(), kind, name))
            .collect()
    }

    /// The identities of the servers the current request sees.
    pub(crate) fn identities(&self) -> std::collections::HashSet<String> {
        self.servers.snapshot().values().map(|managed| managed.key.clone()).collect()
    }

    /// Refused with the reason when `name` of `kind` of `server` is held.
    pub(crate) fn not_held(
        &self,
        server: &str,
        kind: DefinitionKind,
        name: &str,
    ) -> Result<(), McpError> {
        let trust = &self.servers.trust;
        let key = self.servers.key(server);
        let Some(mut message) = trust.held_message(&key, kind, name) else { return Ok(()) };
        // Approved since by another process? The files are read again before refusing (a tool
        // is admitted again by its caller, `check_call`).
        if !kind.is_tool() && trust.refresh() {
            match trust.held_message(&key, kind, name) {
                Some(again) => message = again,
                None => return Ok(()),
            }
        }
        Err(McpError::Refused { server: server.to_string(), message })
    }
}

impl Drop for McpConnectionManager {
    fn drop(&mut self) {
        self.servers.abort_startups();
    }
}
