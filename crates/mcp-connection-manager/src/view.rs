//! One session's view of the manager ([`ScopedView`]): the shared servers and the instances of
//! the scoped entries for its session and its working directory, as one backend. Every request
//! runs for the view (see `scope`), so a server name resolves to the view's instance when it
//! runs one of that name, and what spans servers covers the shared ones and its own.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::{
    Aggregate, AppsBackend, KnownTools, ListKind, McpBackend, McpError, Page, PromptsBackend,
    PromptsListing, QualifiedTool, Reuse, ServerSkills, SharedListing, SkillApproval,
    SkillsBackend, SkillsListing, TasksBackend,
};
use mcp_connection::{HostHandler, ServerConfig};
use rmcp::model::{
    CallToolResult, CompletionInfo, GetPromptResult, JsonObject, ReadResourceResult, Skill, Tool,
};
use router_protocol::{DefinitionKind, HeldNote, ResourceChange};

use crate::lifecycle::Servers;
use crate::manager::McpConnectionManager;
use crate::scope::{Closing, Instances, Scope, ViewState, within, within_sync};

/// A session's view of the one manager: the shared servers, and the instances run for its
/// session (`Scope::Session`) and its working directory (`Scope::Directory`). Dropping the
/// last clone ends the session's instances, and the directory's once no other view holds
/// them (each after its calls in flight).
#[derive(Clone)]
pub struct ScopedView {
    manager: Arc<McpConnectionManager>,
    state: Arc<ViewState>,
}

impl McpConnectionManager {
    /// The entries not shared by everyone, each with its scope (replacing those given before):
    /// new views run them, and the instances running now are reconfigured as
    /// [`McpConnectionManager::reconfigure`] does (only an instance whose entry changed is
    /// restarted).
    pub fn set_scoped(&self, entries: Vec<(ServerConfig, Scope)>) {
        let live = {
            let mut scoped = self.scoped.lock().unwrap_or_else(|p| p.into_inner());
            scoped.entries = entries.clone();
            scoped.live()
        };
        for instances in live {
            let configs = instances.entries(&entries);
            self.servers.apply(&instances.map, configs, Some(&instances));
        }
    }

    /// A view for `session`, whose agent works in `cwd` (`None`: the router's own directory):
    /// the shared servers, the session's own instances (started now, answered by `host`) and
    /// its directory's (started by the first view there, answered by the manager's host).
    pub fn view(
        self: &Arc<Self>,
        session: u64,
        cwd: Option<&Path>,
        host: Arc<dyn HostHandler>,
    ) -> ScopedView {
        let mut own = Vec::new();
        let servers = &self.servers;
        let closing = &self.closing;
        let mut scoped = self.scoped.lock().unwrap_or_else(|p| p.into_inner());
        let entries = scoped.entries.clone();
        let has = |kind: Scope| entries.iter().any(|(_, scope)| *scope == kind);
        if has(Scope::Session) {
            let tag = format!("session {session}");
            let at = (Some(session), cwd);
            let mine = start(servers, closing, Scope::Session, tag, at, host, &entries);
            scoped.by_session.insert(session, Arc::downgrade(&mine));
            own.push(mine);
        }
        if has(Scope::Directory) {
            let key = cwd.map(Path::to_path_buf);
            let running = scoped.by_directory.get(&key).and_then(std::sync::Weak::upgrade);
            let there = running.unwrap_or_else(|| {
                let tag = cwd.map_or_else(|| ".".to_string(), |d| d.display().to_string());
                let host = servers.host.clone();
                let started =
                    start(servers, closing, Scope::Directory, tag, (None, cwd), host, &entries);
                scoped.by_directory.insert(key, Arc::downgrade(&started));
                started
            });
            own.push(there);
        }
        scoped.by_session.retain(|_, instances| instances.strong_count() > 0);
        scoped.by_directory.retain(|_, instances| instances.strong_count() > 0);
        drop(scoped);
        let state = Arc::new(ViewState::new(own, &servers.options));
        ScopedView { manager: self.clone(), state }
    }

    /// Every scoped instance running now: its scope, session (for `Scope::Session`) and
    /// directory, and a view of it alone to ask about it (`status`, `child_pids`, …, answer
    /// for its servers only through [`ScopedInstances::ask`]).
    pub fn scoped_instances(&self) -> Vec<ScopedInstances> {
        let scoped = self.scoped.lock().unwrap_or_else(|p| p.into_inner());
        let live = scoped.live();
        drop(scoped);
        live.into_iter()
            .map(|instances| ScopedInstances {
                scope: instances.kind,
                session: instances.session,
                cwd: instances.cwd.clone(),
                names: instances.map.names(),
                state: Arc::new(ViewState::new(vec![instances], &self.servers.options)),
            })
            .collect()
    }

    /// What the servers reported changed of the resources the model read, each once (taking
    /// clears them), every server's and every scoped instance's, with the identity of the
    /// server each is of (what tells two sessions' instances of one name apart).
    pub fn take_every_resource_change(&self) -> Vec<(String, ResourceChange)> {
        let scoped = self.scoped.lock().map(|s| s.live()).unwrap_or_default();
        let maps = std::iter::once(self.servers.base.snapshot())
            .chain(scoped.iter().map(|instances| instances.map.snapshot()));
        maps.flat_map(|map| crate::scope::take_changes(&map)).collect()
    }
}

/// The instances of `entries` of `kind` for one session or directory, started.
fn start(
    servers: &Arc<Servers>,
    closing: &Arc<Closing>,
    kind: Scope,
    tag: String,
    (session, cwd): (Option<u64>, Option<&Path>),
    host: Arc<dyn HostHandler>,
    entries: &[(ServerConfig, Scope)],
) -> Arc<Instances> {
    let instances = Instances {
        kind,
        tag,
        session,
        cwd: cwd.map(Path::to_path_buf),
        map: Default::default(),
        host,
        servers: Arc::downgrade(servers),
        closing: closing.clone(),
    };
    let configs = instances.entries(entries);
    let started = servers.apply(&instances.map, configs, Some(&instances));
    tracing::info!(?kind, ?session, ?cwd, servers = ?started.added, "scoped servers started");
    Arc::new(instances)
}

/// One session's or one directory's instances, for what a router tells of them.
pub struct ScopedInstances {
    /// Whose they are.
    pub scope: Scope,
    /// The session, for `Scope::Session`.
    pub session: Option<u64>,
    /// The directory they run in.
    pub cwd: Option<std::path::PathBuf>,
    /// Their server names, sorted.
    pub names: Vec<String>,
    state: Arc<ViewState>,
}

impl ScopedInstances {
    /// `ask` of `manager` as a request of these instances' view: `manager`'s look-only
    /// methods (`status`, `child_pids`, `sandboxes`, `held_definitions`) answer for them.
    pub fn ask<R>(
        &self,
        manager: &McpConnectionManager,
        ask: impl FnOnce(&McpConnectionManager) -> R,
    ) -> R {
        within_sync(&self.state, || ask(manager))
    }
}

impl ScopedView {
    /// The identity of the server `server` names in this view (its name for a shared server;
    /// its name and scope for one of the view's instances): what tells two sessions'
    /// instances of one name apart.
    pub fn identity(&self, server: &str) -> String {
        within_sync(&self.state, || self.manager.servers.key(server))
    }

    /// The names of the servers run for this view's session and directory, sorted.
    pub fn own_servers(&self) -> Vec<String> {
        let mut names: Vec<String> =
            self.state.own.iter().flat_map(|instances| instances.map.names()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// The session's roots changed: its own instances (`Scope::Session`) that are ready are
    /// sent `notifications/roots/list_changed`; returns how many were told.
    pub async fn roots_changed(&self) -> usize {
        let mine = self.state.own.iter().filter(|instances| instances.kind == Scope::Session);
        let mut told = 0;
        for instances in mine {
            let all = instances.map.snapshot();
            for (_, conn) in crate::lifecycle::ready_connections(&all) {
                told += usize::from(conn.service.peer().notify_roots_list_changed().await.is_ok());
            }
        }
        told
    }

    /// The manager under the view.
    pub fn manager(&self) -> &Arc<McpConnectionManager> {
        &self.manager
    }
}

#[async_trait]
impl McpBackend for ScopedView {
    async fn list(
        &self,
        server: &str,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page, McpError> {
        within(&self.state, self.manager.list(server, kind, cursor)).await
    }

    async fn listing(
        &self,
        server: &str,
        kind: ListKind,
        from: Option<String>,
    ) -> Result<SharedListing, McpError> {
        within(&self.state, self.manager.listing(server, kind, from)).await
    }

    fn kept_listing(&self, server: &str, kind: ListKind) -> Option<SharedListing> {
        within_sync(&self.state, || self.manager.kept_listing(server, kind))
    }

    async fn list_all(&self, kind: ListKind, reuse: Reuse) -> Result<Aggregate, McpError> {
        within(&self.state, self.manager.list_all(kind, reuse)).await
    }

    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
        within(&self.state, self.manager.read_resource(server, uri)).await
    }

    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        within(&self.state, self.manager.call_tool(server, tool, arguments)).await
    }

    async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        let complete = self.manager.complete_resource_argument(server, template, argument, value);
        within(&self.state, complete).await
    }

    async fn supports_completions(&self) -> bool {
        within(&self.state, self.manager.supports_completions()).await
    }

    async fn list_tools(&self) -> Vec<QualifiedTool> {
        within(&self.state, self.manager.list_tools()).await
    }

    async fn known_tools(&self) -> KnownTools {
        within(&self.state, self.manager.known_tools()).await
    }

    fn listed_tool(&self, server: &str, tool: &str) -> Option<Tool> {
        within_sync(&self.state, || self.manager.listed_tool(server, tool))
    }

    async fn resolve_tool(&self, qualified_name: &str) -> Option<(String, String)> {
        within(&self.state, self.manager.resolve_tool(qualified_name)).await
    }

    fn unavailable_tool(&self, qualified_name: &str) -> Option<String> {
        within_sync(&self.state, || self.manager.unavailable_tool(qualified_name))
    }

    fn skills(&self) -> Option<&dyn SkillsBackend> {
        self.manager.skills().map(|_| self as &dyn SkillsBackend)
    }

    fn prompts(&self) -> Option<&dyn PromptsBackend> {
        self.manager.prompts().map(|_| self as &dyn PromptsBackend)
    }

    fn tasks(&self) -> Option<&dyn TasksBackend> {
        self.manager.tasks().map(|_| self as &dyn TasksBackend)
    }

    fn apps(&self) -> Option<&dyn AppsBackend> {
        self.manager.apps().map(|_| self as &dyn AppsBackend)
    }

    fn take_resource_changes(&self) -> Vec<ResourceChange> {
        within_sync(&self.state, || self.manager.take_resource_changes())
    }

    fn held(&self, kind: DefinitionKind) -> Vec<HeldNote> {
        within_sync(&self.state, || self.manager.held(kind))
    }
}

#[async_trait]
impl SkillsBackend for ScopedView {
    async fn server_skills(&self, server: &str) -> Result<Arc<ServerSkills>, McpError> {
        within(&self.state, self.manager.server_skills(server)).await
    }

    async fn offers_skills(&self) -> bool {
        within(&self.state, self.manager.offers_skills()).await
    }

    async fn all_skills(&self) -> SkillsListing {
        within(&self.state, self.manager.all_skills()).await
    }

    async fn get_skill(&self, server: &str, uri: &str) -> Result<Skill, McpError> {
        within(&self.state, self.manager.get_skill(server, uri)).await
    }

    async fn approve_skill(&self, server: &str, skill: &Skill) -> SkillApproval {
        within(&self.state, self.manager.approve_skill(server, skill)).await
    }
}

#[async_trait]
impl PromptsBackend for ScopedView {
    async fn all_prompts(&self) -> PromptsListing {
        within(&self.state, self.manager.all_prompts()).await
    }

    async fn offers_prompts(&self) -> bool {
        within(&self.state, self.manager.offers_prompts()).await
    }

    async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, McpError> {
        within(&self.state, self.manager.get_prompt(server, name, arguments)).await
    }

    async fn complete_prompt_argument(
        &self,
        server: &str,
        prompt: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        let complete = self.manager.complete_prompt_argument(server, prompt, argument, value);
        within(&self.state, complete).await
    }
}

#[async_trait]
impl TasksBackend for ScopedView {
    fn backgrounded_task(&self, server: Option<&str>, task: &str) -> Result<String, McpError> {
        within_sync(&self.state, || self.manager.backgrounded_task(server, task))
    }

    async fn await_task(
        &self,
        server: &str,
        task: &str,
        wait: std::time::Duration,
    ) -> Result<CallToolResult, McpError> {
        within(&self.state, self.manager.await_task(server, task, wait)).await
    }
}

impl AppsBackend for ScopedView {
    fn app_tool(&self, server: &str, tool: &str) -> Option<Tool> {
        within_sync(&self.state, || self.manager.app_tool(server, tool))
    }
}
