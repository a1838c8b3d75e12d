//! The stdio client transport: newline-delimited JSON-RPC over a child's pipes, framed as rmcp's
//! `AsyncRwTransport` frames it (bounded lines, an over-long line dropped with the connection
//! kept, unparsable input ignored, a well-formed message of the wrong shape answered with
//! `Invalid Request`, non-MCP notifications ignored) and written as it writes them (the frequent
//! requests without its detour through a `Value`: `wire`). One difference: the answer to a
//! read, a tool call, a list page (resources, templates, tools, prompts), a prompt or a
//! completion is parsed as the result its request expects.
//! rmcp 3.11 parses every answer as its untagged `ServerResult`, trying the variants in order
//! and building an error for each miss: a 1 KiB read answer costs 4× the direct parse and a
//! tool answer 6.5×. An answer that does not parse as expected (an `input_required`
//! round, an error, a task) is parsed as rmcp would, and so is a tool answer that names a
//! `task`. Which request a line answers is read first: from its ends for a straight request's
//! answer (`straight::answer_by_ends`), else in a pass that builds nothing (`Peek`: a 1 KiB read
//! answer, framing included, 2.0 µs against rmcp's 4.6). An answer that also carries another
//! result's fields is taken as the result its request asked for (rmcp would take the other).

use std::collections::HashMap;

use rmcp::model::{
    ClientRequest, ErrorData, JsonRpcMessage, JsonRpcResponse, RequestId, ServerResult,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

/// The result an answer is parsed as first.
#[derive(Clone, Copy, Debug)]
enum Expected {
    Read,
    ToolCall,
    Resources,
    Templates,
    Tools,
    Prompts,
    Prompt,
    Completion,
}

impl Expected {
    /// What the answer to `request` is parsed as first, for the requests that are frequent or
    /// large (a page of a list is buffered whole by rmcp's parse before it is tried).
    fn of(request: &ClientRequest) -> Option<Self> {
        Some(match request {
            ClientRequest::ReadResourceRequest(_) => Self::Read,
            ClientRequest::CallToolRequest(_) => Self::ToolCall,
            ClientRequest::ListResourcesRequest(_) => Self::Resources,
            ClientRequest::ListResourceTemplatesRequest(_) => Self::Templates,
            ClientRequest::ListToolsRequest(_) => Self::Tools,
            ClientRequest::ListPromptsRequest(_) => Self::Prompts,
            ClientRequest::GetPromptRequest(_) => Self::Prompt,
            ClientRequest::CompleteRequest(_) => Self::Completion,
            _ => return None,
        })
    }
}

/// The answer on `line` as `T`, in its `ServerResult` variant; `None` when it is not one.
pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    line: &[u8],
    variant: fn(T) -> ServerResult,
) -> Option<RxJsonRpcMessage<RoleClient>> {
    let answer: JsonRpcResponse<T> = serde_json::from_slice(line).ok()?;
    Some(JsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: answer.jsonrpc,
        id: answer.id,
        result: variant(answer.result),
    }))
}

/// Most requests remembered for their answers; past it they are forgotten, and their answers
/// parsed as rmcp would (always right, only slower).
const MAX_EXPECTED: usize = 4096;

/// Most bytes of line buffer kept between messages.
const KEPT_BUFFER_BYTES: usize = 1 << 20;

/// The client transport over a child's stdout (`R`) and stdin (`W`) (every stdio connection
/// of the manager uses it; public for hosts that run a connection themselves, and the bench).
pub struct LineTransport<R, W: AsyncWrite> {
    read: BufReader<R>,
    /// The line being read; a read cancelled mid-line leaves its bytes here for the next.
    line: Vec<u8>,
    max_line: usize,
    /// The rest of an over-long line is being skipped (its ends kept).
    discarding: Option<Skipped>,
    /// The writing half (`wire`: the frequent requests written without rmcp's detour).
    write: crate::transport::wire::Writer<W>,
    expected: HashMap<RequestId, Expected>,
    /// Requests sent past rmcp (`straight`), whose answers are taken out of the stream here.
    straight: Option<std::sync::Arc<crate::transport::straight::Straight<W>>>,
}

impl<R, W: AsyncWrite> Drop for LineTransport<R, W> {
    fn drop(&mut self) {
        if let Some(straight) = &self.straight {
            straight.close();
        }
    }
}

/// One bounded line read.
enum Line {
    Whole,
    Oversized(Skipped),
    Eof,
    Io(std::io::Error),
}

/// The ends of a line over the limit, kept while the rest is skipped: enough to tell whose
/// answer it was.
#[derive(Default)]
struct Skipped {
    head: Vec<u8>,
    tail: Vec<u8>,
}

/// Bytes kept of each end of a skipped line.
const SKIPPED_END: usize = 96;

impl Skipped {
    fn saw(&mut self, bytes: &[u8]) {
        let room = SKIPPED_END.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        let keep = bytes.len().min(SKIPPED_END);
        self.tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        let excess = self.tail.len().saturating_sub(SKIPPED_END);
        self.tail.drain(..excess);
    }

    /// The id of the request the line answered, when the line is an answer whose id stands
    /// where SDKs write it: first (`{"jsonrpc":"2.0","id":…,` as rmcp and Python's SDK write)
    /// or last (`…,"jsonrpc":"2.0","id":…}` as TypeScript's SDK writes). Nothing else is
    /// guessed: an id found in the middle could be the result's own.
    fn answered(&self) -> Option<RequestId> {
        const KEY: &[u8] = br#""jsonrpc":"2.0","id":"#;
        let head = trimmed(&self.head);
        let first = head.strip_prefix(b"{").and_then(|h| h.strip_prefix(KEY));
        let from_head = first.and_then(|rest| {
            let end = rest.iter().position(|b| *b == b',')?;
            Some(&rest[..end])
        });
        let tail = self.tail.trim_ascii_end();
        let from_tail = tail.strip_suffix(b"}").and_then(|t| {
            let at = t.windows(KEY.len()).rposition(|w| w == KEY)?;
            (at > 0 && t[at - 1] == b',').then(|| &t[at + KEY.len()..])
        });
        let id = from_head.or(from_tail)?;
        match serde_json::from_slice::<RequestId>(id).ok()? {
            id @ (RequestId::Number(_) | RequestId::String(_)) => Some(id),
        }
    }
}

/// The error answer that stands for an answer over the limit.
fn too_long_answer(id: &RequestId, max_line: usize) -> Vec<u8> {
    let message = format!(
        "the server's answer was more than {max_line} bytes ({} MiB), the most one message may have; it was dropped",
        max_line >> 20
    );
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": message},
    });
    let mut line = answer.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// What an answer line says about itself, read without building it.
#[derive(Deserialize)]
struct Peek {
    id: Option<RequestId>,
    method: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
    result: Option<PeekResult>,
}

#[derive(Deserialize)]
struct PeekResult {
    task: Option<IgnoredAny>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport that takes lines up to `max_line` bytes (longer ones are dropped).
    pub fn new(read: R, write: W, max_line: usize) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            max_line,
            discarding: None,
            write: crate::transport::wire::Writer::new(write),
            expected: HashMap::new(),
            straight: None,
        }
    }

    /// The transport with requests sent past rmcp (`straight`): both share its writer.
    pub(crate) fn with_straight(
        read: R,
        write: W,
        max_line: usize,
        telemetry: std::sync::Arc<crate::telemetry::Telemetry>,
        progress: std::sync::Arc<crate::progress::Progress>,
    ) -> (Self, std::sync::Arc<crate::transport::straight::Straight<W>>) {
        let mut transport = Self::new(read, write, max_line);
        let writer = transport.write.clone();
        let straight = crate::transport::straight::Straight::new(writer, telemetry, progress);
        let straight = std::sync::Arc::new(straight);
        transport.straight = Some(straight.clone());
        (transport, straight)
    }

    /// What the line says about itself, read once, when a straight request or a remembered
    /// request waits for an answer (nothing otherwise).
    fn peek(&self) -> Option<Peek> {
        let straight = self.straight.as_ref().is_some_and(|s| s.waiting());
        if !straight && self.expected.is_empty() {
            return None;
        }
        serde_json::from_slice(trimmed(&self.line)).ok()
    }

    /// Hands the line to the straight request `peek` says it answers, if it is one's answer.
    fn answers_straight(&mut self, peek: Option<&Peek>) -> bool {
        let found = peek.filter(|p| p.method.is_none()).and_then(|peek| {
            let n = peek.id.as_ref().and_then(crate::transport::straight::ours)?;
            Some((n, peek.result.as_ref().is_some_and(|r| r.task.is_some())))
        });
        self.hand_over(found)
    }

    /// Hands the line to the straight request its ends say it answers, reading no further.
    fn answers_straight_by_ends(&mut self) -> bool {
        self.hand_over(crate::transport::straight::answer_by_ends(&self.line))
    }

    /// Gives the line to straight request `n` (`task`: it may name a task), when straight
    /// requests wait; `false`, the line kept, otherwise.
    fn hand_over(&mut self, found: Option<(i64, bool)>) -> bool {
        let Some(straight) = self.straight.as_ref().filter(|s| s.waiting()) else { return false };
        let Some((n, task)) = found else { return false };
        let line = std::mem::take(&mut self.line);
        straight.answer(n, crate::transport::straight::Answer { line, task });
        true
    }

    /// Reads one `\n`-terminated line into `self.line`, never past `max_line`. Cancel-safe:
    /// the bytes copied and the bytes consumed change together, with no await between.
    async fn read_line(&mut self) -> Line {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(e) => return Line::Io(e),
            };
            if available.is_empty() {
                return Line::Eof;
            }
            let newline = memchr::memchr(b'\n', available);
            let take = newline.map_or(available.len(), |at| at + 1);
            let outcome = if let Some(skipped) = &mut self.discarding {
                skipped.saw(&available[..take]);
                match newline {
                    Some(_) => self.discarding.take().map(Line::Oversized),
                    None => None,
                }
            } else if self.line.len().saturating_add(take) > self.max_line {
                let mut skipped = Skipped::default();
                skipped.saw(&self.line);
                skipped.saw(&available[..take]);
                self.line.clear();
                match newline {
                    Some(_) => Some(Line::Oversized(skipped)),
                    None => {
                        self.discarding = Some(skipped);
                        None
                    }
                }
            } else {
                self.line.extend_from_slice(&available[..take]);
                newline.map(|_| Line::Whole)
            };
            self.read.consume(take);
            if let Some(line) = outcome {
                return line;
            }
        }
    }

    /// The message on one whole line, if it is one to deliver.
    fn parse(&mut self, line: &[u8], peek: Option<Peek>) -> Option<RxJsonRpcMessage<RoleClient>> {
        let line = trimmed(line);
        if line.is_empty() {
            return None;
        }
        if let Some(answer) = peek.and_then(|peek| self.expected_answer(line, peek)) {
            return Some(answer);
        }
        match serde_json::from_slice(line) {
            Ok(message) => Some(message),
            Err(error) => {
                self.refuse(line, &error);
                None
            }
        }
    }

    /// The answer on `line` parsed as its request expects, when it is one and parses so.
    fn expected_answer(&mut self, line: &[u8], peek: Peek) -> Option<RxJsonRpcMessage<RoleClient>> {
        if self.expected.is_empty() {
            return None;
        }
        if peek.method.is_some() || peek.error.is_some() {
            // A request of the server's (its ids are its own), or an error: not for here,
            // though an error still ends the request it answers.
            if peek.method.is_none() {
                self.expected.remove(&peek.id?);
            }
            return None;
        }
        let expected = self.expected.remove(&peek.id?)?;
        match expected {
            Expected::Read => typed(line, ServerResult::ReadResourceResult),
            // A task is what rmcp would make of a tool answer that names one.
            Expected::ToolCall if peek.result?.task.is_some() => None,
            Expected::ToolCall => typed(line, ServerResult::CallToolResult),
            Expected::Resources => typed(line, ServerResult::ListResourcesResult),
            Expected::Templates => typed(line, ServerResult::ListResourceTemplatesResult),
            Expected::Tools => typed(line, ServerResult::ListToolsResult),
            Expected::Prompts => typed(line, ServerResult::ListPromptsResult),
            Expected::Prompt => typed(line, ServerResult::GetPromptResult),
            Expected::Completion => typed(line, ServerResult::CompleteResult),
        }
    }

    /// The server's output ended: straight requests waiting fail now; nothing more to deliver.
    fn ended(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        if let Some(straight) = &self.straight {
            straight.close();
        }
        None
    }

    /// A line that is no message: ignored when it is not JSON or is a notification outside
    /// MCP; otherwise answered with `Invalid Request` (as rmcp does).
    fn refuse(&mut self, line: &[u8], error: &serde_json::Error) {
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(line)
            && let Some(method) = value.get("method").and_then(serde_json::Value::as_str)
            && ignored_notification(value.get("id").is_none(), method)
        {
            return;
        }
        use serde_json::error::Category;
        match error.classify() {
            Category::Syntax | Category::Eof => {
                tracing::debug!("ignoring unparsable incoming message: {error}");
            }
            Category::Data | Category::Io => {
                tracing::debug!("protocol error on incoming message: {error}");
                let invalid = ErrorData::invalid_request("Invalid request", None);
                let sent = self.write.send(TxJsonRpcMessage::<RoleClient>::error(invalid, None));
                // Sent on its own task, so receiving stays cancel-safe.
                tokio::spawn(async move {
                    if let Err(e) = sent.await {
                        tracing::debug!("could not answer an invalid message: {e}");
                    }
                });
            }
        }
    }
}

impl<R, W> Transport<RoleClient> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && let Some(expected) = Expected::of(&request.request)
        {
            if self.expected.len() >= MAX_EXPECTED {
                self.expected.clear();
            }
            self.expected.insert(request.id.clone(), expected);
        }
        self.write.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.read_line().await {
                Line::Whole => {}
                Line::Oversized(skipped) => match skipped.answered() {
                    // An answer: its request fails at once, naming the limit, instead of
                    // waiting for its timeout; the connection is kept.
                    Some(id) => self.line = too_long_answer(&id, self.max_line),
                    None => {
                        tracing::warn!(
                            max_line_length = self.max_line,
                            "incoming message exceeded the maximum line length, discarding it"
                        );
                        continue;
                    }
                },
                // Bytes left in `line` are an unfinished last message: nothing to deliver.
                Line::Eof => return self.ended(),
                Line::Io(e) => {
                    tracing::error!("error reading from the server: {e}");
                    return self.ended();
                }
            }
            if self.answers_straight_by_ends() {
                continue;
            }
            let peek = self.peek();
            if self.answers_straight(peek.as_ref()) {
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let parsed = self.parse(&line, peek);
            self.line = line;
            self.line.clear();
            // One huge message does not keep its buffer for the connection's life.
            if self.line.capacity() > KEPT_BUFFER_BYTES {
                self.line.shrink_to(KEPT_BUFFER_BYTES);
            }
            if parsed.is_some() {
                return parsed;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.close().await
    }
}

/// A line without its newline (`\n` or `\r\n`) and a leading byte-order mark.
pub(crate) fn trimmed(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// rmcp's compatibility rule: a notification outside MCP (an editor's, say), or a
/// `notifications/…` method MCP does not define, is ignored rather than refused.
fn ignored_notification(is_notification: bool, method: &str) -> bool {
    const NOTIFICATIONS: &[&str] = &[
        "notifications/cancelled",
        "notifications/initialized",
        "notifications/message",
        "notifications/progress",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/roots/list_changed",
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
    ];
    const REQUESTS: &[&str] = &[
        "initialize",
        "ping",
        "server/discover",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "resources/templates/list",
        "subscriptions/listen",
        "tools/call",
        "tools/list",
        "completion/complete",
        "elicitation/create",
        "logging/setLevel",
        "roots/list",
        "sampling/createMessage",
    ];
    let standard_notification = NOTIFICATIONS.contains(&method);
    let standard = standard_notification || REQUESTS.contains(&method);
    (is_notification && !standard)
        || (method.starts_with("notifications/") && !standard_notification)
}

#[cfg(test)]
#[path = "lines_tests.rs"]
mod tests;
