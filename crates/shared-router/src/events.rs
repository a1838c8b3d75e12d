//! The shared router's events for whoever watches: every session's begin/end events (call ids
//! `s<session>-<n>`) and the servers' lifecycle, one JSON line each, on the events socket
//! (`mcp-router watch <socket>` shows them in the live view). Serialized only while someone
//! watches; a watcher that falls behind loses the oldest lines, never slows the router.

use std::sync::Arc;

use router_protocol::EventReceiver;
use tokio::io::AsyncWriteExt as _;
use tokio::net::UnixListener;
use tokio::sync::broadcast;

use super::place::current_uid;

/// Lines a slow watcher may fall behind by before it loses the oldest.
const BACKLOG: usize = 4096;

/// The watchers of the router's events.
#[derive(Clone)]
pub(crate) struct Watchers {
    lines: broadcast::Sender<Arc<str>>,
    pub(crate) moved: Moved,
}

/// What the router's own tasks wait for instead of looking again on a timer: a count that
/// goes up with each event of its kind, which any number of tasks can wait on.
#[derive(Clone, Default)]
pub(crate) struct Moved {
    /// A server's tools may have changed (its tools changed, it became ready, it stopped,
    /// failed or restarts): the sessions are told at once.
    pub(crate) tools: Arc<tokio::sync::watch::Sender<u64>>,
    /// A resource a session may watch changed (`mcp_resource_updated`).
    pub(crate) resources: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Default for Watchers {
    fn default() -> Self {
        Self { lines: broadcast::channel(BACKLOG).0, moved: Moved::default() }
    }
}

impl Watchers {
    /// Drain the router's events, each serialized once for every watcher (not at all when
    /// none watches).
    pub(crate) async fn fan_out(self, mut events: EventReceiver) {
        while let Some(event) = events.recv().await {
            use router_protocol::EventMsg as E;
            if matches!(
                event,
                E::McpToolsChanged(_)
                    | E::McpServerReady(_)
                    | E::McpServerStopped(_)
                    | E::McpServerFailed(_)
                    | E::McpServerRestarting(_)
            ) {
                self.moved.tools.send_modify(|n| *n += 1);
            }
            if matches!(event, E::McpResourceUpdated(_)) {
                self.moved.resources.send_modify(|n| *n += 1);
            }
            if self.lines.receiver_count() == 0 {
                continue;
            }
            if let Ok(line) = serde_json::to_string(&event) {
                let _ = self.lines.send(Arc::from(line));
            }
        }
    }

    /// Accept watchers (processes of this user only) on `listener`; each watcher is a task of
    /// this one's, ended with it.
    pub(crate) async fn serve(self, listener: UnixListener) {
        let mut watchers = tokio::task::JoinSet::new();
        loop {
            let mut stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
                Some(_) = watchers.join_next() => continue,
            };
            if stream.peer_cred().map(|c| c.uid()).ok() != Some(current_uid()) {
                continue;
            }
            let mut lines = self.lines.subscribe();
            watchers.spawn(async move {
                loop {
                    let line = match lines.recv().await {
                        Ok(line) => line,
                        Err(broadcast::error::RecvError::Lagged(lost)) => {
                            tracing::info!(
                                lost,
                                "a watcher fell behind; its oldest lines are lost"
                            );
                            continue;
                        }
                        Err(broadcast::error::RecvError::Closed) => return,
                    };
                    let written = stream.write_all(line.as_bytes()).await;
                    if written.and(stream.write_all(b"\n").await).is_err() {
                        return;
                    }
                }
            });
        }
    }
}
