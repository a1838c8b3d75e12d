//! What `exec` writes on stdout: its one writer, which drains queued events before each output
//! line (so a call's end event comes before its output), and the lines it writes — an answer
//! with its request's `id`, a call id echoed as a number when the input wrote one.

use router_protocol::{EventReceiver, ExecOutput, OutputFormat};
use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use crate::live::ViewItem;

/// An output line for stdout, with the tool its call named (for the live view) and the `id`
/// of the request it answers.
pub(crate) struct Outgoing {
    pub(crate) line: ExecOutput,
    pub(crate) name: Option<String>,
    pub(crate) id: Option<Value>,
    /// The line's call id was written as a number: it is echoed as one.
    pub(crate) numeric_call_id: bool,
}

impl From<ExecOutput> for Outgoing {
    fn from(line: ExecOutput) -> Self {
        Self { line, name: None, id: None, numeric_call_id: false }
    }
}

impl Outgoing {
    /// The line as written: its `id` after its own fields, its call id a number when the
    /// input wrote one, a call's output also in `format` (as `formatted`) when asked.
    fn push(&self, buffer: &mut Vec<u8>, format: Option<OutputFormat>) {
        let formatted = match (&self.line, format) {
            (ExecOutput::FunctionCallOutput { call_id, output }, Some(format)) => {
                Some(output.to_format(format, call_id))
            }
            _ => None,
        };
        if (self.numeric_call_id || formatted.is_some())
            && let Ok(mut value) = serde_json::to_value(&self.line)
        {
            if let Some(formatted) = formatted {
                value["formatted"] = formatted;
            }
            let number =
                value["call_id"].as_str().and_then(|id| id.parse::<serde_json::Number>().ok());
            if let Some(number) = number.filter(|_| self.numeric_call_id) {
                value["call_id"] = Value::Number(number);
            }
            return push_line(buffer, &value);
        }
        match &self.id {
            Some(id) => push_line(buffer, &WithId { line: &self.line, id }),
            None => push_line(buffer, &self.line),
        }
    }
}

/// An answer line with its request's `id` after the answer's own fields.
#[derive(Serialize)]
struct WithId<'a> {
    #[serde(flatten)]
    line: &'a ExecOutput,
    id: &'a Value,
}

impl Outgoing {
    /// What the live view makes of it: outputs, error lines and the ledger (other answers to
    /// requests are not shown).
    fn view_item(&self) -> Option<ViewItem> {
        match &self.line {
            ExecOutput::FunctionCallOutput { call_id, output } => {
                let ok = output.is_success();
                Some(ViewItem::Output {
                    call_id: call_id.clone(),
                    name: self.name.clone(),
                    ok,
                    text: if ok { String::new() } else { crate::watch::output_text(output) },
                })
            }
            ExecOutput::Ledger { report } => Some(ViewItem::Ledger(report.clone())),
            ExecOutput::Error { message, call_id, line } => Some(ViewItem::Error {
                message: message.clone(),
                line: *line,
                call_id: call_id.clone(),
            }),
            _ => None,
        }
    }
}

/// The only writer of stdout. Before an output line it drains queued events, so a call's end
/// event (queued before its output) is always written first. Every line is serialized straight
/// into one reused buffer: a payload is written once for each line it appears in (the end
/// event and the output share it), never copied in between.
pub(crate) async fn write_lines(
    mut events: EventReceiver,
    mut outputs: mpsc::UnboundedReceiver<Outgoing>,
    view: Option<std::sync::mpsc::Sender<ViewItem>>,
    format: Option<OutputFormat>,
) {
    let mut stdout = tokio::io::stdout();
    let (mut events_open, mut outputs_open) = (true, true);
    let mut buffer = Vec::new();
    // The live view gets each event too (a clone shares the payloads; never blocks).
    let to_view = |event: &router_protocol::EventMsg| {
        if let Some(view) = &view {
            let _ = view.send(ViewItem::Event(event.clone()));
        }
    };
    // Until both end: the outputs when the last call and request are answered, the events when
    // the shutdown sent its last `mcp_server_stopped`.
    while events_open || outputs_open {
        buffer.clear();
        tokio::select! {
            biased;
            event = events.recv(), if events_open => match event {
                Some(event) => { push_line(&mut buffer, &event); to_view(&event); }
                None => { events_open = false; continue; }
            },
            output = outputs.recv(), if outputs_open => {
                while let Ok(event) = events.try_recv() {
                    push_line(&mut buffer, &event);
                    to_view(&event);
                }
                match output {
                    Some(output) => {
                        output.push(&mut buffer, format);
                        if let (Some(view), Some(item)) = (&view, output.view_item()) {
                            let _ = view.send(item);
                        }
                    }
                    None => outputs_open = false,
                }
            }
        };
        if stdout.write_all(&buffer).await.is_err() {
            break;
        }
        let _ = stdout.flush().await;
        // A huge payload's buffer is not kept for the rest of the session.
        if buffer.capacity() > 1 << 20 {
            buffer = Vec::new();
        }
    }
    let _ = stdout.flush().await;
}

/// Append `value` as one JSON line.
fn push_line<T: Serialize>(buffer: &mut Vec<u8>, value: &T) {
    let start = buffer.len();
    if let Err(e) = serde_json::to_writer(&mut *buffer, value) {
        buffer.truncate(start);
        let message = serde_json::json!({
            "type": "error",
            "message": format!("cannot serialize output: {e}"),
        });
        buffer.extend_from_slice(message.to_string().as_bytes());
    }
    buffer.push(b'\n');
}
