//! The `mcp-router exec` contract: the JSON lines a host writes ([`ExecInput`], decoded once,
//! straight from the line's text) and the lines it reads besides events ([`ExecOutput`]).
//!
//! Input, one JSON object per line:
//! - a call: `{"call_id": "…", "name": "…", "arguments": "<JSON text>" | {…} | absent}`; other
//!   fields (e.g. `"type": "function_call"` of a Responses API item) are ignored;
//! - `{"type": "list_tools", "format": "openai" | "anthropic"}` (format optional);
//! - `{"type": "take_notices"}`.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::{ResourceChange, ToolOutput};

/// One input line, decoded.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ExecInput {
    /// A tool call.
    Call(ExecCall),
    /// The tool specs as they are now, in `format` (`openai` when absent).
    ListTools {
        /// `openai` or `anthropic`, as the host wrote it (checked by the loop).
        format: Option<String>,
    },
    /// The pending "resources you read changed" notices.
    TakeNotices,
}

/// A call line.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecCall {
    /// The model's id for the call.
    pub call_id: String,
    /// The tool name.
    pub name: String,
    /// `arguments` as written: JSON text (a string), an object, or anything else (refused by
    /// the loop); `None` when absent or `null`.
    pub arguments: Option<Value>,
}

impl ExecInput {
    /// Decode one line (in one pass over its text). The error is the line's error message:
    /// `invalid input line: …` with serde's words and position.
    pub fn parse(line: &str) -> Result<Self, String> {
        serde_json::from_str(line).map_err(|e| format!("invalid input line: {e}"))
    }
}

impl<'de> Deserialize<'de> for ExecInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(InputVisitor)
    }
}

struct InputVisitor;

impl<'de> Visitor<'de> for InputVisitor {
    type Value = ExecInput;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a call or request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExecInput, A::Error> {
        let mut kind: Option<String> = None;
        let (mut call_id, mut name, mut arguments, mut format) = (None, None, None, None);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "type" => kind = map.next_value()?,
                "call_id" => call_id = Some(map.next_value::<String>()?),
                "name" => name = Some(map.next_value::<String>()?),
                "arguments" => arguments = map.next_value::<Option<Value>>()?,
                "format" => format = map.next_value::<Option<String>>()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match kind.as_deref() {
            Some("list_tools") => Ok(ExecInput::ListTools { format }),
            Some("take_notices") => Ok(ExecInput::TakeNotices),
            _ => Ok(ExecInput::Call(ExecCall {
                call_id: call_id.ok_or_else(|| de::Error::missing_field("call_id"))?,
                name: name.ok_or_else(|| de::Error::missing_field("name"))?,
                arguments,
            })),
        }
    }
}

/// One output line that is not an event.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExecOutput {
    /// A call's one output.
    FunctionCallOutput {
        /// The call's id.
        call_id: String,
        /// What the model gets.
        output: ToolOutput,
    },
    /// The answer to `list_tools`.
    Tools {
        /// `openai` or `anthropic`.
        format: &'static str,
        /// The specs in that format.
        tools: Vec<Value>,
    },
    /// The answer to `take_notices`.
    Notices {
        /// The resources that changed since they were read (each reported once).
        changed: Vec<ResourceChange>,
        /// The sentence for the model, when there is one.
        text: Option<String>,
    },
    /// A line that could not be taken, and why.
    Error {
        /// Why.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_decode_once_into_calls_and_requests() {
        let call = |arguments| {
            ExecInput::Call(ExecCall { call_id: "1".into(), name: "x".into(), arguments })
        };
        let cases = [
            (r#"{"call_id":"1","name":"x","arguments":"{}"}"#, call(Some(Value::from("{}")))),
            (
                r#"{"call_id":"1","name":"x","arguments":{"a":1}}"#,
                call(Some(serde_json::json!({"a": 1}))),
            ),
            (r#"{"type":"function_call","call_id":"1","name":"x","extra":[1]}"#, call(None)),
            (r#"{"call_id":"1","name":"x","arguments":null}"#, call(None)),
            (r#"{"type":"list_tools"}"#, ExecInput::ListTools { format: None }),
            (
                r#"{"format":"anthropic","type":"list_tools"}"#,
                ExecInput::ListTools { format: Some("anthropic".into()) },
            ),
            (r#"{"type":"take_notices"}"#, ExecInput::TakeNotices),
        ];
        for (line, expected) in cases {
            assert_eq!(ExecInput::parse(line), Ok(expected), "{line}");
        }
    }

    #[test]
    fn malformed_lines_say_why_with_serde_words() {
        for (line, expected) in [
            ("not json", "invalid input line: expected ident at line 1 column 2"),
            (r#"{"name":"x"}"#, "invalid input line: missing field `call_id` at line 1 column 12"),
            (
                r#"{"call_id":1,"name":"x"}"#,
                "invalid input line: invalid type: integer `1`, expected a string at line 1 column 12",
            ),
            (
                "[1]",
                "invalid input line: invalid type: sequence, expected a call or request object at line 1 column 0",
            ),
        ] {
            assert_eq!(ExecInput::parse(line).err().as_deref(), Some(expected), "{line}");
        }
    }

    #[test]
    fn output_lines_keep_their_shapes() {
        let line = |o: &ExecOutput| serde_json::to_string(o).expect("json");
        assert_eq!(
            line(&ExecOutput::Error { message: "m".into() }),
            r#"{"type":"error","message":"m"}"#
        );
        assert_eq!(
            line(&ExecOutput::Notices { changed: Vec::new(), text: None }),
            r#"{"type":"notices","changed":[],"text":null}"#
        );
        assert_eq!(
            line(&ExecOutput::FunctionCallOutput {
                call_id: "c".into(),
                output: ToolOutput::failure("no")
            }),
            r#"{"type":"function_call_output","call_id":"c","output":{"type":"function","content":"no","success":false}}"#
        );
    }
}
