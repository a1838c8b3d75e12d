use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use super::*;

fn text_part(i: usize, bytes: usize) -> PartSpec {
    PartSpec { source: PartSource::Content(i), text: true, mime: "text/plain".into(), bytes }
}

/// A result of one text item, kept under a fresh id.
fn keep_text(store: &KeptResults, call_id: &str, text: &str) -> String {
    let base = store.reserve(call_id);
    let result = Arc::new(CallToolResult::success(vec![ContentBlock::text(text)]));
    store.keep(
        &base,
        format!("call {call_id}"),
        result,
        vec![text_part(0, text.len())],
        text.len(),
    );
    // Results past the memory cap are written on a thread of their own: wait for it.
    store.settle();
    base
}

/// Every page of `uri` from 0, `budget` bytes at a time, joined.
fn page_through(store: &KeptResults, uri: &str, budget: usize) -> (String, usize) {
    let (mut all, mut offset, mut pages) = (String::new(), 0, 0);
    loop {
        let Ok(KeptRead::Text { text, paging, .. }) = store.read(uri, offset, budget) else {
            panic!("not a text page")
        };
        all.push_str(&text);
        pages += 1;
        match paging.and_then(|p| p.next_offset) {
            Some(next) => offset = next,
            None => return (all, pages),
        }
    }
}

fn mixed_text() -> String {
    "aé€😀 line\n".repeat(2000)
}

#[test]
fn paging_a_kept_text_to_the_end_gives_it_back_exactly_from_memory_and_from_disk() {
    let text = mixed_text();
    let memory = KeptResults::new(KeptLimits::default());
    let base = keep_text(&memory, "call_1", &text);
    let (read, pages) = page_through(&memory, &format!("{base}/content/0"), 1000);
    assert_eq!(read, text);
    assert!(pages > text.len() / 1000);
    // Memory cap 0: every result goes to the private directory.
    let disk = KeptResults::new(KeptLimits { memory_bytes: 0, ..KeptLimits::default() });
    let base = keep_text(&disk, "call_1", &text);
    assert!(matches!(disk.state().entries[0].body, Body::Disk(_)), "written to the directory");
    let (read, _) = page_through(&disk, &format!("{base}/content/0"), 999);
    assert_eq!(read, text);
}

#[test]
fn the_private_directory_is_owner_only_and_gone_with_the_store() {
    use std::os::unix::fs::PermissionsExt as _;
    let disk = KeptResults::new(KeptLimits { memory_bytes: 0, ..KeptLimits::default() });
    keep_text(&disk, "c", "some text");
    let dir = disk.state().dir.clone().expect("a directory");
    let mode = |p: &Path| fs::metadata(p).expect("exists").permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    let files: Vec<PathBuf> =
        fs::read_dir(&dir).expect("dir").flatten().map(|e| e.path()).collect();
    assert_eq!(files.len(), 1);
    assert_eq!(mode(&files[0]), 0o600);
    drop(disk);
    assert!(!dir.exists());
}

#[test]
fn the_oldest_expire_past_the_count_and_byte_caps_and_a_read_says_so() {
    let store = KeptResults::new(KeptLimits { max_results: 2, max_bytes: 100, memory_bytes: 1000 });
    let first = keep_text(&store, "a", "one");
    let second = keep_text(&store, "b", "two");
    let third = keep_text(&store, "c", "three");
    let Err(message) = store.read(&format!("{first}/content/0"), 0, 100) else { panic!() };
    assert_eq!(
        message,
        "the kept result mcp-router://results/a is not available: it expired: the router keeps the newest 2 results and 100 bytes in all; call the tool again"
    );
    assert!(store.read(&format!("{second}/content/0"), 0, 100).is_ok());
    // 60 + 60 bytes are over the 100-byte cap: the older goes.
    let big = keep_text(&store, "d", &"x".repeat(60));
    let bigger = keep_text(&store, "e", &"y".repeat(60));
    assert!(store.read(&format!("{third}/content/0"), 0, 100).is_err());
    assert!(store.read(&format!("{big}/content/0"), 0, 100).is_err());
    assert!(store.read(&format!("{bigger}/content/0"), 0, 100).is_ok());
    assert_eq!(
        store.refusal(101).as_deref(),
        Some("the result (101 bytes) is larger than kept_results_bytes (100)")
    );
    assert_eq!(store.refusal(100), None);
}

#[test]
fn ids_come_from_call_ids_never_twice_and_unknown_ones_are_named() {
    let store = KeptResults::default();
    assert_eq!(store.reserve("call 1/x"), "mcp-router://results/call%201%2Fx");
    assert_eq!(store.reserve("call 1/x"), "mcp-router://results/call%201%2Fx~2");
    assert_eq!(store.reserve(""), "mcp-router://results/result");
    let Err(message) = store.read("mcp-router://results/nope/content/0", 0, 10) else { panic!() };
    assert_eq!(message, "mcp-router://results/nope is not a tool result this router kept");
}

#[test]
fn the_result_itself_lists_its_parts_and_structured_content_reads_as_json() {
    let store = KeptResults::default();
    let base = store.reserve("s");
    let mut result = CallToolResult::success(vec![ContentBlock::text("t")]);
    result.structured_content = Some(json!({"k": "v"}));
    let parts = vec![
        text_part(0, 1),
        PartSpec {
            source: PartSource::Structured,
            text: true,
            mime: "application/json".into(),
            bytes: 9,
        },
    ];
    store.keep(&base, "server \"a\"'s tool \"t\" (call s)".into(), Arc::new(result), parts, 10);
    let Err(index) = store.read(&base, 0, 10) else { panic!() };
    assert_eq!(
        index,
        "mcp-router://results/s is a kept result of server \"a\"'s tool \"t\" (call s); read one of its parts: mcp-router://results/s/content/0 (text/plain, text, 1 bytes), mcp-router://results/s/structuredContent (application/json, text, 9 bytes)"
    );
    let Ok(KeptRead::Text { text, paging, mime }) =
        store.read(&format!("{base}/structuredContent"), 0, 100)
    else {
        panic!()
    };
    assert_eq!((text.as_str(), paging, mime.as_str()), ("{\"k\":\"v\"}", None, "application/json"));
    let Err(past) = store.read(&format!("{base}/content/0"), 5, 100) else { panic!() };
    assert_eq!(past, "offset 5 is past the end of the text (1 bytes)");
}

#[test]
fn an_offset_inside_a_character_moves_back_on_disk_as_in_memory() {
    let text = "€€€";
    for memory_bytes in [0, 1000] {
        let store = KeptResults::new(KeptLimits { memory_bytes, ..KeptLimits::default() });
        let base = keep_text(&store, "m", text);
        let Ok(KeptRead::Text { text: page, paging, .. }) =
            store.read(&format!("{base}/content/0"), 4, 4)
        else {
            panic!()
        };
        assert_eq!(page, "€", "memory cap {memory_bytes}");
        let paging = paging.expect("paging");
        assert_eq!((paging.offset, paging.next_offset), (3, Some(6)));
    }
}
