//! What begin and end events carry of a call's arguments and result: everything up to
//! `event_payload_bytes` (default 256 KiB, as JSON), and beyond it a cut copy marked
//! `…_truncated: true` with the full size in `…_bytes`. A UI can hold every event; the output
//! the model gets is never touched here.

use std::sync::Arc;

use mcp_backend::json_len;
use rmcp::model::{CallToolResult, ContentBlock};
use router_protocol::{CallResult, SharedText};
use serde_json::Value;

/// `event_payload_bytes` when nothing sets it.
pub const DEFAULT_EVENT_PAYLOAD_BYTES: usize = 256 * 1024;

/// A payload as an event carries it, and its full size when that was cut.
pub(crate) struct Bounded<T> {
    pub(crate) value: T,
    /// `Some(full size)` when `value` is a cut copy.
    pub(crate) cut_from: Option<usize>,
}

/// The arguments as events carry them: as they are within `limit` bytes of JSON, otherwise the
/// first `limit` bytes of their JSON text, as a string.
pub(crate) fn arguments(
    arguments: Option<Arc<Value>>,
    limit: usize,
) -> Bounded<Option<Arc<Value>>> {
    let Some(value) = arguments else { return Bounded { value: None, cut_from: None } };
    if json_len_bound(&value, limit) <= limit {
        return Bounded { value: Some(value), cut_from: None };
    }
    let size = json_len(&*value);
    if size <= limit {
        return Bounded { value: Some(value), cut_from: None };
    }
    let text = serde_json::to_string(&*value).unwrap_or_default();
    let cut = Value::String(prefix(&text, limit).to_string());
    Bounded { value: Some(Arc::new(cut)), cut_from: Some(size) }
}

/// At least `value`'s JSON length (every string byte counted as a `\u00XX` escape, every
/// number as 24 characters), and past `cap` once it is known to be: a walk with no writing,
/// enough to tell that the usual arguments are within the limit.
fn json_len_bound(value: &Value, cap: usize) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(text) => text.len() * 6 + 2,
        Value::Array(items) => {
            let mut total = 2 + items.len();
            for item in items {
                total += json_len_bound(item, cap);
                if total > cap {
                    break;
                }
            }
            total
        }
        Value::Object(map) => {
            let mut total = 2 + map.len();
            for (key, item) in map {
                total += key.len() * 6 + 3 + json_len_bound(item, cap);
                if total > cap {
                    break;
                }
            }
            total
        }
    }
}

/// The end event's result: as it is within `limit` bytes (as JSON), otherwise a cut copy.
pub(crate) fn result(
    result: Result<CallResult, String>,
    limit: usize,
) -> Bounded<Result<CallResult, String>> {
    match result {
        Ok(CallResult::Text(text)) if text.len() > limit => Bounded {
            cut_from: Some(text.len()),
            value: Ok(CallResult::Text(SharedText::from(prefix(text.as_str(), limit)))),
        },
        Ok(CallResult::Call(call)) => {
            let size = json_len(call.as_ref());
            if size <= limit {
                return Bounded { value: Ok(CallResult::Call(call)), cut_from: None };
            }
            Bounded {
                value: Ok(CallResult::Call(Arc::new(cut(&call, limit)))),
                cut_from: Some(size),
            }
        }
        Err(message) if message.len() > limit => Bounded {
            cut_from: Some(message.len()),
            value: Err(prefix(&message, limit).to_string()),
        },
        other => Bounded { value: other, cut_from: None },
    }
}

/// A copy of `call` within about `limit` bytes: text blocks in order, cut where the budget
/// runs out; every other block described in one line (kind, MIME type, size);
/// `structuredContent` kept only when what is left holds it; `isError` kept.
fn cut(call: &CallToolResult, limit: usize) -> CallToolResult {
    // Room for the result's own JSON around its blocks (`{"content":[…],"isError":…}`).
    let mut left = limit.saturating_sub(96);
    let mut content = Vec::new();
    for block in &call.content {
        if left == 0 {
            break;
        }
        let block = match block {
            ContentBlock::Text(text) => text_within(&text.text, left),
            other => ContentBlock::text(describe(other, json_len(other))),
        };
        let size = json_len(&block);
        if size > left {
            break;
        }
        left -= size;
        content.push(block);
    }
    let mut copy = CallToolResult::success(content);
    copy.is_error = call.is_error;
    copy.result_type = call.result_type.clone();
    copy.structured_content =
        call.structured_content.as_ref().filter(|s| json_len(*s) <= left).cloned();
    copy
}

/// A text block of the longest prefix of `text` whose JSON fits `left` bytes: escapes (newlines,
/// quotes, control characters) can make the JSON up to six times the text, so the prefix
/// shrinks until it fits.
fn text_within(text: &str, left: usize) -> ContentBlock {
    // A block's JSON around its text: `{"type":"text","text":""}`, with room to spare.
    let mut room = left.saturating_sub(64);
    loop {
        let block = ContentBlock::text(prefix(text, room));
        let size = json_len(&block);
        if size <= left || room == 0 {
            return block;
        }
        // Shrink in proportion to the overshoot (and a little more, so it ends).
        room = (room as u128 * left as u128 / size as u128) as usize;
        room = room.saturating_sub(8);
    }
}

/// One line for a block the event leaves out.
fn describe(block: &ContentBlock, bytes: usize) -> String {
    let (kind, mime) = match block {
        ContentBlock::Image(image) => ("image", image.mime_type.as_str()),
        ContentBlock::Audio(audio) => ("audio", audio.mime_type.as_str()),
        ContentBlock::Resource(_) => ("embedded resource", ""),
        ContentBlock::ResourceLink(link) => {
            ("resource link", link.mime_type.as_deref().unwrap_or(""))
        }
        _ => ("content block", ""),
    };
    let mime = if mime.is_empty() { String::new() } else { format!(" {mime}") };
    format!("[{kind}{mime}, {bytes} bytes as JSON, left out of this event]")
}

/// The longest prefix of `text` within `limit` bytes, on a character boundary.
fn prefix(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_quick_bound_is_never_below_the_json_length() {
        let values = [
            json!(null),
            json!(true),
            json!(-1.5e300),
            json!(u64::MAX),
            json!(""),
            json!("\u{1}\"\\ é"),
            json!([]),
            json!([1, [2, {"a": "\n"}], null]),
            json!({"server": "s", "uri": "demo://a?q=\"x\"", "n": {"deep": [false]}}),
        ];
        for value in values {
            let exact = json_len(&value);
            assert!(json_len_bound(&value, usize::MAX) >= exact, "{value}");
            assert!(json_len_bound(&value, exact / 2) > exact / 2, "{value}: past the cap");
        }
    }

    #[test]
    fn payloads_within_the_limit_pass_as_they_are() {
        let args = Some(Arc::new(serde_json::json!({"text": "hi"})));
        let bounded = arguments(args.clone(), 100);
        assert!(bounded.value.as_ref().zip(args.as_ref()).is_some_and(|(a, b)| Arc::ptr_eq(a, b)));
        assert_eq!(bounded.cut_from, None);
        let call = Arc::new(CallToolResult::success(vec![ContentBlock::text("short")]));
        let bounded = result(Ok(CallResult::Call(call.clone())), 1_000);
        assert_eq!(bounded.cut_from, None);
        assert!(matches!(bounded.value, Ok(CallResult::Call(c)) if Arc::ptr_eq(&c, &call)));
    }

    #[test]
    fn big_payloads_are_cut_to_the_limit_and_say_their_size() {
        let big = "é".repeat(10_000);
        let bounded = arguments(Some(Arc::new(serde_json::json!({"text": big}))), 1_000);
        let Some(Value::String(shown)) = bounded.value.as_deref() else { panic!("a string") };
        assert!(shown.len() <= 1_000 && shown.starts_with("{\"text\":\"é"), "{shown}");
        assert_eq!(bounded.cut_from, Some(20_011));

        let mut call = CallToolResult::success(vec![
            ContentBlock::text("x".repeat(5_000)),
            ContentBlock::image("a".repeat(4_000), "image/png"),
        ]);
        call.structured_content = Some(serde_json::json!({"rows": "y".repeat(3_000)}));
        call.is_error = Some(true);
        let bounded = result(Ok(CallResult::Call(Arc::new(call.clone()))), 2_000);
        assert_eq!(bounded.cut_from, Some(json_len(&call)));
        let Ok(CallResult::Call(cut)) = bounded.value else { panic!("a call result") };
        assert!(json_len(cut.as_ref()) <= 2_000, "{}", json_len(cut.as_ref()));
        assert_eq!(cut.is_error, Some(true));
        assert_eq!(cut.structured_content, None);
        assert!(cut.content[0].as_text().is_some_and(|t| t.text.len() <= 2_000 - 64));

        let bounded = result(Ok(CallResult::Text(SharedText::from("z".repeat(3_000)))), 1_000);
        assert_eq!(bounded.cut_from, Some(3_000));
        assert!(matches!(bounded.value, Ok(CallResult::Text(t)) if t.len() == 1_000));
    }

    #[test]
    fn text_full_of_escapes_still_fills_the_event() {
        let call = CallToolResult::success(vec![ContentBlock::text("a\n\"b".repeat(100_000))]);
        let bounded = result(Ok(CallResult::Call(Arc::new(call))), 10_000);
        let Ok(CallResult::Call(cut)) = bounded.value else { panic!() };
        let size = json_len(cut.as_ref());
        let shown = cut.content.first().and_then(|b| b.as_text()).map_or(0, |t| t.text.len());
        assert!(size <= 10_000 && shown > 5_000, "{size} bytes of JSON, {shown} of text");
    }

    #[test]
    fn other_blocks_are_described_within_the_limit() {
        let call =
            CallToolResult::success(vec![ContentBlock::image("a".repeat(9_000), "image/png")]);
        let bounded = result(Ok(CallResult::Call(Arc::new(call))), 1_000);
        let Ok(CallResult::Call(cut)) = bounded.value else { panic!() };
        let text = cut.content[0].as_text().map(|t| t.text.clone()).unwrap_or_default();
        assert!(text.starts_with("[image image/png, "), "{text}");
        assert!(text.ends_with(" bytes as JSON, left out of this event]"), "{text}");
    }
}
