//! What a session's client gets back: the router's specs as MCP tools, its outputs as MCP tool
//! results.

use std::sync::Arc;

use mcp_host::{ToolOutput, ToolSpec};
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use router_protocol::ContentItem;

/// A spec as an MCP tool (its parameters are always a JSON object schema).
pub(crate) fn to_tool(spec: ToolSpec) -> Tool {
    let schema = match spec.parameters {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::from_iter([("type".to_string(), "object".into())]),
    };
    Tool::new(spec.name, spec.description, schema)
}

/// The router's output as an MCP tool result: an MCP tool's result as its server gave it; a
/// function tool's text (or items) with `isError` when it failed.
pub(crate) fn to_call_result(output: ToolOutput) -> CallToolResult {
    match output {
        ToolOutput::Mcp { result: Ok(result) } => {
            let mut result = Arc::try_unwrap(result).unwrap_or_else(|shared| (*shared).clone());
            // A 2026-07-28 client requires `resultType` (a 2025-11-25 server, or the straight
            // path, gives none); rmcp leaves it out again for a client of the older revision.
            result.result_type.get_or_insert(rmcp::model::ResultType::COMPLETE);
            result
        }
        ToolOutput::Mcp { result: Err(message) } => {
            CallToolResult::error(vec![ContentBlock::text(message)])
        }
        ToolOutput::Function { content, content_items, success } => {
            let blocks = match content_items {
                Some(items) => items.into_iter().map(to_block).collect(),
                None => vec![ContentBlock::text(content.as_str())],
            };
            match success {
                Some(false) => CallToolResult::error(blocks),
                _ => CallToolResult::success(blocks),
            }
        }
    }
}

/// An output item as a content block: an image given as a `data:` URL becomes an image block.
fn to_block(item: ContentItem) -> ContentBlock {
    match item {
        ContentItem::InputText { text } => ContentBlock::text(text),
        ContentItem::InputImage { image_url } => {
            let data_url =
                image_url.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,"));
            match data_url {
                Some((mime, data)) => ContentBlock::image(data, mime),
                None => ContentBlock::text(image_url),
            }
        }
        other => ContentBlock::text(serde_json::to_string(&other).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_function_output_is_an_error_result_and_images_stay_images() {
        let failed = to_call_result(ToolOutput::failure("no such server: `x`"));
        assert_eq!(failed.is_error, Some(true));
        let text = serde_json::to_value(&failed.content).expect("json");
        assert_eq!(text[0]["text"], "no such server: `x`");
        let items = ToolOutput::Function {
            content: String::from("{}").into(),
            content_items: Some(vec![
                ContentItem::InputText { text: "a chart".into() },
                ContentItem::InputImage { image_url: "data:image/png;base64,iVBO".into() },
            ]),
            success: None,
        };
        let result = to_call_result(items);
        assert_eq!(result.is_error, Some(false));
        let blocks = serde_json::to_value(&result.content).expect("json");
        assert_eq!(blocks[1]["type"], "image");
        assert_eq!(blocks[1]["mimeType"], "image/png");
        assert_eq!(blocks[1]["data"], "iVBO");
    }
}
