//! A request's line, written without rmcp's detour. rmcp 3.11 serializes every request's
//! params through a `serde_json::Value` (to find a `_meta` among them) and clones the request's
//! own `_meta` map (the progress token; in 2026-07-28 also the client's info and capabilities)
//! to merge the two: a read's line costs 9 allocations there in 2025-11-25 and 26 in
//! 2026-07-28 (`read_cost`), a tool call's more with its arguments. The frequent requests
//! (reads, tool calls, list pages, completions, subscriptions) are serialized here from the
//! same message with serde, byte for byte as rmcp writes them (the unit tests compare the two);
//! every other message goes through rmcp's serialization.

use std::sync::Arc;

use rmcp::model::{
    ClientRequest, Extensions, JsonObject, JsonRpcMessage, JsonRpcVersion2_0, MetaObject,
    RequestId, RequestMetaObject,
};
use rmcp::service::{RoleClient, TxJsonRpcMessage};
use serde::Serialize;
use serde::ser::SerializeMap as _;
use tokio::io::{AsyncWrite, AsyncWriteExt as _};

/// Most bytes of write buffer kept between messages (the read side's is `lines`' own).
const KEPT_WRITE_BYTES: usize = 64 * 1024;

/// The writing half of a client transport: each message one whole line, in the order the
/// sends take the lock, as rmcp's framed writer writes them — and, as there, a send dropped
/// half-way leaves the rest of its line to be written first by the next send.
pub(crate) struct Writer<W> {
    sink: Arc<tokio::sync::Mutex<Option<Sink<W>>>>,
}

struct Sink<W> {
    write: W,
    /// Bytes not yet written: the line being written (and the rest of a dropped send's).
    pending: Vec<u8>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Writer<W> {
    pub(crate) fn new(write: W) -> Self {
        let sink = Sink { write, pending: Vec::new() };
        Self { sink: Arc::new(tokio::sync::Mutex::new(Some(sink))) }
    }

    pub(crate) fn send(
        &self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
        let sink = self.sink.clone();
        async move {
            let mut sink = sink.lock().await;
            let Some(sink) = sink.as_mut() else {
                let closed = "Transport is closed";
                return Err(std::io::Error::new(std::io::ErrorKind::NotConnected, closed));
            };
            let start = sink.pending.len();
            if let Err(e) = line(&mut sink.pending, item) {
                sink.pending.truncate(start);
                return Err(std::io::Error::other(e));
            }
            while !sink.pending.is_empty() {
                let written = sink.write.write(&sink.pending).await?;
                if written == 0 {
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                sink.pending.drain(..written);
            }
            if sink.pending.capacity() > KEPT_WRITE_BYTES {
                sink.pending = Vec::new();
            }
            sink.write.flush().await
        }
    }

    pub(crate) async fn close(&self) -> std::io::Result<()> {
        drop(self.sink.lock().await.take());
        Ok(())
    }
}

/// Appends the message to `out` as one line of JSON, its newline included.
fn line(out: &mut Vec<u8>, item: TxJsonRpcMessage<RoleClient>) -> serde_json::Result<()> {
    let start = out.len();
    match item {
        JsonRpcMessage::Request(mut request) => {
            if !direct(out, &request.id, &mut request.request)? {
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
) -> serde_json::Result<bool> {
    match request {
        ClientRequest::ReadResourceRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions)
        }
        ClientRequest::CallToolRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions)
        }
        ClientRequest::CompleteRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions)
        }
        ClientRequest::SubscribeRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions)
        }
        ClientRequest::UnsubscribeRequest(r) => {
            write(out, id, &r.method, Some(&mut r.params), &r.extensions)
        }
        ClientRequest::ListResourcesRequest(r) => {
            write(out, id, &r.method, r.params.as_mut(), &r.extensions)
        }
        ClientRequest::ListResourceTemplatesRequest(r) => {
            write(out, id, &r.method, r.params.as_mut(), &r.extensions)
        }
        ClientRequest::ListToolsRequest(r) => {
            write(out, id, &r.method, r.params.as_mut(), &r.extensions)
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
) -> serde_json::Result<bool> {
    if extensions.get::<MetaObject>().is_some() {
        // A legacy `MetaObject` extension: merged by rmcp in a third way; left to it.
        return Ok(false);
    }
    let request = extensions.get::<RequestMetaObject>().map(|m| &m.0.0);
    let Some(params) = params else {
        let meta = Merged { own: None, request };
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
    let meta = Merged { own: own.as_ref().map(|m| &m.0.0), request };
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

/// The params' own `_meta` with the request's over it: rmcp's merge, without its copy.
struct Merged<'a> {
    own: Option<&'a JsonObject>,
    request: Option<&'a JsonObject>,
}

impl Merged<'_> {
    fn is_empty(&self) -> bool {
        self.own.is_none() && self.request.is_none()
    }
}

impl Serialize for Merged<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let request = self.request;
        for (key, value) in self.own.into_iter().flatten() {
            map.serialize_entry(key, request.and_then(|r| r.get(key)).unwrap_or(value))?;
        }
        let own = self.own;
        for (key, value) in request.into_iter().flatten() {
            if !own.is_some_and(|o| o.contains_key(key)) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
