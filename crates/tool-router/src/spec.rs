//! Tool specs (name, description, JSON Schema parameters) and their two wire formats.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A tool as offered to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// The wire format of a tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// OpenAI function tool (Responses API):
    /// `{"type": "function", "name", "description", "strict": false, "parameters"}`.
    OpenAi,
    /// Anthropic tool: `{"name", "description", "input_schema"}`.
    Anthropic,
}

impl ToolSpec {
    /// This spec in `format`.
    pub fn to_format(&self, format: ToolFormat) -> Value {
        // Structs, not `json!`, so the keys keep the order each API documents.
        #[derive(Serialize)]
        struct OpenAi<'a> {
            r#type: &'static str,
            name: &'a str,
            description: &'a str,
            strict: bool,
            parameters: &'a Value,
        }
        #[derive(Serialize)]
        struct Anthropic<'a> {
            name: &'a str,
            description: &'a str,
            input_schema: &'a Value,
        }
        let value = match format {
            ToolFormat::OpenAi => serde_json::to_value(OpenAi {
                r#type: "function",
                name: &self.name,
                description: &self.description,
                strict: false,
                parameters: &self.parameters,
            }),
            ToolFormat::Anthropic => serde_json::to_value(Anthropic {
                name: &self.name,
                description: &self.description,
                input_schema: &self.parameters,
            }),
        };
        value.unwrap_or(Value::Null)
    }

    /// This spec in `format`, marked `defer_loading: true`: the model API keeps it out of the
    /// prompt until its own tool search finds it.
    pub fn to_format_deferred(&self, format: ToolFormat) -> Value {
        let mut value = self.to_format(format);
        if let Value::Object(map) = &mut value {
            map.insert("defer_loading".to_string(), Value::Bool(true));
        }
        value
    }

    /// The spec of an MCP tool under its qualified name. Model APIs require an object schema
    /// with `properties`; servers that omit either get them added (as Codex does).
    pub fn for_mcp_tool(qualified_name: &str, tool: &rmcp::model::Tool) -> Self {
        let mut parameters = Value::Object(tool.input_schema.as_ref().clone());
        if let Value::Object(map) = &mut parameters {
            map.entry("type").or_insert_with(|| json!("object"));
            if map.get("properties").is_none_or(Value::is_null) {
                map.insert("properties".to_string(), json!({}));
            }
        }
        Self {
            name: qualified_name.to_string(),
            description: tool.description.as_deref().unwrap_or_default().to_string(),
            parameters,
        }
    }
}

/// The model API's own tool-search tool, for tool lists whose MCP tools are deferred:
/// OpenAI Responses' hosted `tool_search`, Anthropic's BM25 tool search tool.
pub(crate) fn api_search_tool(format: ToolFormat) -> Value {
    match format {
        ToolFormat::OpenAi => json!({"type": "tool_search"}),
        ToolFormat::Anthropic => {
            json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
        }
    }
}

/// One OpenAI namespace of a server's deferred tools (their qualified names kept, so a call
/// comes back under the name the router routes).
pub(crate) fn openai_namespace(server: &str, tools: Vec<Value>) -> Value {
    json!({
        "type": "namespace",
        "name": server,
        "description": format!("Tools of the MCP server {server}."),
        "tools": tools,
    })
}
