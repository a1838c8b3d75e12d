//! The host's W3C trace context reaches the server, with the default build (no spans of the
//! router's own): an exec call line's `traceparent` is what the demo server received, in
//! `_meta` over stdio and over streamable HTTP, and as the `traceparent` HTTP header; a
//! `tracestate`-only line or a malformed `traceparent` starts no trace; a call without one
//! sends none.

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::support::{DEMO, HttpServer, write_config};

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Exec on `config`; `calls` one at a time; their outputs.
fn outputs(config: &std::path::Path, calls: &[Value]) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exec = ExecSession::in_state(config, dir.path());
    let outputs = calls
        .iter()
        .map(|call| {
            exec.send(call);
            exec.output(call["call_id"].as_str().expect("id"))
        })
        .collect();
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
    outputs
}

fn echo(id: &str, trace: Value) -> Value {
    let mut call = json!({"call_id": id, "name": "mcp__docs__echo", "arguments": {"text": "x"}});
    if let Value::Object(fields) = trace {
        call.as_object_mut().expect("object").extend(fields);
    }
    call
}

/// The result's `_meta` as the server wrote it.
fn meta(output: &Value) -> Value {
    assert_eq!(output["type"], "mcp", "{output}");
    output["result"]["Ok"]["_meta"].clone()
}

#[test]
fn a_host_traceparent_reaches_stdio_servers_of_both_eras_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[mcp_servers.docs]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"docs\"]\n\n\
         [mcp_servers.old]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"old\"]\nprotocol = \"2025-11-25\"\n"
    );
    let config = write_config(&dir, "config.toml", &text);
    // Both eras: a 2025-11-25 server gets it in `_meta` too.
    let old = json!({"call_id": "5", "name": "mcp__old__echo", "arguments": {"text": "x"},
                     "traceparent": PARENT});
    assert_eq!(meta(&outputs(&config, &[old])[0])["traceparent"], PARENT);
    let calls = [
        echo("1", json!({"traceparent": PARENT, "tracestate": "rojo=00f067aa0ba902b7"})),
        echo("2", json!({})),
        echo("3", json!({"traceparent": "00-not-a-trace-01"})),
        echo("4", json!({"tracestate": "rojo=00f067aa0ba902b7"})),
    ];
    let outputs = outputs(&config, &calls);
    assert_eq!(meta(&outputs[0])["traceparent"], PARENT, "{}", outputs[0]);
    for (i, output) in outputs.iter().enumerate().skip(1) {
        assert_eq!(meta(output)["traceparent"], Value::Null, "call {}: {output}", i + 1);
    }
}

#[test]
fn a_host_traceparent_reaches_an_http_server_in_meta_and_as_a_header() {
    let server = HttpServer::demo(10);
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        &dir,
        "config.toml",
        &format!("[mcp_servers.docs]\nurl = \"{}\"\n", server.url),
    );
    let outputs =
        outputs(&config, &[echo("1", json!({"traceparent": PARENT})), echo("2", json!({}))]);
    let traced = meta(&outputs[0]);
    assert_eq!(traced["traceparent"], PARENT, "{}", outputs[0]);
    assert_eq!(traced[demo_server::TRACEPARENT_HEADER_KEY], PARENT, "{}", outputs[0]);
    let plain = meta(&outputs[1]);
    assert_eq!(plain[demo_server::TRACEPARENT_HEADER_KEY], Value::Null, "{}", outputs[1]);
}
