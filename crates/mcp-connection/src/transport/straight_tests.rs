use std::time::Duration;

use rmcp::model::{JsonObject, ResourceContents};
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream};

use super::*;
use crate::client::RouterClient;
use crate::scripted::{self, Client, Server};
use crate::transport::lines::LineTransport;

/// An rmcp client on the router's stdio transport with straight reads, and its scripted
/// server.
async fn connected() -> (Client, Arc<Straight<DuplexStream>>, Server) {
    let (client, straight, server, _) = connected_with_progress().await;
    (client, straight, server)
}

async fn connected_with_progress() -> (Client, Arc<Straight<DuplexStream>>, Server, Arc<Progress>) {
    let progress = Arc::new(Progress::new(Duration::from_secs(1)));
    let client = RouterClient {
        progress: progress.clone(),
        ..scripted::router_client(Arc::new(crate::host::DefaultHost))
    };
    let (client, straight, server) = connected_as(client).await;
    (client, straight, server, progress)
}

/// [`connected`] with `router` as the connection's client side, its transport wrapped as the
/// manager wraps it (`Traced`, which handles progress and changes in order).
async fn connected_as(router: RouterClient) -> (Client, Arc<Straight<DuplexStream>>, Server) {
    let mut straight = None;
    let (client, server) = scripted::connected(|read, write| {
        let (telemetry, progress) = (router.telemetry.clone(), router.progress.clone());
        let (transport, made) =
            LineTransport::with_straight(read, write, 1 << 20, telemetry, progress);
        straight = Some(made);
        router.traced(transport)
    })
    .await;
    (client, straight.expect("made"), server)
}

fn read(
    straight: &Arc<Straight<DuplexStream>>,
    uri: &str,
) -> tokio::task::JoinHandle<Result<ReadResourceResponse, ServiceError>> {
    let (straight, params) = (straight.clone(), ReadResourceRequestParams::new(uri));
    tokio::spawn(async move { straight.read(params).await })
}

fn text_of(answer: Result<ReadResourceResponse, ServiceError>) -> String {
    let Ok(ReadResourceResponse::Complete(result)) = answer else {
        panic!("a complete read: {answer:?}");
    };
    let [ResourceContents::TextResourceContents { text, .. }] = &result.contents[..] else {
        panic!("one text: {result:?}");
    };
    text.clone()
}

fn contents(uri: &str, text: &str) -> Value {
    json!({"contents": [{"uri": uri, "text": text}]})
}

#[tokio::test]
async fn a_straight_read_is_answered_past_rmcp_beside_rmcp_own_requests() {
    let (client, straight, mut server) = connected().await;
    let straight_read = read(&straight, "demo://a");
    let request = server.next().await;
    assert_eq!(request["method"], "resources/read");
    assert_eq!(request["params"]["uri"], "demo://a");
    let id = request["id"].as_i64().expect("a numeric id");
    assert!(id >= FIRST_ID, "past rmcp's ids: {id}");
    assert_eq!(request["params"]["_meta"], json!({"progressToken": id}), "{request}");

    // rmcp's own read meanwhile, on the same connection: its id is rmcp's.
    let peer = client.peer().clone();
    let rmcp_read = tokio::spawn(async move {
        crate::client::direct::read_resource(&peer, ReadResourceRequestParams::new("demo://b"))
            .await
    });
    let rmcp_request = server.next().await;
    assert!(rmcp_request["id"].as_i64().is_some_and(|n| n < FIRST_ID), "{rmcp_request}");

    // Answered in the other order: each gets its own.
    server.answer(&rmcp_request["id"], contents("demo://b", "from rmcp")).await;
    server.answer(&request["id"], contents("demo://a", "straight")).await;
    assert_eq!(text_of(rmcp_read.await.expect("task")), "from rmcp");
    assert_eq!(text_of(straight_read.await.expect("task")), "straight");
    assert!(!straight.waiting());
}

#[tokio::test]
async fn errors_and_answers_of_the_wrong_kind_come_back_as_rmcp_gives_them() {
    let (_client, straight, mut server) = connected().await;
    let reading = read(&straight, "demo://missing");
    let request = server.next().await;
    let error = json!({"code": -32002, "message": "Resource not found", "data": {"uri": "x"}});
    server.send(json!({"jsonrpc": "2.0", "id": request["id"], "error": error})).await;
    match reading.await.expect("task") {
        Err(ServiceError::McpError(e)) => {
            assert_eq!((e.code.0, e.message.as_ref()), (-32002, "Resource not found"));
            assert_eq!(e.data, Some(json!({"uri": "x"})));
        }
        other => panic!("the server's error: {other:?}"),
    }
    let reading = read(&straight, "demo://a");
    let request = server.next().await;
    server.answer(&request["id"], json!({"tools": []})).await;
    let answer = reading.await.expect("task");
    assert!(matches!(answer, Err(ServiceError::UnexpectedResponse)), "{answer:?}");
}

#[tokio::test]
async fn an_abandoned_read_is_cancelled_at_the_server_and_its_late_answer_dropped() {
    let (client, straight, mut server) = connected().await;
    let abandoned = straight.read(ReadResourceRequestParams::new("demo://slow"));
    assert!(tokio::time::timeout(Duration::from_millis(50), abandoned).await.is_err());
    assert!(!straight.waiting());
    let request = server.abandoned("demo://slow").await;

    // The late answer reaches nobody; the connection goes on, straight and through rmcp.
    server.answer(&request["id"], contents("demo://slow", "late")).await;
    let reading = read(&straight, "demo://next");
    let next = server.next().await;
    server.answer(&next["id"], contents("demo://next", "next")).await;
    assert_eq!(text_of(reading.await.expect("task")), "next");
    let peer = client.peer().clone();
    let rmcp_read = tokio::spawn(async move {
        crate::client::direct::read_resource(&peer, ReadResourceRequestParams::new("demo://b"))
            .await
    });
    let rmcp_request = server.next().await;
    server.answer(&rmcp_request["id"], contents("demo://b", "b")).await;
    assert_eq!(text_of(rmcp_read.await.expect("task")), "b");
}

#[tokio::test]
async fn reads_waiting_fail_when_the_server_output_ends_and_later_ones_at_once() {
    let (_client, straight, mut server) = connected().await;
    let reading = read(&straight, "demo://a");
    assert_eq!(server.next().await["params"]["uri"], "demo://a");
    server.output.shutdown().await.expect("closed");
    drop(server.output);
    let answer = tokio::time::timeout(Duration::from_secs(5), reading).await;
    let answer = answer.expect("failed within 5 s").expect("task");
    assert!(matches!(answer, Err(ServiceError::TransportClosed)), "{answer:?}");
    let later = straight.read(ReadResourceRequestParams::new("demo://b"));
    let later = tokio::time::timeout(Duration::from_secs(1), later).await.expect("at once");
    assert!(matches!(later, Err(ServiceError::TransportClosed)), "{later:?}");
}

/// A read made for a model's call: its progress token is its id, nothing else goes in
/// `_meta`, and the server's progress for it is that call's until the read ends.
#[tokio::test]
async fn a_straight_read_s_progress_is_its_call_s() {
    let (_client, straight, mut server, progress) = connected_with_progress().await;
    let reading = tokio::spawn({
        let straight = straight.clone();
        let params = ReadResourceRequestParams::new("demo://slow");
        mcp_backend::with_call_id("c1", async move { straight.read(params).await })
    });
    let request = server.next().await;
    let id = request["id"].as_i64().expect("a numeric id");
    assert_eq!(request["params"]["_meta"], json!({"progressToken": id}), "{request}");
    let (events, mut heard) = router_protocol::event_channel();
    let token = ProgressToken(NumberOrString::Number(id));
    let note = rmcp::model::ProgressNotificationParam::new(token, 1.0);
    progress.notified("scripted", note, &events);
    match heard.try_recv() {
        Ok(router_protocol::EventMsg::McpToolCallProgress(event)) => {
            assert_eq!((event.call_id.as_str(), event.progress), ("c1", 1.0));
        }
        other => panic!("the call's progress: {other:?}"),
    }
    server.answer(&request["id"], contents("demo://slow", "done")).await;
    assert_eq!(text_of(reading.await.expect("task")), "done");
    let note =
        rmcp::model::ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(id)), 2.0);
    progress.notified("scripted", note, &events);
    assert!(heard.try_recv().is_err(), "no progress after the read ended");
}

fn call(
    straight: &Arc<Straight<DuplexStream>>,
    name: &'static str,
) -> tokio::task::JoinHandle<Result<CallToolResponse, ServiceError>> {
    let straight = straight.clone();
    let mut arguments = JsonObject::new();
    arguments.insert("text".into(), json!("hi"));
    let params = CallToolRequestParams::new(name).with_arguments(arguments);
    tokio::spawn(async move { straight.call_tool(params).await })
}

/// Every kind of answer a tool call can get comes back from a straight call as rmcp's own
/// `call_tool_once` gives it on the same connection: a result, a result without `content`
/// (empty, `_meta` alone), the server's request for input, a task, a result that names a
/// `task` the old way (rmcp 3.11 takes it as a result), an answer of another request's kind,
/// an error.
#[tokio::test]
async fn a_straight_tool_call_is_answered_as_rmcp_answers_it() {
    let (client, straight, mut server) = connected().await;
    let task = json!({
        "resultType": "task", "taskId": "t1", "status": "working",
        "createdAt": "2026-11-26T00:00:00Z", "lastUpdatedAt": "2026-11-26T00:00:00Z",
        "ttlMs": 60_000,
    });
    let cases = [
        ("complete", json!({"content": [{"type": "text", "text": "hi"}], "isError": false})),
        ("complete", json!({"structuredContent": {"n": 1}})),
        ("complete", json!({})),
        ("complete", json!({"_meta": {"k": "v"}})),
        ("input", json!({"resultType": "input_required", "requestState": "s1"})),
        ("task", task),
        ("complete", json!({"content": [], "task": {"taskId": "t2"}})),
        ("unexpected", json!({"tools": []})),
        ("error", json!({"code": -32602, "message": "no such tool", "data": {"name": "x"}})),
    ];
    for (kind, answer) in cases {
        let straight_call = call(&straight, "echo");
        let request = server.next().await;
        assert_eq!(request["method"], "tools/call");
        assert_eq!(request["params"]["name"], "echo");
        assert_eq!(request["params"]["arguments"], json!({"text": "hi"}));
        let id = request["id"].as_i64().expect("a numeric id");
        assert!(id >= FIRST_ID, "past rmcp's ids: {id}");
        assert_eq!(request["params"]["_meta"], json!({"progressToken": id}), "{request}");
        let peer = client.peer().clone();
        let rmcp_call =
            tokio::spawn(
                async move { peer.call_tool_once(CallToolRequestParams::new("echo")).await },
            );
        let rmcp_request = server.next().await;
        for id in [&rmcp_request["id"], &request["id"]] {
            let message = match kind {
                "error" => json!({"jsonrpc": "2.0", "id": id, "error": answer}),
                _ => json!({"jsonrpc": "2.0", "id": id, "result": answer}),
            };
            server.send(message).await;
        }
        let theirs = format!("{:?}", rmcp_call.await.expect("task"));
        let ours = straight_call.await.expect("task");
        assert_eq!(format!("{ours:?}"), theirs, "{answer}");
        let got = match &ours {
            Ok(CallToolResponse::Complete(_)) => "complete",
            Ok(CallToolResponse::InputRequired(_)) => "input",
            Ok(CallToolResponse::Task(_)) => "task",
            Err(ServiceError::UnexpectedResponse) => "unexpected",
            Err(ServiceError::McpError(_)) => "error",
            _ => "other",
        };
        assert_eq!(got, kind, "{answer}: {ours:?}");
    }
    assert!(!straight.waiting());
}

/// In 2026-07-28 a straight tool call carries the client context a tool call sent through rmcp
/// carries (the tasks extension in its capabilities, `telemetry::declare_tasks`); a read
/// carries the context without it.
#[tokio::test]
async fn a_straight_tool_call_carries_the_context_rmcp_s_would() {
    use rmcp::model::{ClientCapabilities, GetMeta as _, Implementation};
    let (_client, straight, mut server) = connected().await;
    let mut info = ClientConfig::default();
    info.client_info = Implementation::new("mcp-router", "0.1.0");
    info.capabilities = ClientCapabilities::default();
    info.capabilities.roots = Some(Default::default());
    straight.negotiated(&ProtocolVersion::V_2026_07_28, &info);
    let calling = call(&straight, "echo");
    let request = server.next().await;
    let id = request["id"].as_i64().expect("a numeric id");
    // rmcp's way: the context set on the request, then the transport's tasks extension.
    let mut theirs =
        ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("echo")));
    let meta = theirs.get_meta_mut();
    meta.set_protocol_version(ProtocolVersion::V_2026_07_28);
    meta.set_client_info(info.client_info.clone());
    meta.set_client_capabilities(info.capabilities.clone());
    meta.set_progress_token(ProgressToken(NumberOrString::Number(id)));
    crate::meta::declare_tasks(&mut theirs);
    let expected = serde_json::to_value(theirs.get_meta()).expect("json");
    assert_eq!(request["params"]["_meta"], expected);
    let extensions = &expected["io.modelcontextprotocol/clientCapabilities"]["extensions"];
    assert_eq!(extensions, &json!({"io.modelcontextprotocol/tasks": {}}));
    server.answer(&request["id"], json!({"content": []})).await;
    assert!(matches!(calling.await.expect("task"), Ok(CallToolResponse::Complete(_))));

    let reading = read(&straight, "demo://a");
    let request = server.next().await;
    let capabilities = &request["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(capabilities, &json!({"roots": {}}), "{request}");
    server.answer(&request["id"], contents("demo://a", "a")).await;
    assert_eq!(text_of(reading.await.expect("task")), "a");
}

/// A server's progress report and a watched resource's change, written just before the answer
/// they precede, are handled before that answer comes back: the call's progress reaches the
/// host (not dropped as late), and the change is not left waiting for the model as a change
/// since the read that returned it.
#[tokio::test]
async fn notifications_written_before_an_answer_are_handled_before_it() {
    let (events, mut heard) = router_protocol::event_channel();
    let watched = Arc::new(crate::watch::Watched::new(8));
    watched.read("demo://a");
    let router = RouterClient {
        events,
        watched: watched.clone(),
        progress: Arc::new(Progress::new(Duration::ZERO)),
        ..scripted::router_client(Arc::new(crate::host::DefaultHost))
    };
    let (_client, straight, mut server) = connected_as(router).await;
    let reading = tokio::spawn({
        let straight = straight.clone();
        let params = ReadResourceRequestParams::new("demo://a");
        mcp_backend::with_call_id("c1", async move { straight.read(params).await })
    });
    let request = server.next().await;
    let id = &request["id"];
    let progress = json!({"progressToken": id, "progress": 1, "total": 1, "message": "m"});
    let lines = [
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}),
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "demo://a"}}),
        json!({"jsonrpc": "2.0", "id": id, "result": contents("demo://a", "new")}),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    server.output.write_all(text.as_bytes()).await.expect("written");
    assert_eq!(text_of(reading.await.expect("task")), "new");
    // Both were handled by the time the answer came back, in the server's order.
    match heard.try_recv() {
        Ok(router_protocol::EventMsg::McpToolCallProgress(event)) => {
            let got = (event.call_id.as_str(), event.progress, event.message.as_deref());
            assert_eq!(got, ("c1", 1.0, Some("m")));
        }
        other => panic!("the call's progress first: {other:?}"),
    }
    match heard.try_recv() {
        Ok(router_protocol::EventMsg::McpResourceUpdated(event)) => {
            assert_eq!((event.server.as_str(), event.uri.as_str()), ("s", "demo://a"));
        }
        other => panic!("then the change: {other:?}"),
    }
    // The manager marks a successful read (which forgets a change heard before it): the model
    // is told of no change since this read.
    watched.read("demo://a");
    assert_eq!(watched.take(), Vec::<(String, String)>::new());
}

#[test]
fn an_answer_is_known_by_its_ends_only_when_written_as_the_sdks_write_answers() {
    let ours = FIRST_ID + 7;
    let head = |rest: &str| format!(r#"{{"jsonrpc":"2.0","id":{ours},{rest}"#);
    let tail = |first: &str| format!(r#"{{{first},"jsonrpc":"2.0","id":{ours}}}"#);
    let text = r#"{"contents":[{"uri":"a","text":"say \"task\", \"jsonrpc\":\"2.0\""}]}"#;
    let result = head(&format!(r#""result":{text}}}"#));
    assert_eq!(answer_by_ends(result.as_bytes()), Some((ours, false)));
    let crlf = format!("\u{feff}{result}\r\n");
    assert_eq!(answer_by_ends(crlf.as_bytes()), Some((ours, false)), "BOM and CRLF trimmed");
    let typescript = tail(&format!(r#""result":{text}"#));
    assert_eq!(answer_by_ends(typescript.as_bytes()), Some((ours, false)));
    let task = head(r#""result":{"task":{"taskId":"t"}}}"#);
    assert_eq!(answer_by_ends(task.as_bytes()), Some((ours, true)));
    let task = tail(r#""result":{"task":{"taskId":"t"}}"#);
    assert_eq!(answer_by_ends(task.as_bytes()), Some((ours, true)));
    let error = head(r#""error":{"code":-32002,"message":"gone"}}"#);
    assert_eq!(answer_by_ends(error.as_bytes()), Some((ours, false)));
    let error = tail(r#""error":{"code":-32002,"message":"gone"}"#);
    assert_eq!(answer_by_ends(error.as_bytes()), Some((ours, false)));
    let read_by_peek = [
        // rmcp's own ids, a string id, a server's request (either order), another key order,
        // an id inside the result, no id, a notification.
        r#"{"jsonrpc":"2.0","id":7,"result":{}}"#.to_string(),
        r#"{"result":{},"jsonrpc":"2.0","id":7}"#.to_string(),
        format!(r#"{{"jsonrpc":"2.0","id":"{ours}","result":{{}}}}"#),
        format!(r#"{{"result":{{}},"jsonrpc":"2.0","id":"{ours}"}}"#),
        head(r#""method":"sampling/createMessage","params":{}}"#),
        tail(r#""method":"sampling/createMessage","params":{}"#),
        format!(r#"{{"id":{ours},"jsonrpc":"2.0","result":{{}}}}"#),
        format!(r#"{{"result":{{"jsonrpc":"2.0","id":{ours}}},"jsonrpc":"2.0","id":1}}"#),
        format!(r#"{{"result":{{"a":{{"jsonrpc":"2.0","id":{ours}}}}}}}"#),
        r#"{"jsonrpc":"2.0","id":,"result":{}}"#.to_string(),
        r#"{"result":{},"jsonrpc":"2.0","id":}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#.to_string(),
    ];
    for line in read_by_peek {
        assert_eq!(answer_by_ends(line.as_bytes()), None, "{line}");
    }
}

#[tokio::test]
async fn an_answer_broken_in_its_middle_fails_its_read_at_once_and_any_key_order_is_read() {
    let (_client, straight, mut server) = connected().await;
    let reading = read(&straight, "demo://a");
    let id = server.next().await["id"].as_i64().expect("a numeric id");
    let broken = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"contents\":[\n");
    server.output.write_all(broken.as_bytes()).await.expect("written");
    let answer = tokio::time::timeout(Duration::from_secs(5), reading).await.expect("at once");
    assert!(matches!(answer.expect("task"), Err(ServiceError::UnexpectedResponse)));

    // TypeScript's SDK writes the id last; another order is read by the full look.
    for (n, order) in ["typescript", "id first"].into_iter().enumerate() {
        let uri = format!("demo://{n}");
        let reading = read(&straight, &uri);
        let id = server.next().await["id"].as_i64().expect("a numeric id");
        let result = format!(r#""result":{{"contents":[{{"uri":"{uri}","text":"{order}"}}]}}"#);
        let line = match n {
            0 => format!("{{{result},\"jsonrpc\":\"2.0\",\"id\":{id}}}\n"),
            _ => format!("{{\"id\":{id},\"jsonrpc\":\"2.0\",{result}}}\n"),
        };
        server.output.write_all(line.as_bytes()).await.expect("written");
        assert_eq!(text_of(reading.await.expect("task")), order);
    }
    assert!(!straight.waiting());
}

proptest::proptest! {
    /// Any bytes, and any cut of a real answer in either order, are read without a panic; a cut
    /// that is still known by its ends names the id the line carries.
    #[test]
    fn any_line_is_read_by_its_ends_without_a_panic(
        bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        cut in 0usize..80,
        id in FIRST_ID..FIRST_ID + 1_000_000,
    ) {
        let _ = answer_by_ends(&bytes);
        let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"contents":[]}}}}"#);
        let tail = format!(r#"{{"result":{{"contents":[]}},"jsonrpc":"2.0","id":{id}}}"#);
        for line in [head, tail] {
            proptest::prop_assert_eq!(answer_by_ends(line.as_bytes()), Some((id, false)));
            let cut = cut.min(line.len());
            for part in [&line.as_bytes()[..cut], &line.as_bytes()[cut..]] {
                if let Some((n, _)) = answer_by_ends(part) {
                    proptest::prop_assert_eq!(n, id);
                }
            }
        }
    }
}
