//! The event sink: an unbounded channel, so emitting never blocks or fails the tool path.
//!
//! A slow consumer makes the queue grow; nothing is dropped. A consumer that went away (receiver
//! dropped) makes sends no-ops: events are then discarded on purpose, since nobody listens.
//! [`EventSender::end`] ends the stream for the receiver whatever clones of the sender remain
//! (what a shutdown does once its last event is sent).

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

/// Cheap to clone; every clone feeds the same receiver.
#[derive(Debug, Clone)]
pub struct EventSender {
    tx: Option<mpsc::UnboundedSender<Item>>,
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
    (EventSender { tx: Some(tx) }, EventReceiver { rx })
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
            let _ = tx.send(Item::Event(event));
        }
    }

    /// End the stream: the receiver gets every event sent before this, then `None`; what any
    /// clone sends afterwards is discarded.
    pub fn end(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Item::End);
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
