//! A small MCP server on rmcp's server side, for the demo and the tests: a few text resources,
//! one binary blob, a resource template, and tools (`echo`, `add`, `fail`, `sleep`).
//!
//! `page_size` makes pagination visible; cursors are opaque (`p` + decimal offset, which clients
//! must not rely on). It speaks MCP on stdio ([`run_stdio`]) or streamable HTTP ([`run_http`]).

use std::sync::Arc;
use std::time::Duration;

use resource_registry::{
    Completer, RegistrationError, RegistryConnection, RegistryOptions, ResourceBody, ResourceError,
    ResourceRegistry,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, Implementation, JsonObject, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    Resource, ResourceTemplate, ServerCapabilities, ServerConfig, SubscribeRequestParams, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// A 1×1 PNG, the demo's binary blob.
pub const PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// How the demo server behaves.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Items per page of `resources/list`, `resources/templates/list` and `tools/list`.
    pub page_size: usize,
    /// The name reported in `serverInfo`.
    pub name: String,
    /// A misbehaviour for fault tests: `cursor-cycle` makes `resources/list` cycle its cursors.
    pub fault: Option<String>,
    /// Also serve the fixtures that the MCP conformance suite's server scenarios read
    /// (`test://static-text`, `test://static-binary`, `test://template/{id}/data`,
    /// `test://watched-resource`).
    pub conformance_fixtures: bool,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            page_size: 100,
            name: "mcp-demo-server".to_string(),
            fault: None,
            conformance_fixtures: false,
        }
    }
}

/// The server handler for one connection: resources from a shared registry, plus tools.
#[derive(Clone)]
pub struct DemoServer {
    options: Arc<DemoOptions>,
    resources: RegistryConnection,
}

impl DemoServer {
    /// A server with its own registry (a page size of 0 is treated as 1).
    pub fn new(options: DemoOptions) -> Self {
        let registry = options_registry(&options);
        Self::with_registry(options, registry)
    }

    /// A connection to a shared registry (one per HTTP session).
    pub fn with_registry(mut options: DemoOptions, registry: Arc<ResourceRegistry>) -> Self {
        options.page_size = options.page_size.max(1);
        let info = Implementation::new(options.name.clone(), env!("CARGO_PKG_VERSION"));
        Self { options: Arc::new(options), resources: RegistryConnection::new(registry, info) }
    }

    /// The registry behind this server (to announce updates, add resources at run time).
    pub fn registry(&self) -> &Arc<ResourceRegistry> {
        self.resources.registry()
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

/// The demo's documents: this repository's own docs, bundled at build time.
pub const DOCS: &[(&str, &str)] = &[
    ("README.md", include_str!("../../../README.md")),
    ("architecture.md", include_str!("../../../docs/architecture.md")),
];
/// A small CSV dataset.
pub const CITIES_CSV: &str = include_str!("../data/cities.csv");
const WELCOME: &str =
    "Welcome! Templates: demo://docs/{name}, demo://lines/{name}{?from,to}, demo://notes/{id}.";

/// Every resource the demo lists, in its order.
pub fn resources() -> Vec<Resource> {
    registry(usize::MAX).list_resources(None).map(|r| r.resources).unwrap_or_default()
}

/// Registration of fixed, distinct, named resources cannot fail: a failure is a bug, logged.
fn ok(result: Result<(), RegistrationError>) {
    if let Err(e) = result {
        tracing::error!("demo registration failed: {e}");
    }
}

/// Build the demo's resource registry.
pub fn registry(page_size: usize) -> Arc<ResourceRegistry> {
    let registry = ResourceRegistry::new(RegistryOptions { page_size });
    for (name, text) in DOCS {
        let resource = Resource::new(format!("demo://docs/{name}"), *name)
            .with_description(format!("The project's {name}"))
            .with_mime_type("text/markdown")
            .with_size(text.len() as u64);
        ok(registry
            .register_resource(resource, move || async move { Ok(ResourceBody::from(*text)) }));
    }
    let csv = Resource::new("demo://data/cities.csv", "cities")
        .with_description("Ten large cities: city, country, population, area_km2")
        .with_mime_type("text/csv")
        .with_size(CITIES_CSV.len() as u64);
    ok(registry.register_resource(csv, || async { Ok(ResourceBody::from(CITIES_CSV)) }));
    let png = Resource::new("demo://images/pixel.png", "pixel")
        .with_description("A 1x1 PNG image (binary blob)")
        .with_mime_type("image/png")
        .with_size(PIXEL_PNG.len() as u64);
    ok(registry.register_resource(png, || async { Ok(ResourceBody::Binary(PIXEL_PNG.to_vec())) }));
    let welcome = Resource::new("demo://notes/welcome", "welcome-note")
        .with_mime_type("text/plain")
        .with_size(WELCOME.len() as u64);
    ok(registry.register_resource(welcome, || async { Ok(ResourceBody::from(WELCOME)) }));

    let doc_names: Completer = Arc::new(|argument, prefix| {
        if argument != "name" {
            return Vec::new();
        }
        DOCS.iter().map(|(n, _)| n.to_string()).filter(|n| n.starts_with(prefix)).collect()
    });
    let doc = ResourceTemplate::new("demo://docs/{name}", "doc")
        .with_description("A document of this project by file name (see completion)")
        .with_mime_type("text/markdown");
    ok(registry.register_template(
        doc,
        |vars| async move { doc_text(&vars).map(ResourceBody::from) },
        Some(doc_names.clone()),
    ));
    let lines = ResourceTemplate::new("demo://lines/{name}{?from,to}", "doc-lines")
        .with_description("Lines `from`..=`to` (1-based, both optional) of a document")
        .with_mime_type("text/plain");
    ok(registry.register_template(
        lines,
        |vars| async move { line_range(&vars).map(ResourceBody::from) },
        Some(doc_names),
    ));
    let sized = ResourceTemplate::new("demo://sized/{bytes}", "sized-text")
        .with_description("Generated text of exactly `bytes` bytes (mixed 1- to 4-byte characters, at most 64 MiB)")
        .with_mime_type("text/plain");
    ok(registry.register_template(
        sized,
        |vars| async move { sized_text(&vars).map(ResourceBody::from) },
        None,
    ));
    let note = ResourceTemplate::new("demo://notes/{id}", "note")
        .with_description("A note by id, e.g. demo://notes/42")
        .with_mime_type("text/plain");
    ok(registry.register_template(
        note,
        |vars| async move {
            match vars.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() && !id.contains('/') => {
                    Ok(ResourceBody::from(format!("Note {id}")))
                }
                _ => Err(ResourceError::NotFound("no such note".into())),
            }
        },
        None,
    ));
    registry
}

/// The registry `options` ask for: the demo's, plus the conformance fixtures if wanted.
fn options_registry(options: &DemoOptions) -> Arc<ResourceRegistry> {
    let registry = registry(options.page_size.max(1));
    if options.conformance_fixtures {
        register_conformance_fixtures(&registry);
    }
    registry
}

/// The resources the MCP conformance suite's server scenarios read, with the contents they
/// expect (`resources-read-text`, `resources-read-binary`, `resources-templates-read`,
/// `resources-subscribe`, `resources-unsubscribe`).
pub fn register_conformance_fixtures(registry: &ResourceRegistry) {
    const TEXT: &str = "This is the content of the static text resource.";
    let results = [
        registry.register_resource(
            Resource::new("test://static-text", "static-text").with_mime_type("text/plain"),
            || async { Ok(ResourceBody::from(TEXT)) },
        ),
        registry.register_resource(
            Resource::new("test://static-binary", "static-binary").with_mime_type("image/png"),
            || async { Ok(ResourceBody::Binary(PIXEL_PNG.to_vec())) },
        ),
        registry.register_resource(
            Resource::new("test://watched-resource", "watched-resource")
                .with_mime_type("text/plain"),
            || async { Ok(ResourceBody::from("A resource to subscribe to.")) },
        ),
        registry.register_template(
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .with_mime_type("application/json"),
            |vars| async move {
                let id = vars.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
                let body =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Ok(ResourceBody::from(body.to_string()))
            },
            None,
        ),
    ];
    results.into_iter().for_each(ok);
}

/// `bytes` bytes of text cycling through characters of 1 to 4 bytes (padded with ASCII).
fn sized_text(vars: &Map<String, Value>) -> Result<String, ResourceError> {
    const MAX: usize = 64 * 1024 * 1024;
    let raw = vars.get("bytes").and_then(Value::as_str).unwrap_or_default();
    let bytes = raw.parse::<usize>().ok().filter(|n| *n <= MAX).ok_or_else(|| {
        ResourceError::InvalidParams(format!(
            "`bytes` must be a number from 0 to {MAX}, got {raw:?}"
        ))
    })?;
    let unit = "aé€😀\n";
    let mut text = unit.repeat(bytes / unit.len());
    text.push_str(&"x".repeat(bytes - text.len()));
    Ok(text)
}

fn doc_text(vars: &Map<String, Value>) -> Result<&'static str, ResourceError> {
    let name = vars.get("name").and_then(Value::as_str).unwrap_or_default();
    DOCS.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .ok_or_else(|| ResourceError::NotFound(format!("no document named {name:?}")))
}

fn line_range(vars: &Map<String, Value>) -> Result<String, ResourceError> {
    let text = doc_text(vars)?;
    let bound = |key: &str| -> Result<Option<usize>, ResourceError> {
        match vars.get(key).and_then(Value::as_str) {
            None => Ok(None),
            Some(v) => v.parse::<usize>().ok().filter(|n| *n >= 1).map(Some).ok_or_else(|| {
                ResourceError::InvalidParams(format!(
                    "`{key}` must be a line number (1 or more), got {v:?}"
                ))
            }),
        }
    };
    let from = bound("from")?.unwrap_or(1);
    let to = bound("to")?.unwrap_or(usize::MAX);
    if from > to {
        return Err(ResourceError::InvalidParams(format!("`from` ({from}) is after `to` ({to})")));
    }
    Ok(text.lines().skip(from - 1).take(to - from + 1).collect::<Vec<_>>().join("\n"))
}

fn tools() -> Vec<Tool> {
    let schema = |v: Value| -> JsonObject {
        match v {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    };
    vec![
        Tool::new(
            "add",
            "Add two numbers.",
            schema(json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            })),
        ),
        Tool::new(
            "echo",
            "Echo the text back.",
            schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            })),
        ),
        Tool::new(
            "ask",
            "Ask the user for their name (an elicitation request to the client).",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "roots",
            "List the client's roots (a roots/list request to the client).",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "crash",
            "Exit the server process at once, without answering (for recovery tests).",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "garbage",
            "Write a line that is not JSON-RPC to stdout, then answer (for fault tests).",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "huge",
            "Answer with `mb` megabytes of text (for fault tests).",
            schema(
                json!({"type": "object", "properties": {"mb": {"type": "integer"}}, "required": ["mb"]}),
            ),
        ),
        Tool::new(
            "fail",
            "Always fails with an isError result.",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "sleep",
            "Sleep for `ms` milliseconds, then answer.",
            schema(json!({
                "type": "object",
                "properties": {"ms": {"type": "integer"}},
                "required": ["ms"]
            })),
        ),
    ]
}

fn number(args: &JsonObject, key: &str) -> Result<f64, ErrorData> {
    args.get(key).and_then(Value::as_f64).ok_or_else(|| {
        ErrorData::invalid_params(format!("argument `{key}` must be a number"), None)
    })
}

/// The client's root URIs (`roots/list` is deprecated in rmcp's 2026 API, current in 2025-11-25).
#[allow(deprecated)]
async fn root_uris(peer: &Peer<RoleServer>) -> Result<Vec<String>, rmcp::ServiceError> {
    Ok(peer.list_roots().await?.roots.into_iter().map(|r| r.uri).collect())
}

async fn call(
    params: CallToolRequestParams,
    peer: Peer<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let args = params.arguments.unwrap_or_default();
    let client_error =
        |e: rmcp::ServiceError| ErrorData::internal_error(format!("the client failed: {e}"), None);
    match params.name.as_ref() {
        "ask" => {
            let schema = rmcp::model::ElicitationSchema::builder()
                .required_string("name")
                .build()
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            let request = rmcp::model::ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: "What is your name?".to_string(),
                requested_schema: schema,
            };
            let answer = peer.create_elicitation(request).await.map_err(client_error)?;
            let text = match (answer.action, answer.content) {
                (rmcp::model::ElicitationAction::Accept, Some(content)) => {
                    format!("accepted: {content}")
                }
                (action, _) => format!("{action:?}").to_lowercase(),
            };
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
        }
        "roots" => {
            let uris = root_uris(&peer).await.map_err(client_error)?;
            let text = format!("{} roots: {}", uris.len(), uris.join(", "));
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
        }
        "echo" => {
            let text = args.get("text").and_then(Value::as_str).ok_or_else(|| {
                ErrorData::invalid_params("argument `text` must be a string", None)
            })?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!("Echo: {text}"))]))
        }
        "add" => {
            let sum = number(&args, "a")? + number(&args, "b")?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!("{sum}"))]))
        }
        "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("this tool always fails")])),
        "crash" => std::process::exit(3),
        "garbage" => {
            println!("this is not JSON-RPC {{{{{{");
            Ok(CallToolResult::success(vec![ContentBlock::text("wrote garbage")]))
        }
        "huge" => {
            let mb = number(&args, "mb")?.clamp(0.0, 100.0) as usize;
            Ok(CallToolResult::success(vec![ContentBlock::text("x".repeat(mb * 1024 * 1024))]))
        }
        "sleep" => {
            let ms = number(&args, "ms")?.clamp(0.0, 600_000.0);
            tokio::time::sleep(Duration::from_millis(ms as u64)).await;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!("slept {ms} ms"))]))
        }
        other => {
            Ok(CallToolResult::error(vec![ContentBlock::text(format!("unknown tool: {other}"))]))
        }
    }
}

impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = self.resources.capabilities();
        capabilities.tools = ServerCapabilities::builder().enable_tools().build().tools;
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                self.options.name.clone(),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions("A demo server: read demo://docs/README.md to start.")
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.resources.attach_peer(context.peer);
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.resources.attach_peer(context.peer);
        if self.options.fault.as_deref() == Some("cursor-cycle") {
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
        self.resources.list_resources(request.as_ref())
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.resources.list_resource_templates(request.as_ref())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.resources.read_resource(&request).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resources.attach_peer(context.peer);
        self.resources.subscribe(&request.uri)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
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

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (items, next) =
            self.page(&tools(), request.as_ref().and_then(|r| r.cursor.as_deref()))?;
        let mut result = ListToolsResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        call(request, context.peer).await.map(Into::into)
    }
}

/// Serve MCP on stdin/stdout until the client goes away.
pub async fn run_stdio(options: DemoOptions) -> anyhow::Result<()> {
    let service = DemoServer::new(options).serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

/// Serve streamable HTTP (any path; clients use `/mcp`) on an already bound listener, until the process ends.
pub async fn run_http(
    options: DemoOptions,
    listener: tokio::net::TcpListener,
) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let registry = options_registry(&options);
    let service = StreamableHttpService::new(
        move || Ok(DemoServer::with_registry(options.clone(), registry.clone())),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(
                move |request: hyper::Request<hyper::body::Incoming>| {
                    let service = service.clone();
                    async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
                },
            );
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) =
                hyper::server::conn::http1::Builder::new().serve_connection(io, handler).await
            {
                tracing::debug!("http connection ended: {e}");
            }
        });
    }
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
            ["add", "echo", "ask", "roots", "crash", "garbage", "huge", "fail", "sleep"]
        );
        assert_eq!(server.page(&all, Some("zz")).expect_err("invalid").code.0, -32602);
    }

    #[test]
    fn line_ranges() {
        let vars = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        let first =
            line_range(&vars(serde_json::json!({"name": "README.md", "from": "1", "to": "1"})))
                .expect("range");
        assert_eq!(first, "# mcp-router");
        let err = line_range(&vars(serde_json::json!({"name": "README.md", "from": "x"})))
            .expect_err("bad");
        assert_eq!(
            err,
            ResourceError::InvalidParams(
                "`from` must be a line number (1 or more), got \"x\"".into()
            )
        );
        assert!(matches!(
            line_range(&vars(serde_json::json!({"name": "nope"}))),
            Err(ResourceError::NotFound(_))
        ));
    }

    #[test]
    fn registry_lists_docs_data_and_image() {
        let uris: Vec<String> = resources().into_iter().map(|r| r.uri).collect();
        assert_eq!(
            uris,
            [
                "demo://docs/README.md",
                "demo://docs/architecture.md",
                "demo://data/cities.csv",
                "demo://images/pixel.png",
                "demo://notes/welcome"
            ]
        );
    }
}
