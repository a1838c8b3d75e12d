//! The registry: what is registered, paging, reading, completion and notification fan-out.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, RwLock, Weak};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::{
    CacheScope, CompleteRequestParams, CompleteResult, CompletionInfo, ErrorCode,
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Reference, Resource,
    ResourceTemplate,
};
use serde_json::{Map, Value, json};
use uri_template::UriTemplate;

use crate::connection::ConnectionState;
use crate::content::ResourceBody;
use crate::cursor::{self, CursorError, Kind};

/// JSON-RPC code for a denied read (not defined by MCP; see the crate docs).
pub const ACCESS_DENIED: i32 = -32025;
/// Most completion values returned (the MCP limit).
const MAX_COMPLETIONS: usize = 100;

/// Why a handler produced no content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// Nothing there (e.g. a template whose variables name nothing). -32002.
    #[error("not found: {0}")]
    NotFound(String),
    /// The caller may not read it. -32025.
    #[error("access denied: {0}")]
    AccessDenied(String),
    /// The URI's variables are unacceptable. -32602.
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// Anything else. -32603.
    #[error("{0}")]
    Internal(String),
}

/// A registration the registry refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// `name` is required (MCP: every resource has a name).
    #[error("resource `{0}`: a name is required")]
    MissingName(String),
    /// An empty URI.
    #[error("a resource URI must not be empty")]
    EmptyUri,
    /// The URI or template is already registered.
    #[error("`{0}` is already registered")]
    Duplicate(String),
    /// Not an RFC 6570 template.
    #[error("{0}")]
    InvalidTemplate(String),
}

/// Page size and the like.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Items per page of both lists (at least 1).
    pub page_size: usize,
    /// The cache hint (`ttlMs`, with `cacheScope: "public"`: the registry answers every client
    /// alike) on list and read results; `None` sends none (rmcp then sends `ttlMs: 0`,
    /// `cacheScope: "private"` to 2026-07-28 peers, which means "do not cache").
    pub ttl_ms: Option<u64>,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        Self { page_size: 100, ttl_ms: None }
    }
}

type Reply = BoxFuture<'static, Result<ResourceBody, ResourceError>>;
type DirectHandler = Arc<dyn Fn() -> Reply + Send + Sync>;
type TemplateHandler = Arc<dyn Fn(Map<String, Value>) -> Reply + Send + Sync>;
/// Completion candidates for one template argument: `(argument name, typed prefix)` → values.
pub type Completer = Arc<dyn Fn(&str, &str) -> Vec<String> + Send + Sync>;

struct Direct {
    resource: Resource,
    handler: DirectHandler,
}

struct Template {
    template: ResourceTemplate,
    parsed: UriTemplate,
    handler: TemplateHandler,
    completer: Option<Completer>,
}

#[derive(Default)]
struct State {
    direct: Vec<Direct>,
    /// URI → its place in `direct` (catalogs of many thousand resources register, list and
    /// read without a scan).
    direct_index: std::collections::HashMap<String, usize>,
    templates: Vec<Template>,
    /// Bumped on every change; cursors carry it.
    generation: u64,
}

/// Registered resources and templates. Share it behind an `Arc`; every connection's
/// [`crate::RegistryConnection`] reads the same registry.
pub struct ResourceRegistry {
    state: RwLock<State>,
    options: RegistryOptions,
    connections: Mutex<Vec<Weak<ConnectionState>>>,
}

enum Target {
    Direct(DirectHandler, Option<String>),
    Template(TemplateHandler, Map<String, Value>, Option<String>),
}

impl ResourceRegistry {
    /// An empty registry.
    pub fn new(options: RegistryOptions) -> Arc<Self> {
        let options = RegistryOptions { page_size: options.page_size.max(1), ..options };
        Arc::new(Self { state: RwLock::default(), options, connections: Mutex::default() })
    }

    /// Register a direct resource; `handler` runs on every read.
    pub fn register_resource<F, Fut>(
        &self,
        resource: Resource,
        handler: F,
    ) -> Result<(), RegistrationError>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceBody, ResourceError>> + Send + 'static,
    {
        if resource.uri.trim().is_empty() {
            return Err(RegistrationError::EmptyUri);
        }
        if resource.name.trim().is_empty() {
            return Err(RegistrationError::MissingName(resource.uri));
        }
        let handler: DirectHandler = Arc::new(move || handler().boxed());
        self.change(|state| {
            if state.direct_index.contains_key(&resource.uri) {
                return Err(RegistrationError::Duplicate(resource.uri.clone()));
            }
            state.direct_index.insert(resource.uri.clone(), state.direct.len());
            state.direct.push(Direct { resource, handler });
            Ok(())
        })
    }

    /// Register a template; `handler` receives the variables matched from the read URI.
    pub fn register_template<F, Fut>(
        &self,
        template: ResourceTemplate,
        handler: F,
        completer: Option<Completer>,
    ) -> Result<(), RegistrationError>
    where
        F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceBody, ResourceError>> + Send + 'static,
    {
        if template.name.trim().is_empty() {
            return Err(RegistrationError::MissingName(template.uri_template));
        }
        let parsed = UriTemplate::parse(&template.uri_template)
            .map_err(|e| RegistrationError::InvalidTemplate(e.to_string()))?;
        let handler: TemplateHandler = Arc::new(move |vars| handler(vars).boxed());
        self.change(|state| {
            if state.templates.iter().any(|t| t.template.uri_template == template.uri_template) {
                return Err(RegistrationError::Duplicate(template.uri_template.clone()));
            }
            state.templates.push(Template { template, parsed, handler, completer });
            Ok(())
        })
    }

    /// Remove a direct resource; `false` if it was not registered.
    pub fn unregister_resource(&self, uri: &str) -> bool {
        self.change(|state| {
            remove_where(&mut state.direct, |d| d.resource.uri == uri)?;
            state.direct_index =
                state.direct.iter().enumerate().map(|(i, d)| (d.resource.uri.clone(), i)).collect();
            Ok::<(), ()>(())
        })
        .is_ok()
    }

    /// Remove a template by its template string; `false` if it was not registered.
    pub fn unregister_template(&self, uri_template: &str) -> bool {
        self.change(|state| {
            remove_where(&mut state.templates, |t| t.template.uri_template == uri_template)
        })
        .is_ok()
    }

    /// Whether any template has a completer (the `completions` capability).
    pub fn has_completions(&self) -> bool {
        self.read_state().templates.iter().any(|t| t.completer.is_some())
    }

    /// One page of `resources/list`.
    pub fn list_resources(&self, cursor: Option<&str>) -> Result<ListResourcesResult, ErrorData> {
        let state = self.read_state();
        let (range, next) =
            self.page(state.direct.len(), cursor, Kind::Resources, state.generation)?;
        let page = state.direct[range].iter().map(|d| d.resource.clone()).collect();
        let mut result = ListResourcesResult::with_all_items(page);
        result.next_cursor = next;
        if let Some(ttl) = self.options.ttl_ms {
            result.ttl_ms = Some(ttl);
            result.cache_scope = Some(CacheScope::Public);
        }
        Ok(result)
    }

    /// One page of `resources/templates/list`.
    pub fn list_resource_templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let state = self.read_state();
        let (range, next) =
            self.page(state.templates.len(), cursor, Kind::Templates, state.generation)?;
        let page = state.templates[range].iter().map(|t| t.template.clone()).collect();
        let mut result = ListResourceTemplatesResult::with_all_items(page);
        result.next_cursor = next;
        if let Some(ttl) = self.options.ttl_ms {
            result.ttl_ms = Some(ttl);
            result.cache_scope = Some(CacheScope::Public);
        }
        Ok(result)
    }

    /// `resources/read`: direct URIs first, then templates in registration order.
    pub async fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        if uri.trim().is_empty() {
            return Err(ErrorData::invalid_params("Missing uri parameter", None));
        }
        let (reply, mime) = match self.resolve(uri) {
            Some(Target::Direct(handler, mime)) => (handler(), mime),
            Some(Target::Template(handler, vars, mime)) => (handler(vars), mime),
            None => return Err(not_found(uri)),
        };
        // A panicking handler must cost one error, not the connection.
        let outcome = AssertUnwindSafe(reply).catch_unwind().await;
        let body = match outcome {
            Ok(Ok(body)) => body,
            Ok(Err(error)) => return Err(error_data(uri, error)),
            Err(_) => {
                tracing::error!(%uri, "resource handler panicked");
                return Err(ErrorData::internal_error(
                    "Internal error: the resource handler panicked",
                    Some(json!({"uri": uri})),
                ));
            }
        };
        let mut result = ReadResourceResult::new(vec![body.into_contents(uri, mime.as_deref())]);
        if let Some(ttl) = self.options.ttl_ms {
            result = result.with_ttl_ms(ttl).with_cache_scope(CacheScope::Public);
        }
        Ok(result)
    }

    /// Whether `uri` names something readable (a direct URI or a template match).
    pub fn contains(&self, uri: &str) -> bool {
        self.resolve(uri).is_some()
    }

    /// `completion/complete` for a template argument.
    pub fn complete(&self, request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
        let Reference::Resource(reference) = &request.r#ref else {
            return Ok(CompleteResult::default());
        };
        let state = self.read_state();
        let template =
            state.templates.iter().find(|t| t.template.uri_template == reference.uri).ok_or_else(
                || {
                    ErrorData::invalid_params(
                        format!("Unknown resource template: {}", reference.uri),
                        None,
                    )
                },
            )?;
        if !template.parsed.variables().contains(&request.argument.name.as_str()) {
            return Err(ErrorData::invalid_params(
                format!("Template {} has no variable `{}`", reference.uri, request.argument.name),
                None,
            ));
        }
        let Some(completer) = &template.completer else {
            return Ok(CompleteResult::default());
        };
        let all = completer(&request.argument.name, &request.argument.value);
        let total = all.len();
        let values: Vec<String> = all.into_iter().take(MAX_COMPLETIONS).collect();
        let mut info = CompletionInfo::default();
        info.has_more = Some(total > values.len());
        info.total = u32::try_from(total).ok();
        info.values = values;
        Ok(CompleteResult::new(info))
    }

    /// Announce `notifications/resources/updated` for `uri` to every connection subscribed to
    /// it. Returns how many were told.
    pub async fn notify_updated(&self, uri: &str) -> usize {
        let mut told = 0;
        for connection in self.live_connections() {
            if connection.notify_updated(uri).await {
                told += 1;
            }
        }
        told
    }

    /// For servers that embed the registry and change their tools: tell every live connection
    /// the tool list changed (on its listen streams in 2026-07-28, as a plain notification in
    /// 2025-11-25).
    pub async fn notify_tool_list_changed(&self) {
        for connection in self.live_connections() {
            connection.notify_tool_list_changed().await;
        }
    }

    pub(crate) fn attach(&self, connection: &Arc<ConnectionState>) {
        if let Ok(mut list) = self.connections.lock() {
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(connection));
        }
    }

    fn live_connections(&self) -> Vec<Arc<ConnectionState>> {
        self.connections
            .lock()
            .map(|list| list.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default()
    }

    fn resolve(&self, uri: &str) -> Option<Target> {
        let state = self.read_state();
        if let Some(direct) = state.direct_index.get(uri).and_then(|i| state.direct.get(*i)) {
            return Some(Target::Direct(direct.handler.clone(), direct.resource.mime_type.clone()));
        }
        state.templates.iter().find_map(|t| {
            t.parsed
                .match_uri(uri)
                .map(|vars| Target::Template(t.handler.clone(), vars, t.template.mime_type.clone()))
        })
    }

    /// Which of `len` items one page holds, and the cursor of the next.
    fn page(
        &self,
        len: usize,
        cursor: Option<&str>,
        kind: Kind,
        generation: u64,
    ) -> Result<(std::ops::Range<usize>, Option<String>), ErrorData> {
        let start = cursor::decode(cursor, kind, generation).map_err(|e| match e {
            CursorError::Invalid => ErrorData::invalid_params("Invalid cursor", None),
            CursorError::Stale => ErrorData::invalid_params(
                "Invalid cursor: the list changed since this cursor was issued; list again without a cursor",
                None,
            ),
        })?;
        if start > len {
            return Err(ErrorData::invalid_params("Invalid cursor", None));
        }
        let end = (start + self.options.page_size).min(len);
        let next = (end < len).then(|| cursor::encode(kind, generation, end));
        Ok((start..end, next))
    }

    /// Apply a change; on success bump the generation and tell every connection the list
    /// changed.
    fn change<E>(&self, apply: impl FnOnce(&mut State) -> Result<(), E>) -> Result<(), E> {
        {
            let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
            apply(&mut state)?;
            state.generation += 1;
        }
        let connections = self.live_connections();
        if !connections.is_empty()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                for connection in connections {
                    connection.notify_list_changed().await;
                }
            });
        }
        Ok(())
    }

    fn read_state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }
}

/// Remove the items matching `matches`; `Err` if there were none (so nothing changed).
fn remove_where<T>(items: &mut Vec<T>, matches: impl Fn(&T) -> bool) -> Result<(), ()> {
    let before = items.len();
    items.retain(|item| !matches(item));
    if items.len() == before { Err(()) } else { Ok(()) }
}

fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("Resource not found: {uri}"), Some(json!({"uri": uri})))
}

fn error_data(uri: &str, error: ResourceError) -> ErrorData {
    match error {
        ResourceError::NotFound(_) => not_found(uri),
        ResourceError::AccessDenied(reason) => ErrorData::new(
            ErrorCode(ACCESS_DENIED),
            format!("Resource access denied: {reason}"),
            Some(json!({"uri": uri})),
        ),
        ResourceError::InvalidParams(reason) => {
            ErrorData::invalid_params(reason, Some(json!({"uri": uri})))
        }
        ResourceError::Internal(reason) => ErrorData::internal_error(
            format!("Internal error: {reason}"),
            Some(json!({"uri": uri})),
        ),
    }
}
