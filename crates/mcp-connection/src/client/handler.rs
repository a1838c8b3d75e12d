//! The client side of every connection as rmcp sees it (`ClientHandler`): who we are and which
//! protocol we speak, server-to-client requests passed to the host (each announced with an
//! event), and change notifications passed to the connection's watcher. Progress reports and
//! resource changes are handled by the transport wrapper as they arrive (`handled_in_order`);
//! the handlers here take any that still reach rmcp the same way.

use rmcp::ErrorData;
#[allow(deprecated)]
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, FormElicitationCapability,
    Implementation, ListRootsResult, ProtocolVersion, RootsCapabilities, SamplingCapability,
};
use rmcp::model::{JsonRpcMessage, ResourceUpdatedNotificationParam, ServerNotification};
use rmcp::service::RxJsonRpcMessage;
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};

use crate::client::RouterClient;

impl RouterClient {
    /// Handles a server's progress report or resource change as the transport receives it
    /// (`Traced`), in the order of the server's messages — so before the answer that follows
    /// it. rmcp would handle it on a task of its own, which at times ran after that answer: a
    /// call's last progress was dropped (the call had ended), and a change sent before a read's
    /// answer was taken for a change since that read. `true` when it was one of them.
    pub(crate) fn handled_in_order(&self, message: &RxJsonRpcMessage<RoleClient>) -> bool {
        let JsonRpcMessage::Notification(notification) = message else { return false };
        match &notification.notification {
            ServerNotification::ProgressNotification(progress) => {
                self.progress.notified(&self.server, progress.params.clone(), &self.events);
            }
            ServerNotification::ResourceUpdatedNotification(updated) => {
                self.resource_updated(&updated.params.uri);
            }
            // Cheaper here than on a task of rmcp's each: a flood is cut to the allowance.
            ServerNotification::LoggingMessageNotification(message) => {
                self.logs.logged(&self.server, message.params.clone(), &self.events);
            }
            _ => return false,
        }
        true
    }

    /// Who asks in a 2025-11-25 request of the server's own (it names no call): this server,
    /// for the one model call in flight on this connection if there is exactly one; else the
    /// calls in flight, one of which (or none) it is for.
    fn asking(&self) -> crate::host::Asking {
        let calls = self.progress.calls_in_flight();
        match <[String; 1]>::try_from(calls) {
            Ok([call]) => crate::host::Asking::new(self.server.clone(), Some(call)),
            Err(calls) => crate::host::Asking::new(self.server.clone(), None).in_flight(calls),
        }
    }
}

// Sampling and roots are deprecated in rmcp's 2026-07-28 API (SEP-2577) but are part of protocol
// 2025-11-25, which the router still speaks with legacy servers.
#[allow(deprecated)]
impl ClientHandler for RouterClient {
    fn get_info(&self) -> ClientConfig {
        let declared = self.host.capabilities();
        let mut capabilities = ClientCapabilities::default();
        if declared.elicitation {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        }
        if declared.roots {
            capabilities.roots = Some(RootsCapabilities::default());
        }
        if declared.sampling {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        if declared.apps {
            let ui = serde_json::json!({"mimeTypes": [crate::host::APPS_MIME_TYPE]});
            let serde_json::Value::Object(ui) = ui else { unreachable!("an object") };
            let extensions = capabilities.extensions.get_or_insert_with(Default::default);
            extensions.insert(mcp_backend::UI_EXTENSION_ID.to_string(), ui);
        }
        // The tasks extension (SEP-2663) is declared by the transport, on the requests it
        // matters to (`telemetry::declare_tasks`).
        ClientConfig::new(
            capabilities,
            Implementation::new("mcp-router", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.resources_list_changed();
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.resource_updated(&params.uri);
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.notified(&self.server, params, &self.events);
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.logged(&self.server, params, &self.events);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_list_changed();
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asking = self.asking();
        self.announce_begin(&asking, "elicitation/create", &request);
        let result = self.host.elicit(&asking, request.clone()).await;
        let shown = result.as_ref().map_err(|e| e.message.to_string());
        self.announce(&asking, "elicitation/create", &request, shown);
        result
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asking = self.asking();
        self.announce_begin(&asking, "sampling/createMessage", &params);
        let result = self.host.create_message(&asking, params.clone()).await;
        self.announce(
            &asking,
            "sampling/createMessage",
            &params,
            result.as_ref().map_err(|e| e.message.to_string()),
        );
        result
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let asking = self.asking();
        self.announce_begin(&asking, "roots/list", &serde_json::Value::Null);
        let result = self.host.list_roots(&asking).await;
        let shown = result.as_ref().map_err(|e| e.message.to_string());
        self.announce(&asking, "roots/list", &serde_json::Value::Null, shown);
        result
    }
}

/// `logging/setLevel` with the config's `log_level`, to a 2025-11-25 server that declares
/// `logging` (logging is deprecated in 2026-07-28). A refusal is logged, not a failure: the
/// server's messages still arrive, at its own level.
#[allow(deprecated)]
pub(crate) async fn set_log_level(
    service: &rmcp::service::RunningService<RoleClient, RouterClient>,
    config: &crate::config::ServerConfig,
    modern: bool,
    capabilities: &rmcp::model::ServerCapabilities,
) {
    let Some(level) = config.log_level.as_deref() else { return };
    if modern || capabilities.logging.is_none() {
        return;
    }
    let Ok(level) = serde_json::from_value::<rmcp::model::LoggingLevel>(level.into()) else {
        return;
    };
    if let Err(e) = service.set_level(rmcp::model::SetLevelRequestParams::new(level)).await {
        tracing::warn!(server = %config.name, error = %e, "logging/setLevel was refused");
    }
}
