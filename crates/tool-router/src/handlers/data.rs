//! CSV resources as data sources (the retrieval and query rules of an agent run over CSV data):
//! the import a read hands CSV contents to, and the two tools over what was imported,
//! `query_mcp_data` (read-only SQL) and `list_mcp_data_sources`. The tools exist only while
//! data sources are on; they touch no MCP server, so they emit no begin/end events; each
//! query is recorded with `tracing`.

use std::sync::Arc;

use async_trait::async_trait;
pub(crate) use data_sources::DataSources;
use data_sources::{QueryResult, SourceInfo};
use rmcp::model::ResourceContents;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::handler::ToolHandler;
use crate::handlers::args::{
    normalize_required_string, parse_args, parse_args_with_default, respond,
};
use crate::handlers::{Failed, Produced, one_server, single_failure};
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};
use crate::spec::ToolSpec;

/// Name of the query tool.
pub const QUERY_MCP_DATA: &str = "query_mcp_data";
/// Name of the listing tool.
pub const LIST_MCP_DATA_SOURCES: &str = "list_mcp_data_sources";

/// Handles `query_mcp_data`.
pub(crate) struct QueryDataHandler {
    data: Arc<DataSources>,
}

/// Handles `list_mcp_data_sources`.
pub(crate) struct ListDataSourcesHandler {
    data: Arc<DataSources>,
}

#[derive(Debug, Default, Deserialize)]
struct QueryArgs {
    #[serde(default)]
    sql: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {}

/// The JSON line after the CSV import sentence.
#[derive(Serialize)]
struct ImportSummary<'a> {
    #[serde(flatten)]
    source: &'a SourceInfo,
    sample: &'a QueryResult,
    query_with: String,
}

/// `{"sources": [{table, server, uri, rows, columns: [{name, type}]}]}`
#[derive(Serialize)]
struct SourcesPayload<'a> {
    sources: &'a [SourceInfo],
}

/// Both data tools over `data`, with their specs; none when data sources are off (`None`), so
/// the router neither lists nor dispatches them.
pub(crate) fn data_tools(data: Option<Arc<DataSources>>) -> Vec<(ToolSpec, Arc<dyn ToolHandler>)> {
    let Some(data) = data else {
        return Vec::new();
    };
    let query = ToolSpec {
        name: QUERY_MCP_DATA.to_string(),
        description: "Run a read-only SQL query (SQLite dialect; a single SELECT or WITH statement) over the CSV resources that read_mcp_resource imported as data sources. Returns the columns and rows as JSON, with a row cap.".to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "sql": {"type": "string", "description": "One SELECT or WITH statement; table names come from list_mcp_data_sources or the import summary."}
            },
            "required": ["sql"],
            "additionalProperties": false
        }),
    };
    let list = ToolSpec {
        name: LIST_MCP_DATA_SOURCES.to_string(),
        description: "List the CSV resources imported as data sources: table name, server, uri, row count and columns with their types.".to_string(),
        parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
    };
    vec![
        (query, Arc::new(QueryDataHandler { data: data.clone() })),
        (list, Arc::new(ListDataSourcesHandler { data })),
    ]
}

#[async_trait]
impl ToolHandler for QueryDataHandler {
    async fn handle(
        &self,
        _ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let data = self.data.clone();
        let args: QueryArgs = parse_args(invocation.arguments.as_ref())?;
        let sql = normalize_required_string("sql", args.sql)?;
        let started = std::time::Instant::now();
        let sql_bytes = sql.len();
        let result = tokio::task::spawn_blocking(move || data.query(&sql))
            .await
            .map_err(|e| respond(format!("query failed: the query task failed: {e}")))?;
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        tracing::info!(sql_bytes, ok = result.is_ok(), duration_ms, "data query");
        let result = result.map_err(|e| respond(e.to_string()))?;
        let content = serde_json::to_string(&result).map_err(|e| respond(e.to_string()))?;
        Ok(ToolOutput::Function {
            content: content.into(),
            content_items: None,
            success: Some(true),
        })
    }
}

#[async_trait]
impl ToolHandler for ListDataSourcesHandler {
    async fn handle(
        &self,
        _ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let data = &self.data;
        let _: ListArgs = parse_args_with_default(invocation.arguments.as_ref())?;
        let sources = data.list();
        let content = serde_json::to_string(&SourcesPayload { sources: &sources })
            .map_err(|e| respond(e.to_string()))?;
        Ok(ToolOutput::Function {
            content: content.into(),
            content_items: None,
            success: Some(true),
        })
    }
}

/// A CSV resource: `text/csv`, or a URI ending in `.csv` (query and fragment ignored).
pub(crate) fn is_csv(content: &ResourceContents, read_uri: &str) -> bool {
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
/// table instead of the raw text. Failures read `Resource retrieval failed: …` (the retrieval
/// error wording of an agent run).
pub(crate) async fn import_csv(
    data: Arc<DataSources>,
    server: &str,
    read_uri: &str,
    contents: Vec<ResourceContents>,
) -> Result<Produced, Failed> {
    let (server_name, uri) = (server.to_string(), read_uri.to_string());
    let task =
        tokio::task::spawn_blocking(move || import_all(&data, &server_name, &uri, &contents));
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
    Ok(Produced { content: content.into(), items: None, summary: one_server(items) })
}

/// The blocking part of [`import_csv`]: each CSV content into its table, as the model's text
/// section and the table's row count.
fn import_all(
    data: &DataSources,
    server: &str,
    read_uri: &str,
    contents: &[ResourceContents],
) -> Result<Vec<(String, usize)>, String> {
    let mut sections = Vec::new();
    for content in contents.iter().filter(|c| is_csv(c, read_uri)) {
        let (uri, bytes) = match content {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                (uri, text.as_bytes().to_vec())
            }
            ResourceContents::BlobResourceContents { uri, blob, .. } => {
                let bytes =
                    base64::Engine::decode(&base64::engine::general_purpose::STANDARD, blob.trim())
                        .map_err(|e| format!("the server sent invalid base64 for {uri}: {e}"))?;
                (uri, bytes)
            }
            _ => continue,
        };
        let uri = if uri.is_empty() { read_uri } else { uri };
        let source = data.import_csv(server, uri, &bytes).map_err(|e| e.to_string())?;
        let sample = data.sample(&source.table, 3).map_err(|e| e.to_string())?;
        let summary = ImportSummary {
            source: &source,
            sample: &sample,
            query_with: format!("query_mcp_data, e.g. SELECT * FROM {} LIMIT 20", source.table),
        };
        let json = serde_json::to_string(&summary).map_err(|e| e.to_string())?;
        sections
            .push((format!("CSV resource imported as data source: {uri}\n{json}"), source.rows));
    }
    Ok(sections)
}
