//! R1: what receiving one answer costs a client, in-process, for the upstream proposal in
//! `docs/benchmarks.md`: rmcp 3.11's stdio transport (`AsyncRwTransport`), which parses each
//! line as a `ServerJsonRpcMessage` whose result is the untagged `ServerResult` (serde buffers
//! the result and tries the variants in order, building an error for each miss: a
//! `resources/read` answer misses 7 variants first, a `tools/call` answer 15, a
//! `resources/list` page 5), against the router's (`mcp_connection::LineTransport`),
//! which parses an answer as the result its request expects. Both read the same lines from an
//! in-memory pipe, after the same requests were sent through them.

use std::time::{Duration, Instant};

use mcp_connection::LineTransport;
use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientRequest, ContentBlock, JsonRpcMessage, JsonRpcRequest, NumberOrString,
    ReadResourceResult, ResourceContents,
};
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncWriteExt, DuplexStream};

use crate::row::Row;
use crate::workloads::{median, ratio, show};

/// Answers per timed round.
const ROUND: i64 = 500;

/// One kind of answer: the request that asks for it and the result that answers it.
struct Case {
    name: &'static str,
    request: serde_json::Value,
    result: serde_json::Value,
}

impl Case {
    fn request(&self, id: i64) -> anyhow::Result<TxJsonRpcMessage<RoleClient>> {
        let request: ClientRequest = serde_json::from_value(self.request.clone())?;
        Ok(JsonRpcMessage::Request(JsonRpcRequest {
            jsonrpc: Default::default(),
            id: NumberOrString::Number(id),
            request,
        }))
    }

    /// The server's answer lines to requests `0..ROUND`, in one buffer.
    fn answers(&self) -> anyhow::Result<Vec<u8>> {
        let mut lines = Vec::new();
        for id in 0..ROUND {
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": self.result});
            serde_json::to_writer(&mut lines, &answer)?;
            lines.push(b'\n');
        }
        Ok(lines)
    }
}

/// The median time one answer takes to receive through the transport `make` builds over a
/// client's pipes (its stdout, its stdin), over `rounds` rounds of [`ROUND`] answers.
async fn receive_time<T: Transport<RoleClient>>(
    case: &Case,
    rounds: usize,
    make: impl Fn(DuplexStream, DuplexStream) -> T,
) -> anyhow::Result<Duration> {
    let answers = case.answers()?;
    let mut times = Vec::new();
    for _ in 0..rounds {
        let (client_out, mut server_in) = tokio::io::duplex(1 << 16);
        let (mut server_out, client_in) = tokio::io::duplex(answers.len() + 1);
        // What the client writes is drained; only the receiving is timed.
        let drain =
            tokio::spawn(
                async move { tokio::io::copy(&mut server_in, &mut tokio::io::sink()).await },
            );
        let mut transport = make(client_in, client_out);
        for id in 0..ROUND {
            transport.send(case.request(id)?).await.map_err(|_| anyhow::anyhow!("send"))?;
        }
        server_out.write_all(&answers).await?;
        let started = Instant::now();
        for _ in 0..ROUND {
            let answer = transport.receive().await;
            anyhow::ensure!(
                matches!(answer, Some(JsonRpcMessage::Response(_))),
                "{}: not an answer",
                case.name
            );
        }
        times.push(started.elapsed() / ROUND as u32);
        drop(transport);
        drop(drain.await);
    }
    Ok(median(times))
}

/// R1's rows: a 1 KiB `resources/read` answer, a 1 KiB `tools/call` answer and a page of 100
/// resources, each received through the router's transport (left) and rmcp's (right).
pub(crate) async fn rows(quick: bool) -> anyhow::Result<Vec<Row>> {
    let rounds = if quick { 3 } else { 15 };
    let text = "x".repeat(1024);
    let read = ReadResourceResult::new(vec![ResourceContents::text(text.clone(), "bench://r/1")]);
    let call = CallToolResult::success(vec![ContentBlock::text(text)]);
    let page: Vec<_> = (0..100)
        .map(|i| {
            serde_json::json!({
                "uri": format!("bench://r/{i}"),
                "name": format!("resource {i}"),
                "mimeType": "text/plain",
            })
        })
        .collect();
    let cases = [
        Case {
            name: "R1 one resources/read answer (1 KiB) received: the router's stdio transport (left) vs rmcp's (right)",
            request: serde_json::json!({"method": "resources/read", "params": {"uri": "bench://r/1"}}),
            result: serde_json::to_value(read)?,
        },
        Case {
            name: "R1 one tools/call answer (1 KiB) received: the router's stdio transport (left) vs rmcp's (right)",
            request: serde_json::json!({"method": "tools/call", "params": {"name": "echo"}}),
            result: serde_json::to_value(call)?,
        },
        Case {
            name: "R1 one resources/list page (100 resources) received: the router's stdio transport (left) vs rmcp's (right)",
            request: serde_json::json!({"method": "resources/list", "params": {}}),
            result: serde_json::json!({"resources": page, "nextCursor": "100"}),
        },
    ];
    let max_line = 64 << 20;
    let mut out = Vec::new();
    for case in &cases {
        let ours = receive_time(case, rounds, |r, w| LineTransport::new(r, w, max_line)).await?;
        let rmcp = receive_time(case, rounds, |r, w| {
            AsyncRwTransport::new_client(r, w).with_max_line_length(max_line)
        })
        .await?;
        out.push(Row {
            name: case.name,
            baseline: show(ours),
            router: show(rmcp),
            ratio: ratio(rmcp, ours),
            target: "(diagnostic)",
            met: None,
        });
    }
    Ok(out)
}
