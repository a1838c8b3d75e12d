//! What the model gets of an MCP tool result: everything, byte for byte, while the result fits
//! `tool_result_budget_bytes` (text items, `structuredContent` as JSON, audio, embedded
//! resources) and its images fit `image_max_bytes` together. Beyond that, text is cut on a
//! character boundary with one sentence naming the kept part's URI and the next offset,
//! `structuredContent` is replaced by `{"omitted": true, "bytes", "server", "uri"}`, images and
//! audio past the limits by a line saying where they are; the parts left out are kept
//! ([`crate::results::kept`]). Embedded resources follow the read rules.

use mcp_backend::json_len;
use rmcp::model::{
    AudioContent, CallToolResult, ContentBlock, EmbeddedResource, ImageContent, ResourceContents,
    TextContent,
};
use serde_json::json;

use crate::results::content::{ContentPolicy, decode_text_blob, floor_char_boundary, shape_blob};
use crate::results::kept::{PartSource, PartSpec, RESULTS_SERVER, part_uri};

/// How big a tool result is, as the budget counts it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Size {
    /// Text items, audio, embedded resources and links (as JSON), in bytes.
    content: usize,
    /// `structuredContent` as JSON.
    structured: usize,
    /// Images, decoded (as `image_max_bytes` counts them).
    images: usize,
    embedded: bool,
}

impl Size {
    pub(crate) fn of(result: &CallToolResult) -> Self {
        let mut size = Self::default();
        for block in &result.content {
            match block {
                ContentBlock::Text(text) => size.content += text.text.len(),
                ContentBlock::Image(image) => size.images += decoded_len(&image.data),
                ContentBlock::Audio(audio) => size.content += audio.data.len(),
                ContentBlock::Resource(_) => size.embedded = true,
                other => size.content += json_len(other),
            }
        }
        size.structured = result.structured_content.as_ref().map_or(0, json_len);
        size
    }

    /// Whether the model would get anything other than `result` as it is: it is over a budget,
    /// or it embeds a resource (those follow the read rules).
    pub(crate) fn needs_shaping(&self, policy: &ContentPolicy) -> bool {
        self.embedded
            || self.content + self.structured > policy.result_budget_bytes
            || self.images > policy.image_max_bytes
    }

    /// The bytes a kept copy of the result holds (about).
    pub(crate) fn kept_bytes(&self, result: &CallToolResult) -> usize {
        let embedded: usize = result
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Resource(e) => Some(resource_len(&e.resource)),
                _ => None,
            })
            .sum();
        self.content + self.structured + self.images + embedded
    }
}

/// Whether what is left out is kept, and where.
pub(crate) enum Keeping {
    /// Under this base URI.
    At(String),
    /// Not kept, for this reason (`None`: keeping is off).
    Not(Option<String>),
}

/// The model's result and the parts of the server's result it did not get whole.
pub(crate) struct Budgeted {
    pub(crate) result: CallToolResult,
    pub(crate) kept: Vec<PartSpec>,
}

struct Shaper<'a> {
    policy: &'a ContentPolicy,
    keeping: &'a Keeping,
    left: usize,
    images_left: usize,
    kept: Vec<PartSpec>,
}

/// Shape `raw` (measured as `size`) for the model within the budget.
pub(crate) fn shape(
    raw: &CallToolResult,
    size: &Size,
    policy: &ContentPolicy,
    keeping: &Keeping,
) -> Budgeted {
    let mut shaper = Shaper {
        policy,
        keeping,
        left: policy.result_budget_bytes,
        images_left: policy.image_max_bytes,
        kept: Vec::new(),
    };
    let content = raw.content.iter().enumerate().map(|(i, block)| shaper.block(i, block)).collect();
    let mut result = CallToolResult::success(content);
    result.is_error = raw.is_error;
    result.result_type = raw.result_type.clone();
    result.meta = raw.meta.clone();
    result.structured_content = raw.structured_content.as_ref().map(|value| {
        if size.structured <= shaper.left {
            shaper.left -= size.structured;
            return value.clone();
        }
        let bytes = size.structured;
        match shaper.keep(PartSource::Structured, true, "application/json", bytes) {
            Ok(uri) => {
                json!({"omitted": true, "bytes": bytes, "server": RESULTS_SERVER, "uri": uri})
            }
            Err(why) => json!({"omitted": true, "bytes": bytes, "note": why}),
        }
    });
    Budgeted { result, kept: shaper.kept }
}

impl Shaper<'_> {
    fn block(&mut self, i: usize, block: &ContentBlock) -> ContentBlock {
        match block {
            ContentBlock::Text(text) => ContentBlock::Text(self.text(i, text)),
            ContentBlock::Image(image) => self.image(i, image),
            ContentBlock::Audio(audio) => self.audio(i, audio),
            ContentBlock::Resource(embedded) => self.embedded(i, embedded),
            other => {
                self.left = self.left.saturating_sub(json_len(other));
                other.clone()
            }
        }
    }

    /// Record part `source` as kept; its URI, or why it is not kept.
    fn keep(
        &mut self,
        source: PartSource,
        text: bool,
        mime: &str,
        bytes: usize,
    ) -> Result<String, String> {
        match self.keeping {
            Keeping::At(base) => {
                let mime = mime.to_string();
                self.kept.push(PartSpec { source, text, mime, bytes });
                Ok(part_uri(base, source))
            }
            Keeping::Not(why) => Err(why.clone().unwrap_or_default()),
        }
    }

    /// `text` as it is, or cut to what is left with a sentence saying how to read the rest.
    fn cut(&mut self, i: usize, text: &str, mime: &str) -> Option<String> {
        if text.len() <= self.left {
            self.left -= text.len();
            return None;
        }
        let total = text.len();
        let cut = floor_char_boundary(text, self.left);
        self.left -= cut;
        let rest = match self.keep(PartSource::Content(i), true, mime, total) {
            Ok(uri) => format!(
                "; read_mcp_resource with server \"{RESULTS_SERVER}\", uri \"{uri}\" and offset {cut} returns the rest"
            ),
            Err(why) if why.is_empty() => String::new(),
            Err(why) => format!("; the rest was not kept: {why}"),
        };
        Some(format!("{}\n[truncated: {cut} of {total} bytes shown{rest}]", &text[..cut]))
    }

    fn text(&mut self, i: usize, text: &TextContent) -> TextContent {
        match self.cut(i, &text.text, "text/plain") {
            None => text.clone(),
            Some(cut) => {
                let mut shaped = TextContent::new(cut);
                shaped.meta = text.meta.clone();
                shaped.annotations = text.annotations.clone();
                shaped
            }
        }
    }

    /// A line standing for a media item the model does not get.
    fn left_out(
        &mut self,
        i: usize,
        kind: &str,
        mime: &str,
        data: &str,
        why: String,
    ) -> ContentBlock {
        let size = if kind == "image" { decoded_len(data) } else { data.len() };
        let line = match self.keep(PartSource::Content(i), false, mime, data.len()) {
            Ok(uri) => format!(
                "[{kind} {mime}, {size} bytes, not sent: {why}; read_mcp_resource with server \"{RESULTS_SERVER}\" and uri \"{uri}\" returns it]"
            ),
            Err(note) if note.is_empty() => {
                format!("[{kind} {mime}, {size} bytes, not sent: {why}]")
            }
            Err(note) => {
                format!("[{kind} {mime}, {size} bytes, not sent: {why}; it was not kept: {note}]")
            }
        };
        ContentBlock::text(line)
    }

    fn image(&mut self, i: usize, image: &ImageContent) -> ContentBlock {
        let size = decoded_len(&image.data);
        let max = self.policy.image_max_bytes;
        if size <= self.images_left {
            self.images_left -= size;
            return ContentBlock::Image(image.clone());
        }
        if size > max {
            let line = format!(
                "[image {}, {size} bytes, not sent: larger than image_max_bytes ({max} bytes)]",
                image.mime_type
            );
            return ContentBlock::text(line);
        }
        let why = format!("this result's images together are over image_max_bytes ({max} bytes)");
        self.left_out(i, "image", &image.mime_type, &image.data, why)
    }

    fn audio(&mut self, i: usize, audio: &AudioContent) -> ContentBlock {
        if audio.data.len() <= self.left {
            self.left -= audio.data.len();
            return ContentBlock::Audio(audio.clone());
        }
        let why = format!("over the result budget ({} bytes)", self.policy.result_budget_bytes);
        self.left_out(i, "audio", &audio.mime_type, &audio.data, why)
    }

    /// An embedded resource, as reads shape contents: textual blobs become text, texts are cut
    /// to what is left, images within the limit become image blocks, other blobs are described
    /// (or passed as base64 with `raw_blobs`, within what is left).
    fn embedded(&mut self, i: usize, embedded: &EmbeddedResource) -> ContentBlock {
        let decoded;
        let resource = match &embedded.resource {
            ResourceContents::BlobResourceContents { mime_type, .. }
                if mime_type.as_deref().is_some_and(crate::results::content::is_textual) =>
            {
                decoded = decode_text_blob(embedded.resource.clone());
                &decoded
            }
            other => other,
        };
        match resource {
            ResourceContents::TextResourceContents { uri, mime_type, text, meta } => {
                let mime = mime_type.as_deref().unwrap_or("text/plain");
                let cut = self.cut(i, text, mime);
                let unchanged = cut.is_none() && std::ptr::eq(resource, &embedded.resource);
                if unchanged {
                    return ContentBlock::Resource(embedded.clone());
                }
                let resource = ResourceContents::TextResourceContents {
                    uri: uri.clone(),
                    mime_type: mime_type.clone(),
                    text: cut.unwrap_or_else(|| text.clone()),
                    meta: meta.clone(),
                };
                ContentBlock::resource(resource)
            }
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                let image = mime_type.as_deref().is_some_and(|m| m.starts_with("image/"));
                if self.policy.raw_blobs && !image && blob.len() <= self.left {
                    self.left -= blob.len();
                    return ContentBlock::Resource(embedded.clone());
                }
                let mut unlimited = 0;
                match shape_blob(uri, mime_type.as_deref(), blob, self.policy, &mut unlimited) {
                    (_, Some(_)) => ContentBlock::image(
                        blob.trim().to_string(),
                        mime_type.clone().unwrap_or_default(),
                    ),
                    (described, None) => ContentBlock::text(described.to_string()),
                }
            }
            // A kind of contents this router does not know yet: passed on as the server sent it.
            _ => ContentBlock::Resource(embedded.clone()),
        }
    }
}

fn resource_len(resource: &ResourceContents) -> usize {
    match resource {
        ResourceContents::TextResourceContents { text, .. } => text.len(),
        ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
        other => json_len(other),
    }
}

/// Bytes of base64 `data` once decoded (padding and whitespace aside, about).
fn decoded_len(data: &str) -> usize {
    let data = data.trim_end().trim_end_matches('=');
    data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
