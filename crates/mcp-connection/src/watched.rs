//! A server's watched resources: which URIs the model read are kept watched (at most a cap,
//! by the policy on [`Watched`]), and the changes the server reported for them until the model
//! is told. `watch` sends the requests this decides on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// One server's watched resources — those the model read, at most `cap` — and the changes
/// heard for them. Lives with the server, not the connection, so watching survives restarts.
///
/// The policy: while there is room, every URI the model reads is watched. A full set stays
/// stable: a URI read for the first time takes the place of the least recently read one only if
/// that one was not read for `IDLE`; otherwise it is not watched. A working set larger than
/// the cap, all of it in use, therefore costs nothing per read (the old LRU rule subscribed and
/// unsubscribed on every read, and the reads queued behind those requests); when the model
/// moves on, the URIs it left take turns with the new ones, one swap per read at most.
pub struct Watched {
    cap: usize,
    state: std::sync::Mutex<WatchedState>,
    /// A change may be waiting: set (under the lock) when one is heard, cleared when they are
    /// taken, so the model's every call asks each server's set without taking its lock.
    heard: std::sync::atomic::AtomicBool,
}

/// How long a watched URI must go unread before a new one may take its place in a full set.
pub(crate) const IDLE: Duration = Duration::from_secs(60);

#[derive(Default)]
struct WatchedState {
    /// URI → its place in `order` and when it was last read (a read asks this, not a scan).
    entries: std::collections::HashMap<Arc<str>, (u64, std::time::Instant)>,
    /// Least recently read first: place → URI.
    order: std::collections::BTreeMap<u64, Arc<str>>,
    /// The place the next read takes.
    next: u64,
    /// URI → when its change was heard.
    pending: std::collections::BTreeMap<String, String>,
}

/// A URI read for the first time joined the watched set.
pub struct Touch {
    /// The idle URI it took the place of, if the set was full.
    pub evicted: Option<String>,
}

impl Watched {
    /// `cap` 0 watches nothing.
    pub fn new(cap: usize) -> Self {
        Self { cap, state: Default::default(), heard: Default::default() }
    }

    /// The model read `uri` (successfully): watch it if the policy lets it, forget a pending
    /// change of it. `None` when nothing changed in the set (no request to send).
    pub fn read(&self, uri: &str) -> Option<Touch> {
        self.read_at(uri, std::time::Instant::now())
    }

    fn read_at(&self, uri: &str, now: std::time::Instant) -> Option<Touch> {
        if self.cap == 0 {
            return None;
        }
        let mut state = self.state.lock().ok()?;
        let WatchedState { entries, order, next, pending } = &mut *state;
        if !pending.is_empty() {
            pending.remove(uri);
        }
        let place = *next;
        *next += 1;
        if let Some((at, read)) = entries.get_mut(uri) {
            // Read again: it moves to the back, nothing to tell the server.
            let old = std::mem::replace(at, place);
            *read = now;
            if let Some(uri) = order.remove(&old) {
                order.insert(place, uri);
            }
            return None;
        }
        let evicted = if entries.len() < self.cap {
            None
        } else {
            let first = order.first_key_value().and_then(|(_, uri)| entries.get(uri));
            let idle = first.is_some_and(|(_, read)| now.duration_since(*read) >= IDLE);
            if !idle {
                // Full of URIs in use: this one is not watched.
                return None;
            }
            let (_, gone) = order.pop_first()?;
            entries.remove(&gone);
            pending.remove(&*gone);
            Some(gone.to_string())
        };
        let uri: Arc<str> = Arc::from(uri);
        entries.insert(uri.clone(), (place, now));
        order.insert(place, uri);
        Some(Touch { evicted })
    }

    /// The watched URIs, least recently read first.
    pub(crate) fn uris(&self) -> Vec<String> {
        self.state
            .lock()
            .map(|s| s.order.values().map(|u| u.to_string()).collect())
            .unwrap_or_default()
    }

    /// The server says `uri` changed: remembered (once) if it is watched.
    pub(crate) fn updated(&self, uri: &str) -> bool {
        let Ok(mut state) = self.state.lock() else { return false };
        if !state.entries.contains_key(uri) {
            return false;
        }
        // A change already waiting keeps its first time (and costs no allocation).
        if !state.pending.contains_key(uri) {
            state.pending.insert(uri.to_string(), now_rfc3339());
            self.heard.store(true, std::sync::atomic::Ordering::Release);
        }
        true
    }

    /// The changes heard since they were last taken (each once). Without one heard, no lock is
    /// taken and nothing allocated.
    pub fn take(&self) -> Vec<(String, String)> {
        use std::sync::atomic::Ordering;
        if !self.heard.load(Ordering::Acquire) {
            return Vec::new();
        }
        let Ok(mut state) = self.state.lock() else { return Vec::new() };
        self.heard.store(false, Ordering::Release);
        std::mem::take(&mut state.pending).into_iter().collect()
    }
}

/// Now, as RFC 3339 UTC with milliseconds (`2026-11-23T21:40:00.123Z`).
fn now_rfc3339() -> String {
    mcp_backend::rfc3339(std::time::SystemTime::now())
}

/// Most `resources/subscribe` exchanges in flight per connection.
const SUBSCRIBING: usize = 4;

/// What the notification handlers tell the watcher of one connection.
pub struct Changes {
    /// The watched set grew or shrank: the listen stream is opened again with it.
    pub(crate) relisten: Notify,
    /// Subscription requests in flight (legacy `resources/subscribe`), at most
    /// [`SUBSCRIBING`].
    pub(crate) subscribing: tokio::sync::Semaphore,
    /// Tool-list notifications so far (to see when a burst has stopped).
    pub(crate) tools_notes: std::sync::atomic::AtomicU64,
    pub(crate) closed: AtomicBool,
    pub(crate) wake: Notify,
}

impl Default for Changes {
    fn default() -> Self {
        Self {
            relisten: Notify::new(),
            subscribing: tokio::sync::Semaphore::new(SUBSCRIBING),
            tools_notes: Default::default(),
            closed: Default::default(),
            wake: Notify::new(),
        }
    }
}

impl Changes {
    /// The server's tool list changed: read it again soon.
    pub(crate) fn tools_changed(&self) {
        self.tools_notes.fetch_add(1, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// The connection is gone: the watcher ends.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.wake.notify_one();
        self.relisten.notify_one();
    }

    /// The watched resources changed: listen again with them (2026-07-28).
    pub(crate) fn watched_changed(&self) {
        self.relisten.notify_one();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_watched_set_stays_stable_until_its_oldest_goes_idle() {
        let watched = Watched::new(2);
        let t0 = std::time::Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        // (uri read, at second, what the read changes: None = no request, Some(evicted)).
        let steps: [(&str, u64, Option<Option<&str>>); 9] = [
            ("a", 0, Some(None)),       // room: watched
            ("a", 1, None),             // read again: nothing to send
            ("b", 2, Some(None)),       // room: watched
            ("c", 3, None),             // full, `a` read 2 s ago: `c` is not watched
            ("d", 4, None),             // the same: no churn however many new URIs come
            ("a", 5, None),             // `a` stays watched and moves to the back
            ("e", 62, Some(Some("b"))), // `b` unread for 60 s: `e` takes its place
            ("c", 63, None),            // `a` was read at 5 s but only 58 s ago… not idle yet
            ("c", 66, Some(Some("a"))), // …now it is
        ];
        for (uri, second, expected) in steps {
            let touch = watched.read_at(uri, at(second));
            let got = touch.map(|t| t.evicted);
            assert_eq!(got.as_ref().map(|e| e.as_deref()), expected, "{uri} at {second} s");
        }
        assert_eq!(watched.uris(), ["e", "c"]);
    }

    /// The policy as first written: a list scanned on every read.
    fn reference(
        cap: usize,
        order: &mut std::collections::VecDeque<(String, std::time::Instant)>,
        uri: &str,
        now: std::time::Instant,
    ) -> Option<Option<String>> {
        if let Some(at) = order.iter().position(|(u, _)| u == uri) {
            let entry = order.remove(at)?;
            order.push_back((entry.0, now));
            return None;
        }
        let evicted = if order.len() < cap {
            None
        } else {
            if order.front().is_none_or(|(_, read)| now.duration_since(*read) < IDLE) {
                return None;
            }
            order.pop_front().map(|(gone, _)| gone)
        };
        order.push_back((uri.to_string(), now));
        Some(evicted)
    }

    proptest::proptest! {
        /// The indexed set decides as the scanned list did, read after read.
        #[test]
        fn the_indexed_set_decides_as_the_scanned_list(
            cap in 1usize..6,
            reads in proptest::collection::vec((0u8..10, 0u64..40), 1..200),
        ) {
            let watched = Watched::new(cap);
            let mut order = std::collections::VecDeque::new();
            let mut now = std::time::Instant::now();
            for (uri, gap) in reads {
                now += Duration::from_secs(gap);
                let uri = format!("demo://{uri}");
                let expected = reference(cap, &mut order, &uri, now);
                let got = watched.read_at(&uri, now).map(|t| t.evicted);
                proptest::prop_assert_eq!(got, expected);
                let uris: Vec<String> = order.iter().map(|(u, _)| u.clone()).collect();
                proptest::prop_assert_eq!(watched.uris(), uris);
            }
        }
    }

    #[test]
    fn changes_are_remembered_for_watched_uris_and_reported_once() {
        let watched = Watched::new(2);
        watched.read("b");
        watched.read("c");
        assert!(!watched.updated("a"), "not watched");
        assert!(watched.updated("b"));
        assert!(watched.updated("b"));
        assert_eq!(watched.take().len(), 1, "a change is reported once");
        assert!(watched.take().is_empty());
        watched.updated("c");
        watched.read("c");
        assert!(watched.take().is_empty(), "a re-read clears the notice");
        watched.updated("b");
        assert_eq!(watched.take().len(), 1, "a change heard after a take is reported");
        assert!(Watched::new(0).read("x").is_none(), "cap 0 watches nothing");
    }
}
