//! The `otel` feature end to end: `mcp-router exec` exports its spans and the duration
//! histogram over OTLP/HTTP (JSON) to a collector fake on 127.0.0.1, and the demo server sees
//! the request span's `traceparent`. Runs only in a build with `--features otel`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::{DEMO, exec_command, write_config};

/// What the collector received: (path, JSON body) per request.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// An OTLP/HTTP collector fake: answers every POST with 200 `{}` and keeps (path, body).
fn collector() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let received = Arc::new(Mutex::new(Vec::new()));
    let keep = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().expect("clone");
                let mut reader = BufReader::new(stream);
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mut length = 0;
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        let header = header.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    keep.lock().expect("lock").push((path, body));
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                    if writer.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, received)
}

/// The items of every export to `path`, found by OTLP/JSON's three levels of nesting
/// (resource, scope, item).
fn exported(received: &[(String, Value)], path: &str, levels: [&str; 3]) -> Vec<Value> {
    let mut items: Vec<Value> =
        received.iter().filter(|(p, _)| p == path).map(|(_, body)| body.clone()).collect();
    for level in levels {
        items = items
            .iter()
            .flat_map(|item| item[level].as_array().cloned().unwrap_or_default())
            .collect();
    }
    items
}

/// An OTLP/JSON attribute list as a map (string and int values as text).
fn attributes(span: &Value) -> HashMap<String, String> {
    span["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let v = &a["value"];
            let text = v["stringValue"]
                .as_str()
                .map(str::to_string)
                .or_else(|| v["intValue"].as_str().map(str::to_string))
                .or_else(|| v["intValue"].as_i64().map(|n| n.to_string()))
                .unwrap_or_else(|| v.to_string());
            (a["key"].as_str().unwrap_or_default().to_string(), text)
        })
        .collect()
}

/// The host's span that a call line names (W3C's example).
const HOST_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn exec_exports_request_spans_and_the_duration_metric_over_otlp() {
    let (endpoint, received) = collector();
    let dir = tempfile::tempdir().expect("tempdir");
    // Canary secrets in an `env` entry, an HTTP header and a bearer token: no span or metric
    // may carry them.
    let (env_secret, header_secret, token_secret) =
        ("s3cr3t-otel-env", "s3cr3t-otel-header", "s3cr3t-otel-bearer");
    let web = crate::support::HttpServer::demo(10);
    let config = write_config(
        &dir,
        "config.toml",
        &format!(
            "[mcp_servers.docs]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"docs\"]\nenv = {{ API_KEY = \"{env_secret}\" }}\n\
             [mcp_servers.old]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"old\"]\nprotocol = \"2025-11-25\"\n\
             [mcp_servers.web]\nurl = \"{}\"\nbearer_token_env_var = \"MCP_ROUTER_OTEL_BEARER\"\nhttp_headers = {{ \"X-Api-Key\" = \"{header_secret}\" }}\n",
            web.url
        ),
    );
    let uri = demo_server::resources()[0].uri.clone();
    let mut child = exec_command(&config)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("MCP_ROUTER_OTEL_BEARER", token_secret)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn exec");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        for line in [
            json!({"call_id": "r1", "name": "read_mcp_resource", "arguments": {"server": "docs", "uri": uri}}),
            json!({"call_id": "e1", "name": "mcp__docs__echo", "arguments": {"text": "hi"}}),
            json!({"call_id": "f1", "name": "mcp__docs__fail", "arguments": {}}),
            json!({"call_id": "w1", "name": "mcp__web__echo", "arguments": {"text": "over http"}}),
            // The host's turn: the call continues its trace.
            json!({"call_id": "t1", "name": "mcp__web__echo", "arguments": {"text": "traced"},
                   "traceparent": HOST_PARENT, "tracestate": "rojo=00f067aa0ba902b7"}),
            // The same over stdio to a server of the older era.
            json!({"call_id": "t2", "name": "mcp__old__echo", "arguments": {"text": "traced"},
                   "traceparent": HOST_PARENT}),
        ] {
            writeln!(stdin, "{line}").expect("write");
        }
    }
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();

    let received = received.lock().expect("lock").clone();
    let spans = exported(&received, "/v1/traces", ["resourceSpans", "scopeSpans", "spans"]);
    let named = |name: &str| {
        spans
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| {
                let names: Vec<&Value> = spans.iter().map(|s| &s["name"]).collect();
                panic!("no span {name}: {names:?}")
            })
            .clone()
    };

    let read = named("resources/read");
    let attrs = attributes(&read);
    assert_eq!(read["kind"], 3, "a client span: {read}");
    assert_eq!(attrs["mcp.method.name"], "resources/read");
    assert_eq!(attrs["mcp.resource.uri"], uri);
    assert_eq!(attrs["network.transport"], "pipe");
    assert_eq!(attrs["server.address"], "docs");
    assert_eq!(attrs["mcp_router.call_id"], "r1");
    assert!(attrs["jsonrpc.request.id"].parse::<u64>().is_ok(), "{attrs:?}");
    assert!(!attrs["mcp.protocol.version"].is_empty());
    assert!(!attrs.contains_key("otel.name") && !attrs.contains_key("otel.kind"));

    let of_call = |name: &str, id: &str| {
        spans
            .iter()
            .find(|s| {
                let attrs = attributes(s);
                s["name"] == name
                    && (attrs.get("gen_ai.tool.call.id").map(String::as_str) == Some(id)
                        || attrs.get("mcp_router.call_id").map(String::as_str) == Some(id))
            })
            .unwrap_or_else(|| panic!("no span {name} of call {id}"))
            .clone()
    };
    // The request span is a child of exec's execute_tool span: one trace per call.
    let echo = of_call("tools/call echo", "e1");
    let host = of_call("execute_tool mcp__docs__echo", "e1");
    assert_eq!(echo["traceId"], host["traceId"]);
    assert_eq!(echo["parentSpanId"], host["spanId"]);
    assert_eq!(attributes(&echo)["gen_ai.tool.name"], "echo");

    // The server got the request span's trace context.
    let echoed = lines
        .iter()
        .find(|l| l["type"] == "function_call_output" && l["call_id"] == "e1")
        .and_then(|l| l["output"]["result"]["Ok"]["_meta"]["traceparent"].as_str())
        .expect("the echo result carries the traceparent the server received");
    let trace_id = echo["traceId"].as_str().expect("traceId").to_lowercase();
    let span_id = echo["spanId"].as_str().expect("spanId").to_lowercase();
    assert_eq!(echoed, format!("00-{trace_id}-{span_id}-01"));

    let fail = named("tools/call fail");
    assert_eq!(fail["status"]["code"], 2, "status ERROR: {fail}");
    assert_eq!(attributes(&fail)["error.type"], "tool_error");

    let metric = exported(&received, "/v1/metrics", ["resourceMetrics", "scopeMetrics", "metrics"])
        .into_iter()
        .find(|m| m["name"] == "mcp.client.operation.duration")
        .unwrap_or_else(|| panic!("no duration metric: {received:?}"));
    let points = metric["histogram"]["dataPoints"].as_array().expect("histogram points");
    let methods: Vec<String> = points
        .iter()
        .map(|p| attributes(p).get("mcp.method.name").cloned().unwrap_or_default())
        .collect();
    for method in ["resources/read", "tools/call"] {
        assert!(methods.iter().any(|m| m == method), "{method} in {methods:?}");
    }
    // One trace from the host's turn to the server: exec's span is the host span's child, the
    // request span exec's, and the server got the request span's context, in `_meta` and as
    // the HTTP header.
    let turn = of_call("execute_tool mcp__web__echo", "t1");
    let hex = |v: &Value| v.as_str().expect("hex").to_lowercase();
    assert_eq!(hex(&turn["traceId"]), "4bf92f3577b34da6a3ce929d0e0e4736", "{turn}");
    assert_eq!(hex(&turn["parentSpanId"]), "00f067aa0ba902b7", "{turn}");
    let request = of_call("tools/call echo", "t1");
    assert_eq!(
        (&request["traceId"], &request["parentSpanId"]),
        (&turn["traceId"], &turn["spanId"])
    );
    let result = lines
        .iter()
        .find(|l| l["type"] == "function_call_output" && l["call_id"] == "t1")
        .map(|l| l["output"]["result"]["Ok"]["_meta"].clone())
        .expect("t1's output");
    let sent = format!("00-{}-{}-01", hex(&request["traceId"]), hex(&request["spanId"]));
    assert_eq!(result["traceparent"], sent.as_str(), "{result}");
    assert_eq!(result[demo_server::TRACEPARENT_HEADER_KEY], sent.as_str(), "{result}");
    let old_turn = of_call("execute_tool mcp__old__echo", "t2");
    assert_eq!(hex(&old_turn["traceId"]), "4bf92f3577b34da6a3ce929d0e0e4736", "{old_turn}");
    assert_eq!(hex(&old_turn["parentSpanId"]), "00f067aa0ba902b7", "{old_turn}");
    let old_request = of_call("tools/call echo", "t2");
    assert_eq!(attributes(&old_request)["mcp.protocol.version"], "2025-11-25");
    let old_received = lines
        .iter()
        .find(|l| l["type"] == "function_call_output" && l["call_id"] == "t2")
        .and_then(|l| l["output"]["result"]["Ok"]["_meta"]["traceparent"].as_str())
        .expect("t2's echo carries the traceparent the server received");
    let sent = format!("00-{}-{}-01", hex(&old_request["traceId"]), hex(&old_request["spanId"]));
    assert_eq!(old_received, sent);

    let all = format!("{received:?}");
    assert!(all.contains("tools/call"), "spans were received");
    for secret in [env_secret, header_secret, token_secret] {
        assert!(!all.contains(secret), "{secret} in an exported span or metric");
    }
}
