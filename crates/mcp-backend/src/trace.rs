//! The host's W3C trace context for the call being dispatched (`traceparent`, `tracestate`):
//! the router sets it around a dispatch when the host gave one (`CallContext`, an exec call
//! line, a client's `_meta` through `serve`); the connection sends it on every request the call
//! makes — in `_meta`, and as HTTP headers — so the server's work joins the host's trace.

use std::future::Future;
use std::sync::Arc;

/// A W3C trace context, checked: `traceparent` is `00-<32 hex>-<16 hex>-<2 hex>` with neither
/// id all zeros; `tracestate` is kept as given when it is short and printable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

impl TraceContext {
    /// A trace context from its two headers; `None` for a `traceparent` that is not a valid
    /// version-00 one (a `tracestate` that is not printable ASCII of at most 512 bytes is
    /// dropped, as the W3C spec lets a vendor do).
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let parts: Vec<&str> = traceparent.trim().split('-').collect();
        let hex = |s: &str, len: usize| {
            s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let [version, trace, span, flags] = parts.as_slice() else { return None };
        let zero = |s: &str| s.bytes().all(|b| b == b'0');
        if *version != "00" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
            return None;
        }
        if zero(trace) || zero(span) {
            return None;
        }
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| {
                !s.is_empty() && s.len() <= 512 && s.bytes().all(|b| (0x20..0x7f).contains(&b))
            })
            .map(str::to_string);
        Some(Self { traceparent: parts.join("-"), tracestate })
    }

    /// The `traceparent` header's value.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` header's value, when there is one.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The trace id (32 hex digits).
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The parent span id (16 hex digits).
    pub fn span_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// Whether the caller sampled the trace (flag 01).
    pub fn sampled(&self) -> bool {
        u8::from_str_radix(&self.traceparent[53..55], 16).is_ok_and(|f| f & 1 == 1)
    }
}

tokio::task_local! {
    static TRACE: Option<Arc<TraceContext>>;
}

/// Runs `work` with `trace` as the host's trace context (for this task; `None`: the host gave
/// none). Not an `async fn`: that would hold `work` twice.
pub fn with_trace<F: Future>(
    trace: Option<Arc<TraceContext>>,
    work: F,
) -> impl Future<Output = F::Output> {
    TRACE.scope(trace, work)
}

/// The host's trace context for the call the current task works for, if it gave one.
pub fn current_trace() -> Option<Arc<TraceContext>> {
    TRACE.try_with(Option::clone).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_version_00_traceparent_is_taken_and_anything_else_refused() {
        let trace = TraceContext::parse(PARENT, Some("rojo=00f067aa0ba902b7")).expect("valid");
        assert_eq!(trace.traceparent(), PARENT);
        assert_eq!(trace.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(trace.span_id(), "00f067aa0ba902b7");
        assert!(trace.sampled());
        assert_eq!(trace.tracestate(), Some("rojo=00f067aa0ba902b7"));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad}");
        }
        let no_state = TraceContext::parse(PARENT, Some("bad\u{7}state")).expect("valid");
        assert_eq!(no_state.tracestate(), None);
    }

    #[tokio::test]
    async fn the_trace_is_seen_inside_the_scope_only() {
        let trace = Arc::new(TraceContext::parse(PARENT, None).expect("valid"));
        assert_eq!(current_trace(), None);
        let inside = with_trace(Some(trace.clone()), async { current_trace() }).await;
        assert_eq!(inside, Some(trace));
    }
}
