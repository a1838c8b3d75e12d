//! Payloads shared, not copied, between a call's end event and the output the model receives:
//! cloning one is a reference count, and each serializes exactly as the plain type it stands
//! for (a JSON string, an MCP `CallToolResult`).

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Text shared by reference count. Serialized as a JSON string. Built from a `String` without
/// copying it.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedText(Arc<String>);

impl SharedText {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `self` and `other` are the same allocation (not only equal text).
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for SharedText {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedText {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl From<String> for SharedText {
    fn from(text: String) -> Self {
        Self(Arc::new(text))
    }
}

impl From<&str> for SharedText {
    fn from(text: &str) -> Self {
        Self(Arc::new(text.to_string()))
    }
}

impl PartialEq<str> for SharedText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<String> for SharedText {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for SharedText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for SharedText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

/// The `Ok` result of an end event: an MCP tool's `CallToolResult`, or a resource tool's text
/// (serialized as a `CallToolResult` holding one text block, `isError: false`). Either way it
/// is the very payload the tool output holds, shared.
#[derive(Clone, Debug, PartialEq)]
pub enum CallResult {
    /// An MCP tool's result.
    Call(Arc<CallToolResult>),
    /// A resource tool's JSON text for the model.
    Text(SharedText),
}

impl CallResult {
    /// The result as an owned `CallToolResult` (a copy).
    pub fn to_call_tool_result(&self) -> CallToolResult {
        match self {
            Self::Call(result) => CallToolResult::clone(result),
            Self::Text(text) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(text.as_str())]);
                result.is_error = Some(false);
                result.result_type = None;
                result
            }
        }
    }

    /// The text of the result's text blocks, joined by newlines.
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.to_string(),
            Self::Call(result) => result
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text(text) => Some(text.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// Whether the result reports a failure (`isError: true`).
    pub fn is_error(&self) -> bool {
        match self {
            Self::Call(result) => result.is_error.unwrap_or(false),
            Self::Text(_) => false,
        }
    }
}

impl From<CallToolResult> for CallResult {
    fn from(result: CallToolResult) -> Self {
        Self::Call(Arc::new(result))
    }
}

/// `{"type": "text", "text": …}`, borrowing the text.
struct TextBlock<'a>(&'a str);

impl Serialize for TextBlock<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut block = serializer.serialize_struct("TextBlock", 2)?;
        block.serialize_field("type", "text")?;
        block.serialize_field("text", self.0)?;
        block.end()
    }
}

impl Serialize for CallResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Call(result) => result.serialize(serializer),
            Self::Text(text) => {
                let mut result = serializer.serialize_struct("CallToolResult", 2)?;
                result.serialize_field("content", &[TextBlock(text)])?;
                result.serialize_field("isError", &false)?;
                result.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for CallResult {
    /// What a `Text` result serializes to comes back as `Text`; anything else as `Call`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let result = CallToolResult::deserialize(deserializer)?;
        let plain = result.is_error == Some(false)
            && result.result_type.is_none()
            && result.structured_content.is_none()
            && result.meta.is_none()
            && result.content.len() == 1;
        if plain
            && let Some(block) = result.content.first()
            && let ContentBlock::Text(text) = block
            && text.meta.is_none()
            && text.annotations.is_none()
        {
            return Ok(Self::Text(SharedText::from(text.text.clone())));
        }
        Ok(Self::Call(Arc::new(result)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_results_serialize_as_the_call_tool_result_they_stand_for() {
        let text = "{\"resources\":[],\"note\":\"é \\\" \\n\"}";
        let shared = CallResult::Text(SharedText::from(text));
        let plain = shared.to_call_tool_result();
        assert_eq!(
            serde_json::to_string(&shared).expect("json"),
            serde_json::to_string(&plain).expect("json")
        );
        let back: CallResult =
            serde_json::from_str(&serde_json::to_string(&shared).expect("json")).expect("back");
        assert_eq!(back, shared);
        // A server's result stays a `Call`, whatever it holds.
        let call = CallResult::from(CallToolResult::success(vec![ContentBlock::text("x")]));
        let back: CallResult =
            serde_json::from_str(&serde_json::to_string(&call).expect("json")).expect("back");
        assert_eq!(back, call);
        assert_eq!(call.text(), "x");
    }

    #[test]
    fn shared_text_is_a_json_string_and_clones_share() {
        let text = SharedText::from("a\"b".to_string());
        assert_eq!(serde_json::to_string(&text).expect("json"), r#""a\"b""#);
        let copy = text.clone();
        assert!(copy.ptr_eq(&text));
        assert_eq!(copy, "a\"b");
        let back: SharedText = serde_json::from_str(r#""a\"b""#).expect("back");
        assert_eq!(back, text);
    }
}
