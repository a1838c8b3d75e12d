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

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::{ServerNotification, SubscriptionFilter, Tool};
use rmcp::service::Subscription;
use router_protocol::{
    EventMsg, McpResourceUpdatedEvent, McpResourcesChangedEvent, McpToolsChangedEvent,
};

use crate::client::direct::all_tools;
use crate::client::{Connection, RouterClient};
use crate::config::ServerConfig;
pub(crate) use crate::watched::Changes;
pub(crate) use crate::watched::Touch;
pub use crate::watched::Watched;

/// A re-read waits until no notification came for this long (a burst costs one re-read)…
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(100);
/// …but not longer than this after the first one.
const MAX_DEBOUNCE: Duration = Duration::from_secs(1);
/// Wait before opening a listen stream again after it ended.
const RELISTEN_DELAY: Duration = Duration::from_millis(500);

impl RouterClient {
    /// `notifications/tools/list_changed`, from either era.
    pub(crate) fn tools_list_changed(&self) {
        tracing::debug!(server = %self.server, "tool list changed");
        self.changes.tools_changed();
    }

    /// `notifications/resources/list_changed`, from either era.
    pub(crate) fn resources_list_changed(&self) {
        self.cache.lists_changed();
        self.list_generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.events.send(EventMsg::McpResourcesChanged(McpResourcesChangedEvent {
            server: self.server.clone(),
        }));
    }

    /// `notifications/resources/updated`, from either era: the cached read goes, and a watched
    /// resource's change is remembered for the model and announced to the host.
    pub(crate) fn resource_updated(&self, uri: &str) {
        self.cache.resource_updated(uri);
        if self.watched.updated(uri) {
            self.events.send(EventMsg::McpResourceUpdated(McpResourceUpdatedEvent {
                server: self.server.clone(),
                uri: uri.to_string(),
            }));
        }
    }
}

/// Start watching a connection that just became ready. Both tasks hold the connection weakly
/// and end with it.
pub fn spawn(conn: &Arc<Connection>, config: ServerConfig) {
    // A (re)started legacy server is asked again for every resource the model watches.
    let watched = conn.client().watched.uris();
    if !conn.modern && can_subscribe(conn) && !watched.is_empty() {
        tokio::spawn(subscribe_all(
            conn.service.peer().clone(),
            conn.telemetry().clone(),
            conn.client().changes.clone(),
            watched,
            None,
            config.tool_timeout,
        ));
    }
    tokio::spawn(refresh_tools(Arc::downgrade(conn), config));
    if conn.subscription.lock().is_ok_and(|s| s.is_some()) {
        tokio::spawn(listen(Arc::downgrade(conn)));
    }
}

/// After the model read `uri`: follow it on the server — legacy `resources/subscribe` (and
/// `unsubscribe` of the resource dropped from the set), or a listen stream opened again with
/// the new set (2026-07-28). Servers that cannot subscribe cost nothing.
pub fn follow(conn: &Arc<Connection>, touch: Touch, uri: &str, timeout: Duration) {
    if conn.modern {
        conn.client().changes.watched_changed();
        return;
    }
    if !can_subscribe(conn) {
        return;
    }
    tokio::spawn(subscribe_all(
        conn.service.peer().clone(),
        conn.telemetry().clone(),
        conn.client().changes.clone(),
        vec![uri.to_string()],
        touch.evicted,
        timeout,
    ));
}

fn can_subscribe(conn: &Connection) -> bool {
    conn.capabilities.resources.as_ref().and_then(|r| r.subscribe) == Some(true)
}

/// `resources/subscribe` for each of `uris`, then `resources/unsubscribe` for `evicted`.
#[allow(deprecated)] // resources/subscribe is 2025-11-25's, current there.
async fn subscribe_all(
    peer: rmcp::Peer<rmcp::RoleClient>,
    telemetry: Arc<crate::telemetry::Telemetry>,
    changes: Arc<Changes>,
    uris: Vec<String>,
    evicted: Option<String>,
    timeout: Duration,
) {
    use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
    use tracing::Instrument as _;
    // A burst of first reads does not flood the server (nor queue the reads behind it): a few
    // subscription requests at a time per connection.
    let Ok(_permit) = changes.subscribing.acquire().await else { return };
    for uri in uris {
        let mut span = telemetry.start("resources/subscribe", None, Some(&uri));
        let mut params = SubscribeRequestParams::new(&uri);
        span.tag(&mut params.meta);
        let asked =
            tokio::time::timeout(timeout, peer.subscribe(params).instrument(span.span())).await;
        let ok = matches!(asked, Ok(Ok(_)));
        match &asked {
            Ok(answer) => span.finish_with(answer, |_| false),
            Err(_) => span.finish(Err(("timeout".into(), format!("no answer within {timeout:?}")))),
        }
        if !ok {
            tracing::debug!(server = %telemetry.server(), %uri, "resources/subscribe failed; the resource is not watched");
        }
    }
    if let Some(uri) = evicted {
        let _ =
            tokio::time::timeout(timeout, peer.unsubscribe(UnsubscribeRequestParams::new(&uri)))
                .await;
    }
}

/// Re-reads the tool list whenever a notification asks for it.
async fn refresh_tools(conn: Weak<Connection>, config: ServerConfig) {
    let Some(changes) = conn.upgrade().map(|c| c.client().changes.clone()) else { return };
    // The notification count the last re-read answered.
    let mut handled = 0;
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
        if notes == handled {
            continue;
        }
        handled = notes;
        let Some(conn) = conn.upgrade() else { return };
        if !conn.is_usable() {
            continue;
        }
        let listed = tokio::time::timeout(config.tool_timeout, all_tools(&conn.service)).await;
        match listed {
            Ok(Ok(tools)) => {
                let (tools, app_only, filtered) = config.split_tools(tools);
                conn.set_app_only_tools(app_only);
                conn.set_filtered_tools(filtered);
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
    conn.set_tools(tools);
    tracing::info!(server = %client.server, tools = conn.tools().len(), "tool list re-read");
    announce_tools_change(&client.events, &client.server, &old, &conn.tools());
}

/// `mcp_tools_changed` for a tool list that went from `old` to `new`: the qualified names
/// added and removed.
pub fn announce_tools_change(
    events: &router_protocol::EventSender,
    server: &str,
    old: &[Tool],
    new: &[Tool],
) {
    let names = |tools: &[Tool]| -> std::collections::BTreeSet<String> {
        tools.iter().map(|t| mcp_backend::qualified_tool_name(server, &t.name)).collect()
    };
    let (before, after) = (names(old), names(new));
    let added = after.difference(&before).cloned().collect();
    let removed = before.difference(&after).cloned().collect();
    events.send(EventMsg::McpToolsChanged(McpToolsChangedEvent {
        server: server.to_string(),
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
    let mut filter = wanted(capabilities)?;
    let can_subscribe = capabilities.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
    let watched = service.service().watched.uris();
    if can_subscribe && !watched.is_empty() {
        filter.resource_subscriptions = Some(watched);
    }
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
        loop {
            let notification = tokio::select! {
                next = subscription.next() => match next {
                    Ok(Some(notification)) => notification,
                    _ => break,
                },
                _ = client.changes.relisten.notified() => {
                    if client.changes.is_closed() {
                        return;
                    }
                    // Open the stream with the new watched set first, then close the old one,
                    // so no change falls between them.
                    let Some(conn) = conn.upgrade() else { return };
                    if let Some(reopened) = open_listen(&conn.service, &conn.capabilities).await {
                        let _ = subscription.cancel().await;
                        subscription = reopened;
                    }
                    continue;
                }
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        let at = |d: Duration| mcp_backend::rfc3339(std::time::UNIX_EPOCH + d);
        assert_eq!(at(Duration::ZERO), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(Duration::from_millis(951_782_400_123)), "2000-02-29T00:00:00.123Z");
        assert_eq!(at(Duration::from_secs(1_795_466_400)), "2026-11-23T20:40:00.000Z");
    }
}
