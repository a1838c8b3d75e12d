//! What prompts and skills share: asking every server that declares a capability (a starting
//! one waited for, an idle one started unless its catalog says it declares none), whether any
//! does, and a followed list's outcome.

use std::future::Future;

use futures::future::join_all;
use mcp_backend::{Followed, ListingStop, McpError};
use rmcp::model::ServerCapabilities;

use crate::lifecycle::ServerState;
use crate::manager::McpConnectionManager;
use crate::toolcache::CachedCatalog;

/// A capability a server declares, read from a ready server's capabilities or from the catalog
/// saved when it was last ready (so an idle server need not start to be known).
#[derive(Clone, Copy)]
pub(crate) struct Capability {
    pub(crate) declared: fn(&ServerCapabilities) -> bool,
    pub(crate) cataloged: fn(&CachedCatalog) -> bool,
}

impl McpConnectionManager {
    /// Every asked server's answer, sorted by server name: `ask` each server that declares
    /// `capability`: a ready one by its capabilities, a
    /// starting one once settled, a failed one anyway (the next use restarts it, or says why
    /// not). An idle one is started for it unless its catalog says it does not declare it:
    /// an idle server never hides what it offers.
    pub(crate) async fn each_declaring<'a, T, F, Fut>(
        &'a self,
        capability: Capability,
        ask: F,
    ) -> Vec<(String, Result<T, String>)>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<T, McpError>> + 'a,
    {
        let mut asked = Vec::new();
        for (name, managed) in self.servers.snapshot().iter() {
            if matches!(&*managed.state.borrow(), ServerState::Lazy) {
                if managed.catalog.get().is_some_and(|c| !(capability.cataloged)(&c)) {
                    continue;
                }
                self.servers.start_lazy(managed);
            }
            asked.push(name.clone());
        }
        let ask = &ask;
        let answers = join_all(asked.into_iter().map(|name| async move {
            let offers = match self.servers.settled(&name).await {
                Ok(ServerState::Ready { conn, .. }) => (capability.declared)(&conn.capabilities),
                _ => true,
            };
            if !offers {
                return None;
            }
            let answer = ask(name.clone()).await.map_err(|e| e.to_string());
            Some((name, answer))
        }))
        .await;
        answers.into_iter().flatten().collect()
    }

    /// Whether any server declares `capability`: a ready one by its capabilities, a starting
    /// or idle one by its catalog, a starting one without a catalog once settled; an idle one
    /// without a catalog (a first run) is started to learn it, as a listing of its tools does.
    pub(crate) async fn any_declaring(&self, capability: Capability) -> bool {
        let all = self.servers.snapshot();
        let checks = all.iter().map(|(name, managed)| async move {
            let state = managed.state.borrow().clone();
            let waiting = matches!(state, ServerState::Starting | ServerState::Lazy);
            if waiting && let Some(catalog) = managed.catalog.get() {
                return (capability.cataloged)(&catalog);
            }
            if matches!(state, ServerState::Lazy) {
                self.servers.start_lazy(managed);
            }
            matches!(
                self.servers.settled(name).await,
                Ok(ServerState::Ready { conn, .. }) if (capability.declared)(&conn.capabilities)
            )
        });
        join_all(checks).await.into_iter().any(|yes| yes)
    }
}

/// A followed list's items and cache hint; a failed page fails it, a cursor cycle or the page
/// cap keeps what was gathered (logged).
pub(crate) fn gathered<T>(
    server: &str,
    followed: Followed<Vec<T>>,
) -> Result<(Vec<T>, Option<u64>), McpError> {
    match followed.stop {
        Some(ListingStop::Failed(e) | ListingStop::Unreachable(e)) => return Err(e),
        Some(stop) => tracing::warn!(server, ?stop, "list stopped early; keeping what it gathered"),
        None => {}
    }
    Ok((followed.items, followed.ttl_ms))
}
