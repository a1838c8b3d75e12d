//! R1: where rmcp 3.11's client spends on every answer, in-process, for the upstream proposal in
//! `docs/benchmarks.md`. rmcp parses each incoming line as a `ServerJsonRpcMessage`, whose
//! result is the untagged `ServerResult`: serde buffers the result and tries the variants in
//! order, and each miss builds an error (a `resources/read` answer misses 7 variants first, a
//! `tools/call` answer 15, a `resources/list` page 5). The baseline parses the same line as the one result type the
//! request expects, which rmcp knows from the request id when the answer arrives.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResult, ContentBlock, JsonRpcResponse, ListResourcesResult, ReadResourceResult,
    ResourceContents, ServerJsonRpcMessage,
};
use serde::de::DeserializeOwned;

use crate::Row;
use crate::workloads::{median, ratio, show};

/// The line rmcp would read for an answer with `result`, id 7.
fn answer_line(result: impl serde::Serialize) -> anyhow::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": 7,
        "result": result,
    }))?;
    line.push(b'\n');
    Ok(line)
}

/// The median time of one parse of `line` as `T`, over rounds of `n` parses.
fn parse_time<T: DeserializeOwned>(line: &[u8], n: u32) -> anyhow::Result<Duration> {
    let mut rounds = Vec::new();
    for _ in 0..9 {
        let started = Instant::now();
        for _ in 0..n {
            let parsed: T = serde_json::from_slice(std::hint::black_box(line))?;
            std::hint::black_box(parsed);
        }
        rounds.push(started.elapsed() / n);
    }
    Ok(median(rounds))
}

/// One row: `line` parsed as rmcp does against as the expected `T`.
fn row<T: DeserializeOwned>(name: &'static str, line: &[u8], n: u32) -> anyhow::Result<Row> {
    // Both must parse: the comparison is of the same work done two ways.
    let _: ServerJsonRpcMessage = serde_json::from_slice(line)?;
    let _: JsonRpcResponse<T> = serde_json::from_slice(line)?;
    let expected = parse_time::<JsonRpcResponse<T>>(line, n)?;
    let untagged = parse_time::<ServerJsonRpcMessage>(line, n)?;
    Ok(Row {
        name,
        baseline: show(expected),
        router: show(untagged),
        ratio: ratio(untagged, expected),
        target: "(diagnostic)",
        met: None,
    })
}

/// R1's rows: a 1 KiB `resources/read` answer, a 1 KiB `tools/call` answer and a page of 100
/// resources.
pub(crate) fn rows(quick: bool) -> anyhow::Result<Vec<Row>> {
    let n = if quick { 2_000 } else { 20_000 };
    let text = "x".repeat(1024);
    let read = ReadResourceResult::new(vec![ResourceContents::text(text.clone(), "bench://r/1")]);
    let call = CallToolResult::success(vec![ContentBlock::text(text)]);
    let page = serde_json::json!({"resources": (0..100).map(|i| serde_json::json!({
        "uri": format!("bench://r/{i}"),
        "name": format!("resource {i}"),
        "mimeType": "text/plain",
    })).collect::<Vec<_>>(), "nextCursor": "100"});
    Ok(vec![
        row::<ReadResourceResult>(
            "R1 rmcp diagnostic: one resources/read answer (1 KiB) parsed as rmcp does (untagged ServerResult, right) vs as the expected result (left)",
            &answer_line(read)?,
            n,
        )?,
        row::<CallToolResult>(
            "R1 rmcp diagnostic: one tools/call answer (1 KiB) parsed as rmcp does (untagged ServerResult, right) vs as the expected result (left)",
            &answer_line(call)?,
            n,
        )?,
        row::<ListResourcesResult>(
            "R1 rmcp diagnostic: one resources/list page (100 resources) parsed as rmcp does (untagged ServerResult, right) vs as the expected result (left)",
            &answer_line(page)?,
            n / 10,
        )?,
    ])
}
