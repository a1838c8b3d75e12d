//! The event sink: an unbounded channel, so emitting never blocks or fails the tool path.
//!
//! A slow consumer makes the queue grow; nothing is dropped. A consumer that went away (receiver
//! dropped) makes sends no-ops: events are then discarded on purpose, since nobody listens.

use tokio::sync::mpsc;

use crate::EventMsg;

/// Cheap to clone; every clone feeds the same receiver.
#[derive(Debug, Clone)]
pub struct EventSender {
    tx: Option<mpsc::UnboundedSender<EventMsg>>,
}

/// The consuming end of [`event_channel`].
pub type EventReceiver = mpsc::UnboundedReceiver<EventMsg>;

/// A connected sender/receiver pair.
pub fn event_channel() -> (EventSender, EventReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    (EventSender { tx: Some(tx) }, rx)
}

impl EventSender {
    /// A sender with no receiver: every event is discarded. For embedders that want no stream.
    pub fn discard() -> Self {
        Self { tx: None }
    }

    /// Whether anyone may receive events: callers can skip building costly event payloads
    /// when nobody listens.
    pub fn is_active(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Queue an event. Never blocks.
    pub fn send(&self, event: EventMsg) {
        if let Some(tx) = &self.tx {
            // An error only means the receiver is gone: nobody is listening any more.
            let _ = tx.send(event);
        }
    }
}
