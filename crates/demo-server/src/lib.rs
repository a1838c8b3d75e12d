//! A small MCP server on rmcp's server side, for the demo and the tests: a few text resources,
//! one binary blob, a resource template, and tools (`echo`, `add`, `fail`, `sleep`).
//!
//! `page_size` makes pagination visible; cursors are opaque (`p` + decimal offset, which clients
//! must not rely on). It speaks MCP on stdio ([`run_stdio`]) or streamable HTTP ([`run_http`]).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// A 1×1 PNG, the demo's binary blob.
pub const PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The demo's text resources: (uri, name, mimeType, text).
const TEXTS: &[(&str, &str, &str, &str)] = &[
    (
        "demo://docs/readme",
        "readme",
        "text/markdown",
        "# Demo\nA small MCP server for mcp-router.\n",
    ),
    (
        "demo://docs/changelog",
        "changelog",
        "text/markdown",
        "## 0.1.0\n- First release.\n",
    ),
    (
        "demo://config/settings.json",
        "settings",
        "application/json",
        "{\"theme\":\"dark\",\"pageSize\":2}",
    ),
    (
        "demo://notes/welcome",
        "welcome-note",
        "text/plain",
        "Welcome! Try the template demo://notes/{id}.",
    ),
];
const PIXEL_URI: &str = "demo://images/pixel.png";
const NOTE_TEMPLATE: &str = "demo://notes/{id}";
const NOTE_PREFIX: &str = "demo://notes/";

/// How the demo server behaves.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Items per page of `resources/list`, `resources/templates/list` and `tools/list`.
    pub page_size: usize,
    /// The name reported in `serverInfo`.
    pub name: String,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            page_size: 100,
            name: "mcp-demo-server".to_string(),
        }
    }
}

/// The server handler. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DemoServer {
    options: Arc<DemoOptions>,
}

impl DemoServer {
    /// A server with these options (a page size of 0 is treated as 1).
    pub fn new(mut options: DemoOptions) -> Self {
        options.page_size = options.page_size.max(1);
        Self {
            options: Arc::new(options),
        }
    }

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

/// Every resource the demo lists, in a stable order.
pub fn resources() -> Vec<Resource> {
    let mut out: Vec<Resource> = TEXTS
        .iter()
        .map(|(uri, name, mime, text)| {
            Resource::new(*uri, *name)
                .with_mime_type(*mime)
                .with_size(text.len() as u64)
        })
        .collect();
    out.push(
        Resource::new(PIXEL_URI, "pixel")
            .with_mime_type("image/png")
            .with_description("A 1x1 PNG image (binary blob)")
            .with_size(PIXEL_PNG.len() as u64),
    );
    out
}

/// The demo's templates.
pub fn resource_templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(NOTE_TEMPLATE, "note")
            .with_description("A note by id, e.g. demo://notes/42")
            .with_mime_type("text/plain"),
    ]
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

fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    if let Some((_, _, mime, text)) = TEXTS.iter().find(|(u, ..)| *u == uri) {
        return Ok(ReadResourceResult::new(vec![
            ResourceContents::text(*text, uri).with_mime_type(*mime),
        ]));
    }
    if uri == PIXEL_URI {
        let blob = base64::engine::general_purpose::STANDARD.encode(PIXEL_PNG);
        return Ok(ReadResourceResult::new(vec![
            ResourceContents::blob(blob, uri).with_mime_type("image/png"),
        ]));
    }
    if let Some(id) = uri
        .strip_prefix(NOTE_PREFIX)
        .filter(|id| !id.is_empty() && !id.contains('/'))
    {
        return Ok(ReadResourceResult::new(vec![ResourceContents::text(
            format!("Note {id}"),
            uri,
        )]));
    }
    Err(ErrorData::resource_not_found(
        format!("Resource not found: {uri}"),
        Some(json!({"uri": uri})),
    ))
}

fn number(args: &JsonObject, key: &str) -> Result<f64, ErrorData> {
    args.get(key).and_then(Value::as_f64).ok_or_else(|| {
        ErrorData::invalid_params(format!("argument `{key}` must be a number"), None)
    })
}

async fn call(params: CallToolRequestParams) -> Result<CallToolResult, ErrorData> {
    let args = params.arguments.unwrap_or_default();
    match params.name.as_ref() {
        "echo" => {
            let text = args.get("text").and_then(Value::as_str).ok_or_else(|| {
                ErrorData::invalid_params("argument `text` must be a string", None)
            })?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "Echo: {text}"
            ))]))
        }
        "add" => {
            let sum = number(&args, "a")? + number(&args, "b")?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "{sum}"
            ))]))
        }
        "fail" => Ok(CallToolResult::error(vec![ContentBlock::text(
            "this tool always fails",
        )])),
        "sleep" => {
            let ms = number(&args, "ms")?.clamp(0.0, 600_000.0);
            tokio::time::sleep(Duration::from_millis(ms as u64)).await;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "slept {ms} ms"
            ))]))
        }
        other => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
            "unknown tool: {other}"
        ))])),
    }
}

impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new(
            self.options.name.clone(),
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("A demo server: read demo://docs/readme to start.")
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (items, next) = self.page(
            &resources(),
            request.as_ref().and_then(|r| r.cursor.as_deref()),
        )?;
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let (items, next) = self.page(
            &resource_templates(),
            request.as_ref().and_then(|r| r.cursor.as_deref()),
        )?;
        let mut result = ListResourceTemplatesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        read(&request.uri).map(Into::into)
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
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        call(request).await.map(Into::into)
    }
}

/// Serve MCP on stdin/stdout until the client goes away.
pub async fn run_stdio(options: DemoOptions) -> anyhow::Result<()> {
    let service = DemoServer::new(options)
        .serve(rmcp::transport::stdio())
        .await?;
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

    let server = DemoServer::new(options);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
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
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, handler)
                .await
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
    fn pages_cover_every_item_once() {
        let server = DemoServer::new(DemoOptions {
            page_size: 2,
            ..Default::default()
        });
        let all = resources();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let (items, next) = server.page(&all, cursor.as_deref()).expect("page");
            seen.extend(items.into_iter().map(|r| r.uri));
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, all.into_iter().map(|r| r.uri).collect::<Vec<_>>());
    }

    #[test]
    fn bad_cursor_is_invalid_params() {
        let server = DemoServer::new(DemoOptions::default());
        let err = server.page(&resources(), Some("zz")).expect_err("invalid");
        assert_eq!(err.code.0, -32602);
    }

    #[test]
    fn unknown_uri_is_not_found_with_data() {
        let err = read("demo://nope").expect_err("missing");
        assert_eq!(err.code.0, -32002);
        assert_eq!(err.data, Some(json!({"uri": "demo://nope"})));
        assert!(read("demo://notes/7").is_ok());
    }
}
