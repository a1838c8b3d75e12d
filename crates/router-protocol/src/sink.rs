//! The event sink: an unbounded channel, so emitting never blocks or fails the tool path; or a
//! host's callback run on the emitting thread ([`EventSender::inline`]), which wakes nobody.
//!
//! A slow consumer makes the queue grow; nothing is dropped. A consumer that went away (receiver
//! dropped) makes sends no-ops: events are then discarded on purpose, since nobody listens.
//! [`EventSender::end`] ends the stream for the receiver whatever clones of the sender remain
//! (what a shutdown does once its last event is sent).

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;
pub use tokio::sync::mpsc::error::TryRecvError;

use crate::EventMsg;

/// What travels on the channel: an event, or the end of the stream. Not boxed: every event
/// would pay an allocation for the one `End` of a stream.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Item {
    Event(EventMsg),
    End,
}

/// Cheap to clone; every clone feeds the same receiver (or the same callback).
#[derive(Debug, Clone)]
pub struct EventSender {
    tx: Option<Sink>,
}

/// Where a sender's events go.
#[derive(Debug, Clone)]
enum Sink {
    Channel(mpsc::UnboundedSender<Item>),
    Inline(Arc<Inline>),
}

/// A host's callback, and whether the stream ended (by [`EventSender::end`], or by a panic of
/// the callback).
struct Inline {
    deliver: Box<dyn Fn(EventMsg) + Send + Sync>,
    ended: AtomicBool,
}

impl fmt::Debug for Inline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inline").field("ended", &self.ended.load(Ordering::Relaxed)).finish()
    }
}

/// The consuming end of [`event_channel`]: the events in the order they were sent, then `None`
/// once every sender is dropped or one of them called [`EventSender::end`].
#[derive(Debug)]
pub struct EventReceiver {
    rx: mpsc::UnboundedReceiver<Item>,
}

impl EventReceiver {
    /// The stream's end was read: nobody may send any more, and what was sent after the end is
    /// dropped.
    fn finish(&mut self) {
        self.rx.close();
        while self.rx.try_recv().is_ok() {}
    }
}

/// A connected sender/receiver pair.
pub fn event_channel() -> (EventSender, EventReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    (EventSender { tx: Some(Sink::Channel(tx)) }, EventReceiver { rx })
}

impl EventSender {
    /// A sender with no receiver: every event is discarded. For embedders that want no stream.
    pub fn discard() -> Self {
        Self { tx: None }
    }

    /// A sender that hands each event to `deliver` on the thread that emits it, at once: no
    /// queue, no consumer task, nothing woken (a channel wakes its consumer for each event).
    /// The events of one call arrive in their order — begin, its progress, end — since the
    /// router emits them one after another; events of concurrent calls may interleave, and
    /// `deliver` may run on several threads at once. It runs inside the router's call path, so
    /// it must be quick, must not block and must not call the router: a host that renders
    /// pushes the event where its UI picks it up. A `deliver` that panics ends the stream
    /// (that event and every later one are dropped); the router goes on.
    pub fn inline(deliver: impl Fn(EventMsg) + Send + Sync + 'static) -> Self {
        let inline = Inline { deliver: Box::new(deliver), ended: AtomicBool::new(false) };
        Self { tx: Some(Sink::Inline(Arc::new(inline))) }
    }

    /// Whether anyone may receive events: callers can skip building costly event payloads
    /// when nobody listens.
    pub fn is_active(&self) -> bool {
        match &self.tx {
            Some(Sink::Channel(tx)) => !tx.is_closed(),
            Some(Sink::Inline(inline)) => !inline.ended.load(Ordering::Relaxed),
            None => false,
        }
    }

    /// Queue an event (or hand it to the inline callback). Never blocks.
    pub fn send(&self, event: EventMsg) {
        match &self.tx {
            // An error only means the receiver is gone: nobody is listening any more.
            Some(Sink::Channel(tx)) => drop(tx.send(Item::Event(event))),
            Some(Sink::Inline(inline)) if !inline.ended.load(Ordering::Acquire) => {
                if catch_unwind(AssertUnwindSafe(|| (inline.deliver)(event))).is_err() {
                    inline.ended.store(true, Ordering::Release);
                }
            }
            Some(Sink::Inline(_)) | None => {}
        }
    }

    /// End the stream: the receiver gets every event sent before this, then `None`; what any
    /// clone sends afterwards is discarded (an inline callback is not called again).
    pub fn end(&self) {
        match &self.tx {
            Some(Sink::Channel(tx)) => drop(tx.send(Item::End)),
            Some(Sink::Inline(inline)) => inline.ended.store(true, Ordering::Release),
            None => {}
        }
    }
}

impl EventReceiver {
    /// The next event; `None` once the stream ended.
    pub async fn recv(&mut self) -> Option<EventMsg> {
        loop {
            match self.rx.recv().await? {
                Item::Event(event) => return Some(event),
                Item::End => self.finish(),
            }
        }
    }

    /// The next event if one is queued: [`TryRecvError::Empty`] when none is yet,
    /// [`TryRecvError::Disconnected`] once the stream ended.
    pub fn try_recv(&mut self) -> Result<EventMsg, TryRecvError> {
        loop {
            match self.rx.try_recv()? {
                Item::Event(event) => return Ok(event),
                Item::End => self.finish(),
            }
        }
    }

    /// [`EventReceiver::recv`] for a thread outside the runtime (panics inside one, as tokio's
    /// does).
    pub fn blocking_recv(&mut self) -> Option<EventMsg> {
        loop {
            match self.rx.blocking_recv()? {
                Item::Event(event) => return Some(event),
                Item::End => self.finish(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventMsg, McpServerStoppedEvent};

    fn stopped(server: &str) -> EventMsg {
        EventMsg::McpServerStopped(McpServerStoppedEvent {
            server: server.to_string(),
            was_running: false,
        })
    }

    #[tokio::test]
    async fn end_ends_the_stream_after_what_was_sent_whatever_clones_remain() {
        let (tx, mut rx) = event_channel();
        let clone = tx.clone();
        tx.send(stopped("a"));
        clone.send(stopped("b"));
        tx.end();
        clone.send(stopped("late"));
        assert_eq!(rx.recv().await, Some(stopped("a")));
        assert_eq!(rx.try_recv(), Ok(stopped("b")));
        assert_eq!(rx.recv().await, None);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert!(!clone.is_active(), "senders see the stream ended");
    }

    #[test]
    fn an_inline_sender_delivers_on_the_emitting_thread_until_its_end() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = seen.clone();
        let tx = EventSender::inline(move |event| {
            into.lock().expect("lock").push((event, std::thread::current().id()));
        });
        let clone = tx.clone();
        assert!(tx.is_active());
        tx.send(stopped("a"));
        let other = std::thread::spawn(move || {
            clone.send(stopped("b"));
            std::thread::current().id()
        });
        let other = other.join().expect("thread");
        tx.end();
        tx.send(stopped("late"));
        assert!(!tx.is_active());
        let here = std::thread::current().id();
        let seen = seen.lock().expect("lock").clone();
        assert_eq!(seen, [(stopped("a"), here), (stopped("b"), other)]);
    }

    #[test]
    fn an_inline_callback_that_panics_ends_the_stream_not_the_sender() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = calls.clone();
        let tx = EventSender::inline(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            panic!("the host's callback failed");
        });
        tx.send(stopped("a"));
        tx.send(stopped("b"));
        assert_eq!(calls.load(Ordering::SeqCst), 1, "not called again after its panic");
        assert!(!tx.is_active());
    }

    #[tokio::test]
    async fn without_end_the_stream_ends_when_every_sender_is_dropped() {
        let (tx, mut rx) = event_channel();
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.send(stopped("a"));
        drop(tx);
        assert_eq!(rx.recv().await, Some(stopped("a")));
        assert_eq!(rx.recv().await, None);
    }
}
