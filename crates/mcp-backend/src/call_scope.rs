//! The model's call a backend request is made for: the router sets it around a dispatch, the
//! backend reads it to label what it sends (the connection manager's request spans carry it as
//! `mcp_router.call_id`). Unset outside a dispatch, and inside one when nobody records spans.

use std::future::Future;
use std::sync::Arc;

tokio::task_local! {
    static CALL_ID: Arc<str>;
}

/// Runs `work` with `call_id` as the current call (for this task; work spawned on other tasks
/// does not see it). Not an `async fn`: that would hold `work` twice.
pub fn with_call_id<F: Future>(call_id: &str, work: F) -> impl Future<Output = F::Output> {
    CALL_ID.scope(Arc::from(call_id), work)
}

/// The call the current task works for, if the router said so.
pub fn current_call_id() -> Option<Arc<str>> {
    CALL_ID.try_with(Arc::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_call_id_is_seen_inside_the_scope_only() {
        assert_eq!(current_call_id(), None);
        let inside = with_call_id("call-7", async { current_call_id() }).await;
        assert_eq!(inside.as_deref(), Some("call-7"));
        assert_eq!(current_call_id(), None);
    }
}
