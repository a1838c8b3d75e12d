//! `resources/read` and the pages of the resource, template and tool lists, sent straight
//! through rmcp's `Peer`, around rmcp's response cache.
//!
//! rmcp 3.11's `read_resource_once`, `list_resources`, `list_resource_templates` and
//! `list_tools` consult its
//! response cache on every request even when the cache is disabled (as every connection here
//! has it: the router keeps its own, `cache`): they build the cache key (two strings), take the
//! cache's async lock three times (twice to write, so concurrent requests of one connection
//! queue on it) and clone the whole result (a read's contents, a page's items) to offer it to
//! the disabled cache. These send the same requests with the same cancel-on-drop behaviour (a
//! request whose future is dropped — a timeout, a cancelled call — tells the server with
//! `notifications/cancelled`) and none of that.

use mcp_backend::{DEFAULT_MAX_PAGES, Follow, ListingStop, McpError, Paged};
use rmcp::model::Tool;
use rmcp::model::{
    CancelledNotificationParam, ClientRequest, ListResourceTemplatesRequest,
    ListResourceTemplatesResult, ListResourcesRequest, ListResourcesResult, ListToolsRequest,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequest, ReadResourceRequestParams,
    ReadResourceResponse, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use tracing::Instrument as _;

use crate::errors::service_error;
use crate::transport::wire::{ABANDONED, read_response};

/// One `resources/read` round: the result, or the server's request for input (2026-07-28).
pub(crate) async fn read_resource(
    peer: &Peer<RoleClient>,
    params: ReadResourceRequestParams,
) -> Result<ReadResourceResponse, ServiceError> {
    let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
    read_response(send(peer, request).await?)
}

/// `pub async fn $name(peer, params)`: one page of the list whose request and result are
/// `$request` and `$page` (the same names as their `ClientRequest` and `ServerResult` variants).
macro_rules! list_page {
    ($(#[$doc:meta])* $name:ident, $request:ident, $page:ident) => {
        $(#[$doc])*
        #[allow(unreachable_pub)] // re-exported from the crate root; the lint misreads the macro
        pub async fn $name(
            peer: &Peer<RoleClient>,
            params: Option<PaginatedRequestParams>,
        ) -> Result<$page, ServiceError> {
            let request =
                $request { method: Default::default(), params, extensions: Default::default() };
            match send(peer, ClientRequest::$request(request)).await? {
                ServerResult::$page(page) => Ok(page),
                _ => Err(ServiceError::UnexpectedResponse),
            }
        }
    };
}

list_page!(
    /// One page of `resources/list`.
    list_resources, ListResourcesRequest, ListResourcesResult
);
list_page!(
    /// One page of `resources/templates/list`.
    list_resource_templates, ListResourceTemplatesRequest, ListResourceTemplatesResult
);
list_page!(
    /// One page of `tools/list`.
    list_tools, ListToolsRequest, ListToolsResult
);

/// Every page of `tools/list`, by the one cursor loop's rules. A list cut by the page cap or a
/// cursor cycle keeps what was gathered and says so in the log; a failed request fails it.
pub(crate) async fn all_tools(
    service: &rmcp::service::RunningService<RoleClient, crate::client::RouterClient>,
) -> Result<Vec<Tool>, McpError> {
    let server = service.service().server.as_str();
    let follow = Follow { server, max_pages: DEFAULT_MAX_PAGES };
    let followed = follow
        .run(Vec::new(), None, |cursor| async move {
            let mut params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let mut span = service.service().telemetry.start("tools/list", None, None);
            if !span.span().is_disabled() {
                span.tag(&mut params.get_or_insert_with(Default::default).meta);
            }
            let page = list_tools(service.peer(), params).instrument(span.span()).await;
            span.finish_with(&page, |_| false);
            let address = service.service().address.as_deref();
            let page = page.map_err(|e| service_error(server, address, e))?;
            Ok(Paged { items: page.tools, next_cursor: page.next_cursor, ttl_ms: None })
        })
        .await;
    match followed.stop {
        None => {}
        Some(ListingStop::Failed(e) | ListingStop::Unreachable(e)) => return Err(e),
        Some(cut) => {
            let message = cut.message("tools/list");
            tracing::warn!(%server, %message, tools = followed.items.len(), "tool list cut");
        }
    }
    Ok(followed.items)
}

/// `request`'s answer; the server is told if the answer is no longer awaited.
async fn send(
    peer: &Peer<RoleClient>,
    request: ClientRequest,
) -> Result<ServerResult, ServiceError> {
    let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
    let mut abandoned = Abandoned { peer, id: Some(handle.id.clone()) };
    let answer = handle.await_response().await;
    abandoned.id = None;
    answer
}

/// While armed, dropping it tells the server the request `id` is abandoned.
struct Abandoned<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        // Dropped inside the runtime (a timeout, a cancelled task): the notification is sent
        // from a task of its own, as a drop cannot wait. Without a runtime nothing can be sent,
        // and the connection is going away with it.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let cancelled = CancelledNotificationParam::new(Some(id), Some(ABANDONED.into()));
            // The connection may be closing: then there is nobody to tell.
            let _ = peer.notify_cancelled(cancelled).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rmcp::model::ResourceContents;
    use serde_json::json;

    use super::*;
    use crate::scripted::{self, Client, Server};
    use crate::transport::lines::LineTransport;

    async fn connected() -> (Client, Server) {
        scripted::connected(|read, write| LineTransport::new(read, write, 1 << 20)).await
    }

    #[tokio::test]
    async fn reads_and_pages_are_answered_and_an_abandoned_read_is_cancelled_at_the_server() {
        let (client, mut server) = connected().await;
        let peer = client.peer().clone();

        // Answered: the result as the server sent it.
        let reading = tokio::spawn({
            let peer = peer.clone();
            async move { read_resource(&peer, ReadResourceRequestParams::new("demo://a")).await }
        });
        let request = server.next().await;
        assert_eq!(
            (&request["method"], &request["params"]["uri"]),
            (&json!("resources/read"), &json!("demo://a"))
        );
        let contents = json!({"contents": [{"uri": "demo://a", "text": "hello"}]});
        server.answer(&request["id"], contents).await;
        let Ok(ReadResourceResponse::Complete(result)) = reading.await.expect("task") else {
            panic!("a complete read");
        };
        let [ResourceContents::TextResourceContents { text, .. }] = &result.contents[..] else {
            panic!("one text: {result:?}");
        };
        assert_eq!(text, "hello");

        // A page of each list, its cursor sent and the next one given back.
        let listing = tokio::spawn({
            let peer = peer.clone();
            let params = PaginatedRequestParams::default().with_cursor(Some("c2".into()));
            async move { list_resources(&peer, Some(params)).await }
        });
        let request = server.next().await;
        assert_eq!(request["method"], "resources/list");
        assert_eq!(request["params"]["cursor"], "c2");
        let page = json!({"resources": [{"uri": "demo://a", "name": "a"}], "nextCursor": "c3"});
        server.answer(&request["id"], page).await;
        let page = listing.await.expect("task").expect("a page");
        assert_eq!((page.resources.len(), page.next_cursor.as_deref()), (1, Some("c3")));
        let listing = tokio::spawn({
            let peer = peer.clone();
            async move { list_resource_templates(&peer, None).await }
        });
        let request = server.next().await;
        assert_eq!(request["method"], "resources/templates/list");
        let page = json!({"resourceTemplates": [{"uriTemplate": "demo://{x}", "name": "t"}]});
        server.answer(&request["id"], page).await;
        let page = listing.await.expect("task").expect("a page");
        assert_eq!((page.resource_templates.len(), page.next_cursor), (1, None));

        let listing = tokio::spawn({
            let peer = peer.clone();
            async move { list_tools(&peer, None).await }
        });
        let request = server.next().await;
        assert_eq!(request["method"], "tools/list");
        let page = json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]});
        server.answer(&request["id"], page).await;
        let page = listing.await.expect("task").expect("a page");
        assert_eq!(page.tools[0].name, "echo");

        // Abandoned (its future dropped by a timeout): the server is told, with its id.
        let read = read_resource(&peer, ReadResourceRequestParams::new("demo://slow"));
        assert!(tokio::time::timeout(Duration::from_millis(50), read).await.is_err());
        server.abandoned("demo://slow").await;

        // A read that completes is not cancelled: the next line is the next request.
        let reading = tokio::spawn({
            let peer = peer.clone();
            async move { read_resource(&peer, ReadResourceRequestParams::new("demo://b")).await }
        });
        let request = server.next().await;
        assert_eq!(request["params"]["uri"], "demo://b");
        server.answer(&request["id"], json!({"contents": []})).await;
        assert!(matches!(reading.await.expect("task"), Ok(ReadResourceResponse::Complete(_))));
        let _ =
            peer.notify_cancelled(CancelledNotificationParam::new(None, Some("end".into()))).await;
        let next = server.next().await;
        assert_eq!(next["params"]["reason"], "end", "only the test's own notification: {next}");
    }
}
