//! The `mcp-router exec` contract: the JSON lines a host writes ([`ExecInput`], decoded once,
//! straight from the line's text) and the lines it reads besides events ([`ExecOutput`]).
//!
//! Input, one JSON object per line:
//! - a call: `{"call_id": "…", "name": "…", "arguments": "<JSON text>" | {…} | absent,
//!   "traceparent"?, "tracestate"?}` (the host's W3C trace context for the call); other fields
//!   (e.g. `"type": "function_call"` of a Responses API item) are ignored;
//! - `{"type": "list_tools", "format": "openai" | "anthropic"}` (format optional);
//! - `{"type": "take_notices"}`;
//! - `{"type": "reset_tools"}` (a new conversation: tool search's revealed tools are forgotten);
//! - `{"type": "list_skills"}` (every server's skills, for the host's prompt);
//! - `{"type": "ledger"}` (what MCP cost so far this run: the answer is `{"type": "ledger",
//!   "report": LedgerReport}`);
//! - `{"type": "end_turn"}` (the host's turn ended: its cost comes as the `mcp_turn_cost`
//!   event, and no answer line);
//! - `{"type": "list_prompts"}` and `{"type": "get_prompt", "server", "name", "arguments"?}`
//!   (prompts, for slash commands);
//! - `{"type": "cancel", "call_id": "…"}` (the host gives up a call in flight);
//! - `{"type": "read_ui_resource", "server", "uri"}` and `{"type": "call_app_tool", "server",
//!   "name", "arguments"?}` (MCP Apps: what an app the host renders asks of its server);
//! - `{"type": "tool_approval", "request": "…", "decision": "once" | "always" | "refuse",
//!   "reason"?}` (the answer to a `tool_approval_request` line);
//! - `{"type": "approve_definition", "server", "name"?}` (pin a held definition as it is now:
//!   the one named, or every one of the server's).

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
    /// A new conversation: forget the tools tool search revealed.
    ResetTools,
    /// Every server's skills (SEP-2640).
    ListSkills,
    /// What MCP cost so far this run (the ledger).
    Ledger,
    /// The host's turn ended: its cost as the `mcp_turn_cost` event.
    EndTurn,
    /// Every server's prompts.
    ListPrompts,
    /// One prompt, with arguments (an object of strings).
    GetPrompt {
        /// The server.
        server: String,
        /// The prompt's name.
        name: String,
        /// Its arguments, as the host wrote them.
        arguments: Option<Value>,
    },
    /// Give up the calls in flight with this id.
    Cancel {
        /// The call's id.
        call_id: String,
    },
    /// An app's `ui://` resource (MCP Apps).
    ReadUiResource {
        /// The server the app came from.
        server: String,
        /// The `ui://` URI.
        uri: String,
    },
    /// The host's answer to a `tool_approval_request` line.
    ToolApproval {
        /// The request it answers (its `request`).
        request: String,
        /// `once`, `always` or `refuse`, as the host wrote it (checked by the loop).
        decision: String,
        /// Why, for a refusal (given to the model).
        reason: Option<String>,
    },
    /// Pin `server`'s held definition `name` as it is now (every held one without a name), as
    /// `mcp-router trust approve` does: the model sees it again.
    ApproveDefinition {
        /// The server.
        server: String,
        /// The tool, prompt, resource template or skill (every held one when absent).
        name: Option<String>,
    },
    /// A tool call an app makes through the host (MCP Apps): its server's tools whose
    /// visibility names `"app"`.
    CallAppTool {
        /// The server the app came from.
        server: String,
        /// The tool's name on that server.
        name: String,
        /// Its arguments, as the host wrote them.
        arguments: Option<Value>,
    },
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
    /// The host's W3C `traceparent` for the call (and its `tracestate`), as written: every
    /// request the call makes carries it, so the server's work joins the host's trace.
    pub traceparent: Option<String>,
    /// The host's `tracestate`, with `traceparent`.
    pub tracestate: Option<String>,
}

/// A line that could not be taken: why, and the call id it carries when one can be read (then
/// the call still gets its one output, a failure with `message`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// `invalid input line: …`, with serde's words and position where it was JSON's fault.
    pub message: String,
    /// The line's `call_id` (a string, or an integer written as text), when it could be read.
    pub call_id: Option<String>,
}

/// One input line with the `id` a request line may carry (a string or a number; its answer
/// echoes it as written). A call line's `id`, if any, is ignored: a call is named by its
/// `call_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecLine {
    /// What the line asks.
    pub input: ExecInput,
    /// The request's `id`, when it has one.
    pub id: Option<Value>,
}

impl ExecLine {
    /// Decode one line (in one pass over its text); see [`ExecInput::parse`].
    pub fn parse(line: &str) -> Result<Self, Rejected> {
        let rejected = |message: String| Rejected { message, call_id: call_id_of(line) };
        match serde_json::from_str::<ExecLine>(line) {
            Ok(ExecLine { input: ExecInput::Call(call), .. })
                if call
                    .arguments
                    .as_ref()
                    .is_some_and(|a| !matches!(a, Value::String(_) | Value::Object(_))) =>
            {
                let other = call.arguments.unwrap_or_default();
                Err(Rejected {
                    message: format!(
                        "invalid input line: `arguments` must be a JSON string or object, got {other}"
                    ),
                    call_id: Some(call.call_id),
                })
            }
            Ok(ExecLine { input: input @ ExecInput::Call(_), .. }) => {
                Ok(ExecLine { input, id: None })
            }
            Ok(line) => Ok(line),
            Err(e) => Err(rejected(format!("invalid input line: {e}"))),
        }
    }
}

impl ExecInput {
    /// Decode one line (in one pass over its text). A call's `arguments` must be JSON text, an
    /// object, `null` or absent. A line that cannot be taken says why, with the call id it
    /// carries when that can be read before whatever is wrong (see [`call_id_of`]).
    pub fn parse(line: &str) -> Result<Self, Rejected> {
        ExecLine::parse(line).map(|line| line.input)
    }
}

/// The call id of a line, read as far as the line can be read: the first top-level `call_id`
/// whose value is a string or an integer (as text) and is complete before anything goes wrong.
pub fn call_id_of(line: &str) -> Option<String> {
    use serde::de::Deserializer as _;
    let mut found = None;
    let mut deserializer = serde_json::Deserializer::from_str(line);
    let _ = (&mut deserializer).deserialize_map(CallIdSeeker(&mut found));
    // A number is ended by the end of the line too: one right at the end of a line cut short
    // may be cut itself (`"call_id":1` of `1000000`), so it is not taken.
    let (id, number) = found?;
    (!(number && line.trim_end().ends_with(id.as_str()))).then_some(id)
}

/// Whether the call id [`call_id_of`] reads from `line` was written as a number (an answer
/// echoes it with its JSON type).
pub fn call_id_is_number(line: &str) -> bool {
    use serde::de::Deserializer as _;
    let mut found = None;
    let mut deserializer = serde_json::Deserializer::from_str(line);
    let _ = (&mut deserializer).deserialize_map(CallIdSeeker(&mut found));
    found.is_some_and(|(_, number)| number) && call_id_of(line).is_some()
}

/// Reads keys until `call_id`, keeps its value if it is an id (and whether it was a number),
/// and stops.
struct CallIdSeeker<'a>(&'a mut Option<(String, bool)>);

impl<'de> Visitor<'de> for CallIdSeeker<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key != "call_id" {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            *self.0 = match map.next_value::<Value>()? {
                Value::String(id) => Some((id, false)),
                Value::Number(n) if n.is_i64() || n.is_u64() => Some((n.to_string(), true)),
                _ => None,
            };
            // The first `call_id` decides; the rest of the line does not matter.
            return Err(de::Error::custom("found"));
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for ExecInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(InputVisitor).map(|line| line.input)
    }
}

impl<'de> Deserialize<'de> for ExecLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(InputVisitor)
    }
}

struct InputVisitor;

impl<'de> Visitor<'de> for InputVisitor {
    type Value = ExecLine;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a call or request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExecLine, A::Error> {
        let mut id: Option<Value> = None;
        let input = read_input(&mut map, &mut id)?;
        Ok(ExecLine { input, id })
    }
}

/// The fields a line may have, as read.
#[derive(Default)]
struct Fields {
    kind: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<Value>,
    format: Option<String>,
    server: Option<String>,
    uri: Option<String>,
    request: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    traceparent: Option<String>,
    tracestate: Option<String>,
}

/// The line's fields, into what it asks (and its `id`).
fn read_input<'de, A: MapAccess<'de>>(
    map: &mut A,
    id: &mut Option<Value>,
) -> Result<ExecInput, A::Error> {
    let mut f = Fields::default();
    while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
        match key.as_ref() {
            "type" => f.kind = map.next_value()?,
            // The first `call_id` is the call's (as `call_id_of` reads it).
            "call_id" => {
                let id = map.next_value::<String>()?;
                f.call_id.get_or_insert(id);
            }
            "name" => f.name = Some(map.next_value::<String>()?),
            "arguments" => f.arguments = map.next_value::<Option<Value>>()?,
            "format" => f.format = map.next_value::<Option<String>>()?,
            "traceparent" => f.traceparent = map.next_value::<Option<String>>()?,
            "tracestate" => f.tracestate = map.next_value::<Option<String>>()?,
            "server" => f.server = map.next_value::<Option<String>>()?,
            "uri" => f.uri = map.next_value::<Option<String>>()?,
            "request" => f.request = map.next_value::<Option<String>>()?,
            "decision" => f.decision = map.next_value::<Option<String>>()?,
            "reason" => f.reason = map.next_value::<Option<String>>()?,
            "id" => *id = map.next_value::<Option<RequestLineId>>()?.map(|i| i.0),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    f.into_input()
}

impl Fields {
    /// What a line of these fields asks: a request by its `type`, else a call.
    fn into_input<E: de::Error>(self) -> Result<ExecInput, E> {
        let need = |value: Option<String>, field: &'static str| {
            value.ok_or_else(|| E::missing_field(field))
        };
        Ok(match self.kind.as_deref() {
            Some("list_tools") => ExecInput::ListTools { format: self.format },
            Some("take_notices") => ExecInput::TakeNotices,
            Some("reset_tools") => ExecInput::ResetTools,
            Some("list_skills") => ExecInput::ListSkills,
            Some("ledger") => ExecInput::Ledger,
            Some("end_turn") => ExecInput::EndTurn,
            Some("list_prompts") => ExecInput::ListPrompts,
            Some("read_ui_resource") => ExecInput::ReadUiResource {
                server: need(self.server, "server")?,
                uri: need(self.uri, "uri")?,
            },
            Some("call_app_tool") => ExecInput::CallAppTool {
                server: need(self.server, "server")?,
                name: need(self.name, "name")?,
                arguments: self.arguments,
            },
            Some("tool_approval") => ExecInput::ToolApproval {
                request: need(self.request, "request")?,
                decision: need(self.decision, "decision")?,
                reason: self.reason,
            },
            Some("cancel") => ExecInput::Cancel { call_id: need(self.call_id, "call_id")? },
            Some("approve_definition") => ExecInput::ApproveDefinition {
                server: need(self.server, "server")?,
                name: self.name,
            },
            Some("get_prompt") => ExecInput::GetPrompt {
                server: need(self.server, "server")?,
                name: need(self.name, "name")?,
                arguments: self.arguments,
            },
            _ => ExecInput::Call(ExecCall {
                call_id: need(self.call_id, "call_id")?,
                name: need(self.name, "name")?,
                arguments: self.arguments,
                traceparent: self.traceparent,
                tracestate: self.tracestate,
            }),
        })
    }
}

/// A request line's `id`: a string or a number, as JSON-RPC has it.
struct RequestLineId(Value);

impl<'de> Deserialize<'de> for RequestLineId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            id @ (Value::String(_) | Value::Number(_)) => Ok(Self(id)),
            other => {
                Err(de::Error::custom(format!("`id` must be a string or a number, got {other}")))
            }
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
        /// With tool search on: the qualified names revealed so far, in the order they were
        /// appended to `tools` (absent when tool search is off).
        #[serde(skip_serializing_if = "Option::is_none")]
        revealed: Option<Vec<String>>,
    },
    /// The answer to `list_skills`: `{"type": "skills", "skills": […], "errors"?}`.
    Skills(crate::skills::Skills),
    /// The answer to `ledger`: `{"type": "ledger", "report": LedgerReport}`.
    Ledger {
        /// What MCP cost so far this run, per server and tool.
        report: Box<crate::LedgerReport>,
    },
    /// The answer to `list_prompts`: `{"type": "prompts", "prompts": […], "errors"?,
    /// }`.
    Prompts(crate::prompts::Prompts),
    /// The answer to `get_prompt`: the server's `GetPromptResult`.
    Prompt {
        /// The server.
        server: String,
        /// The prompt's name.
        name: String,
        /// `{"description"?, "messages": […]}` as the server sent it.
        result: rmcp::model::GetPromptResult,
    },
    /// The answer to `read_ui_resource`: the server's `ReadResourceResult`.
    UiResource {
        /// The server.
        server: String,
        /// The `ui://` URI.
        uri: String,
        /// `{"contents": […]}` as the server sent it.
        result: rmcp::model::ReadResourceResult,
    },
    /// The answer to `call_app_tool`: the server's `CallToolResult`.
    AppToolResult {
        /// The server.
        server: String,
        /// The tool's name.
        name: String,
        /// The tool's result as the server sent it.
        result: rmcp::model::CallToolResult,
    },
    /// A call to a tool whose approval policy is `ask` waits for the host: answer with a
    /// `tool_approval` line naming `request`.
    ToolApprovalRequest {
        /// The request's name, for the answer.
        request: String,
        /// What is asked.
        #[serde(flatten)]
        question: crate::trust::ToolApprovalQuestion,
    },
    /// The answer to `approve_definition`: the definitions pinned anew (none when nothing of
    /// that name was held).
    DefinitionsApproved {
        /// The server.
        server: String,
        /// The names pinned.
        approved: Vec<String>,
    },
    /// The answer to `reset_tools`: how many revealed tools were forgotten.
    ToolsReset {
        /// The number forgotten.
        forgotten: usize,
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
        /// The line's call id, when one could be read (that call also gets its output).
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// The input line it is about (1 for the first line); absent for an error that is not
        /// about a line.
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<u64>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_decode_once_into_calls_and_requests() {
        let call = |arguments| {
            ExecInput::Call(ExecCall {
                call_id: "1".into(),
                name: "x".into(),
                arguments,
                traceparent: None,
                tracestate: None,
            })
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
            (r#"{"type":"reset_tools"}"#, ExecInput::ResetTools),
            (r#"{"type":"list_skills"}"#, ExecInput::ListSkills),
            (r#"{"type":"cancel","call_id":"c9"}"#, ExecInput::Cancel { call_id: "c9".into() }),
            (
                r#"{"type":"tool_approval","request":"approval-1","decision":"refuse","reason":"no"}"#,
                ExecInput::ToolApproval {
                    request: "approval-1".into(),
                    decision: "refuse".into(),
                    reason: Some("no".into()),
                },
            ),
            (
                r#"{"type":"read_ui_resource","server":"s","uri":"ui://s/app.html"}"#,
                ExecInput::ReadUiResource { server: "s".into(), uri: "ui://s/app.html".into() },
            ),
            (
                r#"{"type":"call_app_tool","server":"s","name":"refresh","arguments":{"n":1}}"#,
                ExecInput::CallAppTool {
                    server: "s".into(),
                    name: "refresh".into(),
                    arguments: Some(serde_json::json!({"n": 1})),
                },
            ),
            (r#"{"type":"list_prompts"}"#, ExecInput::ListPrompts),
            (
                r#"{"type":"approve_definition","server":"calc","name":"add"}"#,
                ExecInput::ApproveDefinition { server: "calc".into(), name: Some("add".into()) },
            ),
            (
                r#"{"type":"approve_definition","server":"calc"}"#,
                ExecInput::ApproveDefinition { server: "calc".into(), name: None },
            ),
            (
                r#"{"type":"get_prompt","server":"s","name":"p","arguments":{"city":"Paris"}}"#,
                ExecInput::GetPrompt {
                    server: "s".into(),
                    name: "p".into(),
                    arguments: Some(serde_json::json!({"city": "Paris"})),
                },
            ),
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
            let rejected = ExecInput::parse(line).expect_err(line);
            assert_eq!(rejected.message, expected, "{line}");
        }
    }

    #[test]
    fn output_lines_keep_their_shapes() {
        let line = |o: &ExecOutput| serde_json::to_string(o).expect("json");
        assert_eq!(
            line(&ExecOutput::Error { message: "m".into(), call_id: None, line: Some(3) }),
            r#"{"type":"error","message":"m","line":3}"#
        );
        assert_eq!(
            line(&ExecOutput::Error { message: "m".into(), call_id: Some("c".into()), line: None }),
            r#"{"type":"error","message":"m","call_id":"c"}"#
        );
        assert_eq!(
            line(&ExecOutput::Notices { changed: Vec::new(), text: None }),
            r#"{"type":"notices","changed":[],"text":null}"#
        );
        assert_eq!(
            line(&ExecOutput::DefinitionsApproved {
                server: "calc".into(),
                approved: vec!["add".into()]
            }),
            r#"{"type":"definitions_approved","server":"calc","approved":["add"]}"#
        );
        assert_eq!(
            line(&ExecOutput::FunctionCallOutput {
                call_id: "c".into(),
                output: ToolOutput::failure("no")
            }),
            r#"{"type":"function_call_output","call_id":"c","output":{"type":"function","content":"no","success":false}}"#
        );
        let question = crate::trust::ToolApprovalQuestion {
            server: "calc".into(),
            tool: "add".into(),
            call_id: Some("c".into()),
            arguments: Some(serde_json::json!({"a": 1})),
            annotations: Some(serde_json::json!({"destructiveHint": false})),
            sha256: "ab".into(),
        };
        assert_eq!(
            line(&ExecOutput::ToolApprovalRequest { request: "approval-1".into(), question }),
            r#"{"type":"tool_approval_request","request":"approval-1","server":"calc","tool":"add","call_id":"c","arguments":{"a":1},"annotations":{"destructiveHint":false},"sha256":"ab"}"#
        );
    }

    #[test]
    fn a_call_id_written_as_a_number_is_told_apart() {
        assert!(call_id_is_number(r#"{"call_id":7,"name":"x"}"#));
        assert!(!call_id_is_number(r#"{"call_id":"7","name":"x"}"#));
        assert!(!call_id_is_number(r#"{"name":"x"}"#));
        // A number the line's end may have cut is not taken as an id at all.
        assert!(!call_id_is_number(r#"{"call_id":7"#));
    }

    #[test]
    fn a_request_line_may_carry_an_id_its_answer_echoes() {
        let parsed = |line: &str| ExecLine::parse(line).map_err(|r| r.message);
        assert_eq!(
            parsed(r#"{"type":"list_tools","id":7}"#),
            Ok(ExecLine { input: ExecInput::ListTools { format: None }, id: Some(7.into()) })
        );
        assert_eq!(
            parsed(r#"{"id":"a","type":"reset_tools"}"#),
            Ok(ExecLine { input: ExecInput::ResetTools, id: Some("a".into()) })
        );
        let call = parsed(r#"{"call_id":"1","name":"x","id":"ignored"}"#).expect("a call");
        assert_eq!(call.id, None, "a call is named by its call_id");
        let refused = parsed(r#"{"type":"list_tools","id":[1]}"#).expect_err("not an id");
        assert!(refused.contains("`id` must be a string or a number, got [1]"), "{refused}");
    }

    #[test]
    fn a_rejected_line_keeps_the_call_id_it_carries() {
        let cases: [(&str, Option<&str>); 9] = [
            (r#"{"call_id":"n1","name":"mcp__notes__echo","arguments":42}"#, Some("n1")),
            (r#"{"call_id":"n2","arguments":{}}"#, Some("n2")),
            (r#"{"call_id":"n3","name":"x","arguments":{"#, Some("n3")),
            (r#"{"name":"x","arguments":{"#, None),
            (r#"{"name":"x","arguments":{,"call_id":"late"}"#, None),
            (r#"{"call_id":7,"name":"x"}"#, Some("7")),
            (r#"{"call_id":{"a":1},"name":"x"}"#, None),
            (r#"{"call_id":"n4","call_id":"n5"}"#, Some("n4")),
            ("[1]", None),
        ];
        for (line, id) in cases {
            let rejected = ExecInput::parse(line).expect_err(line);
            assert_eq!(rejected.call_id.as_deref(), id, "{line}: {}", rejected.message);
        }
        let rejected = ExecInput::parse(cases[0].0).expect_err("rejected");
        assert_eq!(
            rejected.message,
            "invalid input line: `arguments` must be a JSON string or object, got 42"
        );
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        /// A JSON value of any kind, small.
        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                (-1e6f64..1e6).prop_map(Value::from),
                "[a-z\"\\\\ {}é\u{1F600}]{0,8}".prop_map(Value::from),
            ];
            leaf.prop_recursive(2, 8, 3, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                    prop::collection::vec(("[a-z_]{1,6}", inner), 0..3)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                ]
            })
        }

        /// A plausible line: an object of the keys a host writes (some repeated, any order,
        /// values of any kind), maybe cut short at some byte.
        fn line() -> impl Strategy<Value = (Vec<(String, Value)>, Option<usize>)> {
            let key = prop_oneof![
                Just("call_id"),
                Just("name"),
                Just("arguments"),
                Just("type"),
                Just("format"),
                Just("extra"),
            ];
            let id = prop_oneof![
                "[a-z0-9\"-]{0,6}".prop_map(Value::from),
                any::<u32>().prop_map(Value::from),
                value(),
            ];
            let field = (
                key,
                value(),
                id,
                prop_oneof![
                    Just(None),
                    Just(Some("function_call")),
                    Just(Some("list_tools")),
                    Just(Some("take_notices")),
                ],
            )
                .prop_map(|(key, value, id, kind)| {
                    let value = match key {
                        "call_id" => id,
                        "type" => kind.map_or(value, Value::from),
                        _ => value,
                    };
                    (key.to_string(), value)
                });
            (prop::collection::vec(field, 0..6), prop::option::of(0usize..200))
        }

        proptest! {
            /// Exactly one answer per readable call id: a call with that id, or a rejection
            /// that names it. Requests (`list_tools`, `take_notices`) are not calls.
            #[test]
            fn every_readable_call_id_is_answered((fields, cut) in line()) {
                let mut text = String::from("{");
                let mut id_end = None;
                let mut id = None;
                for (i, (key, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        text.push(',');
                    }
                    text.push_str(&serde_json::to_string(key).expect("key"));
                    text.push(':');
                    text.push_str(&serde_json::to_string(value).expect("value"));
                    if key == "call_id" && id_end.is_none() {
                        id_end = Some(text.len());
                        id = match value {
                            Value::String(s) => Some(s.clone()),
                            Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
                            _ => None,
                        };
                    }
                }
                text.push('}');
                let cut = cut.filter(|c| *c < text.len() && text.is_char_boundary(*c));
                if let Some(cut) = cut {
                    text.truncate(cut);
                }
                // A number cut right at its end may be cut itself: not readable.
                let numeric = fields.iter().find(|(k, _)| k == "call_id").is_some_and(|(_, v)| v.is_number());
                let readable = match (id_end, cut) {
                    (Some(end), Some(cut)) => cut > end || (cut == end && !numeric),
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                let expected = if readable { id } else { None };
                match ExecInput::parse(&text) {
                    Ok(ExecInput::Call(call)) => {
                        prop_assert_eq!(Some(call.call_id), expected, "{}", text);
                    }
                    Ok(_) => prop_assert!(cut.is_none(), "a cut line taken as a request: {}", text),
                    Err(rejected) => prop_assert_eq!(rejected.call_id, expected, "{}", text),
                }
            }
        }
    }
}
