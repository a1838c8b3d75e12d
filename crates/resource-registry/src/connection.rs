//! One client connection: an rmcp `ServerHandler` over the shared registry, with its own
//! subscriptions and its peer for notifications.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    CompleteRequestParams, CompleteResult, Implementation, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ResourceListChangedNotification, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerConfig, ServerNotification, SubscribeRequestParams,
    SubscriptionFilter, ToolListChangedNotification, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};

use crate::registry::ResourceRegistry;

/// Per-connection state the registry notifies.
pub(crate) struct ConnectionState {
    peer: OnceLock<Peer<RoleServer>>,
    /// `resources/subscribe` (2025-11-25).
    subscriptions: Mutex<HashSet<String>>,
    /// Open `subscriptions/listen` streams (2026-07-28); each sink only passes what its
    /// filter accepted.
    listeners: Mutex<Vec<SubscriptionSink>>,
}

impl ConnectionState {
    fn listeners(&self) -> Vec<SubscriptionSink> {
        self.listeners.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Tell this connection `uri` changed, if it subscribed to it (either era). Returns whether
    /// anyone was told.
    pub(crate) async fn notify_updated(&self, uri: &str) -> bool {
        let mut told = false;
        if self.subscriptions.lock().is_ok_and(|s| s.contains(uri))
            && let Some(peer) = self.peer.get()
        {
            told |= peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
                .is_ok();
        }
        for sink in self.listeners() {
            let wanted = sink
                .accepted()
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|u| u == uri));
            if wanted {
                let notification = ServerNotification::ResourceUpdatedNotification(
                    ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri)),
                );
                told |= sink.send(notification).await.is_ok();
            }
        }
        told
    }

    /// The server's tool list changed: tell the client on its `subscriptions/listen` streams
    /// that asked for it (2026-07-28), or else as a plain notification (2025-11-25).
    pub(crate) async fn notify_tool_list_changed(&self) {
        let listeners = self.listeners();
        if listeners.is_empty() {
            if let Some(peer) = self.peer.get() {
                let _ = peer.notify_tool_list_changed().await;
            }
            return;
        }
        for sink in listeners {
            if sink.accepted().tools_list_changed == Some(true) {
                let notification = ServerNotification::ToolListChangedNotification(
                    ToolListChangedNotification::default(),
                );
                if let Err(error) = sink.send(notification).await {
                    tracing::debug!(%error, "cannot send tools/list_changed on a listen stream");
                }
            }
        }
    }

    pub(crate) async fn notify_list_changed(&self) {
        if let Some(peer) = self.peer.get() {
            let _ = peer.notify_resource_list_changed().await;
        }
        for sink in self.listeners() {
            if sink.accepted().resources_list_changed == Some(true) {
                let notification = ServerNotification::ResourceListChangedNotification(
                    ResourceListChangedNotification::default(),
                );
                let _ = sink.send(notification).await;
            }
        }
    }
}

/// A `ServerHandler` serving the registry's resources on one connection. Create one per
/// connection with [`RegistryConnection::new`] (for streamable HTTP, in the service factory).
/// Other servers embed it and forward their resource methods to it.
#[derive(Clone)]
pub struct RegistryConnection {
    registry: Arc<ResourceRegistry>,
    state: Arc<ConnectionState>,
    info: Implementation,
}

impl RegistryConnection {
    /// A handler for one new connection.
    pub fn new(registry: Arc<ResourceRegistry>, info: Implementation) -> Self {
        let state = Arc::new(ConnectionState {
            peer: OnceLock::new(),
            subscriptions: Mutex::default(),
            listeners: Mutex::default(),
        });
        registry.attach(&state);
        Self { registry, state, info }
    }

    /// The registry behind this connection.
    pub fn registry(&self) -> &Arc<ResourceRegistry> {
        &self.registry
    }

    /// The resource capabilities to declare (subscribe, listChanged; completions if any
    /// template has a completer). Servers that embed this connection merge these into theirs.
    pub fn capabilities(&self) -> ServerCapabilities {
        let mut caps = ServerCapabilities::builder()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .build();
        if self.registry.has_completions() {
            caps.completions = Some(Default::default());
        }
        caps
    }

    /// Remember the peer so notifications can reach it. Called from `on_initialized` and from
    /// every request (rmcp runs notification callbacks as separate tasks, so a request may be
    /// handled before `on_initialized` has run).
    pub fn attach_peer(&self, peer: Peer<RoleServer>) {
        let _ = self.state.peer.set(peer);
    }

    /// `resources/list`.
    pub fn list_resources(
        &self,
        request: Option<&PaginatedRequestParams>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.registry.list_resources(request.and_then(|r| r.cursor.as_deref()))
    }

    /// `resources/templates/list`.
    pub fn list_resource_templates(
        &self,
        request: Option<&PaginatedRequestParams>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.registry.list_resource_templates(request.and_then(|r| r.cursor.as_deref()))
    }

    /// `resources/read`.
    pub async fn read_resource(
        &self,
        request: &ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.registry.read(&request.uri).await.map(Into::into)
    }

    /// `resources/subscribe`: the URI must name something readable.
    pub fn subscribe(&self, uri: &str) -> Result<(), ErrorData> {
        if !self.registry.contains(uri) {
            return Err(ErrorData::resource_not_found(
                format!("Resource not found: {uri}"),
                Some(serde_json::json!({"uri": uri})),
            ));
        }
        if let Ok(mut subs) = self.state.subscriptions.lock() {
            subs.insert(uri.to_string());
        }
        Ok(())
    }

    /// `resources/unsubscribe` (unknown URIs are accepted: the end state is the same).
    pub fn unsubscribe(&self, uri: &str) {
        if let Ok(mut subs) = self.state.subscriptions.lock() {
            subs.remove(uri);
        }
    }

    /// Which notifications a `subscriptions/listen` request gets (2026-07-28): resource and
    /// tool list changes, and updates of URIs that name something readable; rmcp intersects this
    /// with the declared capabilities.
    pub fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::default();
        accepted.resources_list_changed = requested.resources_list_changed;
        accepted.tools_list_changed = requested.tools_list_changed;
        accepted.resource_subscriptions = requested
            .resource_subscriptions
            .as_ref()
            .map(|uris| uris.iter().filter(|uri| self.registry.contains(uri)).cloned().collect());
        Some(accepted)
    }

    /// Serve one `subscriptions/listen` stream until the client cancels it.
    pub async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let sink = context.sink().clone();
        let id = sink.id().clone();
        if let Ok(mut listeners) = self.state.listeners.lock() {
            listeners.push(sink);
        }
        context.cancelled().await;
        if let Ok(mut listeners) = self.state.listeners.lock() {
            listeners.retain(|s| *s.id() != id);
        }
        Ok(())
    }

    /// `completion/complete`.
    pub fn complete(&self, request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
        self.registry.complete(request)
    }
}

impl ServerHandler for RegistryConnection {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(self.capabilities()).with_server_info(self.info.clone())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.attach_peer(context.peer);
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.attach_peer(context.peer);
        RegistryConnection::list_resources(self, request.as_ref())
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.attach_peer(context.peer);
        RegistryConnection::list_resource_templates(self, request.as_ref())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        RegistryConnection::read_resource(self, &request).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.attach_peer(context.peer);
        RegistryConnection::subscribe(self, &request.uri)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        RegistryConnection::unsubscribe(self, &request.uri);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        RegistryConnection::complete(self, &request)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        RegistryConnection::accepted_subscription_filter(self, requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        RegistryConnection::listen(self, context).await
    }
}
