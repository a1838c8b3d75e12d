//! Keeping a connection's view of its server current while it lives.
//!
//! - Tool list changes (`notifications/tools/list_changed`, honoured even from a server that did
//!   not declare `listChanged`): the tool list is read again (every page, the config's filters
//!   applied), the catalog picks it up, and `mcp_tools_changed` names what was added and
//!   removed. The re-read waits for a quiet [`DEBOUNCE`] (at most a second), so a burst of
//!   notifications costs one re-read.
//! - Resource list changes: cached lists of the server are dropped and `mcp_resources_changed`
//!   is emitted.
//! - In protocol 2026-07-28 these notifications only come through `subscriptions/listen`: one
//!   stream per connection asks for the list changes the server offers, and is opened again if
//!   it ends while the connection is usable (a restart opens a new one with the new
//!   connection). In 2025-11-25 they come as plain notifications (`RouterClient`'s handler).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::{ServerNotification, SubscriptionFilter, Tool};
use rmcp::service::Subscription;
use router_protocol::{EventMsg, McpResourcesChangedEvent, McpToolsChangedEvent};
use tokio::sync::Notify;

use crate::client::{Connection, RouterClient, list_tools};
use crate::config::ServerConfig;

/// A re-read waits until no notification came for this long (a burst costs one re-read)…
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(100);
/// …but not longer than this after the first one.
const MAX_DEBOUNCE: Duration = Duration::from_secs(1);
/// Wait before opening a listen stream again after it ended.
const RELISTEN_DELAY: Duration = Duration::from_millis(500);

/// What the notification handlers tell the watcher of one connection.
#[derive(Default)]
pub(crate) struct Changes {
    tools_dirty: AtomicBool,
    /// Tool-list notifications so far (to see when a burst has stopped).
    tools_notes: std::sync::atomic::AtomicU64,
    closed: AtomicBool,
    wake: Notify,
}

impl Changes {
    /// The server's tool list changed: read it again soon.
    pub(crate) fn tools_changed(&self) {
        self.tools_notes.fetch_add(1, Ordering::SeqCst);
        self.tools_dirty.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// The connection is gone: the watcher ends.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

impl RouterClient {
    /// `notifications/tools/list_changed`, from either era.
    pub(crate) fn tools_list_changed(&self) {
        tracing::debug!(server = %self.server, "tool list changed");
        self.changes.tools_changed();
    }

    /// `notifications/resources/list_changed`, from either era.
    pub(crate) fn resources_list_changed(&self) {
        self.cache.lists_changed();
        self.events.send(EventMsg::McpResourcesChanged(McpResourcesChangedEvent {
            server: self.server.clone(),
        }));
    }

    /// `notifications/resources/updated`, from either era.
    pub(crate) fn resource_updated(&self, uri: &str) {
        self.cache.resource_updated(uri);
    }
}

/// Start watching a connection that just became ready. Both tasks hold the connection weakly
/// and end with it.
pub(crate) fn spawn(conn: &Arc<Connection>, config: ServerConfig) {
    tokio::spawn(refresh_tools(Arc::downgrade(conn), config));
    if conn.subscription.lock().is_ok_and(|s| s.is_some()) {
        tokio::spawn(listen(Arc::downgrade(conn)));
    }
}

/// Re-reads the tool list whenever a notification asks for it.
async fn refresh_tools(conn: Weak<Connection>, config: ServerConfig) {
    let Some(changes) = conn.upgrade().map(|c| c.client().changes.clone()) else { return };
    loop {
        changes.wake.notified().await;
        if changes.is_closed() {
            return;
        }
        let first = tokio::time::Instant::now();
        let mut notes = changes.tools_notes.load(Ordering::SeqCst);
        loop {
            tokio::time::sleep(DEBOUNCE).await;
            let now = changes.tools_notes.load(Ordering::SeqCst);
            if now == notes || first.elapsed() >= MAX_DEBOUNCE {
                break;
            }
            notes = now;
        }
        if !changes.tools_dirty.swap(false, Ordering::SeqCst) {
            continue;
        }
        let Some(conn) = conn.upgrade() else { return };
        if !conn.is_usable() {
            continue;
        }
        let listed = tokio::time::timeout(config.tool_timeout, list_tools(&conn.service)).await;
        match listed {
            Ok(Ok(tools)) => {
                let tools: Vec<Tool> =
                    tools.into_iter().filter(|t| config.tool_allowed(&t.name)).collect();
                replace_tools(&conn, tools);
            }
            Ok(Err(error)) => {
                tracing::warn!(server = %config.name, %error, "re-reading the tool list failed; keeping the old one")
            }
            Err(_) => {
                tracing::warn!(server = %config.name, "re-reading the tool list timed out; keeping the old one")
            }
        }
    }
}

fn replace_tools(conn: &Connection, tools: Vec<Tool>) {
    let client = conn.client();
    let old = conn.tools();
    if *old == tools {
        return;
    }
    let names = |tools: &[Tool]| -> std::collections::BTreeSet<String> {
        tools.iter().map(|t| mcp_backend::qualified_tool_name(&client.server, &t.name)).collect()
    };
    let (before, after) = (names(&old), names(&tools));
    let added = after.difference(&before).cloned().collect();
    let removed = before.difference(&after).cloned().collect();
    conn.set_tools(tools);
    tracing::info!(server = %client.server, tools = conn.tools().len(), "tool list re-read");
    client.events.send(EventMsg::McpToolsChanged(McpToolsChangedEvent {
        server: client.server.clone(),
        added,
        removed,
    }));
}

/// Open the listen stream for the list changes the server offers; `None` if it offers none or
/// refuses (a server without listen support costs nothing more).
pub(crate) async fn open_listen(
    service: &rmcp::service::RunningService<rmcp::RoleClient, RouterClient>,
    capabilities: &rmcp::model::ServerCapabilities,
) -> Option<Subscription> {
    let filter = wanted(capabilities)?;
    match service.peer().listen(filter).await {
        Ok(subscription) => Some(subscription),
        Err(error) => {
            tracing::debug!(server = %service.service().server, %error, "subscriptions/listen refused");
            None
        }
    }
}

/// Serves the connection's `subscriptions/listen` stream (2026-07-28), and opens it again if
/// it ends while the connection is still usable.
async fn listen(conn: Weak<Connection>) {
    let Some(mut subscription) =
        conn.upgrade().and_then(|c| c.subscription.lock().ok().and_then(|mut s| s.take()))
    else {
        return;
    };
    loop {
        let Some(client) = conn.upgrade().map(|c| c.client().clone()) else { return };
        while let Ok(Some(notification)) = subscription.next().await {
            match notification {
                ServerNotification::ToolListChangedNotification(_) => client.tools_list_changed(),
                ServerNotification::ResourceListChangedNotification(_) => {
                    client.resources_list_changed()
                }
                ServerNotification::ResourceUpdatedNotification(updated) => {
                    client.resource_updated(&updated.params.uri)
                }
                _ => {}
            }
        }
        if client.changes.is_closed() {
            return;
        }
        tracing::debug!(server = %client.server, end = ?subscription.end(), "listen stream ended; opening it again");
        tokio::time::sleep(RELISTEN_DELAY).await;
        let Some(conn) = conn.upgrade().filter(|c| c.is_usable()) else { return };
        let Some(reopened) = open_listen(&conn.service, &conn.capabilities).await else { return };
        subscription = reopened;
        // Anything may have changed while no stream was open.
        client.tools_list_changed();
        client.cache.lists_changed();
    }
}

/// The list changes to ask for: those of the capabilities the server has (whether or not it
/// declared `listChanged`); `None` if it has neither tools nor resources.
fn wanted(capabilities: &rmcp::model::ServerCapabilities) -> Option<SubscriptionFilter> {
    let mut filter = SubscriptionFilter::default();
    if capabilities.tools.is_some() {
        filter.tools_list_changed = Some(true);
    }
    if capabilities.resources.is_some() {
        filter.resources_list_changed = Some(true);
    }
    (filter != SubscriptionFilter::default()).then_some(filter)
}
