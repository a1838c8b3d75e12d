//! The start/wait/restart/back-off/give-up decision, as a pure function of what the server's
//! state is, how often it was restarted, and the time. The manager's `connection()` only
//! observes, asks [`decide`], and carries the step out.

use std::time::Duration;

use tokio::time::Instant;

/// A server that stayed up this long has its restart count reset when it dies.
pub(crate) const STABLE_UPTIME: Duration = Duration::from_secs(60);
/// The longest wait after a failed start before the next use may try again.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What a request saw once the server was no longer starting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Observed<'a> {
    /// Ready, and the connection still works.
    Usable,
    /// Was ready since `since`; the connection has closed since.
    Closed { since: Instant },
    /// The last start failed with `error`; another try is allowed from `retry_at`. `again`:
    /// that start was this request's own (it restarted the server and saw it fail).
    Failed { error: &'a str, retry_at: Instant, again: bool },
    /// It failed for want of sign-in (`error` says to run `mcp-router login`); whether the
    /// stored credentials changed since.
    SignedOut { error: &'a str, signed_in_since: bool },
}

/// The restart rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RestartPolicy {
    /// Restarts before the server stays failed.
    pub(crate) max_restarts: u32,
    /// After this much uptime a dead server's restart count starts again from zero.
    pub(crate) stable_uptime: Duration,
    /// A remote (HTTP) server: never given up (the restart budget is for stdio servers that
    /// crash), and tried again by the next request after a failed start — a refused
    /// connection costs a moment, and the first call after the server is back gets it.
    pub(crate) remote: bool,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Use the connection.
    Use,
    /// Fail this request with the message; the state stays as it is.
    Refuse(String),
    /// Fail this request and mark the server failed for good with the message.
    GiveUp(String),
    /// Start the server again for `reason` (after zeroing the restart count first when
    /// `reset_restarts`).
    Restart { reason: String, reset_restarts: bool },
}

/// The decision for one request.
pub(crate) fn decide(
    observed: Observed<'_>,
    restarts: u32,
    now: Instant,
    policy: RestartPolicy,
) -> Step {
    let gave_up =
        |reason: &str, restarts: u32| format!("{reason} (gave up after {restarts} restarts)");
    match observed {
        Observed::Usable => Step::Use,
        Observed::Closed { since } => {
            let reset_restarts = now.saturating_duration_since(since) >= policy.stable_uptime;
            let restarts = if reset_restarts { 0 } else { restarts };
            let reason = "the connection closed (the server exited or dropped the session)";
            if restarts >= policy.max_restarts && !policy.remote {
                return Step::GiveUp(gave_up(reason, restarts));
            }
            Step::Restart { reason: reason.to_string(), reset_restarts }
        }
        // No retries without new credentials (no loop, no hang); a new login is used at once,
        // however often the server was restarted before.
        Observed::SignedOut { error, signed_in_since } => {
            if signed_in_since {
                Step::Restart { reason: "signed in again".to_string(), reset_restarts: true }
            } else {
                Step::Refuse(error.to_string())
            }
        }
        Observed::Failed { error, retry_at, again } => {
            if policy.remote && again {
                Step::Refuse(error.to_string())
            } else if policy.remote {
                Step::Restart {
                    reason: format!("the last start failed: {error}"),
                    reset_restarts: false,
                }
            } else if restarts >= policy.max_restarts {
                Step::Refuse(gave_up(error, restarts))
            } else if now < retry_at {
                Step::Refuse(error.to_string())
            } else {
                Step::Restart {
                    reason: format!("the last start failed: {error}"),
                    reset_restarts: false,
                }
            }
        }
    }
}

/// How long to wait after the start of restart `attempt` fails: `base` doubled per attempt
/// (at most 2⁶ times), capped at [`MAX_BACKOFF`]. The first start (attempt 0) waits `base`.
pub(crate) fn backoff(base: Duration, attempt: u32) -> Duration {
    base.saturating_mul(1 << attempt.min(6)).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RestartPolicy =
        RestartPolicy { max_restarts: 3, stable_uptime: STABLE_UPTIME, remote: false };

    fn restart(reason: &str, reset_restarts: bool) -> Step {
        Step::Restart { reason: reason.to_string(), reset_restarts }
    }

    #[test]
    fn decisions() {
        let now = Instant::now();
        let secs = Duration::from_secs;
        let closed = "the connection closed (the server exited or dropped the session)";
        let cases: Vec<(&str, Observed<'_>, u32, Step)> = vec![
            ("usable is used", Observed::Usable, 0, Step::Use),
            ("usable even after many restarts", Observed::Usable, 9, Step::Use),
            (
                "closed soon after start restarts",
                Observed::Closed { since: now - secs(5) },
                1,
                restart(closed, false),
            ),
            (
                "closed with the budget spent gives up",
                Observed::Closed { since: now - secs(5) },
                3,
                Step::GiveUp(format!("{closed} (gave up after 3 restarts)")),
            ),
            (
                "closed after a stable run starts afresh",
                Observed::Closed { since: now - secs(61) },
                3,
                restart(closed, true),
            ),
            (
                "failed, back-off running",
                Observed::Failed { error: "boom", retry_at: now + secs(1), again: false },
                1,
                Step::Refuse("boom".into()),
            ),
            (
                "failed, back-off over",
                Observed::Failed { error: "boom", retry_at: now, again: false },
                1,
                restart("the last start failed: boom", false),
            ),
            (
                "failed for good",
                Observed::Failed { error: "boom", retry_at: now, again: false },
                3,
                Step::Refuse("boom (gave up after 3 restarts)".into()),
            ),
            (
                "failed for good even while backing off",
                Observed::Failed { error: "boom", retry_at: now + secs(9), again: false },
                4,
                Step::Refuse("boom (gave up after 4 restarts)".into()),
            ),
            (
                "signed out: refused without a restart, whatever the count",
                Observed::SignedOut { error: "needs sign-in", signed_in_since: false },
                0,
                Step::Refuse("needs sign-in".into()),
            ),
            (
                "signed in again: restarted afresh even after the budget is spent",
                Observed::SignedOut { error: "needs sign-in", signed_in_since: true },
                9,
                restart("signed in again", true),
            ),
        ];
        for (name, observed, restarts, expected) in cases {
            assert_eq!(decide(observed, restarts, now, POLICY), expected, "{name}");
        }
    }

    /// A remote server is never given up, and a failed start is tried again by the next
    /// request, back-off or not: it may be back.
    #[test]
    fn a_remote_server_is_tried_again_by_the_next_request() {
        let remote = RestartPolicy { remote: true, ..POLICY };
        let now = Instant::now();
        let secs = Duration::from_secs;
        let again = restart("the last start failed: connection refused", false);
        for (restarts, retry_at) in [(0, now + secs(9)), (3, now), (9, now + secs(30))] {
            let failed = Observed::Failed { error: "connection refused", retry_at, again: false };
            assert_eq!(decide(failed, restarts, now, remote), again, "{restarts}");
        }
        // Once per request: the start it made itself failed, so it fails (no loop).
        let failed = Observed::Failed { error: "connection refused", retry_at: now, again: true };
        assert_eq!(decide(failed, 0, now, remote), Step::Refuse("connection refused".into()));
        let closed = Observed::Closed { since: now - secs(5) };
        assert!(matches!(decide(closed, 9, now, remote), Step::Restart { .. }));
        let signed_out = Observed::SignedOut { error: "needs sign-in", signed_in_since: false };
        assert_eq!(decide(signed_out, 0, now, remote), Step::Refuse("needs sign-in".into()));
    }

    #[test]
    fn no_restarts_allowed_means_a_dead_server_stays_dead() {
        let policy = RestartPolicy { max_restarts: 0, ..POLICY };
        let now = Instant::now();
        let step = decide(Observed::Closed { since: now }, 0, now, policy);
        assert!(matches!(step, Step::GiveUp(_)), "{step:?}");
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let base = Duration::from_millis(500);
        let waits: Vec<u64> = (0..9).map(|a| backoff(base, a).as_millis() as u64).collect();
        assert_eq!(waits, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
        assert_eq!(backoff(Duration::MAX, 3), MAX_BACKOFF);
    }
}
