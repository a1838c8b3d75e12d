//! The server handler for one connection: resources from a shared registry, the demo's tools,
//! and the `cursor-cycle` and `hanging-pages` faults.

use std::sync::Arc;

use resource_registry::{RegistryConnection, ResourceRegistry};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::options::{DemoOptions, Fault};
use crate::resources::options_registry;
use crate::tools::{Asking, added_tool, call, tools};
use rmcp::model::{CallToolResult, ContentBlock};

/// The server handler for one connection: resources from a shared registry, plus tools.
#[derive(Clone)]
pub struct DemoServer {
    options: Arc<DemoOptions>,
    resources: RegistryConnection,
    /// Tools added by `add_tool`, in order.
    added_tools: Arc<std::sync::Mutex<Vec<String>>>,
    /// The tasks of task tools (shared by every HTTP session and stateless request).
    tasks: rmcp::task_manager::TaskManager,
}

impl DemoServer {
    /// `add_note`: a resource `demo://added/{id}` with the given text, registered while running.
    fn add_note(&self, request: &CallToolRequestParams) -> CallToolResult {
        let args = request.arguments.clone().unwrap_or_default();
        let field = |key: &str| {
            args.get(key).and_then(serde_json::Value::as_str).unwrap_or_default().to_string()
        };
        let (id, body) = (field("id"), field("text"));
        let uri = format!("demo://added/{id}");
        let resource = rmcp::model::Resource::new(uri.clone(), format!("note-{id}"));
        let added = self.resources.registry().register_resource(resource, move || {
            let body = body.clone();
            async move { Ok(resource_registry::ResourceBody::from(body)) }
        });
        let (text, failed) = match added {
            Ok(()) => (format!("added {uri}"), false),
            Err(e) => (format!("cannot add {uri}: {e}"), true),
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.is_error = Some(failed);
        result
    }

    /// A server with its own registry (a page size of 0 is treated as 1).
    pub fn new(options: DemoOptions) -> Self {
        let registry = options_registry(&options);
        Self::with_registry(options, registry)
    }

    /// A connection to a shared registry (one per HTTP session), with its own added tools.
    pub fn with_registry(options: DemoOptions, registry: Arc<ResourceRegistry>) -> Self {
        Self::with_shared(options, registry, Arc::default(), Default::default())
    }

    /// A connection to a shared registry and a shared list of added tools (HTTP: every
    /// session and stateless request sees the same server).
    pub(crate) fn with_shared(
        mut options: DemoOptions,
        registry: Arc<ResourceRegistry>,
        added_tools: Arc<std::sync::Mutex<Vec<String>>>,
        tasks: rmcp::task_manager::TaskManager,
    ) -> Self {
        options.page_size = options.page_size.max(1);
        let info = Implementation::new(options.name.clone(), env!("CARGO_PKG_VERSION"));
        Self {
            options: Arc::new(options),
            resources: RegistryConnection::new(registry, info),
            added_tools,
            tasks,
        }
    }

    /// The registry behind this server (to announce updates, add resources at run time).
    pub fn registry(&self) -> &Arc<ResourceRegistry> {
        self.resources.registry()
    }

    /// Append `method` to the request log, if one is configured (a failure to write is logged,
    /// never fatal). The line is one `write` on an append-only file, so lines of concurrent
    /// requests never interleave.
    fn record(&self, method: &str) {
        let Some(path) = &self.options.request_log else { return };
        use std::io::Write as _;
        let line = format!("{method}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| file.write_all(line.as_bytes()));
        if let Err(error) = written {
            tracing::warn!(path = %path.display(), %error, "cannot write the request log");
        }
    }

    fn added_tools(&self) -> Vec<String> {
        self.added_tools.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// `add_tool {name, remove?}`: change this server's tool list and say so.
    async fn add_tool(
        &self,
        request: &CallToolRequestParams,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let name = args.get("name").and_then(serde_json::Value::as_str).unwrap_or_default();
        let remove = args.get("remove").and_then(serde_json::Value::as_bool).unwrap_or(false);
        if name.is_empty() || tools().iter().any(|t| t.name == name) {
            let text = format!("`name` must be a new tool name, not {name:?}");
            return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
        }
        let changed = match self.added_tools.lock() {
            Ok(mut added) if remove => {
                let before = added.len();
                added.retain(|n| n != name);
                added.len() != before
            }
            Ok(mut added) if !added.iter().any(|n| n == name) => {
                added.push(name.to_string());
                true
            }
            _ => false,
        };
        // `repeat` sends the notification that many times (a burst, for tests).
        let repeat = args.get("repeat").and_then(serde_json::Value::as_u64).unwrap_or(1).min(1_000);
        if changed {
            for _ in 0..repeat {
                self.resources.registry().notify_tool_list_changed().await;
            }
        }
        let verb = if remove { "removed" } else { "added" };
        let text =
            if changed { format!("{verb} tool {name}") } else { format!("tool {name} unchanged") };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }

    /// Tool pages use the plain cursor `p{offset}`.
    fn page<T: Clone>(
        &self,
        items: &[T],
        cursor: Option<&str>,
    ) -> Result<(Vec<T>, Option<String>), ErrorData> {
        let start = match cursor {
            None => 0,
            Some(c) => c
                .strip_prefix('p')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n <= items.len())
                .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor: {c:?}"), None))?,
        };
        let end = (start + self.options.page_size).min(items.len());
        let next = (end < items.len()).then(|| format!("p{end}"));
        Ok((items[start..end].to_vec(), next))
    }
}

impl ServerHandler for DemoServer {
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        if self.options.fault == Some(Fault::LegacyVersions) {
            let legacy = [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2025_06_18];
            return std::borrow::Cow::Owned(legacy.to_vec());
        }
        std::borrow::Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    fn get_info(&self) -> ServerConfig {
        let mut capabilities = self.resources.capabilities();
        capabilities.tools =
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build().tools;
        if self.options.conformance_fixtures {
            // An empty prompt list, so the conformance suite's `caching` scenario can check
            // the cache hints on `prompts/list`.
            capabilities.prompts = ServerCapabilities::builder().enable_prompts().build().prompts;
        }
        let declared = |caps: ServerCapabilities| caps.extensions.unwrap_or_default();
        let mut extensions = declared(ServerCapabilities::builder().enable_tasks().build());
        if self.options.skills.is_some() {
            let skills = ServerCapabilities::builder().enable_skills_with_directory_read().build();
            extensions.extend(declared(skills));
        }
        capabilities.extensions = Some(extensions);
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                self.options.name.clone(),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions("A demo server: read demo://docs/README.md to start.")
    }

    async fn on_cancelled(
        &self,
        _notification: rmcp::model::CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.record("notifications/cancelled");
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.resources.attach_peer(context.peer);
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.record("notifications/roots/list_changed");
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.record("resources/list");
        self.resources.attach_peer(context.peer);
        if self.options.fault == Some(Fault::CursorCycle) {
            // Pages point at each other: a -> b -> a -> ...
            let next = match request.as_ref().and_then(|r| r.cursor.as_deref()) {
                Some("a") => "b",
                _ => "a",
            };
            let mut page = self.resources.list_resources(None)?;
            page.resources.truncate(1);
            page.next_cursor = Some(next.to_string());
            return Ok(page);
        }
        if self.options.fault == Some(Fault::HangingPages) {
            if request.as_ref().and_then(|r| r.cursor.as_deref()).is_some() {
                return std::future::pending().await;
            }
            let mut page = self.resources.list_resources(None)?;
            page.resources.truncate(1);
            page.next_cursor = Some("hang".to_string());
            return Ok(page);
        }
        self.resources.list_resources(request.as_ref())
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.record("resources/templates/list");
        self.resources.list_resource_templates(request.as_ref())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.record("resources/read");
        if let Some(catalog) = &self.options.skills
            && let Some(read) = crate::skills::read(catalog, &request.uri, &context.peer).await
        {
            return Ok(read.into());
        }
        self.resources.read_resource(&request).await
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, ErrorData> {
        self.record("skills/list");
        let catalog = crate::skills::catalog(&self.options, &context.peer).await?;
        Ok(catalog.list_skills())
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, ErrorData> {
        self.record("skills/get");
        crate::skills::catalog(&self.options, &context.peer).await?.get_skill(&request.uri)
    }

    async fn read_resource_directory(
        &self,
        request: rmcp::model::ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceDirectoryResult, ErrorData> {
        self.record("resources/directory/read");
        let catalog = crate::skills::catalog(&self.options, &context.peer).await?;
        catalog.read_resource_directory(&request.uri)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.record("resources/subscribe");
        self.resources.attach_peer(context.peer);
        self.resources.subscribe(&request.uri)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.record("resources/unsubscribe");
        self.resources.unsubscribe(&request.uri);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.resources.complete(&request)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        self.resources.accepted_subscription_filter(requested)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        // One line per stream, with the resources it watches.
        let watched = context.sink().accepted().resource_subscriptions.clone().unwrap_or_default();
        self.record(format!("subscriptions/listen {}", watched.join(" ")).trim_end());
        self.resources.listen(context).await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.record("tasks/get");
        self.tasks.get_task(&request.task_id).map(rmcp::model::GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.record("tasks/update");
        self.tasks.update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.record("tasks/cancel");
        self.tasks.cancel_task(&request.task_id)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.record("tools/list");
        let mut all = tools();
        all.push(crate::tasks::job_tool());
        if self.options.conformance_fixtures {
            all.push(missing_capability_tool());
            all.extend(crate::tasks::fixture_tools());
        }
        all.extend(self.added_tools().iter().map(|name| added_tool(name)));
        let (items, next) = self.page(&all, request.as_ref().and_then(|r| r.cursor.as_deref()))?;
        let mut result = ListToolsResult::with_all_items(items);
        result.next_cursor = next;
        if let Some(ttl) = self.options.ttl_ms {
            result.ttl_ms = Some(ttl);
            result.cache_scope = Some(rmcp::model::CacheScope::Public);
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.record("tools/call");
        if self.options.conformance_fixtures && request.name == MISSING_CAPABILITY_TOOL {
            return missing_capability(&context);
        }
        if request.name == "add_tool" {
            return self.add_tool(&request).await;
        }
        let fixtures = self.options.conformance_fixtures;
        if let Some(answer) = crate::tasks::call(&self.tasks, &request, &context, fixtures).await {
            return answer;
        }
        if request.name == "add_note" {
            return Ok(self.add_note(&request).into());
        }
        if request.name == "progress" {
            return Ok(report_progress(&request, &context).await.into());
        }
        if request.name == "touch" {
            let args = request.arguments.clone().unwrap_or_default();
            let uri = args.get("uri").and_then(serde_json::Value::as_str).unwrap_or_default();
            let told = self.resources.registry().notify_updated(uri).await;
            let text = format!("told {told} watching client(s) that {uri} changed");
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        }
        if self.added_tools().iter().any(|name| *name == request.name) {
            let args =
                serde_json::to_string(&request.arguments.unwrap_or_default()).unwrap_or_default();
            let text = format!("{}: {args}", request.name);
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        }
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let received = crate::traced::Received::of(&context);
        let asking = Asking {
            peer: context.peer,
            modern,
            input_responses: request.input_responses.clone(),
            request_state: request.request_state.clone(),
        };
        let mut response = call(request, asking, self.options.process_faults.as_deref()).await?;
        if let CallToolResponse::Complete(result) = &mut response {
            received.echo(result);
        }
        Ok(response)
    }
}

/// The conformance suite's diagnostic tool for `server-stateless`: it needs sampling, so a
/// client that did not declare sampling gets -32021 (MissingRequiredClientCapability).
const MISSING_CAPABILITY_TOOL: &str = "test_missing_capability";

fn missing_capability_tool() -> rmcp::model::Tool {
    let schema = serde_json::json!({"type": "object", "properties": {}});
    let schema = match schema {
        serde_json::Value::Object(map) => map,
        _ => Default::default(),
    };
    rmcp::model::Tool::new(
        MISSING_CAPABILITY_TOOL,
        "Needs the client's sampling capability (a conformance fixture).",
        schema,
    )
}

fn missing_capability(context: &RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
    let declared = context.client_capabilities().is_some_and(|c| c.sampling.is_some());
    if !declared {
        let mut required = rmcp::model::ClientCapabilities::default();
        required.sampling = Some(Default::default());
        return Err(ErrorData::missing_required_client_capability(required));
    }
    let text = "the client declared sampling";
    Ok(rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]).into())
}

/// The `progress` tool: `steps` progress notifications `ms` apart for the call's token, then
/// the answer.
async fn report_progress(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> CallToolResult {
    let args = request.arguments.clone().unwrap_or_default();
    let number = |key: &str, default: u64| {
        args.get(key).and_then(serde_json::Value::as_u64).unwrap_or(default).min(10_000)
    };
    let (steps, ms) = (number("steps", 5), number("ms", 20));
    let token = context.meta.get_progress_token();
    for step in 1..=steps {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        if let Some(token) = &token {
            let mut params =
                rmcp::model::ProgressNotificationParam::new(token.clone(), step as f64);
            params.total = Some(steps as f64);
            params.message = Some(format!("step {step} of {steps}"));
            let _ = context.peer.notify_progress(params).await;
        }
    }
    let text = format!("done in {steps} steps (progress token: {})", token.is_some());
    CallToolResult::success(vec![ContentBlock::text(text)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_page_covers_every_item_once() {
        let server = DemoServer::new(DemoOptions { page_size: 3, ..Default::default() });
        let all = tools();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let (items, next) = server.page(&all, cursor.as_deref()).expect("page");
            seen.extend(items.into_iter().map(|t| t.name.to_string()));
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        assert_eq!(
            seen,
            [
                "add",
                "echo",
                "ask",
                "roots",
                "crash",
                "garbage",
                "huge",
                "fail",
                "add_tool",
                "progress",
                "touch",
                "add_note",
                "sleep",
                "panel_refresh"
            ]
        );
        assert_eq!(server.page(&all, Some("zz")).expect_err("invalid").code.0, -32602);
    }
}
