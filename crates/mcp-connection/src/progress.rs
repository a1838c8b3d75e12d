//! Progress of calls in flight: each `tools/call` and `resources/read` made for a model's call
//! carries a `progressToken`, and the server's `notifications/progress` for it becomes an
//! `mcp_tool_call_progress` event naming that call — at most one per interval per call, so a
//! chatty server cannot flood a UI; the last one (`progress` reaching `total`) is never held
//! back. The transport wrapper (`telemetry::Traced`) hands each report here as it arrives, in
//! the order of the server's messages, so every report sent before the answer arrives before
//! the call's end; one sent after it finds no call and is dropped, never reported after the
//! call's end.
//!
//! rmcp gives every request a progress token of its own choosing. So the request is tagged in
//! `_meta` with a key of ours ([`Progress::track`]), and the connection's transport
//! (`telemetry::Traced`) takes the tag out as it writes the request and binds rmcp's token to
//! the call ([`Progress::bind`]) — before the server can have sent any progress for it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken, RequestMetaObject};
use router_protocol::{EventMsg, EventSender, McpToolCallProgressEvent};
use rustc_hash::FxBuildHasher;
use serde_json::Value;

/// The `_meta` key that ties a request to its call until the transport takes it out.
const PROGRESS_KEY: &str = "io.github.mcp-router/progress";

/// One connection's calls in flight and the progress tokens rmcp gave their requests.
#[derive(Debug, Default)]
pub struct Progress {
    /// Most one event per call per this long (`progress_interval_ms`).
    interval: Duration,
    next: AtomicU64,
    /// Tagged requests not yet written (the transport checks this before looking).
    untaken: AtomicUsize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    // Fx: the keys are the connection's own (a server's notification only looks one up), and
    // SipHash cost more than the rest of a request's bookkeeping.
    routes: HashMap<u64, Route, FxBuildHasher>,
    tokens: HashMap<ProgressToken, u64, FxBuildHasher>,
}

#[derive(Debug)]
struct Route {
    call_id: Arc<str>,
    token: Option<ProgressToken>,
    last: Option<Instant>,
    /// When the server last reported progress for it (every report, events or not).
    heard: Option<Instant>,
}

impl Progress {
    /// Events for one call at most once per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self { interval, ..Self::default() }
    }

    /// Tag a request made for the model's current call (`mcp_backend::current_call_id`);
    /// nothing without one. Its progress is that call's until the guard is dropped.
    pub fn track<'a>(&'a self, meta: &mut Option<RequestMetaObject>) -> Option<Tracked<'a>> {
        let tracked = self.route(None)?;
        let meta = meta.get_or_insert_with(RequestMetaObject::new);
        meta.0.0.insert(PROGRESS_KEY.to_string(), Value::from(tracked.key));
        self.untaken.fetch_add(1, Ordering::SeqCst);
        Some(tracked)
    }

    /// [`Progress::track`] for a request whose progress token is known before it is written
    /// (a read sent straight: its id): bound at once, nothing put in `_meta`.
    pub(crate) fn track_token(&self, token: ProgressToken) -> Option<Tracked<'_>> {
        self.route(Some(token))
    }

    /// A route from the current call (if any) to its progress, with the token when known.
    fn route(&self, token: Option<ProgressToken>) -> Option<Tracked<'_>> {
        let call_id = mcp_backend::current_call_id()?;
        let key = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut state = self.state.lock().ok()?;
        if let Some(token) = &token {
            state.tokens.insert(token.clone(), key);
        }
        state.routes.insert(key, Route { call_id, token, last: None, heard: None });
        Some(Tracked { progress: self, key })
    }

    /// The model's calls in flight on this connection, each once, in no order: when there is
    /// exactly one, a 2025-11-25 server's own request (which names none) is taken to be for it.
    pub(crate) fn calls_in_flight(&self) -> Vec<String> {
        let Ok(state) = self.state.lock() else { return Vec::new() };
        let mut calls: Vec<String> = state.routes.values().map(|r| r.call_id.to_string()).collect();
        calls.sort_unstable();
        calls.dedup();
        calls
    }

    /// Whether a tagged request waits to be written (the transport looks only then).
    pub(crate) fn waiting(&self) -> bool {
        self.untaken.load(Ordering::SeqCst) > 0
    }

    /// The transport is writing a request: take our tag out of its params' `_meta` and bind
    /// the progress token rmcp gave the request (in the request's own `_meta`) to the call.
    pub(crate) fn bind(
        &self,
        params_meta: &mut Option<RequestMetaObject>,
        token: Option<ProgressToken>,
    ) {
        if self.untaken.load(Ordering::SeqCst) == 0 {
            return;
        }
        let Some(meta) = params_meta.as_mut() else { return };
        let Some(key) = meta.0.0.remove(PROGRESS_KEY).and_then(|k| k.as_u64()) else { return };
        self.untaken.fetch_sub(1, Ordering::SeqCst);
        let Some(token) = token.or_else(|| meta.get_progress_token()) else { return };
        if let Ok(mut state) = self.state.lock()
            && let Some(route) = state.routes.get_mut(&key)
        {
            route.token = Some(token.clone());
            state.tokens.insert(token, key);
        }
    }

    /// A server's progress notification: the event for its call, unless one went out less
    /// than an interval ago (the final one always goes).
    ///
    /// The event is sent while the lock is held: the call's [`Tracked`] takes the same lock
    /// when it is dropped, which is before the call's end event can be sent, so an event is
    /// either queued ahead of the end or not sent at all — never after it.
    pub fn notified(&self, server: &str, params: ProgressNotificationParam, events: &EventSender) {
        let now = Instant::now();
        let last = params.total.is_some_and(|total| params.progress >= total);
        let Ok(mut state) = self.state.lock() else { return };
        let Some(key) = state.tokens.get(&params.progress_token).copied() else { return };
        let Some(route) = state.routes.get_mut(&key) else { return };
        route.heard = Some(now);
        let due = route.last.is_none_or(|at| now.duration_since(at) >= self.interval);
        if !(due || last) {
            return;
        }
        route.last = Some(now);
        events.send(EventMsg::McpToolCallProgress(McpToolCallProgressEvent {
            call_id: route.call_id.to_string(),
            server: server.to_string(),
            progress: params.progress,
            total: params.total,
            message: params.message,
        }));
        drop(state);
    }
}

impl Progress {
    /// When a server last reported progress for a request of `call_id` in flight.
    pub fn last_heard(&self, call_id: &str) -> Option<Instant> {
        let state = self.state.lock().ok()?;
        let routes = state.routes.values().filter(|r| &*r.call_id == call_id);
        routes.filter_map(|r| r.heard).max()
    }
}

/// `work` within `timeout`; when `heard` reports progress (`reset_timeout_on_progress`), the
/// clock restarts from the last report, so a server that keeps reporting keeps its call alive.
/// `None` when the time ran out. `heard` is asked only when the time runs out.
pub(crate) async fn within<F: std::future::Future>(
    timeout: Duration,
    work: F,
    heard: impl Fn() -> Option<Instant>,
) -> Option<F::Output> {
    tokio::pin!(work);
    let mut deadline = tokio::time::Instant::now() + timeout;
    loop {
        tokio::select! {
            out = &mut work => return Some(out),
            () = tokio::time::sleep_until(deadline) => {
                let next = heard().map(|at| tokio::time::Instant::from_std(at) + timeout);
                match next {
                    Some(next) if next > deadline => deadline = next,
                    _ => return None,
                }
            }
        }
    }
}

/// A tagged request; dropping it forgets the call (late notifications are ignored).
pub struct Tracked<'a> {
    progress: &'a Progress,
    key: u64,
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.progress.state.lock()
            && let Some(route) = state.routes.remove(&self.key)
        {
            match route.token {
                Some(token) => {
                    state.tokens.remove(&token);
                }
                // Never written (failed before the transport saw it).
                None => {
                    self.progress.untaken.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn note(token: i64, progress: f64, total: Option<f64>) -> ProgressNotificationParam {
        let mut params =
            ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress);
        params.total = total;
        params
    }

    #[tokio::test]
    async fn notifications_become_rate_limited_events_of_their_call_until_it_ends() {
        let progress = Progress::new(Duration::from_secs(3600));
        let (events, mut rx) = router_protocol::event_channel();
        let mut meta = None;
        // Outside a model's call: no tag.
        assert!(progress.track(&mut meta).is_none());
        let tracked = mcp_backend::with_call_id("c1", async { progress.track(&mut meta) }).await;
        let tracked = tracked.expect("a tag");
        // rmcp gives the request its token; the transport binds it and takes the tag out.
        let mut sent = meta.clone();
        assert!(progress.waiting());
        progress.bind(&mut sent, Some(ProgressToken(NumberOrString::Number(9))));
        assert!(!progress.waiting());
        assert!(sent.as_ref().is_some_and(|m| !m.0.0.contains_key(PROGRESS_KEY)));
        progress.notified("s", note(9, 1.0, Some(4.0)), &events);
        progress.notified("s", note(9, 2.0, Some(4.0)), &events); // within the interval
        progress.notified("s", note(7, 1.0, None), &events); // not ours
        progress.notified("s", note(9, 4.0, Some(4.0)), &events); // the last always goes
        drop(tracked);
        progress.notified("s", note(9, 5.0, Some(4.0)), &events); // after the call
        let mut got = Vec::new();
        while let Ok(EventMsg::McpToolCallProgress(e)) = rx.try_recv() {
            got.push((e.call_id, e.progress));
        }
        assert_eq!(got, [("c1".to_string(), 1.0), ("c1".to_string(), 4.0)]);
        assert_eq!(progress.untaken.load(Ordering::SeqCst), 0);
    }

    /// A notification handled while its call ends (the transport, reading one the server sent
    /// after its answer, against the caller) is queued before the end event or not at all: the caller drops the guard, then sends its
    /// end, and no progress may follow that end.
    #[tokio::test]
    async fn no_progress_is_queued_after_the_call_that_ended() {
        let progress = Arc::new(Progress::new(Duration::ZERO));
        let (events, mut rx) = router_protocol::event_channel();
        for round in 0..2_000_i64 {
            let token = ProgressToken(NumberOrString::Number(round));
            let tracked = mcp_backend::with_call_id("c", async { progress.track_token(token) });
            let tracked = tracked.await.expect("a route");
            let notifier = {
                let (progress, events) = (Arc::clone(&progress), events.clone());
                std::thread::spawn(move || {
                    for step in 0..200 {
                        progress.notified("s", note(round, f64::from(step), None), &events);
                    }
                })
            };
            std::thread::yield_now();
            drop(tracked);
            // The caller's end (any event after the guard is gone stands for it).
            let end = McpToolCallProgressEvent {
                call_id: "end".into(),
                server: "s".into(),
                progress: 0.0,
                total: None,
                message: None,
            };
            events.send(EventMsg::McpToolCallProgress(end));
            notifier.join().expect("the notifier");
            let mut ended = false;
            while let Ok(EventMsg::McpToolCallProgress(e)) = rx.try_recv() {
                assert!(!ended, "progress {} after the end (round {round})", e.progress);
                ended = e.call_id == "end";
            }
            assert!(ended);
        }
    }
}
