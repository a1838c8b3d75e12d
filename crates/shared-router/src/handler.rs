//! What a session of the shared router answers: an rmcp `ServerHandler` whose tools are its
//! router's specs and dispatch, whose prompts and resources are the servers', qualified, and
//! which tells its client when its own servers' tools change.

use mcp_connection_manager::ScopedView;
use mcp_host::McpBackend as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, SubscriptionSink};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};

use super::lock::locked;
use super::output::to_tool;
use super::session::{SessionServer, owner};

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
        *locked(&self.guard.client) = Some(owner);
        let own = self.session.view.own_servers();
        if !own.is_empty() {
            let moved = self.shared.moved.tools.subscribe();
            let view = self.session.view.clone();
            let task =
                tokio::spawn(announce_own_tool_changes(view, own, moved, context.peer.clone()));
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
        self.session.view.roots_changed().await;
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
        super::resources::subscribe(&*self.backend, &self.session, &request.uri, true).await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        super::resources::subscribe(&*self.backend, &self.session, &request.uri, false).await
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
        super::resources::listen(&*self.backend, &self.session, context, register).await
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
    view: ScopedView,
    own: Vec<String>,
    mut moved: tokio::sync::watch::Receiver<u64>,
    peer: Peer<RoleServer>,
) {
    let known = async || {
        let known = view.known_tools().await;
        let tools = known.tools.iter().filter(|t| own.contains(&t.server));
        // Each tool by its name and definition; a server not known yet by its name alone.
        let mut now: Vec<(String, Option<rmcp::model::Tool>)> =
            tools.map(|t| (t.qualified_name.clone(), Some(t.tool.clone()))).collect();
        let unknown = known.unknown.iter().filter(|s| own.contains(s));
        now.extend(unknown.map(|s| (s.clone(), None)));
        now
    };
    let mut last = known().await;
    while moved.changed().await.is_ok() {
        moved.borrow_and_update();
        let now = known().await;
        if now != last && peer.notify_tool_list_changed().await.is_err() {
            return;
        }
        last = now;
    }
}
