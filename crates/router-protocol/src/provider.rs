//! A [`ToolOutput`] in the shape a model provider's API takes back: OpenAI Responses
//! (`function_call_output`), OpenAI Chat Completions (a `tool` message) and Anthropic
//! (`tool_result`). The same output gives the same JSON whatever protocol revision the server
//! spoke: only the content (text, images) and the failure flag are carried over.

use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::{Value, json};

use crate::{ContentItem, ToolOutput};

/// The API a tool result is sent back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputFormat {
    /// OpenAI Responses: `{"type": "function_call_output", "call_id", "output"}`; `output` is the
    /// text, or `input_text` / `input_image` items when there are images.
    OpenAiResponses,
    /// OpenAI Chat Completions: `{"role": "tool", "tool_call_id", "content"}`; this API takes
    /// only text back from a tool, so an image is named in the text, not sent.
    OpenAiChat,
    /// Anthropic Messages: `{"type": "tool_result", "tool_use_id", "content": [blocks]}` with
    /// `text` and base64 `image` blocks, and `"is_error": true` for a failure.
    Anthropic,
}

/// One piece of an output, whatever it came from.
#[derive(Debug, PartialEq)]
enum Part {
    Text(String),
    /// Base64 data and its media type.
    Image {
        media_type: String,
        data: String,
    },
    /// An image only known by its URL (not a `data:` URL).
    ImageUrl(String),
}

impl ToolOutput {
    /// This output as `format`'s API takes it back for the call `call_id`.
    pub fn to_format(&self, format: OutputFormat, call_id: &str) -> Value {
        let parts = self.parts();
        let failed = !self.is_success();
        match format {
            OutputFormat::OpenAiResponses => json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": responses_output(parts),
            }),
            OutputFormat::OpenAiChat => json!({
                "role": "tool",
                "tool_call_id": call_id,
                "content": chat_text(parts),
            }),
            OutputFormat::Anthropic => {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": parts.into_iter().map(anthropic_block).collect::<Vec<_>>(),
                });
                if failed {
                    block["is_error"] = Value::Bool(true);
                }
                block
            }
        }
    }

    /// What the model reads of this output, whatever the provider: its text (the parts joined
    /// as a Chat Completions message joins them, an image named in it), and the bytes of the
    /// images sent beside the text where the API takes images (their base64).
    pub fn model_text(&self) -> (String, usize) {
        let parts = self.parts();
        let images = parts
            .iter()
            .map(|part| match part {
                Part::Image { data, .. } => data.len(),
                _ => 0,
            })
            .sum();
        let text_only: Vec<Part> =
            parts.into_iter().filter(|p| !matches!(p, Part::Image { .. })).collect();
        (chat_text(text_only), images)
    }

    /// The bytes of [`ToolOutput::model_text`], text and images together, counted without
    /// copying the common outputs (a function's text, an MCP result of text blocks).
    pub fn model_bytes(&self) -> usize {
        match self {
            Self::Function { content, content_items, .. }
                if content_items.as_ref().is_none_or(Vec::is_empty) =>
            {
                content.len()
            }
            Self::Mcp { result: Err(message) } => message.len(),
            Self::Mcp { result: Ok(result) }
                if !result.content.is_empty()
                    && result.content.iter().all(|b| matches!(b, ContentBlock::Text(_))) =>
            {
                let texts: usize = result
                    .content
                    .iter()
                    .map(|b| match b {
                        ContentBlock::Text(t) => t.text.len(),
                        _ => 0,
                    })
                    .sum();
                texts + result.content.len() - 1
            }
            _ => {
                let (text, images) = self.model_text();
                text.len() + images
            }
        }
    }

    /// The output's text and images, in order.
    fn parts(&self) -> Vec<Part> {
        match self {
            Self::Function { content, content_items: Some(items), .. } if !items.is_empty() => {
                let parts: Vec<Part> = items.iter().filter_map(item_part).collect();
                if parts.is_empty() { vec![Part::Text(content.to_string())] } else { parts }
            }
            Self::Function { content, .. } => vec![Part::Text(content.to_string())],
            Self::Mcp { result: Err(message) } => vec![Part::Text(message.clone())],
            Self::Mcp { result: Ok(result) } => {
                let mut parts: Vec<Part> = result.content.iter().map(block_part).collect();
                // A result told only in `structuredContent` is given as its JSON.
                if parts.is_empty()
                    && let Some(structured) = &result.structured_content
                {
                    parts.push(Part::Text(structured.to_string()));
                }
                if parts.is_empty() {
                    parts.push(Part::Text(String::new()));
                }
                parts
            }
        }
    }
}

/// A function output's item as a part (`None` for a kind this version does not know).
fn item_part(item: &ContentItem) -> Option<Part> {
    match item {
        ContentItem::InputText { text } => Some(Part::Text(text.clone())),
        ContentItem::InputImage { image_url } => Some(image_url_part(image_url)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// `data:MEDIA;base64,DATA` as an image with its data; any other URL as itself.
fn image_url_part(url: &str) -> Part {
    url.strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
        .map(|(media_type, data)| Part::Image {
            media_type: media_type.to_string(),
            data: data.to_string(),
        })
        .unwrap_or_else(|| Part::ImageUrl(url.to_string()))
}

/// An MCP content block as a part: text and images as they are; audio, blobs and links named.
fn block_part(block: &ContentBlock) -> Part {
    match block {
        ContentBlock::Text(text) => Part::Text(text.text.clone()),
        ContentBlock::Image(image) => {
            Part::Image { media_type: image.mime_type.clone(), data: image.data.clone() }
        }
        ContentBlock::Audio(audio) => Part::Text(format!(
            "[audio ({}, {} bytes of base64) not shown]",
            audio.mime_type,
            audio.data.len()
        )),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                Part::Text(format!("[resource {uri}]\n{text}"))
            }
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                Part::Text(format!(
                    "[resource {uri} ({}, {} bytes of base64) not shown]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                ))
            }
            other => Part::Text(serde_json::to_string(other).unwrap_or_default()),
        },
        ContentBlock::ResourceLink(link) => {
            Part::Text(format!("[resource link {} ({})]", link.uri, link.name))
        }
        // A block kind added to MCP after this version: its JSON.
        #[allow(unreachable_patterns)]
        other => Part::Text(serde_json::to_string(other).unwrap_or_default()),
    }
}

/// Responses' `output`: the text when there is no image, else the items.
fn responses_output(parts: Vec<Part>) -> Value {
    if parts.iter().all(|p| matches!(p, Part::Text(_))) {
        return Value::String(chat_text(parts));
    }
    let items = parts
        .into_iter()
        .map(|part| match part {
            Part::Text(text) => json!({"type": "input_text", "text": text}),
            Part::Image { media_type, data } => {
                json!({"type": "input_image", "image_url": format!("data:{media_type};base64,{data}")})
            }
            Part::ImageUrl(url) => json!({"type": "input_image", "image_url": url}),
        })
        .collect();
    Value::Array(items)
}

/// The parts as one text (images named), for APIs that take text only.
fn chat_text(parts: Vec<Part>) -> String {
    let texts: Vec<String> = parts
        .into_iter()
        .map(|part| match part {
            Part::Text(text) => text,
            Part::Image { media_type, data } => {
                format!("[image ({media_type}, {} bytes of base64) not shown]", data.len())
            }
            Part::ImageUrl(url) => format!("[image {url} not shown]"),
        })
        .collect();
    texts.join("\n")
}

/// An Anthropic content block.
fn anthropic_block(part: Part) -> Value {
    match part {
        Part::Text(text) => json!({"type": "text", "text": text}),
        Part::Image { media_type, data } => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }),
        Part::ImageUrl(url) => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::CallToolResult;

    use super::*;
    use crate::SharedText;

    fn all_formats(output: &ToolOutput) -> Value {
        json!({
            "openai_responses": output.to_format(OutputFormat::OpenAiResponses, "call_1"),
            "openai_chat": output.to_format(OutputFormat::OpenAiChat, "call_1"),
            "anthropic": output.to_format(OutputFormat::Anthropic, "call_1"),
        })
    }

    #[test]
    fn a_text_output_in_each_format() {
        let output = ToolOutput::Function {
            content: SharedText::from("{\"resources\":[]}".to_string()),
            content_items: None,
            success: Some(true),
        };
        insta::assert_json_snapshot!("provider_text", all_formats(&output));
    }

    #[test]
    fn a_failure_is_flagged_where_the_api_has_a_flag() {
        insta::assert_json_snapshot!(
            "provider_failure",
            all_formats(&ToolOutput::failure("unknown MCP server 'x'"))
        );
    }

    #[test]
    fn an_mcp_result_with_text_image_audio_and_resources() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("a chart"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ContentBlock::audio("UklGRg==", "audio/wav"),
            ContentBlock::embedded_text("memo://1", "the memo"),
        ]);
        result.is_error = Some(false);
        let output = ToolOutput::Mcp { result: Ok(Arc::new(result)) };
        insta::assert_json_snapshot!("provider_mcp_mixed", all_formats(&output));
    }

    /// `model_bytes` is what `model_text` gives, whatever the output, copied or not.
    #[test]
    fn model_bytes_are_the_model_text_s() {
        let mcp = |blocks: Vec<ContentBlock>| ToolOutput::Mcp {
            result: Ok(Arc::new(CallToolResult::success(blocks))),
        };
        let mut structured = CallToolResult::success(vec![]);
        structured.structured_content = Some(serde_json::json!({"a": [1, 2]}));
        for output in [
            ToolOutput::failure("unsupported call: x"),
            ToolOutput::Mcp { result: Err("tool call error: gone".into()) },
            mcp(vec![ContentBlock::text("one"), ContentBlock::text("twö")]),
            mcp(vec![
                ContentBlock::text("a chart"),
                ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ]),
            mcp(vec![ContentBlock::embedded_text("memo://1", "the memo")]),
            mcp(vec![]),
            ToolOutput::Mcp { result: Ok(Arc::new(structured)) },
        ] {
            let (text, images) = output.model_text();
            assert_eq!(output.model_bytes(), text.len() + images, "{output:?}");
        }
        let image = mcp(vec![ContentBlock::image("iVBORw0KGgo=", "image/png")]);
        assert_eq!(
            image.model_text(),
            (String::new(), 12),
            "an image is its base64, beside the text"
        );
    }

    #[test]
    fn a_result_told_only_in_structured_content_gives_its_json() {
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(json!({"temperature": 21}));
        let output = ToolOutput::Mcp { result: Ok(Arc::new(result)) };
        let value = output.to_format(OutputFormat::OpenAiResponses, "c");
        assert_eq!(value["output"], "{\"temperature\":21}");
        let failed = ToolOutput::Mcp { result: Err("tool call failed: timeout".into()) };
        let value = failed.to_format(OutputFormat::Anthropic, "c");
        assert_eq!(value["is_error"], true);
        assert_eq!(value["content"][0]["text"], "tool call failed: timeout");
    }

    #[test]
    fn a_function_output_with_items_keeps_its_images() {
        let output = ToolOutput::Function {
            content: SharedText::from("ignored when items exist".to_string()),
            content_items: Some(vec![
                ContentItem::InputText { text: "see".into() },
                ContentItem::InputImage { image_url: "data:image/png;base64,AAAA".into() },
                ContentItem::InputImage { image_url: "https://example.invalid/x.png".into() },
            ]),
            success: None,
        };
        insta::assert_json_snapshot!("provider_items", all_formats(&output));
    }
}
