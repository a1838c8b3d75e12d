//! The transport wrapper every rmcp client connection goes through: it tags each request
//! with its span and `_meta`, and hands notifications to the client handler in order.

use crate::meta::{ask_log_level, declare_tasks, params_meta};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::sync::atomic::Ordering;

/// A client transport that records the JSON-RPC id of each tagged request on its span, and
/// takes the tag out before the request is written.
/// It also notes the end of the incoming stream in the connection's `closed` flag, so a dead
/// connection is known before the next request is sent on it, and handles the server's
/// progress reports and resource changes as they arrive (`RouterClient::handled_in_order`).
pub(crate) struct Traced<T> {
    inner: T,
    /// The connection's client side: its telemetry, progress, `closed` flag and watcher.
    client: crate::client::RouterClient,
}

impl<T> Traced<T> {
    pub(crate) fn new(inner: T, client: crate::client::RouterClient) -> Self {
        Self { inner, client }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Traced<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let rmcp::model::JsonRpcMessage::Request(request) = &mut item {
            self.client.startup.sent(request.request.method());
            declare_tasks(&mut request.request);
            if let Some(level) = &self.client.telemetry.log_level {
                ask_log_level(&mut request.request, level);
            }
        }
        if self.client.progress.waiting()
            && let rmcp::model::JsonRpcMessage::Request(request) = &mut item
        {
            use rmcp::model::GetMeta as _;
            let token = request.request.get_meta().get_progress_token();
            if let Some(meta) = params_meta(&mut request.request) {
                self.client.progress.bind(meta, token);
            }
        }
        if let rmcp::model::JsonRpcMessage::Request(request) = &mut item
            && let Some(meta) = params_meta(&mut request.request)
        {
            self.client.telemetry.written(meta, &request.id);
        }
        self.inner.send(item)
    }

    /// The next message for rmcp. Progress reports and resource changes are handled here and
    /// not passed on: in the order they arrive, so before the answer that follows them.
    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let Self { inner, client } = self;
        async move {
            loop {
                let message = inner.receive().await;
                match &message {
                    None => client.closed.store(true, Ordering::SeqCst),
                    Some(message) if client.handled_in_order(message) => continue,
                    Some(_) => {}
                }
                return message;
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
