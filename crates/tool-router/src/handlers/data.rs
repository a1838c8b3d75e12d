//! `query_mcp_data` and `list_mcp_data_sources`: the CSV resources imported by reads, queried
//! read-only (seed 004). Offered only while data sources are on. They touch no MCP server, so
//! they emit no begin/end events; each query is recorded with `tracing`.

use std::sync::Arc;

use async_trait::async_trait;
use data_sources::{DataSources, SourceInfo};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::handler::{ToolHandler, ToolKind};
use crate::handlers::args::{
    normalize_required_string, parse_args, parse_args_with_default, parse_arguments, respond,
};
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput, ToolPayload};
use crate::spec::ToolSpec;

/// Name of the query tool.
pub const QUERY_MCP_DATA: &str = "query_mcp_data";
/// Name of the listing tool.
pub const LIST_MCP_DATA_SOURCES: &str = "list_mcp_data_sources";

/// Handles both data tools.
pub struct McpDataHandler {
    data: Option<Arc<DataSources>>,
}

#[derive(Debug, Default, Deserialize)]
struct QueryArgs {
    #[serde(default)]
    sql: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {}

/// `{"sources": [{table, server, uri, rows, columns: [{name, type}]}]}`
#[derive(Serialize)]
struct SourcesPayload<'a> {
    sources: &'a [SourceInfo],
}

impl McpDataHandler {
    /// A handler over `data` (`None`: data sources are off and neither tool is offered).
    pub fn new(data: Option<Arc<DataSources>>) -> Self {
        Self { data }
    }

    /// The specs of both tools.
    pub fn specs() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
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
            },
            ToolSpec {
                name: LIST_MCP_DATA_SOURCES.to_string(),
                description: "List the CSV resources imported as data sources: table name, server, uri, row count and columns with their types.".to_string(),
                parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            },
        ]
    }
}

#[async_trait]
impl ToolHandler for McpDataHandler {
    fn kind(&self) -> ToolKind {
        ToolKind::Function
    }

    async fn offered(&self) -> bool {
        self.data.is_some()
    }

    async fn handle(
        &self,
        _ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let ToolPayload::Function { arguments } = invocation.payload else {
            return Err(respond("data handler received unsupported payload"));
        };
        let Some(data) = self.data.clone() else {
            return Err(respond(format!("unsupported call: {}", invocation.tool_name)));
        };
        let arguments = parse_arguments(&arguments)?;
        let content = match invocation.tool_name.as_str() {
            QUERY_MCP_DATA => {
                let args: QueryArgs = parse_args(arguments)?;
                let sql = normalize_required_string("sql", args.sql)?;
                let started = std::time::Instant::now();
                let sql_bytes = sql.len();
                let result = tokio::task::spawn_blocking(move || data.query(&sql))
                    .await
                    .map_err(|e| respond(format!("query failed: the query task failed: {e}")))?;
                let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
                tracing::info!(sql_bytes, ok = result.is_ok(), duration_ms, "data query");
                let result = result.map_err(|e| respond(e.to_string()))?;
                serde_json::to_string(&result).map_err(|e| respond(e.to_string()))?
            }
            LIST_MCP_DATA_SOURCES => {
                let _: ListArgs = parse_args_with_default(arguments)?;
                let sources = data.list();
                serde_json::to_string(&SourcesPayload { sources: &sources })
                    .map_err(|e| respond(e.to_string()))?
            }
            other => return Err(respond(format!("unsupported call: {other}"))),
        };
        Ok(ToolOutput::Function { content, content_items: None, success: Some(true) })
    }
}
