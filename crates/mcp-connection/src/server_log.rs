//! A server's log messages (`notifications/message`) as events, rate-limited per connection:
//! a server that floods them costs the host a bounded number of events a second, not one per
//! message; what was dropped is counted on the next event that goes out.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use router_protocol::{EventMsg, EventSender, McpServerLogEvent};
use tokio::time::Instant;

/// Most log events one connection sends per [`WINDOW`].
pub(crate) const LOG_EVENTS_PER_WINDOW: u32 = 50;
/// The window the limit counts in.
pub(crate) const WINDOW: Duration = Duration::from_secs(1);

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
    /// This window has dropped one already (its count is to be reported).
    dropping: bool,
}

impl LogBudget {
    /// Sends `server`'s message as an event if this window still has room (with the count of
    /// the messages dropped before it); otherwise counts it as dropped. The first drop of a
    /// window also arranges for the count to be reported when the window ends, should no
    /// message come after the flood.
    #[allow(deprecated)] // Logging is deprecated by SEP-2577; 2025-11-25 servers still log.
    pub fn logged(
        self: &Arc<Self>,
        server: &str,
        params: rmcp::model::LoggingMessageNotificationParam,
        events: &EventSender,
    ) {
        let now = Instant::now();
        let dropped = match self.admit(now) {
            Admitted::Send { dropped_before } => dropped_before,
            Admitted::Dropped { first_in_window: false } => return,
            Admitted::Dropped { first_in_window: true } => {
                self.report_later(server, events, now + WINDOW);
                return;
            }
        };
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let mut event = McpServerLogEvent::bounded(server, level, params.logger, params.data);
        event.dropped_before = (dropped > 0).then_some(dropped);
        events.send(EventMsg::McpServerLog(event));
    }

    /// At `at`, the count of what was dropped and not reported yet, as an event of its own.
    fn report_later(self: &Arc<Self>, server: &str, events: &EventSender, at: Instant) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (budget, server, events) = (self.clone(), server.to_string(), events.clone());
        runtime.spawn(async move {
            tokio::time::sleep_until(at).await;
            let dropped = budget.state.lock().map(|mut b| std::mem::take(&mut b.dropped));
            if let Ok(dropped @ 1..) = dropped {
                let data = format!("{dropped} log messages of this server were dropped (more than {LOG_EVENTS_PER_WINDOW} a second)");
                let mut event = McpServerLogEvent::bounded(
                    &server,
                    "warning".to_string(),
                    Some("mcp-router".to_string()),
                    data.into(),
                );
                event.dropped_before = Some(dropped);
                events.send(EventMsg::McpServerLog(event));
            }
        });
    }

    fn admit(&self, now: Instant) -> Admitted {
        let Ok(mut budget) = self.state.lock() else {
            return Admitted::Dropped { first_in_window: false };
        };
        let current = budget.window_start.is_some_and(|start| now.duration_since(start) < WINDOW);
        if !current {
            budget.window_start = Some(now);
            budget.sent = 0;
            budget.dropping = false;
        }
        if budget.sent >= LOG_EVENTS_PER_WINDOW {
            budget.dropped += 1;
            let first_in_window = !std::mem::replace(&mut budget.dropping, true);
            return Admitted::Dropped { first_in_window };
        }
        budget.sent += 1;
        Admitted::Send { dropped_before: std::mem::take(&mut budget.dropped) }
    }
}

/// What becomes of one message.
#[derive(Debug, PartialEq, Eq)]
enum Admitted {
    /// It goes out, with the count of those dropped before it.
    Send { dropped_before: u64 },
    /// It is dropped (the first drop of its window reports the count later).
    Dropped { first_in_window: bool },
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
        let admitted: Vec<Admitted> = (0..1_000).map(|_| budget.admit(start)).collect();
        let sent = admitted.iter().filter(|a| **a == Admitted::Send { dropped_before: 0 }).count();
        assert_eq!(sent, LOG_EVENTS_PER_WINDOW as usize);
        let firsts =
            admitted.iter().filter(|a| **a == Admitted::Dropped { first_in_window: true }).count();
        assert_eq!(firsts, 1, "one report arranged per window");
        let later = start + WINDOW;
        let dropped = 1_000 - u64::from(LOG_EVENTS_PER_WINDOW);
        assert_eq!(budget.admit(later), Admitted::Send { dropped_before: dropped });
        assert_eq!(budget.admit(later), Admitted::Send { dropped_before: 0 });
    }

    /// A flood that ends is reported all the same, once its window is over.
    #[tokio::test(start_paused = true)]
    async fn the_count_of_a_floods_end_is_reported_when_its_window_ends() {
        let budget = Arc::new(LogBudget::default());
        let (events, mut rx) = router_protocol::event_channel();
        #[allow(deprecated)]
        for n in 0..200 {
            let params = rmcp::model::LoggingMessageNotificationParam::new(
                rmcp::model::LoggingLevel::Info,
                serde_json::json!(n),
            );
            budget.logged("s", params, &events);
        }
        tokio::time::sleep(WINDOW * 2).await;
        let mut logged = Vec::new();
        while let Ok(EventMsg::McpServerLog(event)) = rx.try_recv() {
            logged.push(event);
        }
        assert_eq!(logged.len(), LOG_EVENTS_PER_WINDOW as usize + 1);
        let last = logged.last().expect("the report");
        assert_eq!(last.dropped_before, Some(150));
        assert_eq!(last.logger.as_deref(), Some("mcp-router"));
    }
}
