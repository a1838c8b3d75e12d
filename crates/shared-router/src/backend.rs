//! A session's backend: its view of the one manager (the shared servers and its scope's), with
//! the resources it read, and the changes to them, its own — a change one session's model read
//! is told to that session, and taking it does not take it from another. A resource is known
//! by the identity of its server (two sessions' instances of one entry are two servers).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_connection_manager::ScopedView;
use mcp_host::backend::{BackendLayer, Layered};
use mcp_host::{McpBackend, McpConnectionManager, McpError};
use rmcp::model::ReadResourceResult;
use router_protocol::ResourceChange;

use super::lock::locked;

/// Most resources one session is told about.
const READ_PER_SESSION: usize = 4096;

/// The changes the servers reported, handed out to the sessions that read those resources.
#[derive(Default)]
pub(crate) struct ChangeHub {
    sessions: Mutex<BTreeMap<u64, SessionChanges>>,
    /// `resources/updated` to send: (session, the URI it subscribed with).
    updates: Mutex<Vec<(u64, String)>>,
}

#[derive(Default)]
struct SessionChanges {
    /// What it read: (the server's identity, the URI).
    read: HashSet<(String, String)>,
    pending: Vec<ResourceChange>,
    /// What the session's client subscribed to (`resources/subscribe`): (server, the
    /// server's URI) → the URI it subscribed with.
    subscribed: HashMap<(String, String), String>,
}

impl ChangeHub {
    /// Take what the manager holds (every server's and every scoped instance's) and queue
    /// each change for every session that read it.
    pub(crate) fn pump(&self, manager: &McpConnectionManager) {
        let changes = manager.take_every_resource_change();
        if !changes.is_empty() {
            self.distribute(changes);
        }
    }

    /// Queue each of `changes` (with the identity of its server) for every session that read
    /// it (once: a newer change of the same resource replaces an older one still waiting).
    fn distribute(&self, changes: Vec<(String, ResourceChange)>) {
        let mut sessions = locked(&self.sessions);
        let mut updates = Vec::new();
        for (identity, change) in changes {
            let key = (identity, change.uri.clone());
            for (id, session) in sessions.iter_mut() {
                if session.read.contains(&key) {
                    session.pending.retain(|c| (&c.server, &c.uri) != (&change.server, &key.1));
                    session.pending.push(change.clone());
                }
                if let Some(asked) = session.subscribed.get(&key) {
                    updates.push((*id, asked.clone()));
                }
            }
        }
        drop(sessions);
        if !updates.is_empty() {
            locked(&self.updates).extend(updates);
        }
    }

    /// `session` subscribed to (or, with `on` false, unsubscribed from) a resource. A session
    /// subscribes to at most [`READ_PER_SESSION`] resources; `false` past that.
    pub(crate) fn subscribe(&self, session: u64, to: Subscription<'_>, on: bool) -> bool {
        let mut sessions = locked(&self.sessions);
        let changes = sessions.entry(session).or_default();
        let key = (to.server.to_string(), to.uri.to_string());
        if !on {
            changes.subscribed.remove(&key);
            return true;
        }
        if changes.subscribed.len() >= READ_PER_SESSION && !changes.subscribed.contains_key(&key) {
            return false;
        }
        changes.subscribed.insert(key, to.asked.to_string());
        true
    }

    /// The `resources/updated` notices to send now: (session, the URI it subscribed with).
    pub(crate) fn take_updates(&self) -> Vec<(u64, String)> {
        std::mem::take(&mut *locked(&self.updates))
    }

    /// `session` read `uri` of `server` (named, and known by `identity`): it is watched for
    /// that session, and a change of it waiting for that session is moot.
    /// A session watches at most [`READ_PER_SESSION`] resources; one read past that is not
    /// watched for it (the manager's own cap per server still applies to all of them).
    fn read(&self, session: u64, (server, identity): (&str, &str), uri: &str) {
        let mut sessions = locked(&self.sessions);
        let changes = sessions.entry(session).or_default();
        changes.pending.retain(|c| !(c.server == server && c.uri == uri));
        if changes.read.len() < READ_PER_SESSION {
            changes.read.insert((identity.to_string(), uri.to_string()));
        }
    }

    fn take(&self, session: u64) -> Vec<ResourceChange> {
        let mut sessions = locked(&self.sessions);
        let mut taken =
            sessions.get_mut(&session).map(|s| std::mem::take(&mut s.pending)).unwrap_or_default();
        taken.sort_by(|a, b| a.server.cmp(&b.server));
        taken
    }

    /// The session ended: forget what it read and subscribed to.
    pub(crate) fn forget(&self, session: u64) {
        locked(&self.sessions).remove(&session);
        locked(&self.updates).retain(|(id, _)| *id != session);
    }
}

/// One subscription: the server's resource (its server known by its identity), and the URI
/// the client subscribed with.
pub(crate) struct Subscription<'a> {
    pub(crate) server: &'a str,
    pub(crate) uri: &'a str,
    pub(crate) asked: &'a str,
}

/// The session's view of the manager, as its router sees it: what the session reads is
/// remembered, so the changes it is told of are the ones it read (everything else is the
/// view's own, forwarded).
pub(crate) struct SessionLayer {
    pub(crate) view: ScopedView,
    pub(crate) hub: Arc<ChangeHub>,
    pub(crate) session: u64,
}

/// One session's backend.
pub(crate) type SessionBackend = Layered<SessionLayer>;

/// `session`'s backend over `view`, its changes kept in `hub`.
pub(crate) fn session_backend(
    view: ScopedView,
    hub: Arc<ChangeHub>,
    session: u64,
) -> SessionBackend {
    let inner: Arc<dyn McpBackend> = Arc::new(view.clone());
    Layered::new(inner, SessionLayer { view, hub, session })
}

#[async_trait]
impl BackendLayer for SessionLayer {
    async fn read_resource(
        &self,
        inner: &dyn McpBackend,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, McpError> {
        // What the manager holds goes to the sessions first: this read may clear it there.
        self.hub.pump(self.view.manager());
        let identity = self.view.identity(server);
        self.hub.read(self.session, (server, &identity), uri);
        inner.read_resource(server, uri).await
    }

    fn take_resource_changes(&self, _inner: &dyn McpBackend) -> Vec<ResourceChange> {
        self.hub.pump(self.view.manager());
        self.hub.take(self.session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A change of `uri` of the shared server `server` (its identity is its name).
    fn change(server: &str, uri: &str) -> (String, ResourceChange) {
        let change =
            ResourceChange { server: server.into(), uri: uri.into(), detected_at: "t".into() };
        (server.to_string(), change)
    }

    #[test]
    fn a_change_goes_to_every_session_that_read_it_and_only_to_them() {
        let hub = ChangeHub::default();
        hub.read(1, ("docs", "docs"), "a");
        hub.read(2, ("docs", "docs"), "a");
        hub.read(2, ("docs", "docs"), "b");
        hub.read(3, ("notes", "notes"), "a");
        hub.distribute(vec![change("docs", "a"), change("docs", "b"), change("docs", "a")]);
        assert_eq!(hub.take(1), vec![change("docs", "a").1]);
        assert_eq!(hub.take(1), vec![], "taken once");
        // Session 2 re-read `a`: only `b` is news to it.
        hub.read(2, ("docs", "docs"), "a");
        assert_eq!(hub.take(2), vec![change("docs", "b").1]);
        assert_eq!(hub.take(3), vec![], "another server's `a`");
        hub.forget(2);
        assert!(!locked(&hub.sessions).contains_key(&2));
    }

    #[test]
    fn a_subscribed_session_gets_an_update_and_keeps_its_notice() {
        let hub = ChangeHub::default();
        hub.read(1, ("docs", "docs"), "a");
        hub.read(2, ("docs", "docs"), "a");
        let to = || Subscription { server: "docs", uri: "a", asked: "mcp-router://docs/a" };
        assert!(hub.subscribe(1, to(), true));
        hub.distribute(vec![change("docs", "a"), change("docs", "b")]);
        assert_eq!(hub.take_updates(), [(1, "mcp-router://docs/a".to_string())]);
        assert_eq!(hub.take_updates(), [], "sent once");
        assert_eq!(hub.take(1), vec![change("docs", "a").1], "the model's notice stays");
        assert!(hub.subscribe(1, to(), false));
        hub.distribute(vec![change("docs", "a")]);
        assert_eq!(hub.take_updates(), [], "unsubscribed");
    }

    /// Two sessions' instances of one entry are two servers: a change of one's resource is
    /// told to the session that read it there, not to the one that read the other's.
    #[test]
    fn a_change_of_one_sessions_instance_is_not_told_to_another() {
        let hub = ChangeHub::default();
        hub.read(1, ("mine", "mine\u{1f}session 1"), "a");
        hub.read(2, ("mine", "mine\u{1f}session 2"), "a");
        let (_, of_one) = change("mine", "a");
        hub.distribute(vec![("mine\u{1f}session 1".to_string(), of_one.clone())]);
        assert_eq!(hub.take(1), vec![of_one]);
        assert_eq!(hub.take(2), vec![], "session 2 read its own instance's `a`");
    }
}
