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
