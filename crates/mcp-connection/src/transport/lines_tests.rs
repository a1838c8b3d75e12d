//! The stdio transport against rmcp's own parse: every answer it builds itself must be the
//! message rmcp would have built from the same line; everything else must be framed and
//! refused as rmcp's transport does.

use rmcp::model::{
    CallToolRequestParams, ClientRequest, JsonRpcMessage, JsonRpcRequest, NumberOrString,
    ReadResourceRequest, ReadResourceRequestParams, ServerJsonRpcMessage, ServerResult,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use super::*;

// The messages have no `PartialEq` (server requests do not): they are compared by their
// `Debug` form, which shows every field and variant.
type Pipes = (LineTransport<DuplexStream, DuplexStream>, DuplexStream, BufReader<DuplexStream>);

/// The transport, the server's end of its stdout (to write answers) and of its stdin (to
/// read what the client wrote).
fn pipes(max_line: usize) -> Pipes {
    let (client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_in) = tokio::io::duplex(1 << 20);
    (LineTransport::new(client_in, client_out, max_line), server_out, BufReader::new(server_in))
}

fn request(id: i64, request: ClientRequest) -> TxJsonRpcMessage<RoleClient> {
    JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: Default::default(),
        id: NumberOrString::Number(id),
        request,
    })
}

fn read(id: i64) -> TxJsonRpcMessage<RoleClient> {
    let params = ReadResourceRequestParams::new("demo://a");
    request(id, ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params)))
}

fn call(id: i64) -> TxJsonRpcMessage<RoleClient> {
    let params = CallToolRequestParams::new("echo");
    request(id, ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)))
}

/// Sends `sent`, has the server answer with `line`, and returns what the transport delivered
/// next and what rmcp's own parse makes of the line.
async fn answered(
    sent: TxJsonRpcMessage<RoleClient>,
    line: &str,
) -> (ServerJsonRpcMessage, ServerJsonRpcMessage) {
    let (mut transport, mut server_out, mut server_in) = pipes(1 << 20);
    transport.send(sent).await.expect("send");
    let mut written = String::new();
    server_in.read_line(&mut written).await.expect("the request reached the server");
    server_out.write_all(format!("{line}\n").as_bytes()).await.expect("answer");
    let got = transport.receive().await.expect("a message");
    let rmcp: ServerJsonRpcMessage = serde_json::from_str(line).expect("rmcp parses it");
    (got, rmcp)
}

#[tokio::test]
async fn read_answers_complete_and_input_required_are_the_messages_rmcp_would_build() {
    let complete = r#"{"jsonrpc":"2.0","id":3,"result":{"contents":[{"uri":"demo://a","mimeType":"text/plain","text":"hello"}],"ttlMs":5000,"_meta":{"k":1}}}"#;
    let input_required = r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}}}}"#;
    for (line, is_read) in [(complete, true), (input_required, false)] {
        let (got, rmcp) = answered(read(3), line).await;
        assert_eq!(format!("{got:?}"), format!("{rmcp:?}"), "{line}");
        let JsonRpcMessage::Response(answer) = got else { panic!("an answer: {line}") };
        match answer.result {
            ServerResult::ReadResourceResult(_) => assert!(is_read, "{line}"),
            ServerResult::InputRequiredResult(_) => assert!(!is_read, "{line}"),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn tool_answers_plain_erroring_and_tasks_are_the_messages_rmcp_would_build() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[],"structuredContent":null,"isError":true}}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":{"task":{"taskId":"t1","status":"working","createdAt":"2026-11-26T00:00:00Z","lastUpdatedAt":"2026-11-26T00:00:00Z","ttl":null}}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"no such tool"}}"#,
    ];
    for line in lines {
        let (got, rmcp) = answered(call(5), line).await;
        assert_eq!(format!("{got:?}"), format!("{rmcp:?}"), "{line}");
    }
}

#[tokio::test]
async fn answers_to_other_requests_and_server_requests_are_parsed_as_rmcp_does() {
    let (mut transport, mut server_out, _server_in) = pipes(1 << 20);
    transport.send(read(7)).await.expect("send");
    // The server's own request, with the same id as ours, comes first; then our answer.
    let lines = [
        r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}"#,
    ];
    for line in lines {
        server_out.write_all(format!("{line}\n").as_bytes()).await.expect("write");
        let got = transport.receive().await.expect("a message");
        let rmcp: ServerJsonRpcMessage = serde_json::from_str(line).expect("rmcp parses it");
        assert_eq!(format!("{got:?}"), format!("{rmcp:?}"), "{line}");
    }
}

/// Notifications rmcp cannot parse (their params are not objects), which it then ignores as
/// outside MCP.
const EDITOR: &str = r#"{"jsonrpc":"2.0","method":"$/x","params":5}"#;
const UNKNOWN: &str = r#"{"jsonrpc":"2.0","method":"notifications/x","params":5}"#;

#[tokio::test]
async fn lines_are_framed_as_rmcp_frames_them() {
    for line in [EDITOR, UNKNOWN] {
        assert!(serde_json::from_str::<ServerJsonRpcMessage>(line).is_err(), "{line}");
    }
    let (mut transport, mut server_out, mut server_in) = pipes(64);
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let too_long = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"{}"}}}}"#,
        "x".repeat(100)
    );
    let input = [
        // A line over the limit is dropped, the connection kept.
        format!("{too_long}\n"),
        // Not JSON, an editor's notification and an unknown MCP notification that rmcp cannot
        // parse, a blank line: ignored without an answer.
        "not json\n".to_string(),
        format!("{EDITOR}\n"),
        format!("{UNKNOWN}\n"),
        "\r\n".to_string(),
        // Well-formed, wrong shape: answered with Invalid Request.
        "{\"jsonrpc\":\"2.0\",\"id\":9}\n".to_string(),
        // A message written in two parts, with a byte order mark and CRLF.
        "\u{feff}".to_string() + &ping[..10],
        format!("{}\r\n", &ping[10..]),
    ];
    for part in &input {
        server_out.write_all(part.as_bytes()).await.expect("write");
    }
    let got = transport.receive().await.expect("the ping");
    let rmcp: ServerJsonRpcMessage = serde_json::from_str(ping).expect("parse");
    assert_eq!(format!("{got:?}"), format!("{rmcp:?}"));
    let mut answer = String::new();
    server_in.read_line(&mut answer).await.expect("the refusal");
    let answer: serde_json::Value = serde_json::from_str(&answer).expect("json");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    drop(server_out);
    assert!(transport.receive().await.is_none(), "the end of the stream ends receiving");
}

#[tokio::test]
async fn forgotten_requests_are_bounded() {
    let (mut transport, _server_out, _server_in) = pipes(1 << 20);
    for id in 0..(MAX_EXPECTED as i64 + 10) {
        // Unanswered reads (their writes are not even awaited): the map is cleared at its
        // bound, never grows past it.
        drop(transport.send(read(id)));
        assert!(transport.expected.len() <= MAX_EXPECTED);
    }
}

#[tokio::test]
async fn a_huge_message_does_not_keep_its_buffer() {
    let (mut transport, mut server_out, _server_in) = pipes(64 << 20);
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"{}"}}}}"#,
        "x".repeat(3 << 20)
    );
    let writer = tokio::spawn(async move {
        server_out.write_all(format!("{big}\n").as_bytes()).await.expect("write");
        server_out
    });
    assert!(transport.receive().await.is_some(), "the message arrives whole");
    assert!(transport.line.capacity() <= KEPT_BUFFER_BYTES, "{}", transport.line.capacity());
    drop(writer.await);
}

/// A request of `method` with `params`, as the client would send it.
fn of(id: i64, method: &str, params: serde_json::Value) -> TxJsonRpcMessage<RoleClient> {
    let client_request: ClientRequest =
        serde_json::from_value(serde_json::json!({"method": method, "params": params}))
            .expect("a client request");
    request(id, client_request)
}

#[tokio::test]
async fn list_prompt_and_completion_answers_are_the_messages_rmcp_would_build() {
    let cases = [
        (
            "resources/list",
            r#"{"jsonrpc":"2.0","id":2,"result":{"resources":[{"uri":"demo://a","name":"a","mimeType":"text/plain"}],"nextCursor":"c2","ttlMs":100}}"#,
        ),
        (
            "resources/templates/list",
            r#"{"jsonrpc":"2.0","id":2,"result":{"resourceTemplates":[{"uriTemplate":"demo://{id}","name":"t"}]}}"#,
        ),
        (
            "tools/list",
            r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}"#,
        ),
        (
            "prompts/list",
            r#"{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"p","arguments":[{"name":"x","required":true}]}]}}"#,
        ),
        (
            "prompts/get",
            r#"{"jsonrpc":"2.0","id":2,"result":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}}"#,
        ),
        (
            "prompts/get",
            r#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"x?","requestedSchema":{"type":"object","properties":{}}}}}}}"#,
        ),
        (
            "completion/complete",
            r#"{"jsonrpc":"2.0","id":2,"result":{"completion":{"values":["a","b"],"total":2,"hasMore":false}}}"#,
        ),
        // The wrong shape for its request: rmcp's parse decides.
        ("tools/list", r#"{"jsonrpc":"2.0","id":2,"result":{"resources":[]}}"#),
    ];
    for (method, line) in cases {
        let params = match method {
            "prompts/get" => serde_json::json!({"name": "p"}),
            "completion/complete" => {
                serde_json::json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "x", "value": ""}})
            }
            _ => serde_json::json!({}),
        };
        let (got, rmcp) = answered(of(2, method, params), line).await;
        assert_eq!(format!("{got:?}"), format!("{rmcp:?}"), "{method}: {line}");
    }
}

/// An answer over the limit fails its request at once, naming the limit (its id read where
/// SDKs write it, first or last); a line whose id cannot be told is dropped, and the
/// connection goes on either way.
#[tokio::test]
async fn an_answer_over_the_limit_becomes_an_error_for_its_request() {
    let (mut transport, mut server_out, _server_in) = pipes(128);
    let big = "x".repeat(300);
    let lines = [
        format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{big}"}}}}"#),
        format!(r#"{{"result":{{"text":"{big}"}},"jsonrpc":"2.0","id":"s8"}}"#),
        // The key at the very start of the kept tail (no comma before it to be seen): not
        // taken, and no panic.
        format!(r#"{{"result":"{big}","jsonrpc":"2.0","id":"{}"}}"#, "z".repeat(71)),
        // An id inside the result only: nothing to tell whose answer it was.
        format!(r#"{{"result":{{"id":3,"text":"{big}"}},"id":4,"jsonrpc":"2.0"}}"#),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_string(),
    ];
    // In pieces, as a pipe delivers a long line: the skipped part spans many reads.
    let written: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let writer = tokio::spawn(async move {
        for piece in written.as_bytes().chunks(7) {
            server_out.write_all(piece).await.expect("write");
            server_out.flush().await.expect("flush");
            tokio::task::yield_now().await;
        }
        server_out
    });
    for id in [NumberOrString::Number(7), NumberOrString::String("s8".into())] {
        let got = transport.receive().await.expect("a message");
        let JsonRpcMessage::Error(error) = got else { panic!("{got:?}") };
        assert_eq!(error.id, Some(id));
        assert_eq!(error.error.code.0, -32603);
        assert_eq!(
            error.error.message,
            "the server's answer was more than 128 bytes (0 MiB), the most one message may have; it was dropped"
        );
    }
    let got = transport.receive().await.expect("the ping");
    assert!(matches!(got, JsonRpcMessage::Request(_)), "{got:?}");
    drop(writer.await.expect("written"));
}
