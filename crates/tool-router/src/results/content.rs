//! What the model gets from resource contents: text within a byte budget (paged by offset,
//! cut on UTF-8 boundaries), images as image items (data URLs) within a size limit, other blobs
//! described (mimeType, size, SHA-256) unless raw base64 is asked for. The same rules apply to
//! embedded resources in MCP tool results ([`crate::results::budget`]).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{MetaObject, ResourceContents};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::invocation::ContentItem;

/// How contents are shaped for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContentPolicy {
    /// Most text bytes per read.
    pub(crate) read_budget_bytes: usize,
    /// Larger images are described instead of sent.
    pub(crate) image_max_bytes: usize,
    /// Send other blobs as base64 (as Codex does) instead of describing them.
    pub(crate) raw_blobs: bool,
    /// Most bytes of one list payload.
    pub(crate) list_budget_bytes: usize,
    /// Show list items whose audience leaves out the assistant.
    pub(crate) show_user_audience: bool,
    /// Most bytes one MCP tool result gives the model (see [`crate::results::budget`]).
    pub(crate) result_budget_bytes: usize,
    /// Linked resources up to this size are read and embedded after their link (0: never).
    pub(crate) inline_links_bytes: usize,
}

/// Paging facts of a read, added to the payload when a budget or offset applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Paging {
    /// Where the returned text starts (the requested offset, moved back to a character start).
    pub(crate) offset: usize,
    /// Text bytes of the whole resource.
    pub(crate) total_bytes: usize,
    /// Whether text was left out.
    pub(crate) truncated: bool,
    /// The offset to read next, if `truncated`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_offset: Option<usize>,
}

/// One entry of the payload's `contents`, serialized without copying the text.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum ShapedContent<'a> {
    /// Text in MCP's shape (`uri`, `mimeType`, `text`), possibly a slice of the original.
    Text {
        uri: &'a str,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<&'a str>,
        text: &'a str,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<&'a MetaObject>,
    },
    /// A blob, raw or described.
    Other(Value),
}

/// Shaped contents of one read (borrowing the read result).
pub(crate) struct ShapedRead<'a> {
    /// The payload's `contents`: MCP's shape for text; blobs raw or described.
    pub(crate) contents: Vec<ShapedContent<'a>>,
    /// Image items for the model.
    pub(crate) images: Vec<ContentItem>,
    /// Present when text was cut or an offset was asked for.
    pub(crate) paging: Option<Paging>,
}

/// Shape the contents of a read. `offset` and `max_bytes` come from the model (`max_bytes` can
/// only lower the budget). Blobs appear on the first page only.
pub(crate) fn shape_read<'a>(
    contents: &'a [ResourceContents],
    policy: &ContentPolicy,
    offset: usize,
    max_bytes: Option<usize>,
) -> Result<ShapedRead<'a>, String> {
    let budget = max_bytes.map_or(policy.read_budget_bytes, |m| m.min(policy.read_budget_bytes));
    let texts: Vec<&str> = contents
        .iter()
        .filter_map(|c| match c {
            ResourceContents::TextResourceContents { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let total: usize = texts.iter().map(|t| t.len()).sum();
    if offset > total {
        return Err(format!("offset {offset} is past the end of the text ({total} bytes)"));
    }
    let offset = global_char_start(&texts, offset);
    let mut shaped = ShapedRead { contents: Vec::new(), images: Vec::new(), paging: None };
    let mut start = 0; // global byte position of the current text item
    let mut remaining = budget;
    let mut end_of_returned = offset;
    for content in contents {
        match content {
            ResourceContents::TextResourceContents { uri, mime_type, text, meta } => {
                let item_start = start;
                start += text.len();
                if start <= offset && !(text.is_empty() && item_start == offset) {
                    continue;
                }
                let from = offset.saturating_sub(item_start);
                let to = floor_char_boundary(text, from.saturating_add(remaining).min(text.len()));
                if to <= from && !text.is_empty() {
                    continue;
                }
                remaining -= to - from;
                end_of_returned = item_start + to;
                shaped.contents.push(ShapedContent::Text {
                    uri,
                    mime_type: mime_type.as_deref(),
                    text: &text[from..to],
                    meta: meta.as_ref(),
                });
            }
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                if offset > 0 {
                    continue;
                }
                let (value, image) =
                    shape_blob(uri, mime_type.as_deref(), blob, policy, &mut remaining);
                shaped.contents.push(ShapedContent::Other(value));
                shaped.images.extend(image);
            }
            // A kind of content this router does not know yet: passed on as the server sent it.
            other => shaped.contents.push(ShapedContent::Other(json!(other))),
        }
    }
    shaped.paging = Paging::of(offset, total, end_of_returned);
    Ok(shaped)
}

impl Paging {
    /// The paging facts of a read that returned text from `offset` to `end` of `total` bytes;
    /// `None` when the whole text was returned from the start.
    pub(crate) fn of(offset: usize, total: usize, end: usize) -> Option<Self> {
        let truncated = end < total;
        (truncated || offset > 0).then_some(Self {
            offset,
            total_bytes: total,
            truncated,
            next_offset: truncated.then_some(end),
        })
    }
}

/// Blobs whose mimeType is textual (`text/*`, JSON, XML) and whose bytes are UTF-8 become text
/// contents, so they get the text rules (budget, paging, CSV import) instead of a description.
pub(crate) fn decode_text_blobs(contents: Vec<ResourceContents>) -> Vec<ResourceContents> {
    contents.into_iter().map(decode_text_blob).collect()
}

pub(crate) fn decode_text_blob(content: ResourceContents) -> ResourceContents {
    match content {
        ResourceContents::BlobResourceContents { uri, mime_type, blob, meta }
            if mime_type.as_deref().is_some_and(is_textual) =>
        {
            match STANDARD.decode(blob.trim()).ok().and_then(|b| String::from_utf8(b).ok()) {
                Some(text) => ResourceContents::TextResourceContents { uri, mime_type, text, meta },
                None => ResourceContents::BlobResourceContents { uri, mime_type, blob, meta },
            }
        }
        other => other,
    }
}

pub(crate) fn is_textual(mime: &str) -> bool {
    let mime = mime.split(';').next().unwrap_or(mime).trim().to_ascii_lowercase();
    mime.starts_with("text/")
        || matches!(mime.as_str(), "application/json" | "application/xml" | "application/yaml")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
}

/// A blob as the model should get it; and the image item, if it is one.
pub(crate) fn shape_blob(
    uri: &str,
    mime_type: Option<&str>,
    blob: &str,
    policy: &ContentPolicy,
    remaining: &mut usize,
) -> (Value, Option<ContentItem>) {
    let mime = mime_type.unwrap_or("application/octet-stream");
    let bytes = match STANDARD.decode(blob.trim()) {
        Ok(bytes) => bytes,
        Err(e) => {
            let value = json!({"uri": uri, "mimeType": mime, "error": format!("the server sent invalid base64: {e}")});
            return (value, None);
        }
    };
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    let described = |note: String| json!({"uri": uri, "mimeType": mime, "size": bytes.len(), "sha256": digest, "note": note});
    if mime.starts_with("image/") {
        if bytes.len() <= policy.image_max_bytes {
            let item = ContentItem::InputImage {
                image_url: format!("data:{mime};base64,{}", blob.trim()),
            };
            return (described("sent to the model as an image item".to_string()), Some(item));
        }
        let note = format!(
            "image larger than the image limit ({} bytes); not sent",
            policy.image_max_bytes
        );
        return (described(note), None);
    }
    if policy.raw_blobs {
        if blob.len() <= *remaining {
            *remaining -= blob.len();
            return (json!({"uri": uri, "mimeType": mime, "blob": blob}), None);
        }
        return (
            described("binary content larger than the read budget; not sent".to_string()),
            None,
        );
    }
    (
        described(
            "binary content not shown (set raw_blobs = true under [mcp_router] to receive base64)"
                .to_string(),
        ),
        None,
    )
}

/// The largest character boundary of `text` at or before `at`.
pub(crate) fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A global offset over the concatenated texts, moved back to the start of its character.
fn global_char_start(texts: &[&str], offset: usize) -> usize {
    let mut start = 0;
    for text in texts {
        if offset < start + text.len() {
            return start + floor_char_boundary(text, offset - start);
        }
        start += text.len();
    }
    offset
}

#[cfg(test)]
#[path = "content_tests.rs"]
mod tests;
