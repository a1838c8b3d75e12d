use rmcp::model::ResourceContents;
use serde_json::json;

use super::*;

fn text(uri: &str, text: &str) -> ResourceContents {
    ResourceContents::text(text, uri)
}

fn policy(budget: usize) -> ContentPolicy {
    ContentPolicy {
        read_budget_bytes: budget,
        image_max_bytes: 100,
        raw_blobs: false,
        ..ContentPolicy::default()
    }
}

fn values(shaped: &ShapedRead<'_>) -> Vec<serde_json::Value> {
    shaped.contents.iter().map(|c| serde_json::to_value(c).expect("json")).collect()
}

fn texts(shaped: &ShapedRead<'_>) -> String {
    values(shaped).iter().filter_map(|c| c["text"].as_str().map(String::from)).collect()
}

#[test]
fn paging_through_a_large_multibyte_text_returns_it_exactly() {
    // 5 MB of mixed 1-, 2-, 3- and 4-byte characters.
    let unit = "aé€😀";
    let big: String = unit.repeat(5 * 1024 * 1024 / unit.len());
    let contents = vec![text("big://x", &big)];
    let policy = ContentPolicy::default();
    let mut offset = 0;
    let mut rebuilt = String::new();
    let mut pages = 0;
    loop {
        let shaped = shape_read(&contents, &policy, offset, None).expect("page");
        let page = texts(&shaped);
        assert!(page.len() <= policy.read_budget_bytes);
        // A valid payload: serializes and parses back.
        let payload = serde_json::to_string(&shaped.contents).expect("json");
        assert!(serde_json::from_str::<serde_json::Value>(&payload).is_ok());
        rebuilt.push_str(&page);
        pages += 1;
        let paging = shaped.paging.expect("paging facts");
        assert_eq!(paging.total_bytes, big.len());
        match paging.next_offset {
            Some(next) => {
                assert!(paging.truncated);
                assert!(big.is_char_boundary(next));
                offset = next;
            }
            None => break,
        }
    }
    assert_eq!(rebuilt, big);
    // Every page but the last is full to within one character (at most 3 bytes short).
    let budget = policy.read_budget_bytes;
    assert!(
        pages >= big.len().div_ceil(budget) && pages <= big.len().div_ceil(budget - 3),
        "{pages} pages"
    );
}

#[test]
fn small_texts_keep_the_codex_shape() {
    let contents = [text("a://1", "hello")];
    let shaped = shape_read(&contents, &policy(100), 0, None).expect("ok");
    assert_eq!(shaped.paging, None);
    assert_eq!(
        json!(values(&shaped)),
        json!([{"uri": "a://1", "mimeType": "text/plain", "text": "hello"}])
    );
}

#[test]
fn offsets_inside_a_character_move_back_and_max_bytes_only_lowers() {
    let contents = vec![text("a://1", "ab€cd")]; // € is bytes 2..5
    let shaped = shape_read(&contents, &policy(100), 3, None).expect("ok");
    assert_eq!(texts(&shaped), "€cd");
    assert_eq!(shaped.paging.as_ref().map(|p| p.offset), Some(2));
    let shaped = shape_read(&contents, &policy(100), 0, Some(4)).expect("ok");
    assert_eq!(texts(&shaped), "ab");
    assert_eq!(shaped.paging.and_then(|p| p.next_offset), Some(2));
    let shaped = shape_read(&contents, &policy(3), 0, Some(1000)).expect("ok");
    assert_eq!(texts(&shaped), "ab");
    assert_eq!(
        shape_read(&contents, &policy(100), 8, None).err().as_deref(),
        Some("offset 8 is past the end of the text (7 bytes)")
    );
    let at_end = shape_read(&contents, &policy(100), 7, None).expect("at end");
    assert!(at_end.contents.is_empty());
}

#[test]
fn several_text_items_share_the_budget() {
    let contents = vec![text("a://1", "aaaa"), text("a://2", "bbbb"), text("a://3", "cccc")];
    let first = shape_read(&contents, &policy(6), 0, None).expect("ok");
    assert_eq!(
        json!(values(&first)),
        json!([
            {"uri": "a://1", "mimeType": "text/plain", "text": "aaaa"},
            {"uri": "a://2", "mimeType": "text/plain", "text": "bb"}
        ])
    );
    let next = first.paging.and_then(|p| p.next_offset).expect("more");
    let second = shape_read(&contents, &policy(6), next, None).expect("ok");
    assert_eq!(texts(&second), "bbcccc");
    assert_eq!(second.paging.map(|p| (p.truncated, p.next_offset)), Some((false, None)));
}

#[test]
fn blobs_images_and_raw_base64() {
    let png = STANDARD.encode([0x89, b'P', b'N', b'G']);
    let pdf = STANDARD.encode(b"%PDF-1.7 stuff");
    let contents = vec![
        ResourceContents::blob(png.clone(), "img://1").with_mime_type("image/png"),
        ResourceContents::blob(pdf.clone(), "doc://1").with_mime_type("application/pdf"),
        ResourceContents::blob("!!not base64!!", "bad://1"),
    ];
    let shaped = shape_read(&contents, &policy(1000), 0, None).expect("ok");
    assert_eq!(
        shaped.images,
        vec![ContentItem::InputImage { image_url: format!("data:image/png;base64,{png}") }]
    );
    assert_eq!(values(&shaped)[0]["note"], "sent to the model as an image item");
    assert!(values(&shaped)[0].get("blob").is_none());
    assert_eq!(values(&shaped)[1]["size"], 14);
    assert_eq!(values(&shaped)[1]["sha256"].as_str().map(str::len), Some(64));
    assert!(values(&shaped)[1].get("blob").is_none());
    assert!(
        values(&shaped)[2]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("the server sent invalid base64"))
    );

    let raw = ContentPolicy { raw_blobs: true, ..policy(1000) };
    let shaped = shape_read(&contents[1..2], &raw, 0, None).expect("ok");
    assert_eq!(values(&shaped)[0]["blob"], pdf);

    let tiny_images = ContentPolicy { image_max_bytes: 2, ..policy(1000) };
    let shaped = shape_read(&contents[..1], &tiny_images, 0, None).expect("ok");
    assert!(shaped.images.is_empty());
    assert_eq!(values(&shaped)[0]["note"], "image larger than the image limit (2 bytes); not sent");
}

#[test]
fn textual_blobs_become_text() {
    let blobs = vec![
        ResourceContents::blob(STANDARD.encode("hello"), "t://1")
            .with_mime_type("text/plain; charset=utf-8"),
        ResourceContents::blob(STANDARD.encode("{\"a\":1}"), "t://2")
            .with_mime_type("application/vnd.x+json"),
        ResourceContents::blob(STANDARD.encode([0xff, 0xfe]), "t://3").with_mime_type("text/plain"),
        ResourceContents::blob(STANDARD.encode("PK"), "t://4").with_mime_type("application/zip"),
    ];
    let decoded = decode_text_blobs(blobs);
    let shaped = shape_read(&decoded, &policy(100), 0, None).expect("ok");
    let values = values(&shaped);
    assert_eq!(
        values[0],
        json!({"uri": "t://1", "mimeType": "text/plain; charset=utf-8", "text": "hello"})
    );
    assert_eq!(values[1]["text"], "{\"a\":1}");
    assert!(values[2].get("text").is_none() && values[2]["size"] == 2, "not UTF-8: still a blob");
    assert!(values[3].get("text").is_none(), "binary stays a blob");
}
