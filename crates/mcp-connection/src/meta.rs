//! What the router adds to a request's `_meta` and capabilities: the tasks extension, the
//! log level it asks for, and the place of `_meta` in each request.

use rmcp::model::{ClientRequest, RequestMetaObject};

/// The tasks extension (SEP-2663), declared to every server where it matters: in `initialize`
/// (2025-11-25), and in the per-request client capabilities (2026-07-28) of `tools/call` — which
/// a server may answer with a task, followed by the connection manager — and of `tasks/*`. Reads
/// and lists do not carry it: rmcp copies the connection's capabilities into every request, and
/// the extension would cost each of them ten allocations for nothing.
pub(crate) fn declare_tasks(request: &mut ClientRequest) {
    use rmcp::model::GetMeta as _;
    let tasks = rmcp::model::TASKS_EXTENSION_ID;
    match request {
        ClientRequest::InitializeRequest(r) => {
            let extensions = r.params.capabilities.extensions.get_or_insert_with(Default::default);
            extensions.insert(tasks.to_string(), Default::default());
        }
        ClientRequest::CallToolRequest(_)
        | ClientRequest::GetTaskRequest(_)
        | ClientRequest::UpdateTaskRequest(_)
        | ClientRequest::CancelTaskRequest(_) => {
            add_tasks_extension(&mut request.get_meta_mut().0.0)
        }
        _ => {}
    }
}

/// The tasks extension added to the client capabilities in a 2026-07-28 request's `_meta` (or
/// in a connection's client context: `straight`); nothing without them.
pub(crate) fn add_tasks_extension(meta: &mut serde_json::Map<String, serde_json::Value>) {
    let Some(serde_json::Value::Object(capabilities)) = meta.get_mut(CAPABILITIES_KEY) else {
        return;
    };
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if let serde_json::Value::Object(extensions) = extensions {
        extensions.insert(rmcp::model::TASKS_EXTENSION_ID.to_string(), serde_json::json!({}));
    }
}

/// The config's `log_level` in a 2026-07-28 request (one that carries the per-request client
/// capabilities): there a server sends log messages for a request only when its `_meta` asks
/// (`io.modelcontextprotocol/logLevel`), at that level and above. 2025-11-25 servers are asked
/// once, with `logging/setLevel`.
pub(crate) fn ask_log_level(request: &mut ClientRequest, level: &str) {
    use rmcp::model::GetMeta as _;
    let meta = &mut request.get_meta_mut().0.0;
    if meta.contains_key(CAPABILITIES_KEY) {
        meta.insert(LOG_LEVEL_KEY.to_string(), serde_json::Value::String(level.to_string()));
    }
}

/// Where a 2026-07-28 request carries the client's capabilities.
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// Where a 2026-07-28 request asks for log messages at a level.
pub(crate) const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// The `params._meta` `request` carries (see [`params_meta`]), to read.
#[cfg(feature = "streamable-http")]
pub(crate) fn params_meta_of(request: &ClientRequest) -> Option<&RequestMetaObject> {
    match request {
        ClientRequest::ListResourcesRequest(r) => r.params.as_ref()?.meta.as_ref(),
        ClientRequest::ListResourceTemplatesRequest(r) => r.params.as_ref()?.meta.as_ref(),
        ClientRequest::ListToolsRequest(r) => r.params.as_ref()?.meta.as_ref(),
        ClientRequest::ReadResourceRequest(r) => r.params.meta.as_ref(),
        ClientRequest::CallToolRequest(r) => r.params.meta.as_ref(),
        ClientRequest::CompleteRequest(r) => r.params.meta.as_ref(),
        ClientRequest::SubscribeRequest(r) => r.params.meta.as_ref(),
        _ => None,
    }
}

/// The params-level `_meta` of the requests the manager tags.
pub(crate) fn params_meta(request: &mut ClientRequest) -> Option<&mut Option<RequestMetaObject>> {
    Some(match request {
        ClientRequest::ListResourcesRequest(r) => &mut r.params.as_mut()?.meta,
        ClientRequest::ListResourceTemplatesRequest(r) => &mut r.params.as_mut()?.meta,
        ClientRequest::ListToolsRequest(r) => &mut r.params.as_mut()?.meta,
        ClientRequest::ReadResourceRequest(r) => &mut r.params.meta,
        ClientRequest::CallToolRequest(r) => &mut r.params.meta,
        ClientRequest::CompleteRequest(r) => &mut r.params.meta,
        ClientRequest::SubscribeRequest(r) => &mut r.params.meta,
        _ => return None,
    })
}
