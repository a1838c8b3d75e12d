//! A server's log messages (`notifications/message`) as events, rate-limited per connection:
//! a server that floods them costs the host a bounded number of events a second, not one per
//! message; what was dropped is counted on the next event that goes out.

use std::sync::Mutex;
use std::time::Duration;

use router_protocol::{EventMsg, EventSender, McpServerLogEvent};
use tokio::time::Instant;

/// Most log events one connection sends per [`WINDOW`].
pub const LOG_EVENTS_PER_WINDOW: u32 = 50;
/// The window the limit counts in.
pub const WINDOW: Duration = Duration::from_secs(1);

/// One connection's log budget: how many went out in the current window, and how many were
/// dropped since the last that went out.
#[derive(Debug, Default)]
pub struct LogBudget {
    state: Mutex<Budget>,
}

#[derive(Debug, Default)]
struct Budget {
    window_start: Option<Instant>,
    sent: u32,
    dropped: u64,
}

impl LogBudget {
    /// Sends `server`'s message as an event if this window still has room (with the count of
    /// the messages dropped before it); otherwise counts it as dropped.
    #[allow(deprecated)] // Logging is deprecated by SEP-2577; 2025-11-25 servers still log.
    pub fn logged(
        &self,
        server: &str,
        params: rmcp::model::LoggingMessageNotificationParam,
        events: &EventSender,
    ) {
        let Some(dropped) = self.admit(Instant::now()) else { return };
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let mut event = McpServerLogEvent::bounded(server, level, params.logger, params.data);
        event.dropped_before = (dropped > 0).then_some(dropped);
        events.send(EventMsg::McpServerLog(event));
    }

    /// `Some(dropped before)` when a message at `now` may go out; `None` when it is dropped.
    fn admit(&self, now: Instant) -> Option<u64> {
        let Ok(mut budget) = self.state.lock() else { return None };
        let current = budget.window_start.is_some_and(|start| now.duration_since(start) < WINDOW);
        if !current {
            budget.window_start = Some(now);
            budget.sent = 0;
        }
        if budget.sent >= LOG_EVENTS_PER_WINDOW {
            budget.dropped += 1;
            return None;
        }
        budget.sent += 1;
        Some(std::mem::take(&mut budget.dropped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flood gets the window's allowance, the rest is counted and reported with the first
    /// message of the next window.
    #[test]
    fn a_flood_is_cut_to_the_allowance_and_what_was_dropped_is_counted() {
        let budget = LogBudget::default();
        let start = Instant::now();
        let admitted: Vec<Option<u64>> = (0..1_000).map(|_| budget.admit(start)).collect();
        let went = admitted.iter().filter(|a| a.is_some()).count();
        assert_eq!(went, LOG_EVENTS_PER_WINDOW as usize);
        assert!(admitted.iter().flatten().all(|dropped| *dropped == 0));
        let later = start + WINDOW;
        assert_eq!(budget.admit(later), Some(1_000 - u64::from(LOG_EVENTS_PER_WINDOW)));
        assert_eq!(budget.admit(later), Some(0));
    }
}
