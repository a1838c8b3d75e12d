//! `list_mcp_resources`, `list_mcp_resource_templates` and `read_mcp_resource`, as Codex's
//! `mcp_resource` handler has them (seed 000): argument shapes, payload field names, error
//! strings, sorting and events. Beyond Codex, all-server lists report failing servers in an
//! additive `errors` array and end events carry a [`ResourceCallSummary`].

use std::sync::Arc;

use async_trait::async_trait;
use mcp_connection_manager::{Aggregate, ServerListing};
use rmcp::model::{CallToolResult, ContentBlock, Resource, ResourceContents, ResourceTemplate};
use router_protocol::{McpInvocation, ResourceCallSummary, ServerFailure};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use uri_template::UriTemplate;

use data_sources::{DataSources, QueryResult, SourceInfo};
use tracing::Instrument as _;

use crate::backend::McpBackend;
use crate::content::{ContentPolicy, Paging, ShapedContent, decode_text_blobs, shape_read};
use crate::handler::{ToolHandler, ToolKind};
use crate::handlers::args::{
    json_kind, normalize_optional_string, normalize_required_string, parse_args,
    parse_args_with_default, parse_arguments, respond,
};
use crate::handlers::bracket;
use crate::invocation::{
    CallContext, ContentItem, FunctionCallError, ToolInvocation, ToolOutput, ToolPayload,
};
use crate::spec::ToolSpec;

/// Name of the resource-listing tool.
pub const LIST_MCP_RESOURCES: &str = "list_mcp_resources";
/// Name of the template-listing tool.
pub const LIST_MCP_RESOURCE_TEMPLATES: &str = "list_mcp_resource_templates";
/// Name of the read tool.
pub const READ_MCP_RESOURCE: &str = "read_mcp_resource";

/// Handles the three resource tools.
pub struct McpResourceHandler {
    backend: Arc<dyn McpBackend>,
    options: ReadOptions,
}

/// How reads are shaped for the model.
#[derive(Clone, Default)]
pub struct ReadOptions {
    /// Budget, images and blobs.
    pub policy: ContentPolicy,
    /// Where CSV resources are imported; `None` turns data sources off (CSV reads are text).
    pub data: Option<Arc<DataSources>>,
}

#[derive(Debug, Default, Deserialize)]
struct ListArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ReadArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    /// Beyond Codex: a resource template to expand client-side with `parameters`.
    #[serde(default)]
    template: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
    /// Beyond Codex: where to start in the text (bytes of UTF-8) and how much to return.
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    max_bytes: Option<u64>,
}

/// An item with the server it came from, next to the item's own MCP fields.
#[derive(Serialize)]
struct WithServer<'a, T> {
    server: &'a str,
    #[serde(flatten)]
    item: &'a T,
}

/// The items of a list payload, under the key Codex uses for them.
#[derive(Serialize)]
enum Items<'a> {
    #[serde(rename = "resources")]
    Resources(Vec<WithServer<'a, Resource>>),
    #[serde(rename = "resourceTemplates")]
    Templates(Vec<WithServer<'a, ResourceTemplate>>),
}

/// `{"server": "…", "resources"|"resourceTemplates": […], "nextCursor": "…" | null}`
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SingleServerPayload<'a> {
    server: &'a str,
    #[serde(flatten)]
    items: Items<'a>,
    next_cursor: Option<&'a str>,
}

/// `{"server": null, "resources"|"resourceTemplates": […], "errors": [{server, error}]}`;
/// `errors` only when some server failed.
#[derive(Serialize)]
struct AllServersPayload<'a> {
    server: Option<&'a str>,
    #[serde(flatten)]
    items: Items<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<ServerFailure>,
}

/// `{"server", "uri", "template"?, "contents": […], "offset"?, "total_bytes"?, "truncated"?,
/// "next_offset"?}`: `template` only for template reads, the paging facts only when a budget or
/// an offset applied.
#[derive(Serialize)]
struct ReadPayload<'a> {
    server: &'a str,
    uri: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    template: Option<&'a str>,
    contents: &'a [ShapedContent<'a>],
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    paging: Option<&'a Paging>,
}

/// The JSON line after the CSV import sentence.
#[derive(Serialize)]
struct ImportSummary<'a> {
    #[serde(flatten)]
    source: &'a SourceInfo,
    sample: &'a QueryResult,
    query_with: String,
}

fn with_server<'a, T>(server: &'a str, items: &'a [T]) -> Vec<WithServer<'a, T>> {
    items.iter().map(|item| WithServer { server, item }).collect()
}

fn flatten<T>(listings: &Aggregate<T>) -> Vec<WithServer<'_, T>> {
    listings.iter().flat_map(|l| with_server(&l.server, &l.items)).collect()
}

fn all_servers_payload<'a>(
    items: Items<'a>,
    failures: Vec<ServerFailure>,
) -> AllServersPayload<'a> {
    AllServersPayload { server: None, items, errors: failures }
}

fn failures<T>(listings: &[ServerListing<T>]) -> Vec<ServerFailure> {
    listings
        .iter()
        .filter_map(|l| {
            l.error
                .as_ref()
                .map(|error| ServerFailure { server: l.server.clone(), error: error.clone() })
        })
        .collect()
}

fn aggregate_summary<T>(listings: &Aggregate<T>) -> ResourceCallSummary {
    ResourceCallSummary {
        items: listings.iter().map(|l| l.items.len()).sum(),
        pages: listings.iter().map(|l| l.pages).sum(),
        servers: listings.len(),
        failed_servers: failures(listings),
    }
}

/// What a successful resource call produced: the model's JSON text and the event summary.
struct Produced {
    content: String,
    items: Option<Vec<ContentItem>>,
    summary: ResourceCallSummary,
}

/// A failed resource call: the model's error and the event summary.
struct Failed {
    error: FunctionCallError,
    summary: ResourceCallSummary,
}

impl McpResourceHandler {
    /// A handler over `backend` with default shaping and no data sources.
    pub fn new(backend: Arc<dyn McpBackend>) -> Self {
        Self::with_options(backend, ReadOptions::default())
    }

    /// A handler over `backend` shaping reads as `options` say.
    pub fn with_options(backend: Arc<dyn McpBackend>, options: ReadOptions) -> Self {
        Self { backend, options }
    }

    /// The specs of the three tools (Codex's wording).
    pub fn specs() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: LIST_MCP_RESOURCES.to_string(),
                description: "Lists resources provided by MCP servers. Resources allow servers to share data that provides context to language models, such as files, database schemas, or application-specific information. Prefer resources over web search when possible.".to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "server": {"type": "string", "description": "Optional MCP server name. When omitted, lists resources from every configured server."},
                        "cursor": {"type": "string", "description": "Opaque cursor returned by a previous list_mcp_resources call for the same server."}
                    },
                    "additionalProperties": false
                }),
            },
            ToolSpec {
                name: LIST_MCP_RESOURCE_TEMPLATES.to_string(),
                description: "Lists resource templates provided by MCP servers. Parameterized resource templates allow servers to share data that takes parameters and provides context to language models, such as files, database schemas, or application-specific information. Prefer resource templates over web search when possible.".to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "server": {"type": "string", "description": "Optional MCP server name. When omitted, lists resource templates from all configured servers."},
                        "cursor": {"type": "string", "description": "Opaque cursor returned by a previous list_mcp_resource_templates call for the same server."}
                    },
                    "additionalProperties": false
                }),
            },
            ToolSpec {
                name: READ_MCP_RESOURCE.to_string(),
                description: "Read a specific resource from an MCP server given the server name and resource URI. To read from a resource template, pass `template` (a uriTemplate returned by list_mcp_resource_templates) and `parameters` instead of `uri`.".to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "server": {"type": "string", "description": "MCP server name exactly as configured. Must match the 'server' field returned by list_mcp_resources."},
                        "uri": {"type": "string", "description": "Resource URI to read. Must be one of the URIs returned by list_mcp_resources."},
                        "template": {"type": "string", "description": "Instead of uri: an RFC 6570 uriTemplate returned by list_mcp_resource_templates, expanded with parameters."},
                        "offset": {"type": "integer", "minimum": 0, "description": "Byte offset in the resource's text to start from: the next_offset of a truncated read."},
                        "max_bytes": {"type": "integer", "minimum": 1, "description": "Return at most this many bytes of text (never more than the router's read budget)."},
                        "parameters": {"type": "object", "description": "Values for the template's variables, e.g. {\"id\": \"42\"}. Variables of {?...}, {&...} and {;...} expressions are optional; all others are required.", "additionalProperties": {"type": ["string", "number", "boolean", "array"]}}
                    },
                    "required": ["server"],
                    "additionalProperties": false
                }),
            },
        ]
    }

    async fn list(
        &self,
        ctx: &CallContext,
        call_id: &str,
        tool: &'static str,
        arguments: Option<Value>,
    ) -> Result<ToolOutput, FunctionCallError> {
        let args: ListArgs = parse_args_with_default(arguments.clone())?;
        let server = normalize_optional_string(args.server);
        let cursor = normalize_optional_string(args.cursor);
        if server.is_none() && cursor.is_some() {
            return Err(respond("cursor can only be used when a server is specified"));
        }
        let invocation =
            McpInvocation { server: server.clone(), tool: tool.to_string(), arguments };
        let backend = &self.backend;
        let templates = tool == LIST_MCP_RESOURCE_TEMPLATES;
        let work = async move {
            let Some(server) = server else {
                return if templates {
                    let listings = backend.list_all_resource_templates().await;
                    let items = Items::Templates(flatten(&listings));
                    produced(
                        &all_servers_payload(items, failures(&listings)),
                        aggregate_summary(&listings),
                    )
                } else {
                    let listings = backend.list_all_resources().await;
                    let items = Items::Resources(flatten(&listings));
                    produced(
                        &all_servers_payload(items, failures(&listings)),
                        aggregate_summary(&listings),
                    )
                };
            };
            let one = |items: usize| ResourceCallSummary {
                items,
                pages: 1,
                servers: 1,
                failed_servers: vec![],
            };
            if templates {
                let page = backend.list_resource_templates(&server, cursor).await.map_err(|e| {
                    single_failure(&server, format!("resources/templates/list failed: {e}"))
                })?;
                let payload = SingleServerPayload {
                    server: &server,
                    items: Items::Templates(with_server(&server, &page.resource_templates)),
                    next_cursor: page.next_cursor.as_deref(),
                };
                produced(&payload, one(page.resource_templates.len()))
            } else {
                let page = backend
                    .list_resources(&server, cursor)
                    .await
                    .map_err(|e| single_failure(&server, format!("resources/list failed: {e}")))?;
                let payload = SingleServerPayload {
                    server: &server,
                    items: Items::Resources(with_server(&server, &page.resources)),
                    next_cursor: page.next_cursor.as_deref(),
                };
                produced(&payload, one(page.resources.len()))
            }
        };
        run(ctx, call_id, invocation, work).await
    }

    async fn read(
        &self,
        ctx: &CallContext,
        call_id: &str,
        arguments: Option<Value>,
    ) -> Result<ToolOutput, FunctionCallError> {
        let args: ReadArgs = parse_args(arguments.clone())?;
        let server = normalize_required_string("server", args.server)?;
        let template = normalize_optional_string(args.template);
        let uri = match &template {
            None => normalize_required_string("uri", args.uri)?,
            Some(template) => {
                if normalize_optional_string(args.uri).is_some() {
                    return Err(respond(
                        "provide either uri or template (with parameters), not both",
                    ));
                }
                expand_template(template, args.parameters)?
            }
        };
        let invocation = McpInvocation {
            server: Some(server.clone()),
            tool: READ_MCP_RESOURCE.to_string(),
            arguments,
        };
        let offset = usize::try_from(args.offset.unwrap_or(0)).unwrap_or(usize::MAX);
        let max_bytes = match args.max_bytes {
            Some(0) => return Err(respond("max_bytes must be at least 1")),
            other => other.map(|m| usize::try_from(m).unwrap_or(usize::MAX)),
        };
        let span = tracing::info_span!(
            "resource_retrieval",
            server = %server,
            uri = %uri,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        let started = std::time::Instant::now();
        let backend = &self.backend;
        let options = &self.options;
        let work = async move {
            let mut result = backend
                .read_resource(&server, &uri)
                .await
                .map_err(|e| single_failure(&server, format!("resources/read failed: {e}")))?;
            result.contents = decode_text_blobs(result.contents);
            if let Some(data) = &options.data
                && result.contents.iter().any(|c| is_csv(c, &uri))
            {
                return import_csv(data.clone(), &server, &uri, result.contents).await;
            }
            let shaped = shape_read(&result.contents, &options.policy, offset, max_bytes)
                .map_err(|e| single_failure(&server, e))?;
            let payload = ReadPayload {
                server: &server,
                uri: &uri,
                template: template.as_deref(),
                contents: &shaped.contents,
                paging: shaped.paging.as_ref(),
            };
            let summary = ResourceCallSummary {
                items: shaped.contents.len(),
                pages: 1,
                servers: 1,
                failed_servers: vec![],
            };
            let mut produced = produced(&payload, summary)?;
            if !shaped.images.is_empty() {
                let mut items = vec![ContentItem::InputText { text: produced.content.clone() }];
                items.extend(shaped.images);
                produced.items = Some(items);
            }
            Ok(produced)
        };
        let outcome = run(ctx, call_id, invocation, work).instrument(span.clone()).await;
        span.record("outcome", if outcome.is_ok() { "ok" } else { "error" });
        span.record("duration_ms", started.elapsed().as_secs_f64() * 1000.0);
        span.in_scope(|| match &outcome {
            Ok(_) => tracing::info!("resource retrieved"),
            Err(e) => tracing::info!(error = %e, "resource retrieval failed"),
        });
        outcome
    }
}

#[async_trait]
impl ToolHandler for McpResourceHandler {
    fn kind(&self) -> ToolKind {
        ToolKind::Function
    }

    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let ToolInvocation { call_id, tool_name, payload } = invocation;
        let ToolPayload::Function { arguments } = payload else {
            return Err(respond("mcp_resource handler received unsupported payload"));
        };
        let arguments = parse_arguments(&arguments)?;
        match tool_name.as_str() {
            LIST_MCP_RESOURCES => self.list(ctx, &call_id, LIST_MCP_RESOURCES, arguments).await,
            LIST_MCP_RESOURCE_TEMPLATES => {
                self.list(ctx, &call_id, LIST_MCP_RESOURCE_TEMPLATES, arguments).await
            }
            READ_MCP_RESOURCE => self.read(ctx, &call_id, arguments).await,
            other => Err(respond(format!("unsupported MCP resource tool: {other}"))),
        }
    }
}

/// A CSV resource: `text/csv`, or a URI ending in `.csv` (query and fragment ignored).
fn is_csv(content: &ResourceContents, read_uri: &str) -> bool {
    let (uri, mime) = match content {
        ResourceContents::TextResourceContents { uri, mime_type, .. }
        | ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
            (uri.as_str(), mime_type.as_deref())
        }
        _ => return false,
    };
    let csv_path = |u: &str| {
        u.split(['?', '#']).next().is_some_and(|p| p.to_ascii_lowercase().ends_with(".csv"))
    };
    mime.is_some_and(|m| {
        m.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("text/csv"))
    }) || csv_path(uri)
        || (uri.is_empty() && csv_path(read_uri))
}

/// Import every CSV content of a read; the model gets the import sentence and a summary per
/// table instead of the raw text. Failures read `Resource retrieval failed: …` (seed 004).
async fn import_csv(
    data: Arc<DataSources>,
    server: &str,
    read_uri: &str,
    contents: Vec<ResourceContents>,
) -> Result<Produced, Failed> {
    let server_name = server.to_string();
    let read_uri = read_uri.to_string();
    let task = tokio::task::spawn_blocking(move || {
        let mut sections = Vec::new();
        for content in contents.iter().filter(|c| is_csv(c, &read_uri)) {
            let (uri, bytes) = match content {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    (uri, text.as_bytes().to_vec())
                }
                ResourceContents::BlobResourceContents { uri, blob, .. } => {
                    let bytes = base64::Engine::decode(
                        &base64::engine::general_purpose::STANDARD,
                        blob.trim(),
                    )
                    .map_err(|e| format!("the server sent invalid base64 for {uri}: {e}"))?;
                    (uri, bytes)
                }
                _ => continue,
            };
            let uri = if uri.is_empty() { &read_uri } else { uri };
            let source = data.import_csv(&server_name, uri, &bytes).map_err(|e| e.to_string())?;
            let sample = data.sample(&source.table, 3).map_err(|e| e.to_string())?;
            let summary = ImportSummary {
                source: &source,
                sample: &sample,
                query_with: format!("query_mcp_data, e.g. SELECT * FROM {} LIMIT 20", source.table),
            };
            let json = serde_json::to_string(&summary).map_err(|e| e.to_string())?;
            sections.push((
                format!("CSV resource imported as data source: {uri}\n{json}"),
                source.rows,
            ));
        }
        Ok::<_, String>(sections)
    });
    let sections = match task.await {
        Ok(Ok(sections)) => sections,
        Ok(Err(message)) => {
            return Err(single_failure(server, format!("Resource retrieval failed: {message}")));
        }
        Err(e) => {
            return Err(single_failure(
                server,
                format!("Resource retrieval failed: the import task failed: {e}"),
            ));
        }
    };
    let items = sections.iter().map(|(_, rows)| rows).sum();
    let content = sections.into_iter().map(|(text, _)| text).collect::<Vec<_>>().join("\n");
    let summary = ResourceCallSummary { items, pages: 1, servers: 1, failed_servers: vec![] };
    Ok(Produced { content, items: None, summary })
}

/// Expand a template the model filled in. Variables of query-style expressions (`{?…}`,
/// `{&…}`, `{;…}`) are optional; every other one is required. Every failure names the
/// parameter at fault.
fn expand_template(template: &str, parameters: Option<Value>) -> Result<String, FunctionCallError> {
    let parsed =
        UriTemplate::parse(template).map_err(|e| respond(format!("template is not valid: {e}")))?;
    let parameters: Map<String, Value> = match parameters {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(respond(format!(
                "parameters must be a JSON object, got {}",
                json_kind(&other)
            )));
        }
    };
    let variables = parsed.variables();
    if let Some(unknown) = parameters.keys().find(|k| !variables.contains(&k.as_str())) {
        return Err(respond(format!(
            "unknown parameter `{unknown}`: the template's variables are {}",
            variables.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
        )));
    }
    let optional = parsed.optional_variables();
    for name in variables.iter().filter(|v| !optional.contains(v)) {
        if parameters.get(*name).is_none_or(Value::is_null) {
            return Err(respond(format!(
                "missing parameter `{name}` (required by template {template})"
            )));
        }
    }
    for (name, value) in &parameters {
        let scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_));
        let ok = match value {
            Value::Array(items) => items.iter().all(scalar),
            Value::Object(_) => false,
            other => other.is_null() || scalar(other),
        };
        if !ok {
            return Err(respond(format!(
                "parameter `{name}` must be a string, number, boolean or a list of them, got {}",
                json_kind(value)
            )));
        }
    }
    parsed.expand(&parameters).map_err(|e| respond(format!("cannot expand template: {e}")))
}

/// Bracket `work` with begin/end events and turn its outcome into the model's output.
async fn run(
    ctx: &CallContext,
    call_id: &str,
    invocation: McpInvocation,
    work: impl std::future::Future<Output = Result<Produced, Failed>>,
) -> Result<ToolOutput, FunctionCallError> {
    let outcome = bracket(ctx, call_id, invocation, work, |outcome| match outcome {
        Ok(p) => (Ok(call_tool_result_from_content(&p.content, true)), Some(p.summary.clone())),
        Err(f) => (Err(f.error.to_string()), Some(f.summary.clone())),
    })
    .await;
    match outcome {
        Ok(p) => Ok(ToolOutput::Function {
            content: p.content,
            content_items: p.items,
            success: Some(true),
        }),
        Err(f) => Err(f.error),
    }
}

fn produced(payload: &impl Serialize, summary: ResourceCallSummary) -> Result<Produced, Failed> {
    match serde_json::to_string(payload) {
        Ok(content) => Ok(Produced { content, items: None, summary }),
        Err(e) => Err(Failed {
            error: respond(format!("failed to serialize MCP resource response: {e}")),
            summary,
        }),
    }
}

fn single_failure(server: &str, message: String) -> Failed {
    Failed {
        summary: ResourceCallSummary {
            items: 0,
            pages: 0,
            servers: 1,
            failed_servers: vec![ServerFailure {
                server: server.to_string(),
                error: message.clone(),
            }],
        },
        error: respond(message),
    }
}

/// The end event's result for a resource tool: one text block holding the model's JSON.
fn call_tool_result_from_content(content: &str, success: bool) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(content)]);
    result.is_error = Some(!success);
    // rmcp fills in the 2026 `resultType`; our events follow protocol 2025-11-25.
    result.result_type = None;
    result
}

#[cfg(test)]
#[path = "mcp_resource_tests.rs"]
mod tests;
