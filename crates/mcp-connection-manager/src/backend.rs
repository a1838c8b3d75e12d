//! The manager as the router's [`McpBackend`]: the one API for what handlers ask of MCP —
//! lists, reads, tool calls, completion, the tool set and the resource changes. Every request
//! goes through the manager's `request`/`exchange` (timeouts, the `failed()` step).

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::join_all;
use mcp_backend::{
    Aggregate, AppsBackend, KnownTools, ListKind, McpBackend, McpError, Page, PromptsBackend,
    QualifiedTool, Reuse, SharedListing, SkillsBackend, TasksBackend, find_listed_tool,
    resolve_tool_name,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompletionInfo, JsonObject,
    ReadResourceRequestParams, ReadResourceResult, Reference,
};
use tracing::Instrument as _;

use crate::lifecycle::ServerState;
use crate::manager::McpConnectionManager;
use mcp_connection::{Retry, Round, ToolAnswer};

#[async_trait]
impl McpBackend for McpConnectionManager {
    async fn list(
        &self,
        server: &str,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page, McpError> {
        self.page(server, kind, cursor).await
    }

    async fn listing(
        &self,
        server: &str,
        kind: ListKind,
        from: Option<String>,
    ) -> Result<SharedListing, McpError> {
        self.listing_from(server, kind, from).await
    }

    fn kept_listing(&self, server: &str, kind: ListKind) -> Option<SharedListing> {
        self.kept(server, kind)
    }

    async fn list_all(&self, kind: ListKind, reuse: Reuse) -> Result<Aggregate, McpError> {
        self.every_listing(kind, reuse).await
    }

    /// `resources/read` on one server. An `input_required` answer (2026-07-28) is answered
    /// through the host and retried (see `input`).
    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
        let result = self
            .servers
            .exchange(server, "resources/read", |conn, retry| {
                // Only the first round may be answered from, or kept in, the cache: later rounds
                // depend on the inputs given.
                let first = retry == Retry::default();
                let mut params = ReadResourceRequestParams::new(uri);
                params.input_responses = retry.input_responses;
                params.request_state = retry.request_state;
                async move {
                    if first && let Some(cached) = conn.cache().read(uri) {
                        return Ok(Ok(Round::Complete(cached)));
                    }
                    let mut span = conn.telemetry().start("resources/read", None, Some(uri));
                    span.tag(&mut params.meta);
                    let answer = conn.read_resource(params).instrument(span.span()).await;
                    span.finish_with(&answer, |_| false);
                    let answer = answer.map(Round::try_from);
                    if first && let Ok(Ok(Round::Complete(result))) = &answer {
                        conn.cache().put_read(uri, result);
                    }
                    answer
                }
            })
            .await;
        if result.is_ok() {
            self.watch_read(server, uri);
        }
        result
    }

    fn skills(&self) -> Option<&dyn SkillsBackend> {
        Some(self)
    }

    fn prompts(&self) -> Option<&dyn PromptsBackend> {
        Some(self)
    }

    /// Only when `background_tasks_after` hands long calls to the background.
    fn tasks(&self) -> Option<&dyn TasksBackend> {
        self.servers.options.tasks.background_after.is_some().then_some(self as &dyn TasksBackend)
    }

    fn apps(&self) -> Option<&dyn AppsBackend> {
        Some(self)
    }

    /// Resources read through this manager that changed since they were last read, each once
    /// (taking them clears them), in server-name order.
    fn take_resource_changes(&self) -> Vec<router_protocol::ResourceChange> {
        let all = self.servers.snapshot();
        crate::scope::take_changes(&all).into_iter().map(|(_, change)| change).collect()
    }

    fn held(&self, kind: router_protocol::DefinitionKind) -> Vec<router_protocol::HeldNote> {
        let sees = self.identities();
        self.servers.trust.notes(kind, |key| sees.contains(key))
    }

    /// `tools/call` on one server, by the tool's original name. An `input_required` answer
    /// (2026-07-28) is answered through the host and retried (see `input`).
    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        self.check_call(server, tool, arguments.as_ref()).await?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let answer = self
            .servers
            .exchange(server, "tools/call", |conn, retry| {
                let mut params = params.clone();
                params.input_responses = retry.input_responses;
                params.request_state = retry.request_state;
                async move {
                    let mut span = conn.telemetry().start("tools/call", Some(&params.name), None);
                    span.tag(&mut params.meta);
                    let answer = conn.call_tool_once(params).instrument(span.span()).await;
                    span.finish_with(&answer, |answer| {
                    matches!(answer, CallToolResponse::Complete(r) if r.is_error == Some(true))
                });
                    answer.map(Round::try_from)
                }
            })
            .await?;
        match answer {
            ToolAnswer::Result(result) => Ok(result),
            ToolAnswer::Task(created) => self.follow_task(server, created.task).await,
        }
    }

    /// `completion/complete` for an argument of a resource template on one server.
    async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        self.servers.complete(server, Reference::for_resource(template), argument, value).await
    }

    /// Whether any server declares the `completions` capability (after startups settle). Only
    /// looks.
    async fn supports_completions(&self) -> bool {
        let names = self.servers.names();
        let checks = names.iter().map(|name| self.server_supports_completions(name));
        join_all(checks).await.into_iter().any(|yes| yes)
    }

    /// Every model-visible MCP tool. Sorted by server name, each server's order kept; a
    /// qualified name already taken is skipped with a warning. A server still starting, or a
    /// lazy one not started, is listed from its tool catalog (see [`crate::ToolCache`]) without
    /// waiting; when it becomes ready with a different list, `mcp_tools_changed` says so. A
    /// starting server with no catalog is waited for, and a lazy one with none is started to
    /// learn its tools. Never restarts a server.
    async fn list_tools(&self) -> Vec<QualifiedTool> {
        let servers = self.servers.snapshot();
        let unknown = servers.iter().filter_map(|(name, managed)| {
            let state = managed.state.borrow().clone();
            let lazy = matches!(state, ServerState::Lazy);
            let waiting = lazy || matches!(state, ServerState::Starting);
            (waiting && managed.catalog.get().is_none()).then_some((name, lazy))
        });
        join_all(unknown.map(|(name, lazy)| async move {
            if lazy {
                let _ = self.servers.connection(name).await;
            } else {
                let _ = self.servers.settled(name).await;
            }
        }))
        .await;
        // A list qualified from catalogs for this call is moved out, the cached one copied.
        let tools = self.tools_known_now().tools;
        Arc::try_unwrap(tools).unwrap_or_else(|shared| shared.as_ref().clone())
    }

    /// Also starts, in the background, the lazy servers whose tools are not known (no
    /// catalog): the next search finds their tools.
    async fn known_tools(&self) -> KnownTools {
        let known = self.tools_known_now();
        for name in &known.unknown {
            if let Some(managed) = self.servers.get(name) {
                self.servers.start_lazy(&managed);
            }
        }
        known
    }

    /// A tool the configuration filters out (`enabled_tools` / `disabled_tools`) says so.
    fn unavailable_tool(&self, qualified: &str) -> Option<String> {
        let all = self.servers.snapshot();
        let servers = all.keys().map(String::as_str);
        let Some((server, tool)) = mcp_backend::unlisted_tool(qualified, servers, |_, _| true)
        else {
            // No configured server owns the name: said in the words a read of it gets.
            let named = qualified.strip_prefix("mcp__")?.split("__").next()?;
            let unknown = McpError::UnknownServer(named.to_string());
            return Some(format!("unsupported call: {qualified} ({unknown})"));
        };
        let managed = self.servers.get(&server)?;
        if let Some(held) = self.servers.trust.held_message(
            &managed.key,
            router_protocol::DefinitionKind::Tool,
            &tool,
        ) {
            return Some(held);
        }
        if !managed.config.tool_allowed(&tool) {
            return Some(format!(
                "tool `{tool}` of MCP server '{server}' is disabled by configuration (enabled_tools / disabled_tools)"
            ));
        }
        app_only(&managed, &tool).then(|| {
            format!(
                "tool `{tool}` of MCP server '{server}' is for its app only (its _meta.ui.visibility leaves out \"model\"): the model cannot call it"
            )
        })
    }

    fn listed_tool(&self, server: &str, tool: &str) -> Option<rmcp::model::Tool> {
        let managed = self.servers.get(server)?;
        let live = match &*managed.state.borrow() {
            ServerState::Ready { conn, .. } => Some(conn.tools()),
            _ => None,
        };
        match live {
            Some(tools) => tools.iter().find(|t| t.name == tool).cloned(),
            None => managed.catalog.get()?.tools.iter().find(|t| t.name == tool).cloned(),
        }
    }

    /// The server and original tool name behind a qualified name, by
    /// [`mcp_backend::resolve_tool_name`]'s rule with the servers' tool filters. Answers from
    /// the servers that are ready and the catalogs; only when that fails does it wait, and only
    /// for the starting servers the name could belong to. Only looks.
    async fn resolve_tool(&self, qualified: &str) -> Option<(String, String)> {
        if let Some(found) = find_listed_tool(qualified, &self.qualified_tools()) {
            return Some(found);
        }
        // Approved since by another process (`mcp-router trust approve`): the pins files are
        // read again, and the tool is shown if they now admit it.
        if self.servers.trust.refresh()
            && let Some(found) = find_listed_tool(qualified, &self.qualified_tools())
        {
            return Some(found);
        }
        // A tool of a server still starting (or lazy) that its catalog lists: the call will
        // wait for (or start) that server alone.
        let servers = self.servers.snapshot();
        for (name, managed) in servers.iter() {
            let not_ready =
                matches!(&*managed.state.borrow(), ServerState::Starting | ServerState::Lazy);
            if not_ready
                && let Some(catalog) = managed.catalog.get()
                && let Some(tool) = catalog
                    .tools
                    .iter()
                    .find(|t| mcp_backend::qualified_tool_name(name, &t.name) == qualified)
                && !self.servers.trust.is_held(&managed.key, &tool.name)
            {
                return Some((name.clone(), tool.name.to_string()));
            }
        }
        // A server still starting may list it: wait for those the name could belong to, and
        // for no other (a typo, or a call to another server, is answered at once).
        let starting = servers.iter().filter(|(name, managed)| {
            matches!(&*managed.state.borrow(), ServerState::Starting)
                && mcp_backend::could_name_a_tool_of(qualified, name)
        });
        join_all(starting.map(|(name, _)| self.servers.settled(name))).await;
        // Not a tool the configuration filters out, nor one for the server's app alone.
        let allowed = |server: &str, tool: &str| {
            let held = self.servers.trust.is_held(&self.servers.key(server), tool);
            servers.get(server).is_some_and(|m| m.config.tool_allowed(tool) && !app_only(m, tool))
                && !held
        };
        let names = servers.keys().map(String::as_str);
        let found = resolve_tool_name(qualified, &self.qualified_tools(), names, allowed);
        if found.is_some() {
            return found;
        }
        // A held tool called by name: its host may approve it for this call.
        let (server, tool) =
            mcp_backend::unlisted_tool(qualified, servers.keys().map(String::as_str), |_, _| true)?;
        let definition = self
            .listed_tool(&server, &tool)
            .filter(|_| self.servers.trust.is_held(&self.servers.key(&server), &tool))?;
        let call_id = mcp_backend::current_call_id().map(|c| c.to_string());
        let trust = &self.servers.trust;
        let key = self.servers.key(&server);
        trust.ask_for_call(&key, &definition, call_id).await.then_some((server, tool))
    }
}

/// Whether `tool` is for `managed`'s app alone: by its live list when it is ready, else by its
/// catalog (an idle server refuses such a call by name as a ready one does).
fn app_only(managed: &crate::lifecycle::ManagedServer, tool: &str) -> bool {
    match &*managed.state.borrow() {
        ServerState::Ready { conn, .. } => conn.app_only_tools().iter().any(|t| t.name == tool),
        _ => managed.catalog.get().is_some_and(|c| c.app_only.iter().any(|t| t == tool)),
    }
}

impl AppsBackend for McpConnectionManager {
    fn app_tool(&self, server: &str, tool: &str) -> Option<rmcp::model::Tool> {
        let managed = self.servers.get(server)?;
        let ServerState::Ready { conn, .. } = &*managed.state.borrow() else { return None };
        let app_only = conn.app_only_tools().iter().find(|t| t.name == tool).cloned();
        let shared = || conn.tools().iter().find(|t| t.name == tool).cloned();
        app_only.or_else(shared).filter(mcp_backend::app_visible)
    }
}
