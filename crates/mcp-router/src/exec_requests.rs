//! exec's request lines (everything but a call): each answer computed in its turn and written
//! in input order, echoing the line's `id`; a cancel and an approval's answer act at once.

use router_protocol::{ExecInput, ExecOutput};
use serde_json::Value;
use tokio::sync::mpsc;

use super::Session;
use crate::exec_host::approve;
use crate::exec_output::Outgoing;

impl Session {
    /// A request line: its answer is computed when the requests before it have been answered,
    /// and written in their order, echoing the line's `id` (a `cancel` acts at once and is
    /// answered only when it finds nothing to cancel).
    /// A request that acts at once (a cancel, an approval's answer); its error, if any.
    fn at_once(&self, input: ExecInput) -> Result<(), String> {
        match input {
            ExecInput::ToolApproval { request, decision, reason } => {
                self.host.answer(&request, &decision, reason)
            }
            ExecInput::Cancel { call_id } => self.cancel(&call_id),
            _ => Ok(()),
        }
    }

    pub(super) fn request(&self, number: u64, id: Option<Value>, input: ExecInput) {
        let answer = self.answer(number, input);
        let _ = self.requests.send(Queued { id, answer });
    }

    /// The answer to the request on input line `number`, to be awaited in its turn.
    fn answer(&self, number: u64, input: ExecInput) -> Answer {
        let running = self.running.clone();
        let error = move |message: String| {
            Some(ExecOutput::Error { message, call_id: None, line: Some(number) })
        };
        match input {
            ExecInput::ToolApproval { .. } | ExecInput::Cancel { .. } => {
                Box::pin(std::future::ready(self.at_once(input).err().and_then(error)))
            }
            ExecInput::ApproveDefinition { server, name } => approve(&running, server, name, error),
            ExecInput::ReadUiResource { server, uri } => Box::pin(async move {
                match running.router.read_ui_resource(&server, &uri).await {
                    Ok(result) => Some(ExecOutput::UiResource { server, uri, result }),
                    Err(e) => error(format!("resources/read failed: {e}")),
                }
            }),
            ExecInput::CallAppTool { server, name, arguments } => {
                match object("call_app_tool", arguments) {
                    Err(message) => Box::pin(std::future::ready(error(message))),
                    Ok(arguments) => Box::pin(async move {
                        match running.router.call_app_tool(&server, &name, arguments).await {
                            Ok(result) => Some(ExecOutput::AppToolResult { server, name, result }),
                            Err(e) => error(format!("tools/call failed: {e}")),
                        }
                    }),
                }
            }
            ExecInput::ListTools { format } => match tool_format(format.as_deref()) {
                Err(message) => Box::pin(std::future::ready(error(message))),
                Ok((name, format)) => Box::pin(async move {
                    let tools = running.router.tool_list(format).await;
                    let revealed = running.router.revealed_tools();
                    Some(ExecOutput::Tools { format: name, tools, revealed })
                }),
            },
            ExecInput::TakeNotices => Box::pin(async move {
                let (changed, text) = match running.router.take_resource_notice() {
                    Some(n) => (n.changed, Some(n.text)),
                    None => (Vec::new(), None),
                };
                Some(ExecOutput::Notices { changed, text })
            }),
            ExecInput::ListPrompts => {
                Box::pin(async move { Some(ExecOutput::Prompts(running.router.prompts().await)) })
            }
            ExecInput::GetPrompt { server, name, arguments } => {
                get_prompt(running, server, name, arguments, error)
            }
            ExecInput::EndTurn => Box::pin(async move {
                running.end_turn().await;
                None
            }),
            ExecInput::Ledger => Box::pin(async move {
                Some(ExecOutput::Ledger { report: Box::new(running.ledger().await) })
            }),
            ExecInput::ListSkills => {
                Box::pin(async move { Some(ExecOutput::Skills(running.router.skills().await)) })
            }
            ExecInput::ResetTools => Box::pin(async move {
                let forgotten = running.router.reset_revealed_tools();
                Some(ExecOutput::ToolsReset { forgotten })
            }),
            _ => Box::pin(std::future::ready(error(
                "invalid input line: a request this loop does not take".to_string(),
            ))),
        }
    }
}

/// `get_prompt`'s answer.
fn get_prompt(
    running: std::sync::Arc<crate::setup::Running>,
    server: String,
    name: String,
    arguments: Option<Value>,
    error: impl FnOnce(String) -> Option<ExecOutput> + Send + 'static,
) -> Answer {
    match object("get_prompt", arguments) {
        Err(message) => Box::pin(std::future::ready(error(message))),
        Ok(arguments) => Box::pin(async move {
            match running.router.get_prompt(&server, &name, arguments).await {
                Ok(result) => Some(ExecOutput::Prompt { server, name, result }),
                Err(e) => error(format!("prompts/get failed: {e}")),
            }
        }),
    }
}

/// A request's answer, computed when its turn comes (`None`: nothing to write).
type Answer = std::pin::Pin<Box<dyn std::future::Future<Output = Option<ExecOutput>> + Send>>;

/// A request waiting for its turn, with the `id` its answer echoes.
pub(super) struct Queued {
    id: Option<Value>,
    answer: Answer,
}

/// Answers the requests one after the other, in input order, each echoing its `id`.
pub(super) async fn answer_in_order(
    mut requests: mpsc::UnboundedReceiver<Queued>,
    out: mpsc::UnboundedSender<Outgoing>,
) {
    while let Some(Queued { id, answer }) = requests.recv().await {
        if let Some(line) = answer.await {
            let _ = out.send(Outgoing { line, name: None, id, numeric_call_id: false });
        }
    }
}

/// A request's `arguments`: absent, `null` or an object; anything else is refused with why.
fn object(
    request: &str,
    arguments: Option<Value>,
) -> Result<Option<serde_json::Map<String, Value>>, String> {
    match arguments {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(other) => Err(format!(
            "invalid request line: `arguments` of {request} must be an object, got {other}"
        )),
    }
}

/// `list_tools`' `format`: OpenAI's by default.
fn tool_format(format: Option<&str>) -> Result<(&'static str, tool_router::ToolFormat), String> {
    match format {
        None | Some("openai") => Ok(("openai", tool_router::ToolFormat::OpenAi)),
        Some("anthropic") => Ok(("anthropic", tool_router::ToolFormat::Anthropic)),
        Some(other) => Err(format!(
            "invalid request line: `format` must be \"openai\" or \"anthropic\", got {other:?}"
        )),
    }
}
