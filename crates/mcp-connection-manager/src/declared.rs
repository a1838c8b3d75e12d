//! What prompts and skills share: asking every server that declares a capability (a starting
//! one waited for, an idle one named, not started), and a followed list's outcome.

use std::future::Future;

use futures::future::join_all;
use mcp_backend::{Followed, ListingStop, McpError};
use rmcp::model::ServerCapabilities;

use crate::lifecycle::ServerState;
use crate::manager::McpConnectionManager;

/// Every asked server's answer, sorted by server name, and the idle servers not asked.
pub(crate) struct Declared<T> {
    pub(crate) answers: Vec<(String, Result<T, String>)>,
    pub(crate) not_started: Vec<String>,
}

impl McpConnectionManager {
    /// `ask` each server that `declares` says offers it: a ready one by its capabilities, a
    /// failed one anyway (the next use restarts it, or says why not); idle ones are named.
    pub(crate) async fn each_declaring<'a, T, F, Fut>(
        &'a self,
        declares: fn(&ServerCapabilities) -> bool,
        ask: F,
    ) -> Declared<T>
    where
        F: Fn(&'a str) -> Fut,
        Fut: Future<Output = Result<T, McpError>>,
    {
        let mut not_started = Vec::new();
        let mut asked = Vec::new();
        for (name, managed) in &self.servers.servers {
            if matches!(&*managed.state.borrow(), ServerState::Lazy) {
                not_started.push(name.clone());
            } else {
                asked.push(name.as_str());
            }
        }
        let ask = &ask;
        let answers = join_all(asked.into_iter().map(|name| async move {
            let offers = match self.servers.settled(name).await {
                Ok(ServerState::Ready { conn, .. }) => declares(&conn.capabilities),
                _ => true,
            };
            if !offers {
                return None;
            }
            Some((name.to_string(), ask(name).await.map_err(|e| e.to_string())))
        }))
        .await;
        Declared { answers: answers.into_iter().flatten().collect(), not_started }
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
