//! A transport lent to a handshake: when rmcp drops it without a connection (the handshake
//! failed, or was given up), it comes back to its lender instead of closing, so a second
//! handshake (`initialize` after an unanswered `server/discover`) runs on the same process.

use std::sync::{Arc, Mutex};

use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// Where a [`Lent`] transport comes back to.
pub(crate) type Slot<T> = Arc<Mutex<Option<T>>>;

/// `T`, lent; see the module. After a handshake that succeeded the lender drops its [`Slot`],
/// so the transport, coming back at the connection's end, is dropped then as any other.
pub(crate) struct Lent<T> {
    inner: Option<T>,
    slot: Slot<T>,
}

impl<T> Lent<T> {
    /// `inner` lent; it comes back to the returned slot when dropped.
    pub(crate) fn new(inner: T) -> (Self, Slot<T>) {
        let slot: Slot<T> = Arc::new(Mutex::new(None));
        (Self { inner: Some(inner), slot: slot.clone() }, slot)
    }

    #[allow(clippy::expect_used, reason = "`inner` is taken only by the drop")]
    fn inner(&mut self) -> &mut T {
        self.inner.as_mut().expect("a lent transport is taken back only by its drop")
    }
}

impl<T> Drop for Lent<T> {
    fn drop(&mut self) {
        if Arc::strong_count(&self.slot) > 1
            && let Some(inner) = self.inner.take()
            && let Ok(mut slot) = self.slot.lock()
        {
            *slot = Some(inner);
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Lent<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner().send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner().receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner().close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comes_back_while_the_lender_waits_and_not_after() {
        let (lent, slot) = Lent::new(7);
        drop(lent);
        assert_eq!(slot.lock().expect("slot").take(), Some(7));
        let (lent, slot) = Lent::new(String::from("pipes"));
        let weak = Arc::downgrade(&slot);
        drop(slot);
        drop(lent);
        assert!(weak.upgrade().is_none(), "nothing keeps a transport the lender gave up");
    }
}
