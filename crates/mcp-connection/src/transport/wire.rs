//! A request's line, written without rmcp's detour. rmcp 3.11 serializes every request's
//! params through a `serde_json::Value` (to find a `_meta` among them) and clones the request's
//! own `_meta` map (the progress token; in 2026-07-28 also the client's info and capabilities)
//! to merge the two: a read's line costs 9 allocations there in 2025-11-25 and 26 in
//! 2026-07-28 (`read_cost`), a tool call's more with its arguments. The frequent requests
//! (reads, tool calls, list pages, completions, subscriptions) are serialized here from the
//! same message with serde, byte for byte as rmcp writes them (the unit tests compare the two);
//! every other message goes through rmcp's serialization.

use std::sync::{Arc, PoisonError};

use rmcp::model::{
    ClientRequest, Extensions, JsonObject, JsonRpcMessage, JsonRpcVersion2_0, MetaObject,
    ReadResourceResponse, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{RoleClient, ServiceError, TxJsonRpcMessage};
use serde::Serialize;
use serde::ser::SerializeMap as _;
use tokio::io::{AsyncWrite, AsyncWriteExt as _};

/// Largest single message accepted from a server (rmcp's default is 16 MiB). Bigger messages
/// are dropped by the transport and the request runs into its timeout; what is accepted is
/// cut to the read budget before the model sees it.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The reason given to the server for a request nobody waits for any more (rmcp's own words).
pub(crate) const ABANDONED: &str = "request abandoned by the caller";

/// A read's answer as a round: the result, or the server's request for input (2026-07-28).
pub(crate) fn read_response(answer: ServerResult) -> Result<ReadResourceResponse, ServiceError> {
    match answer {
        ServerResult::ReadResourceResult(result) => Ok(ReadResourceResponse::Complete(result)),
        ServerResult::InputRequiredResult(required) => {
            Ok(ReadResourceResponse::InputRequired(required))
        }
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Most bytes of write buffer kept between messages (the read side's is `lines`' own).
const KEPT_WRITE_BYTES: usize = 64 * 1024;

/// The writing half of a client transport: each message one whole line, in the order of the
/// sends, as rmcp's framed writer writes them. Concurrent sends are combined: a send appends its
/// line to the queue and, unless another send is writing, writes what the queue holds until it
/// is empty (so 250 reads at once on one server make a few writes, not 250 turns of a lock);
/// a send whose line another one writes returns at once. A writing send dropped half-way leaves
/// the rest of its batch to be written first, by a task it starts.
pub(crate) struct Writer<W> {
    shared: Arc<Shared<W>>,
}

struct Shared<W> {
    queue: std::sync::Mutex<Queue>,
    /// The pipe and the batch being written; held by the writing send (and by `close`).
    sink: tokio::sync::Mutex<Option<Sink<W>>>,
}

#[derive(Default)]
struct Queue {
    /// Lines no send has taken to write yet.
    lines: Vec<u8>,
    /// A send is writing: it takes these lines too.
    writing: bool,
    closed: bool,
}

struct Sink<W> {
    write: W,
    /// Bytes taken from the queue and not yet written (the rest of a dropped send's first).
    batch: Vec<u8>,
}

/// Another handle on the same writer (its queue and its pipe).
impl<W> Clone for Writer<W> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone() }
    }
}

/// A message over the limit one line may have: refused before anything of it is written.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot take a request of {bytes} bytes: one message may have at most {limit} bytes ({} MiB); nothing was sent",
    .limit >> 20
)]
pub(crate) struct TooLarge {
    pub(crate) bytes: usize,
    pub(crate) limit: usize,
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotConnected, "Transport is closed")
}

impl<W: AsyncWrite + Send + Unpin + 'static> Writer<W> {
    pub(crate) fn new(write: W) -> Self {
        let sink = Sink { write, batch: Vec::new() };
        let shared =
            Shared { queue: Default::default(), sink: tokio::sync::Mutex::new(Some(sink)) };
        Self { shared: Arc::new(shared) }
    }

    pub(crate) fn send(
        &self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
        let queued = self.queue(|out| line(out, item));
        let shared = self.shared.clone();
        async move {
            if queued? {
                write_queued(shared).await?;
            }
            Ok(())
        }
    }

    /// One of the frequent requests, written directly with `added` (what rmcp's `Peer` would
    /// have put in its `_meta`; see `straight`: requests sent without the `Peer`).
    pub(crate) async fn send_request(
        &self,
        id: &RequestId,
        request: &mut ClientRequest,
        added: Added<'_>,
    ) -> std::io::Result<()> {
        let queued = self.queue(|out| {
            let start = out.len();
            if !direct(out, id, request, added)? {
                out.truncate(start);
                return Err(serde::ser::Error::custom("not a request written directly"));
            }
            out.push(b'\n');
            Ok(())
        });
        if queued? {
            write_queued(self.shared.clone()).await?;
        }
        Ok(())
    }

    /// Appends a line with `fill` (nothing on failure); `true` when this send is to write.
    fn queue(
        &self,
        fill: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
    ) -> std::io::Result<bool> {
        let mut queue = self.shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.closed {
            return Err(closed());
        }
        let start = queue.lines.len();
        if let Err(e) = fill(&mut queue.lines) {
            queue.lines.truncate(start);
            return Err(std::io::Error::other(e));
        }
        // A line past what a server is expected to read is not sent (nothing of it is written,
        // the connection stays as it was): the one request fails, naming the limit.
        let bytes = queue.lines.len() - start;
        if bytes > crate::transport::wire::MAX_MESSAGE_BYTES {
            queue.lines.truncate(start);
            let limit = crate::transport::wire::MAX_MESSAGE_BYTES;
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                TooLarge { bytes, limit },
            ));
        }
        Ok(!std::mem::replace(&mut queue.writing, true))
    }

    pub(crate) async fn close(&self) -> std::io::Result<()> {
        {
            let mut queue = self.shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.closed = true;
            queue.lines = Vec::new();
        }
        drop(self.shared.sink.lock().await.take());
        Ok(())
    }
}

/// Writes the batch left over and then the queue's lines until the queue is empty, as the one
/// writing send.
async fn write_queued<W: AsyncWrite + Send + Unpin + 'static>(
    shared: Arc<Shared<W>>,
) -> std::io::Result<()> {
    let mut writing = Writing { shared: shared.clone(), dropped: true };
    let mut sink = shared.sink.lock().await;
    let Some(sink) = sink.as_mut() else {
        writing.dropped = false;
        return Err(closed());
    };
    loop {
        if sink.batch.is_empty() {
            let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.lines.is_empty() {
                queue.writing = false;
                writing.dropped = false;
                return Ok(());
            }
            std::mem::swap(&mut queue.lines, &mut sink.batch);
        }
        let written = write_batch(sink).await;
        if sink.batch.capacity() > KEPT_WRITE_BYTES && sink.batch.is_empty() {
            sink.batch = Vec::new();
        }
        if let Err(e) = written {
            // The pipe failed: what is left waits for the next send, which will meet the
            // failure itself.
            shared.queue.lock().unwrap_or_else(PoisonError::into_inner).writing = false;
            writing.dropped = false;
            return Err(e);
        }
    }
}

async fn write_batch<W: AsyncWrite + Unpin>(sink: &mut Sink<W>) -> std::io::Result<()> {
    while !sink.batch.is_empty() {
        let written = sink.write.write(&sink.batch).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        sink.batch.drain(..written);
    }
    sink.write.flush().await
}

/// The writing send's role: dropped before the queue is empty (a timeout, a cancelled call),
/// it hands the rest to a task of its own, so the lines of the sends it was writing for go out.
struct Writing<W: AsyncWrite + Send + Unpin + 'static> {
    shared: Arc<Shared<W>>,
    dropped: bool,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Drop for Writing<W> {
    fn drop(&mut self) {
        if !self.dropped {
            return;
        }
        self.shared.queue.lock().unwrap_or_else(PoisonError::into_inner).writing = false;
        // Without a runtime nothing can be written, and the connection is going away with it.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let writer = Writer { shared: self.shared.clone() };
        runtime.spawn(async move {
            // An empty line: it takes the writing role unless another send has it already.
            let to_write = writer.queue(|_| Ok(()));
            if let Ok(true) = to_write {
                let _ = write_queued(writer.shared).await;
            }
        });
    }
}

/// What a request sent without rmcp's `Peer` adds to its `_meta`, in the order rmcp would
/// have built it: the connection's client context (2026-07-28), then entries of its own (the
/// progress token, a log level).
#[derive(Clone, Copy, Default)]
pub(crate) struct Added<'a> {
    pub(crate) context: Option<&'a Context>,
    pub(crate) entries: &'a [(&'static str, serde_json::Value)],
}

/// A connection's client context (2026-07-28), each value's JSON rendered once: a straight
/// request's `_meta` copies it, with no walk through its `Value`s each time.
pub(crate) struct Context {
    object: JsonObject,
    rendered: Option<Vec<(String, Box<serde_json::value::RawValue>)>>,
}

impl Context {
    pub(crate) fn new(object: JsonObject) -> Self {
        let render = |(k, v): (&String, &serde_json::Value)| {
            serde_json::value::to_raw_value(v).map(|raw| (k.clone(), raw))
        };
        let rendered = object.iter().map(render).collect::<Result<_, _>>().ok();
        Self { object, rendered }
    }
}

impl Added<'_> {
    fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

/// Appends the message to `out` as one line of JSON, its newline included.
fn line(out: &mut Vec<u8>, item: TxJsonRpcMessage<RoleClient>) -> serde_json::Result<()> {
    let start = out.len();
    match item {
        JsonRpcMessage::Request(mut request) => {
            if !direct(out, &request.id, &mut request.request, Added::default())? {
                out.truncate(start);
                serde_json::to_writer(
                    &mut *out,
                    &TxJsonRpcMessage::<RoleClient>::Request(request),
                )?;
            }
        }
        other => serde_json::to_writer(&mut *out, &other)?,
    }
    out.push(b'\n');
    Ok(())
}

/// The params types written directly: their own `_meta`, taken out before they are written.
trait OwnMeta: Serialize {
    fn meta(&mut self) -> &mut Option<RequestMetaObject>;
}

macro_rules! own_meta {
    ($($params:ty),* $(,)?) => {$(
        impl OwnMeta for $params {
            fn meta(&mut self) -> &mut Option<RequestMetaObject> {
                &mut self.meta
            }
        }
    )*};
}

own_meta!(
    rmcp::model::ReadResourceRequestParams,
    rmcp::model::CallToolRequestParams,
    rmcp::model::PaginatedRequestParams,
    rmcp::model::CompleteRequestParams,
    rmcp::model::SubscribeRequestParams,
    rmcp::model::UnsubscribeRequestParams,
);

/// Writes `request` into `out` when it is one of the frequent kinds and carries no metadata
/// rmcp would merge in a way not reproduced here; `false` otherwise (nothing written then).
fn direct(
    out: &mut Vec<u8>,
    id: &RequestId,
    request: &mut ClientRequest,
    added: Added<'_>,
) -> serde_json::Result<bool> {
    match request {
        ClientRequest::ReadResourceRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions, added)
        }
        ClientRequest::CallToolRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions, added)
        }
        ClientRequest::CompleteRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions, added)
        }
        ClientRequest::SubscribeRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions, added)
        }
        ClientRequest::UnsubscribeRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions, added)
        }
        ClientRequest::ListResourcesRequest(r) => {
            write(out, id, &r.method, r.params.as_mut(), &r.extensions, added)
        }
        ClientRequest::ListResourceTemplatesRequest(r) => {
            write(out, id, &r.method, r.params.as_mut(), &r.extensions, added)
        }
        ClientRequest::ListToolsRequest(r) => {
            write(out, id, &r.method, r.params.as_mut(), &r.extensions, added)
        }
        _ => Ok(false),
    }
}

/// `{"jsonrpc":"2.0","id":…,"method":…,"params":{"_meta":{…},…}}`, as rmcp's `WithMeta`
/// writes it: one `_meta` first (the params' own keys first, the request's overriding them),
/// then the params' other fields in their order.
fn write<M: Serialize, P: OwnMeta>(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: &M,
    params: Option<&mut P>,
    extensions: &Extensions,
    added: Added<'_>,
) -> serde_json::Result<bool> {
    if extensions.get::<MetaObject>().is_some() {
        // A legacy `MetaObject` extension: merged by rmcp in a third way; left to it.
        return Ok(false);
    }
    let request = extensions.get::<RequestMetaObject>().map(|m| &m.0.0);
    let Some(params) = params else {
        let meta = Merged { own: None, request, added };
        let line = Line {
            jsonrpc: JsonRpcVersion2_0,
            id,
            method,
            params: Params::<P> { meta, rest: None },
        };
        serde_json::to_writer(out, &line)?;
        return Ok(true);
    };
    // The params' own `_meta` is written in the merged one, not among their fields.
    let own = params.meta().take();
    let meta = Merged { own: own.as_ref().map(|m| &m.0.0), request, added };
    let line = Line {
        jsonrpc: JsonRpcVersion2_0,
        id,
        method,
        params: Params { meta, rest: Some(&*params) },
    };
    let written = serde_json::to_writer(out, &line);
    *params.meta() = own;
    written.map(|()| true)
}

/// A request's line.
#[derive(Serialize)]
struct Line<'a, M, P> {
    jsonrpc: JsonRpcVersion2_0,
    id: &'a RequestId,
    method: &'a M,
    params: Params<'a, P>,
}

/// A request's params: the merged `_meta`, then the params' own fields (none when absent).
#[derive(Serialize)]
struct Params<'a, P> {
    #[serde(rename = "_meta", skip_serializing_if = "Merged::is_empty")]
    meta: Merged<'a>,
    #[serde(flatten)]
    rest: Option<&'a P>,
}

/// The params' own `_meta` with the request's over it: rmcp's merge, without its copy. The
/// request's side is what a request sent without rmcp's `Peer` adds (the client context
/// first, its own entries last) around the request's own `_meta`, as rmcp builds it: a later
/// entry of a key already there takes its value, not its place.
struct Merged<'a> {
    own: Option<&'a JsonObject>,
    request: Option<&'a JsonObject>,
    added: Added<'a>,
}

impl Merged<'_> {
    fn is_empty(&self) -> bool {
        self.own.is_none()
            && self.request.is_none()
            && self.added.context.is_none()
            && self.added.entries.is_empty()
    }

    /// The request side's value of `key`.
    fn requested(&self, key: &str) -> Option<&serde_json::Value> {
        let context = || self.added.context.and_then(|c| c.object.get(key));
        self.added.get(key).or_else(|| self.request.and_then(|r| r.get(key))).or_else(context)
    }
}

impl Serialize for Merged<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let (own, request) = (self.own, self.request);
        let context = self.added.context.map(|c| &c.object);
        if let (None, None, Some(rendered)) =
            (own, request, self.added.context.map_or(Some(&[][..]), |c| c.rendered.as_deref()))
        {
            // A straight request's usual `_meta`: the context as rendered (an added entry of the
            // same key in its place), then the other added entries.
            for (key, raw) in rendered {
                match self.added.get(key) {
                    Some(value) => map.serialize_entry(key, value)?,
                    None => map.serialize_entry(key, &**raw)?,
                }
            }
            for (key, value) in self.added.entries {
                if !context.is_some_and(|c| c.contains_key(*key)) {
                    map.serialize_entry(key, value)?;
                }
            }
            return map.end();
        }
        for (key, value) in own.into_iter().flatten() {
            map.serialize_entry(key, self.requested(key).unwrap_or(value))?;
        }
        let new = |key: &str, earlier: &[Option<&JsonObject>]| {
            !earlier.iter().flatten().any(|m| m.contains_key(key))
        };
        for (key, value) in context.into_iter().flatten().filter(|(k, _)| new(k, &[own])) {
            map.serialize_entry(key, self.requested(key).unwrap_or(value))?;
        }
        for (key, value) in request.into_iter().flatten() {
            if new(key, &[own, context]) {
                map.serialize_entry(key, self.requested(key).unwrap_or(value))?;
            }
        }
        for (key, value) in self.added.entries {
            if new(key, &[own, context, request]) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
