//! Tool results past the budget, against real servers: the packaged filesystem server through
//! `exec`, a Python SDK server with 10 MB of `structuredContent`, 50 images and one huge
//! embedded resource, server-everything's resource links, and the demo server restarted between
//! a call and the read of its kept result.

use serde_json::{Value, json};
use tool_router::{ContentItem, RouterSettings, ToolOutput};

use crate::exec::ExecSession;
use crate::interop::{Target, everything_js, harness_dir, node};
use crate::support::{Harness, demo, exec_command, write_config};

/// The text the model read of a cut text, the kept part's URI, and the next offset, from
/// `…\n[truncated: N of M bytes shown; read_mcp_resource with server "mcp-router", uri "U" and
/// offset N returns the rest]`.
fn cut_text(text: &str) -> (String, String, usize) {
    let at = text.rfind("\n[truncated: ").expect("a truncation note");
    let note = &text[at..];
    let uri = note.split("uri \"").nth(1).and_then(|r| r.split('"').next()).expect("a uri");
    let offset = note.split("and offset ").nth(1).and_then(|r| r.split(' ').next());
    let offset = offset.and_then(|o| o.parse().ok()).expect("an offset");
    (text[..at].to_string(), uri.to_string(), offset)
}

/// Read `uri` on `mcp-router` from `offset` to the end, page by page, with `read`.
fn page_to_the_end(mut read: impl FnMut(Value) -> Value, uri: &str, mut offset: usize) -> String {
    let mut text = String::new();
    loop {
        let page = read(json!({"server": "mcp-router", "uri": uri, "offset": offset}));
        assert_eq!(page["server"], "mcp-router", "{page}");
        text.push_str(page["contents"][0]["text"].as_str().expect("a text page"));
        match page["next_offset"].as_u64() {
            Some(next) => offset = next as usize,
            None => return text,
        }
    }
}

/// The content blocks of an MCP output as JSON.
fn blocks(output: &ToolOutput) -> Value {
    match output {
        ToolOutput::Mcp { result: Ok(result) } => {
            serde_json::to_value(result.as_ref()).expect("json")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_filesystem_server_reads_a_5mb_file_and_the_rest_pages_back_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("big.txt");
    let line = "a line of the big file: é € 😀 and some ASCII to fill it up\n";
    let content = line.repeat(5 * 1024 * 1024 / line.len() + 1);
    std::fs::write(&file, &content).expect("write");
    let server =
        harness_dir().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    let config = write_config(
        &dir,
        "fs.toml",
        &format!(
            "[mcp_servers.fs]\ncommand = {:?}\nargs = [{:?}, {:?}]\n",
            node(),
            server.display().to_string(),
            dir.path().display().to_string()
        ),
    );
    let mut exec = ExecSession::spawn(exec_command(&config));
    let path = file.display().to_string();
    exec.send(
        &json!({"call_id": "c1", "name": "mcp__fs__read_text_file", "arguments": {"path": path}}),
    );
    let output = exec.output("c1");
    let line_bytes = output.to_string().len();
    assert!(line_bytes <= 70_000, "the model's output is {line_bytes} bytes");
    let result = &output["result"]["Ok"];
    let (shown, uri, offset) = cut_text(result["content"][0]["text"].as_str().expect("text"));
    assert_eq!(result["structuredContent"]["omitted"], true, "{}", result["structuredContent"]);
    let mut n = 0;
    let rest = page_to_the_end(
        |args| {
            n += 1;
            let id = format!("r{n}");
            exec.send(&json!({"call_id": id, "name": "read_mcp_resource", "arguments": args}));
            let out = exec.output(&id);
            serde_json::from_str(out["content"].as_str().expect("a payload")).expect("json")
        },
        &uri,
        offset,
    );
    assert!(
        shown.clone() + &rest == content,
        "reassembled {} of {} bytes",
        shown.len() + rest.len(),
        content.len()
    );
    let call_bytes = exec.bytes_by_call.get("c1").copied().unwrap_or(0);
    assert!(call_bytes < 1024 * 1024, "exec wrote {call_bytes} bytes for the call");
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}

fn python_results() -> Harness {
    Harness::start(vec![Target::python_stdio("results_fixture.py").config("py"), demo("demo", 5)])
}

async fn read(h: &Harness, args: Value) -> Value {
    h.payload("read_mcp_resource", &args.to_string()).await
}

/// Page a kept part from `offset` to the end through the harness.
async fn page_all(h: &Harness, uri: &str, mut offset: usize) -> String {
    let mut text = String::new();
    loop {
        let page = read(h, json!({"server": "mcp-router", "uri": uri, "offset": offset})).await;
        text.push_str(page["contents"][0]["text"].as_str().expect("text"));
        match page["next_offset"].as_u64() {
            Some(next) => offset = next as usize,
            None => return text,
        }
    }
}

#[tokio::test]
async fn ten_megabytes_of_structured_content_are_described_and_read_back_as_json() {
    let h = python_results();
    let output = h.call("mcp__py__structured", r#"{"mb": 10}"#).await;
    let result = blocks(&output);
    assert_eq!(result["content"][0]["text"], "163840 rows");
    let omitted = &result["structuredContent"];
    assert_eq!(omitted["omitted"], true, "{omitted}");
    let uri = omitted["uri"].as_str().expect("uri");
    let json_text = page_all(&h, uri, 0).await;
    assert_eq!(json_text.len() as u64, omitted["bytes"].as_u64().expect("bytes"));
    let value: Value = serde_json::from_str(&json_text).expect("the kept part is whole JSON");
    let rows = value["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 163_840);
    assert_eq!(rows[163_839], format!("{:08}{}", 163_839, "r".repeat(56)));
}

#[tokio::test]
async fn fifty_images_send_what_image_max_bytes_holds_and_keep_the_rest_readable() {
    let h = python_results();
    let output = h.call("mcp__py__images", r#"{"count": 50}"#).await;
    let result = blocks(&output);
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 50);
    let sent = content.iter().filter(|b| b["type"] == "image").count();
    assert_eq!(sent, 40, "40 images of 100 KiB fit the default 4 MiB");
    let last = content[49]["text"].as_str().expect("a line for a left-out image");
    assert!(last.starts_with("[image image/png, 102400 bytes, not sent:"), "{last}");
    let uri = last.split("uri \"").nth(1).and_then(|r| r.split('"').next()).expect("uri");
    let output =
        h.call("read_mcp_resource", &json!({"server": "mcp-router", "uri": uri}).to_string()).await;
    let ToolOutput::Function { content_items: Some(items), .. } = output else {
        panic!("{output:?}")
    };
    let Some(ContentItem::InputImage { image_url }) = items.get(1) else { panic!("{items:?}") };
    let expected: Vec<u8> = (0..100 * 1024).map(|j| ((49 + j) % 251) as u8).collect();
    use base64::Engine as _;
    let data = image_url.strip_prefix("data:image/png;base64,").expect("a data URL");
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(data).expect("base64"), expected);
}

#[tokio::test]
async fn one_huge_embedded_resource_is_cut_and_pages_back_byte_for_byte() {
    let h = python_results();
    let output = h.call("mcp__py__embedded", r#"{"mb": 8}"#).await;
    let result = blocks(&output);
    let text = result["content"][0]["resource"]["text"].as_str().expect("embedded text");
    let (shown, uri, offset) = cut_text(text);
    let rest = page_all(&h, &uri, offset).await;
    let line = "line of the embedded resource, é and € included...\n";
    let expected = line.repeat(8 * 1024 * 1024 / line.len());
    assert!(shown + &rest == expected, "the embedded text did not come back whole");
}

#[tokio::test]
async fn a_linked_resource_the_list_does_not_hold_is_read_on_its_server_and_refused_elsewhere() {
    let h = python_results();
    let output = h.call("mcp__py__linked", "{}").await;
    assert_eq!(blocks(&output)["content"][1]["uri"], "hidden://note");
    let listed = h.payload("list_mcp_resources", r#"{"server": "py"}"#).await;
    assert_eq!(listed["resources"], json!([]), "the link is not in the list");
    let page = read(&h, json!({"server": "py", "uri": "hidden://note"})).await;
    assert_eq!(page["contents"][0]["text"], "a note only a link leads to");
    let refused =
        h.call("read_mcp_resource", r#"{"server": "demo", "uri": "hidden://note"}"#).await;
    assert_eq!(
        refused,
        ToolOutput::failure(
            "resources/read refused: hidden://note was linked by a tool result of server \"py\", not of \"demo\"; read it with server \"py\""
        )
    );
}

#[tokio::test]
async fn server_everythings_resource_links_are_followed_on_their_server() {
    let everything = Target::Stdio(vec![node(), everything_js("2026"), "stdio".into()]);
    let h = Harness::start(vec![everything.config("everything"), demo("demo", 5)]);
    let output = h.call("mcp__everything__get-resource-links", r#"{"count": 2}"#).await;
    let result = blocks(&output);
    let link = result["content"][2]["uri"].as_str().expect("the second link").to_string();
    let page = read(&h, json!({"server": "everything", "uri": link})).await;
    assert_eq!(page["contents"][0]["uri"], link.as_str(), "{page}");
    let refused =
        h.call("read_mcp_resource", &json!({"server": "demo", "uri": link}).to_string()).await;
    let expected = format!(
        "resources/read refused: {link} was linked by a tool result of server \"everything\", not of \"demo\"; read it with server \"everything\""
    );
    assert_eq!(refused, ToolOutput::failure(expected));
}

#[tokio::test]
async fn a_kept_result_outlives_its_server_and_expires_past_the_count() {
    let settings = RouterSettings::default().with(|s| {
        s.results.kept = tool_router::KeptLimits { max_results: 1, ..Default::default() }
    });
    let h = Harness::start_with_settings(vec![demo("d", 5)], &settings);
    let first = crate::support::mcp_text(&h.call("mcp__d__huge", r#"{"mb": 1}"#).await);
    let (_, uri, offset) = cut_text(&first);
    // The server goes away and comes back; the kept result is the router's, not the server's.
    let _ = h.call("mcp__d__crash", "{}").await;
    assert_eq!(
        crate::support::mcp_text(&h.call("mcp__d__echo", r#"{"text": "back"}"#).await),
        "Echo: back"
    );
    let rest = page_all(&h, &uri, offset).await;
    assert_eq!(rest.len(), 1024 * 1024 - offset);
    // One result is kept: the next cut result pushes this one out.
    let _ = h.call("mcp__d__huge", r#"{"mb": 1}"#).await;
    let gone =
        h.call("read_mcp_resource", &json!({"server": "mcp-router", "uri": uri}).to_string()).await;
    let ToolOutput::Function { content, success: Some(false), .. } = gone else {
        panic!("{gone:?}")
    };
    assert!(
        content
            .as_str()
            .contains("is not available: it expired: the router keeps the newest 1 results"),
        "{}",
        content.as_str()
    );
}

#[tokio::test]
async fn small_linked_resources_are_embedded_after_their_link_when_asked() {
    let settings = RouterSettings::default().with(|s| s.results.inline_links_bytes = 1024);
    let py = Target::python_stdio("results_fixture.py").config("py");
    let h = Harness::start_with_settings(vec![py], &settings);
    let result = blocks(&h.call("mcp__py__linked", "{}").await);
    assert_eq!(result["content"][1]["type"], "resource_link");
    assert_eq!(
        result["content"][2],
        json!({"type": "resource", "resource": {"uri": "hidden://note", "mimeType": "text/plain", "text": "a note only a link leads to"}})
    );
    // Larger than the setting: the link alone.
    let tight = RouterSettings::default().with(|s| s.results.inline_links_bytes = 10);
    let py = Target::python_stdio("results_fixture.py").config("py");
    let h = Harness::start_with_settings(vec![py], &tight);
    let result = blocks(&h.call("mcp__py__linked", "{}").await);
    assert_eq!(result["content"].as_array().map(Vec::len), Some(2), "{result}");
}
