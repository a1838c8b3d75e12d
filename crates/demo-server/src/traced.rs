//! A caller's W3C trace context comes back in a tool result's `_meta`, as a server that joins
//! the caller's trace would record it: what reached the server, for tests — the `traceparent`
//! of the request's `_meta`, and over streamable HTTP the `traceparent` HTTP header.

use rmcp::RoleServer;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;

/// The `_meta` key of a tool result that repeats the `traceparent` HTTP header the call came
/// with (streamable HTTP).
pub const TRACEPARENT_HEADER_KEY: &str = "io.github.mcp-router/traceparent-header";

/// The trace context a call came with.
pub(crate) struct Received {
    traceparent: Option<String>,
    header: Option<String>,
}

impl Received {
    /// What `context` carries: `_meta.traceparent`, and the HTTP header when there is one.
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Self {
        let header = context
            .extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.headers.get("traceparent")?.to_str().ok().map(str::to_string));
        Self { traceparent: context.meta.get_traceparent().map(str::to_string), header }
    }

    /// Puts it in `result`'s `_meta`.
    pub(crate) fn echo(self, result: &mut CallToolResult) {
        if let Some(traceparent) = self.traceparent {
            result.meta.get_or_insert_with(Default::default).set_traceparent(traceparent);
        }
        if let Some(header) = self.header {
            let meta = result.meta.get_or_insert_with(Default::default);
            meta.0.insert(TRACEPARENT_HEADER_KEY.to_string(), header.into());
        }
    }
}
