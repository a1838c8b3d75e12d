#![allow(deprecated)] // resources/subscribe: the router still sends it to 2025-11-25 servers.

use proptest::prelude::*;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientNotification, GetMeta as _,
    Implementation, InitializeRequest, InitializeRequestParams, ListResourcesRequest,
    NumberOrString, PaginatedRequestParams, ProgressToken, ProtocolVersion, ReadResourceRequest,
    ReadResourceRequestParams, RequestId, SubscribeRequest, SubscribeRequestParams,
};
use serde_json::json;

use super::*;

/// rmcp's own line for `item`.
fn rmcp_line(item: &TxJsonRpcMessage<RoleClient>) -> String {
    let mut out = serde_json::to_string(item).expect("rmcp serializes it");
    out.push('\n');
    out
}

/// Ours, with rmcp's beside it: they must be the same bytes.
fn both(item: TxJsonRpcMessage<RoleClient>) -> (String, String) {
    let expected = rmcp_line(&item);
    let mut ours = b"left before".to_vec();
    line(&mut ours, item).expect("serializes");
    let ours = String::from_utf8(ours).expect("utf-8");
    let ours = ours.strip_prefix("left before").expect("appended").to_string();
    (ours, expected)
}

fn request(id: RequestId, request: ClientRequest) -> TxJsonRpcMessage<RoleClient> {
    TxJsonRpcMessage::<RoleClient>::request(request, id)
}

/// What rmcp puts in a request's own `_meta` as it sends it: the progress token and, in
/// 2026-07-28, the client's context.
fn as_sent(mut r: ClientRequest, modern: bool) -> ClientRequest {
    let meta = r.get_meta_mut();
    if modern {
        meta.set_protocol_version(ProtocolVersion::V_2026_07_28);
        meta.set_client_info(Implementation::new("mcp-router", "0.1.0"));
        let mut capabilities = ClientCapabilities::default();
        let extensions = capabilities.extensions.get_or_insert_with(Default::default);
        extensions.insert("io.modelcontextprotocol/tasks".into(), Default::default());
        meta.set_client_capabilities(capabilities);
    }
    meta.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    r
}

fn read(uri: &str, own_meta: Option<serde_json::Value>) -> ClientRequest {
    let mut params = ReadResourceRequestParams::new(uri);
    if let Some(serde_json::Value::Object(map)) = own_meta {
        params.meta = Some(RequestMetaObject(MetaObject(map)));
    }
    ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params))
}

/// A request as a server would have it on the wire.
fn from_json(request: serde_json::Value) -> ClientRequest {
    serde_json::from_value(request).expect("a client request")
}

fn tool_call(arguments: serde_json::Value) -> ClientRequest {
    let serde_json::Value::Object(arguments) = arguments else { panic!("an object") };
    let params = CallToolRequestParams::new("echo").with_arguments(arguments);
    ClientRequest::CallToolRequest(CallToolRequest::new(params))
}

#[test]
fn the_frequent_requests_are_written_as_rmcp_writes_them() {
    let own = json!({"io.github.mcp-router/progress": 3, "progressToken": "theirs", "x": [1, 2.5]});
    let mut cases = Vec::new();
    for modern in [false, true] {
        for id in [RequestId::Number(41), RequestId::String("req-\"1\"".into())] {
            let requests = [
                read("demo://notes/welcome", None),
                read("file:///tmp/a b/\u{e9}\u{1f600}\n\t\"\\", None),
                read("demo://x", Some(own.clone())),
                read("demo://empty-meta", Some(json!({}))),
                tool_call(
                    json!({"text": "h\u{e9}llo", "n": 3, "f": 0.1, "nested": {"a": [null, true]}}),
                ),
                tool_call(json!({})),
                ClientRequest::ListResourcesRequest(ListResourcesRequest::default()),
                ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(
                    PaginatedRequestParams::default().with_cursor(Some("c\u{2028}1".into())),
                )),
                ClientRequest::SubscribeRequest(SubscribeRequest::new(
                    SubscribeRequestParams::new("demo://notes/welcome"),
                )),
                from_json(json!({"method": "completion/complete", "params": {
                    "ref": {"type": "ref/prompt", "name": "p"},
                    "argument": {"name": "a", "value": "v\u{e9}"},
                    "context": {"arguments": {"x": "y"}}
                }})),
                from_json(
                    json!({"method": "resources/unsubscribe", "params": {"uri": "demo://u"}}),
                ),
                from_json(json!({"method": "tools/list", "params": {"cursor": "t2"}})),
                from_json(json!({"method": "resources/templates/list"})),
            ];
            for r in requests {
                // These are written here, not by rmcp.
                let mut sent = as_sent(r.clone(), modern);
                assert!(
                    direct(&mut Vec::new(), &id, &mut sent, Added::default()).expect("written")
                );
                cases.push(request(id.clone(), r.clone()));
                cases.push(request(id.clone(), as_sent(r, modern)));
            }
        }
    }
    for case in cases {
        let (ours, expected) = both(case);
        assert_eq!(ours, expected);
    }
}

/// A read sent straight (without rmcp's `Peer`): the connection's client context and the
/// read's own entries are written where rmcp would have put them, around the params' own
/// `_meta` (whose keys may be the same).
#[test]
fn what_a_straight_read_adds_is_merged_as_rmcp_builds_it() {
    use crate::meta::LOG_LEVEL_KEY;
    let mut context = as_sent(read("demo://a", None), true).get_meta().clone().0.0;
    context.shift_remove("progressToken");
    // A context holding one of the read's own keys: the read's value, in the context's place.
    let mut crowded = context.clone();
    crowded.insert("progressToken".into(), json!("stale"));
    let id = RequestId::Number(1 << 32);
    let owns = [
        None,
        Some(json!({})),
        Some(json!({"progressToken": "theirs", "io.modelcontextprotocol/protocolVersion": "x"})),
        Some(json!({"traceparent": "00-1-2-01", LOG_LEVEL_KEY: "error"})),
    ];
    for own in owns {
        let added = [
            (None, None),
            (Some(&context), None),
            (Some(&context), Some("debug")),
            (Some(&crowded), Some("debug")),
        ];
        for (context, level) in added {
            // rmcp's way: the context, the progress token, the log level, in the request's meta.
            let mut theirs = read("demo://a \u{e9}", own.clone());
            let meta = theirs.get_meta_mut();
            meta.0.0.extend(context.cloned().into_iter().flatten());
            meta.set_progress_token(ProgressToken(id.clone()));
            if let Some(level) = level {
                meta.0.0.insert(LOG_LEVEL_KEY.to_string(), level.into());
            }
            let expected = rmcp_line(&request(id.clone(), theirs));
            let token = ("progressToken", serde_json::Value::from(1_i64 << 32));
            let entries = match level {
                Some(level) => vec![token, (LOG_LEVEL_KEY, level.into())],
                None => vec![token],
            };
            let mut ours = Vec::new();
            let context = context.cloned().map(Context::new);
            let added = Added { context: context.as_ref(), entries: &entries };
            let mut r = read("demo://a \u{e9}", own.clone());
            assert!(direct(&mut ours, &id, &mut r, added).expect("written"));
            ours.push(b'\n');
            assert_eq!(String::from_utf8(ours).expect("utf-8"), expected, "{own:?} {level:?}");
        }
    }
}

#[test]
fn other_messages_are_rmcp_s_own_lines() {
    let init = InitializeRequest::new(InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("c", "1"),
    ));
    let notification = ClientNotification::InitializedNotification(Default::default());
    for item in [
        request(RequestId::Number(1), ClientRequest::InitializeRequest(init)),
        TxJsonRpcMessage::<RoleClient>::notification(notification),
    ] {
        let (ours, expected) = both(item);
        assert_eq!(ours, expected);
    }
}

proptest! {
    #[test]
    fn any_uri_and_arguments_are_written_as_rmcp_writes_them(
        uri in any::<String>(),
        key in any::<String>(),
        text in any::<String>(),
        number in any::<f64>().prop_filter("finite", |f| f.is_finite()),
        modern in any::<bool>(),
    ) {
        let arguments = json!({ key: [text.clone(), number], "k": {"t": text} });
        for r in [read(&uri, None), tool_call(arguments.clone())] {
            let (ours, expected) = both(request(RequestId::Number(9), as_sent(r, modern)));
            prop_assert_eq!(ours, expected);
        }
    }
}

#[tokio::test]
async fn a_send_dropped_half_way_is_finished_by_the_next_and_a_closed_writer_says_so() {
    use tokio::io::AsyncBufReadExt as _;
    // A pipe that holds 16 bytes: the first line cannot be written whole before its send is
    // dropped.
    let (write, server) = tokio::io::duplex(16);
    let writer = Writer::new(write);
    let first = request(RequestId::Number(1), read("demo://a-long-enough-uri/first", None));
    let expected_first = rmcp_line(&first);
    let mut sending = Box::pin(writer.send(first));
    assert!(futures_poll_once(&mut sending).await.is_none(), "the pipe is full");
    drop(sending);
    let second = request(RequestId::Number(2), read("demo://second", None));
    let expected_second = rmcp_line(&second);
    let sent = tokio::spawn(writer.send(second));
    let mut lines = tokio::io::BufReader::new(server).lines();
    let within = std::time::Duration::from_secs(10);
    let mut next = async || {
        let line = tokio::time::timeout(within, lines.next_line()).await.expect("a line in time");
        line.expect("read").expect("a line")
    };
    let (one, two) = (next().await, next().await);
    sent.await.expect("joined").expect("sent");
    assert_eq!(format!("{one}\n"), expected_first);
    assert_eq!(format!("{two}\n"), expected_second);

    writer.close().await.expect("closed");
    let third = request(RequestId::Number(3), read("demo://third", None));
    let error = writer.send(third).await.expect_err("closed");
    assert_eq!(error.kind(), std::io::ErrorKind::NotConnected);
}

/// Polls `future` once: its output if it is ready.
async fn futures_poll_once<F: std::future::Future + Unpin>(future: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut *future).poll(cx) {
            std::task::Poll::Ready(out) => Some(out),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

/// A pipe end that counts the writes made to it.
struct Counted<W> {
    inner: W,
    writes: Arc<std::sync::atomic::AtomicUsize>,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Counted<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if polled.is_ready() {
            self.writes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Sends at once are combined: every line arrives whole, once, in the order of the sends,
/// in fewer writes than sends.
#[tokio::test]
async fn sends_at_once_are_written_whole_in_order_and_combined() {
    use tokio::io::AsyncBufReadExt as _;
    let writes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (write, server) = tokio::io::duplex(1 << 20);
    let writer = Writer::new(Counted { inner: write, writes: writes.clone() });
    let mut sends: Vec<_> = (0..200)
        .map(|i| writer.send(request(RequestId::Number(i), read(&format!("demo://r/{i}"), None))))
        .map(|send| Some(Box::pin(send)))
        .collect();
    // Polled in order, each until it is done: all at once, as on one task.
    std::future::poll_fn(|cx| {
        for slot in &mut sends {
            if let Some(send) = slot
                && let std::task::Poll::Ready(sent) = send.as_mut().poll(cx)
            {
                sent.expect("sent");
                *slot = None;
            }
        }
        match sends.iter().all(Option::is_none) {
            true => std::task::Poll::Ready(()),
            false => std::task::Poll::Pending,
        }
    })
    .await;
    let mut lines = tokio::io::BufReader::new(server).lines();
    for i in 0..200 {
        let line = lines.next_line().await.expect("read").expect("a line");
        let message: serde_json::Value = serde_json::from_str(&line).expect("whole json");
        assert_eq!(message["id"], i, "{line}");
    }
    let writes = writes.load(std::sync::atomic::Ordering::SeqCst);
    assert!(writes < 200, "{writes} writes for 200 sends");
}

/// The writing send dropped half-way while another's line waits in the queue (that send has
/// returned): both lines still go out, the first's rest first.
#[tokio::test]
async fn lines_queued_behind_a_dropped_writer_still_go_out() {
    use tokio::io::AsyncBufReadExt as _;
    let (write, server) = tokio::io::duplex(16);
    let writer = Writer::new(write);
    let first = request(RequestId::Number(1), read("demo://a-long-enough-uri/first", None));
    let mut writing = Box::pin(writer.send(first));
    assert!(futures_poll_once(&mut writing).await.is_none(), "the pipe is full");
    let second = request(RequestId::Number(2), read("demo://second", None));
    let queued = writer.send(second);
    tokio::time::timeout(std::time::Duration::from_secs(1), queued)
        .await
        .expect("a queued send returns at once")
        .expect("queued");
    drop(writing);
    let mut lines = tokio::io::BufReader::new(server).lines();
    for id in [1, 2] {
        let line = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line());
        let line = line.await.expect("in time").expect("read").expect("a line");
        let message: serde_json::Value = serde_json::from_str(&line).expect("whole json");
        assert_eq!(message["id"], id);
    }
}

/// A line past the message limit is refused whole, naming the limit: nothing of it reaches the
/// pipe, and the writer goes on with the next line.
#[tokio::test]
async fn a_line_over_the_limit_is_refused_and_nothing_of_it_is_written() {
    use tokio::io::AsyncBufReadExt as _;
    let (write, server) = tokio::io::duplex(1 << 16);
    let writer = Writer::new(write);
    let big = "x".repeat(crate::transport::wire::MAX_MESSAGE_BYTES);
    let refused = writer.send(request(RequestId::Number(1), read(&big, None))).await;
    let error = refused.expect_err("over the limit");
    let too_large = error.get_ref().and_then(|e| e.downcast_ref::<TooLarge>()).expect("TooLarge");
    assert_eq!(too_large.limit, crate::transport::wire::MAX_MESSAGE_BYTES);
    assert!(too_large.bytes > too_large.limit, "{}", too_large.bytes);
    assert!(error.to_string().contains("at most 67108864 bytes (64 MiB)"), "{error}");
    writer.send(request(RequestId::Number(2), read("demo://after", None))).await.expect("sent");
    let mut lines = tokio::io::BufReader::new(server).lines();
    let line = lines.next_line().await.expect("read").expect("a line");
    let message: serde_json::Value = serde_json::from_str(&line).expect("whole json");
    assert_eq!(message["id"], 2, "the refused line left nothing behind");
}
