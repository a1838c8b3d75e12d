use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Value, json};

use super::*;

fn policy(budget: usize) -> ContentPolicy {
    ContentPolicy {
        result_budget_bytes: budget,
        image_max_bytes: 100,
        raw_blobs: false,
        ..ContentPolicy::default()
    }
}

fn budgeted(result: &CallToolResult, policy: &ContentPolicy) -> Budgeted {
    let keeping = Keeping::At("mcp-router://results/c1".to_string());
    shape(result, &Size::of(result), policy, &keeping)
}

fn blocks(budgeted: &Budgeted) -> Value {
    serde_json::to_value(&budgeted.result.content).expect("json")
}

#[test]
fn a_result_within_the_budget_needs_no_shaping() {
    let mut result = CallToolResult::success(vec![ContentBlock::text("x".repeat(60))]);
    result.structured_content = Some(json!({"n": 1}));
    assert!(!Size::of(&result).needs_shaping(&policy(80)), "60 + 7 bytes fit 80");
    assert!(Size::of(&result).needs_shaping(&policy(66)), "structuredContent counts too");
    let image = ContentBlock::image(STANDARD.encode([0u8; 90]), "image/png");
    let pictures = CallToolResult::success(vec![image.clone()]);
    assert!(!Size::of(&pictures).needs_shaping(&policy(10)), "one image within image_max_bytes");
    let two = CallToolResult::success(vec![image.clone(), image]);
    assert!(Size::of(&two).needs_shaping(&policy(10)), "two are over it together");
}

#[test]
fn embedded_resources_follow_the_read_rules_and_cut_text_points_at_the_kept_part() {
    let png = STANDARD.encode([1, 2, 3]);
    let result = CallToolResult::success(vec![
        ContentBlock::text("plain stays"),
        ContentBlock::resource(
            ResourceContents::blob(png.clone(), "img://1").with_mime_type("image/png"),
        ),
        ContentBlock::resource(
            ResourceContents::blob(STANDARD.encode(b"zip"), "f://a.zip")
                .with_mime_type("application/zip"),
        ),
        ContentBlock::resource(ResourceContents::text("x".repeat(50), "t://long")),
    ]);
    let shaped = budgeted(&result, &policy(20));
    let blocks = blocks(&shaped);
    assert_eq!(blocks[0], json!({"type": "text", "text": "plain stays"}));
    assert_eq!(blocks[1], json!({"type": "image", "data": png, "mimeType": "image/png"}));
    assert_eq!(blocks[2]["type"], "text");
    assert!(
        blocks[2]["text"].as_str().is_some_and(|t| t.contains("\"sha256\"") && !t.contains("emlw"))
    );
    // The 11 bytes of the first text block leave 9 of the budget of 20 for the embedded text.
    let long = blocks[3]["resource"]["text"].as_str().expect("text");
    assert_eq!(
        long,
        format!(
            "{}\n[truncated: 9 of 50 bytes shown; read_mcp_resource with server \"mcp-router\", uri \"mcp-router://results/c1/content/3\" and offset 9 returns the rest]",
            "x".repeat(9)
        )
    );
    assert_eq!(shaped.kept.len(), 1);
    assert_eq!(shaped.kept[0].source, PartSource::Content(3));
    assert_eq!((shaped.kept[0].text, shaped.kept[0].bytes), (true, 50));
}

#[test]
fn long_text_is_cut_on_a_character_boundary_with_the_way_to_the_rest() {
    let result = CallToolResult::success(vec![ContentBlock::text("é".repeat(30))]);
    let shaped = budgeted(&result, &policy(9));
    assert_eq!(
        blocks(&shaped)[0]["text"],
        format!(
            "{}\n[truncated: 8 of 60 bytes shown; read_mcp_resource with server \"mcp-router\", uri \"mcp-router://results/c1/content/0\" and offset 8 returns the rest]",
            "é".repeat(4)
        )
    );
    // Not kept: the cut says so, or (keeping off) only what was shown.
    let off = shape(&result, &Size::of(&result), &policy(9), &Keeping::Not(None));
    assert_eq!(
        blocks(&off)[0]["text"],
        format!("{}\n[truncated: 8 of 60 bytes shown]", "é".repeat(4))
    );
    let why = Keeping::Not(Some("too big".to_string()));
    let refused = shape(&result, &Size::of(&result), &policy(9), &why);
    assert!(
        blocks(&refused)[0]["text"]
            .as_str()
            .is_some_and(|t| t.ends_with("shown; the rest was not kept: too big]"))
    );
    assert!(off.kept.is_empty() && refused.kept.is_empty());
}

#[test]
fn large_structured_content_is_described_not_cut_and_is_error_is_kept() {
    let mut result = CallToolResult::error(vec![ContentBlock::text("summary")]);
    result.structured_content = Some(json!({"rows": vec!["row"; 100]}));
    let size = mcp_backend::json_len(result.structured_content.as_ref().expect("set"));
    let shaped = budgeted(&result, &policy(64));
    assert_eq!(shaped.result.is_error, Some(true));
    assert_eq!(blocks(&shaped)[0]["text"], "summary");
    assert_eq!(
        shaped.result.structured_content,
        Some(
            json!({"omitted": true, "bytes": size, "server": "mcp-router", "uri": "mcp-router://results/c1/structuredContent"})
        )
    );
    assert_eq!(shaped.kept[0].source, PartSource::Structured);
    assert_eq!(shaped.kept[0].mime, "application/json");
}

#[test]
fn images_past_image_max_bytes_together_are_kept_and_audio_past_the_budget_too() {
    let image = STANDARD.encode([7u8; 60]);
    let result = CallToolResult::success(vec![
        ContentBlock::image(image.clone(), "image/png"),
        ContentBlock::image(image.clone(), "image/png"),
        ContentBlock::image(STANDARD.encode([7u8; 200]), "image/png"),
        ContentBlock::audio(STANDARD.encode([1u8; 90]), "audio/wav"),
    ]);
    let shaped = budgeted(&result, &policy(64));
    let blocks = blocks(&shaped);
    assert_eq!(blocks[0]["type"], "image", "60 of the 100 image bytes");
    assert_eq!(
        blocks[1]["text"],
        "[image image/png, 60 bytes, not sent: this result's images together are over image_max_bytes (100 bytes); read_mcp_resource with server \"mcp-router\" and uri \"mcp-router://results/c1/content/1\" returns it]"
    );
    assert_eq!(
        blocks[2]["text"],
        "[image image/png, 200 bytes, not sent: larger than image_max_bytes (100 bytes)]"
    );
    assert!(blocks[3]["text"].as_str().is_some_and(|t| t.starts_with(
        "[audio audio/wav, 120 bytes, not sent: over the result budget (64 bytes); read_mcp_resource"
    )));
    let sources: Vec<PartSource> = shaped.kept.iter().map(|p| p.source).collect();
    assert_eq!(sources, vec![PartSource::Content(1), PartSource::Content(3)]);
}

#[test]
fn textual_embedded_blobs_in_tool_results_become_text() {
    let result = CallToolResult::success(vec![ContentBlock::resource(
        ResourceContents::blob(STANDARD.encode("note text"), "n://1")
            .with_mime_type("text/markdown"),
    )]);
    let shaped = budgeted(&result, &policy(100));
    assert_eq!(
        blocks(&shaped)[0]["resource"],
        json!({"uri": "n://1", "mimeType": "text/markdown", "text": "note text"})
    );
    assert!(shaped.kept.is_empty());
}

#[test]
fn decoded_lengths_of_base64() {
    for n in 0..10 {
        let data = STANDARD.encode(vec![0u8; n]);
        assert_eq!(decoded_len(&data), n, "{data}");
    }
}

#[test]
fn the_cut_result_the_model_reads() {
    let image = STANDARD.encode([7u8; 60]);
    let mut result = CallToolResult::success(vec![
        ContentBlock::text("The report (first part):\n"),
        ContentBlock::text("row; ".repeat(40)),
        ContentBlock::image(image.clone(), "image/png"),
        ContentBlock::image(image, "image/png"),
    ]);
    result.structured_content = Some(json!({"rows": vec!["row"; 20]}));
    insta::assert_json_snapshot!("cut_tool_result", budgeted(&result, &policy(64)).result);
}
