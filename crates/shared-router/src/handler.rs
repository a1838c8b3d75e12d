//! What a session of the shared router answers: an rmcp `ServerHandler` whose tools are its
//! router's specs and dispatch, whose prompts and resources are the servers', qualified, and
//! which tells its client when its own servers' tools change.

use std::sync::Arc;

use mcp_host::{McpBackend as _, McpConnectionManager};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, SubscriptionSink};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};

use super::lock::locked;
use super::output::to_tool;
use super::session::{SessionServer, owner, same_tools};

impl ServerHandler for SessionServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_completions()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("mcp-router", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The shared mcp-router: the tools of every configured MCP server (mcp__server__tool), \
                 the resource tools and, with tool search on, search_mcp_tools.",
            )
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let info = context.peer.peer_info();
        if let Some(info) = &info {
            let client = format!("{} {}", info.client_info.name, info.client_info.version);
            self.shared.update(self.id, |session| session.client = Some(client));
        }
        let owner = owner(self.id, &context.peer, info.as_ref().map(|i| &i.capabilities));
        for group in self.guard.groups.iter().filter(|g| g.session == Some(self.id)) {
            *locked(&group.client) = Some(owner.clone());
        }
        if !self.guard.groups.is_empty() {
            let moved = self.shared.moved.tools.subscribe();
            let groups = self.guard.groups.iter().map(|g| g.manager.clone()).collect();
            let task = tokio::spawn(announce_own_tool_changes(groups, moved, context.peer.clone()));
            locked(&self.guard.tasks).push(task.abort_handle());
        }
        locked(&self.shared.peers).insert(self.id, context.peer);
    }

    /// The session's roots changed: its own servers (`shared = false`) are told; the shared
    /// ones are not, whose roots are whichever session's call asks.
    async fn on_roots_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        for group in self.guard.groups.iter().filter(|g| g.session == Some(self.id)) {
            group.manager.roots_changed().await;
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        locked(&self.shared.peers).insert(self.id, context.peer.clone());
        let specs = self.router.specs().await;
        let tools: Vec<_> = specs.iter().cloned().map(to_tool).collect();
        // The ledger counts what this session's client was given, as it was given.
        let shown: Vec<serde_json::Value> =
            tools.iter().map(|t| serde_json::to_value(t).unwrap_or_default()).collect();
        self.router.count_tool_list(&specs, &shown, mcp_host::ToolFormat::OpenAi).await;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(self.dispatch(request, context).await?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        super::resources::list(&*self.backend).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        super::resources::templates(&*self.backend).await
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        Ok(super::resources::read(&*self.backend, &request.uri).await?.into())
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        super::resources::subscribe(&*self.backend, &self.parts, &request.uri, true).await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        super::resources::subscribe(&*self.backend, &self.parts, &request.uri, false).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        let mut accepted = rmcp::model::SubscriptionFilter::default();
        accepted.tools_list_changed = requested.tools_list_changed;
        accepted.resource_subscriptions = requested.resource_subscriptions.clone();
        Some(accepted)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let register = |sink: &SubscriptionSink, on| self.shared.listen(self.id, sink, on);
        super::resources::listen(&*self.backend, &self.parts, context, register).await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        super::resources::complete(&*self.backend, request).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        Ok(super::prompts::list(&self.router).await)
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        Ok(super::prompts::get(&self.router, request).await?.into())
    }
}

/// Tells the session when its own servers' tools change (the shared servers' changes are
/// told to every session by `serve`): looked at when an event says some server's tools may
/// have moved. The session's guard ends it.
async fn announce_own_tool_changes(
    managers: Vec<Arc<McpConnectionManager>>,
    mut moved: tokio::sync::watch::Receiver<u64>,
    peer: Peer<RoleServer>,
) {
    let known = async |managers: &[Arc<McpConnectionManager>]| {
        let mut now = Vec::new();
        for manager in managers {
            now.push(manager.known_tools().await);
        }
        now
    };
    let mut last = known(&managers).await;
    while moved.changed().await.is_ok() {
        moved.borrow_and_update();
        let now = known(&managers).await;
        let same = now.len() == last.len() && now.iter().zip(&last).all(|(a, b)| same_tools(a, b));
        if !same && peer.notify_tool_list_changed().await.is_err() {
            return;
        }
        last = now;
    }
}
