//! Reads and tool calls a caller writes itself onto a stdio server's stdin, whose answers the
//! transport hands back to it past rmcp's service loop.
//!
//! Through rmcp 3.11's `Peer`, a request goes to the service loop's task over a channel; the
//! loop builds the request's `_meta` (in 2026-07-28 a copy of the client's info and
//! capabilities, every time), registers a responder, and spawns the transport's send as a task
//! of its own, whose end wakes the loop once more; the answer is parsed by the loop and handed
//! over through the responder. A request sent straight is written by the caller's task (under
//! the same lock as rmcp's writes, see `wire::Writer`), with the connection's client context
//! serialized from one copy kept here (a tool call's with the tasks extension, as `telemetry`
//! declares it), and its answer line is taken out of the stream by the transport (`lines`) and
//! parsed by the caller as rmcp would (a tool call's as `call_tool_once` does). Nothing else
//! changes: every other request, and everything the server sends that is not such an answer,
//! goes through rmcp.
//!
//! The ids are numbers of our own, past any rmcp gives (`FIRST_ID`); each is
//! also the request's progress token. A request whose future is dropped (a timeout, a cancelled
//! call) tells the server with `notifications/cancelled`, as rmcp does. When the server's
//! output ends, or the transport is dropped, every request waiting fails as rmcp's would (the
//! connection closed), and later ones fail at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult,
    CancelledNotification, CancelledNotificationParam, ClientConfig, ClientNotification,
    ClientRequest, JsonRpcMessage, MetaObject, NumberOrString, ProgressToken, ProtocolVersion,
    ReadResourceRequest, ReadResourceRequestParams, ReadResourceResponse, RequestId,
    RequestMetaObject, ServerResult,
};
use rmcp::service::{RoleClient, ServiceError, TxJsonRpcMessage};
use rmcp::transport::DynamicTransportError;
use tokio::io::AsyncWrite;
use tokio::sync::oneshot;

use crate::meta::LOG_LEVEL_KEY;
use crate::progress::Progress;
use crate::telemetry::Telemetry;
use crate::transport::wire::ABANDONED;
use crate::transport::wire::{Added, Context, Writer};

/// Our ids (and progress tokens) count from here: rmcp's are a `u32`'s, so they never meet,
/// and every id stays a number any server reads exactly (below 2^53).
const FIRST_ID: i64 = 1 << 32;

/// One stdio connection's straight requests (reads and tool calls): the writer they share with
/// rmcp, and the requests waiting for their answers.
pub(crate) struct Straight<W> {
    writer: Writer<W>,
    state: Mutex<State>,
    /// How many reads wait (the transport looks at a line's id only while some do).
    count: AtomicUsize,
    next: AtomicI64,
    /// The per-request client context of a 2026-07-28 connection, as rmcp builds it.
    context: OnceLock<Context>,
    /// The same with the tasks extension, as a tool call carries it (`telemetry`).
    tool_context: OnceLock<Context>,
    telemetry: Arc<Telemetry>,
    progress: Arc<Progress>,
}

#[derive(Default)]
struct State {
    /// Fx: the ids are ours (see `progress`).
    waiting: HashMap<i64, oneshot::Sender<Answer>, rustc_hash::FxBuildHasher>,
    closed: bool,
}

/// An answer's whole line, and whether its result names a task (the transport's look at it).
pub(crate) struct Answer {
    pub(crate) line: Vec<u8>,
    pub(crate) task: bool,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Straight<W> {
    pub(crate) fn new(
        writer: Writer<W>,
        telemetry: Arc<Telemetry>,
        progress: Arc<Progress>,
    ) -> Self {
        Self {
            writer,
            state: Mutex::default(),
            count: AtomicUsize::new(0),
            next: AtomicI64::new(FIRST_ID),
            context: OnceLock::new(),
            tool_context: OnceLock::new(),
            telemetry,
            progress,
        }
    }

    /// After the handshake: the client context rmcp puts in every request of a connection
    /// whose revision has no `initialize` (2026-07-28), built with rmcp's own setters.
    pub(crate) fn negotiated(&self, version: &ProtocolVersion, info: &ClientConfig) {
        if version.has_initialize() {
            return;
        }
        let mut meta = RequestMetaObject::new();
        meta.set_protocol_version(version.clone());
        meta.set_client_info(info.client_info.clone());
        meta.set_client_capabilities(info.capabilities.clone());
        let mut with_tasks = meta.0.0.clone();
        crate::meta::add_tasks_extension(&mut with_tasks);
        let _ = self.context.set(Context::new(meta.0.0));
        let _ = self.tool_context.set(Context::new(with_tasks));
    }

    /// One `resources/read` round.
    pub(crate) async fn read(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ServiceError> {
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
        let answer = self.round(request, self.context.get()).await?;
        parse(&answer.line)
    }

    /// One `tools/call` round, answered as rmcp's `call_tool_once` answers it: the result, the
    /// server's request for input, the task it made, or its error.
    pub(crate) async fn call_tool(
        &self,
        params: CallToolRequestParams,
    ) -> Result<CallToolResponse, ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let answer = self.round(request, self.tool_context.get()).await?;
        parse_tool(&answer)
    }

    /// One request written with `context` in its `_meta` (2026-07-28), and its answer.
    async fn round(
        &self,
        mut request: ClientRequest,
        context: Option<&Context>,
    ) -> Result<Answer, ServiceError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        {
            let Ok(mut state) = self.state.lock() else {
                return Err(ServiceError::TransportClosed);
            };
            if state.closed {
                return Err(ServiceError::TransportClosed);
            }
            state.waiting.insert(n, answer);
            self.count.fetch_add(1, Ordering::SeqCst);
        }
        let id = RequestId::Number(n);
        let mut waiting = Waiting { straight: self, n, id: Some(id.clone()) };
        // The request's progress is its call's (when made for one), under its id as the token.
        let _tracked = self.progress.track_token(ProgressToken(id.clone()));
        // What the transport does to rmcp's requests: the span's key out of `_meta`.
        if let Some(meta) = crate::meta::params_meta(&mut request) {
            self.telemetry.written(meta, &id);
        }
        let level = context.and(self.telemetry.log_level());
        let token = ("progressToken", serde_json::Value::from(n));
        let entries = match level {
            Some(level) => &[token, (LOG_LEVEL_KEY, level.into())][..],
            None => &[token][..],
        };
        let added = Added { context, entries };
        if let Err(e) = self.writer.send_request(&id, &mut request, added).await {
            type Line<W> = crate::transport::lines::LineTransport<tokio::process::ChildStdout, W>;
            let e = DynamicTransportError::new::<Line<W>, RoleClient>(e);
            return Err(ServiceError::TransportSend(e));
        }
        let answer = answered.await.map_err(|_| ServiceError::TransportClosed)?;
        waiting.id = None;
        Ok(answer)
    }
}

impl<W> Straight<W> {
    /// Whether any read waits for its answer.
    pub(crate) fn waiting(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// The answer to request `n`; nothing when nobody waits for it any more.
    pub(crate) fn answer(&self, n: i64, answer: Answer) {
        if let Some(waiting) = self.forget(n) {
            let _ = waiting.send(answer);
        }
    }

    /// The server's output ended: every read waiting fails, later ones at once.
    pub(crate) fn close(&self) {
        let waiting = match self.state.lock() {
            Ok(mut state) => {
                state.closed = true;
                std::mem::take(&mut state.waiting)
            }
            Err(_) => return,
        };
        self.count.fetch_sub(waiting.len(), Ordering::SeqCst);
        drop(waiting);
    }

    fn forget(&self, n: i64) -> Option<oneshot::Sender<Answer>> {
        let answer = self.state.lock().ok()?.waiting.remove(&n);
        if answer.is_some() {
            self.count.fetch_sub(1, Ordering::SeqCst);
        }
        answer
    }
}

/// The straight request a line answers, read from its ends alone when it is written as the
/// SDKs write answers — rmcp's and Python's `{"jsonrpc":"2.0","id":N,"result":…` (or
/// `"error":`), TypeScript's `{"result":…,"jsonrpc":"2.0","id":N}` — and whether it may name
/// a task (`"task"` anywhere in it: a wrong yes costs only `parse_tool`'s slower parse).
/// `None` for any other line, which the transport's full look (`Peek`) reads. A line broken in
/// its middle is handed over all the same: its request fails at once as rmcp's would on an
/// unexpected answer, instead of waiting for its timeout.
pub(crate) fn answer_by_ends(line: &[u8]) -> Option<(i64, bool)> {
    const KEY: &[u8] = br#""jsonrpc":"2.0","id":"#;
    static TASK: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(br#""task""#));
    let line = crate::transport::lines::trimmed(line);
    let answer =
        |body: &[u8]| body.starts_with(br#""result":"#) || body.starts_with(br#""error":"#);
    let (digits, body) = match line.strip_prefix(b"{").and_then(|l| l.strip_prefix(KEY)) {
        Some(rest) => {
            let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let (digits, after) = rest.split_at(n);
            (digits, after.strip_prefix(b",").filter(|a| answer(a))?)
        }
        None => {
            let body = line.strip_prefix(b"{").filter(|b| answer(b))?.strip_suffix(b"}")?;
            let n = body.iter().rev().take_while(|b| b.is_ascii_digit()).count();
            let (body, digits) = body.split_at(body.len() - n);
            (digits, body.strip_suffix(KEY)?.strip_suffix(b",")?)
        }
    };
    let n: i64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    (n >= FIRST_ID).then(|| (n, TASK.find(body).is_some()))
}

/// The read an answer's id names, when it is one of ours.
pub(crate) fn ours(id: &RequestId) -> Option<i64> {
    match id {
        NumberOrString::Number(n) if *n >= FIRST_ID => Some(*n),
        _ => None,
    }
}

/// A read's answer line as rmcp would take it: the result, the server's request for input
/// (2026-07-28), or its error. Parsed as a read result first, as `lines` parses the answers it
/// expects.
fn parse(line: &[u8]) -> Result<ReadResourceResponse, ServiceError> {
    let line = crate::transport::lines::trimmed(line);
    let typed = crate::transport::lines::typed(line, ServerResult::ReadResourceResult);
    match typed.or_else(|| serde_json::from_slice(line).ok()) {
        Some(JsonRpcMessage::Response(answer)) => {
            crate::transport::wire::read_response(answer.result)
        }
        Some(JsonRpcMessage::Error(error)) => Err(ServiceError::McpError(error.error)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// The answer to a tool call as rmcp's `call_tool_once` takes it. A result that names a `task`
/// is parsed as rmcp parses any answer (its `ServerResult`, variant by variant), as the
/// transport does (`lines`); any other, as a tool's result first.
fn parse_tool(answer: &Answer) -> Result<CallToolResponse, ServiceError> {
    let line = crate::transport::lines::trimmed(&answer.line);
    let typed =
        (!answer.task).then(|| crate::transport::lines::typed(line, ServerResult::CallToolResult));
    match typed.flatten().or_else(|| serde_json::from_slice(line).ok()) {
        Some(JsonRpcMessage::Response(answer)) => match answer.result {
            ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
            ServerResult::InputRequiredResult(result) => {
                Ok(CallToolResponse::InputRequired(result))
            }
            ServerResult::CreateTaskResult(result) => Ok(CallToolResponse::Task(result)),
            other => contentless(other)
                .map(CallToolResponse::Complete)
                .ok_or(ServiceError::UnexpectedResponse),
        },
        Some(JsonRpcMessage::Error(error)) => Err(ServiceError::McpError(error.error)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// rmcp 3.11's reading (in `call_tool_once`) of a tool answer that parsed as another result
/// because it has no `content`: an empty result, a task's acknowledgement, or `_meta` alone,
/// taken as a tool result with nothing else.
fn contentless(result: ServerResult) -> Option<CallToolResult> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct MetaOnly {
        #[serde(rename = "_meta")]
        meta: MetaObject,
    }
    let (result_type, meta) = match result {
        ServerResult::EmptyResult(_) => (None, None),
        ServerResult::TaskAckResult(ack) => (Some(ack.result_type), ack.meta),
        ServerResult::CustomResult(custom) => {
            let MetaOnly { meta } = serde_json::from_value(custom.0).ok()?;
            (None, Some(meta))
        }
        _ => return None,
    };
    let mut answer = CallToolResult::default();
    (answer.result_type, answer.meta) = (result_type, meta);
    Some(answer)
}

/// A request in flight; dropped before its answer, it is forgotten and the server told.
struct Waiting<'a, W: AsyncWrite + Send + Unpin + 'static> {
    straight: &'a Straight<W>,
    n: i64,
    /// Until the answer came.
    id: Option<RequestId>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Drop for Waiting<'_, W> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        self.straight.forget(self.n);
        // As rmcp's: sent from a task of its own, as a drop cannot wait; without a runtime
        // nothing can be sent, and the connection is going away with it.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let cancelled = CancelledNotificationParam::new(Some(id), Some(ABANDONED.into()));
        let notification =
            ClientNotification::CancelledNotification(CancelledNotification::new(cancelled));
        let sent =
            self.straight.writer.send(TxJsonRpcMessage::<RoleClient>::notification(notification));
        runtime.spawn(async move {
            // The connection may be closing: then there is nobody to tell.
            let _ = sent.await;
        });
    }
}

#[cfg(test)]
#[path = "straight_tests.rs"]
mod tests;
