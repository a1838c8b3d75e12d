//! The list rows over prepared listings (no transport): P3, the first all-server list of
//! 64 × 2,000 resources within the budget; P12, the same into one payload with the budget
//! unlimited, against serializing every item as Codex does; P11, a query over the kept ones.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_backend::{Items, ServerListing};
use rmcp::model::Resource;
use router_protocol::EventSender;
use serde::Serialize;
use tool_router::{CallContext, ToolCall, ToolRouter};

use crate::row::Row;
use crate::workloads::{Prepared, draining, median, ratio, show};

pub(crate) fn listings(servers: usize, per_server: usize) -> Vec<ServerListing> {
    (0..servers)
        .map(|s| ServerListing {
            server: format!("server{s:02}"),
            items: Items::Resources(
                (0..per_server)
                    .map(|i| {
                        Resource::new(
                            format!("file:///srv{s}/dir/file{i}.txt"),
                            format!("file{i}.txt"),
                        )
                        .with_mime_type("text/plain")
                        .with_description("A file in the bench tree")
                    })
                    .collect(),
            ),
            pages: per_server.div_ceil(100),
            error: None,
            page_starts: Vec::new(),
            ttl_ms: None,
        })
        .collect()
}

#[derive(Serialize)]
struct WithServer<'a> {
    server: &'a str,
    #[serde(flatten)]
    item: &'a Resource,
}

#[derive(Serialize)]
struct Payload<'a> {
    server: Option<&'a str>,
    resources: Vec<WithServer<'a>>,
}

/// P12 (issue 25): `reps` first all-server lists of `data` with the list budget raised so all
/// of it fits (about 18 MB), a consumer draining the events: the median time. Each item should
/// be serialized once.
async fn whole_payload(data: &[ServerListing], reps: usize) -> anyhow::Result<Duration> {
    let settings = tool_router::RouterSettings::default().with(|s| s.lists.budget_bytes = 1 << 30);
    let (ctx, consumer) = draining();
    let mut times = Vec::new();
    for _ in 0..reps {
        let backend = Arc::new(Prepared::new(vec![data.to_vec()], Duration::from_secs(30)));
        let router = ToolRouter::with_mcp_settings(backend, &settings)?;
        let call = ToolCall {
            call_id: "p12".into(),
            name: "list_mcp_resources".into(),
            arguments: "{}".into(),
        };
        let started = Instant::now();
        let output = router.dispatch(&ctx, call).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        times.push(started.elapsed());
        let tool_router::ToolOutput::Function { success: Some(true), .. } = output else {
            anyhow::bail!("list failed: {output:?}");
        };
    }
    consumer.abort();
    Ok(median(times))
}

/// One `list_mcp_resources` call through `router`: its time, peak extra memory and payload
/// length.
pub(crate) async fn measured_list(
    router: &ToolRouter,
    arguments: &str,
) -> anyhow::Result<(Duration, usize, usize)> {
    let ctx = CallContext::new(EventSender::discard());
    let call = ToolCall {
        call_id: "b".into(),
        name: "list_mcp_resources".into(),
        arguments: arguments.to_string().into(),
    };
    let live = crate::alloc::reset_peak();
    let started = Instant::now();
    let output = router.dispatch(&ctx, call).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let elapsed = started.elapsed();
    let peak = crate::alloc::peak() - live;
    let tool_router::ToolOutput::Function { content, success: Some(true), .. } = output else {
        anyhow::bail!("list failed: {output:?}");
    };
    Ok((elapsed, peak, content.len()))
}

pub(crate) const LIST_BUDGET: usize = 64 * 1024;

/// P3 (issue 15): the first all-server list of 64 × 2,000 resources — every item sized, the
/// budget shared, 64 KiB of payload, the listings kept — vs serializing every item into one
/// payload as Codex does (the floor of one pass over the listings); peak extra memory against
/// the listings' JSON size; and P11: a filtered query over the 128,000 kept resources.
pub(crate) async fn p3_scale(quick: bool) -> anyhow::Result<Vec<Row>> {
    let reps = if quick { 3 } else { 7 };
    let data = listings(64, 2_000);
    let (baseline_t, json_len) = serialize_all(&data, reps)?;
    // A backend per repetition (the first list of each: nothing kept yet); all stay alive to
    // the end, so no repetition pays for freeing another's listings.
    let backends: Vec<Arc<Prepared>> = (0..reps)
        .map(|_| Arc::new(Prepared::new(vec![data.clone()], Duration::from_secs(30))))
        .collect();
    let whole_t = whole_payload(&data, reps).await?;
    drop(data);
    let mut router_times = Vec::new();
    let (mut router_peak, mut largest) = (0, 0);
    let mut router = None;
    for backend in &backends {
        // A new router each time: the first list of each (no kept listings yet).
        let fresh = ToolRouter::with_mcp(backend.clone());
        let (elapsed, peak, len) = measured_list(&fresh, "{}").await?;
        router_times.push(elapsed);
        router_peak = router_peak.max(peak);
        largest = largest.max(len);
        router = Some(fresh);
    }
    let router = router.ok_or_else(|| anyhow::anyhow!("no repetitions"))?;
    // P11: queries over the kept listings of the last router (every server's 2,000 files, one
    // in 2,000 matches).
    let mut query_times = Vec::new();
    for i in 0..(if quick { 20 } else { 100 }) {
        let arguments = format!(r#"{{"query":"file{}.txt"}}"#, 1_000 + i);
        let (elapsed, _, len) = measured_list(&router, &arguments).await?;
        query_times.push(elapsed);
        largest = largest.max(len);
    }
    let (router_t, query_t) = (median(router_times), median(query_times));
    let time_ratio = ratio(router_t, baseline_t);
    let memory_ratio = router_peak as f64 / json_len as f64;
    let mib = |b: usize| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0));
    let within = largest <= LIST_BUDGET;
    Ok(vec![
        Row {
            name: "P3 first all-server list, 64 × 2,000 resources (64 KiB payload) vs serializing all",
            baseline: show(baseline_t),
            router: format!("{} (largest payload {largest} B)", show(router_t)),
            ratio: time_ratio,
            target: "≤ 1.2, payload ≤ budget",
            met: Some(time_ratio <= 1.2 && within),
        },
        Row {
            name: "P3 peak extra memory of that list / the listings' JSON size",
            baseline: format!("listings {}", mib(json_len)),
            router: mib(router_peak),
            ratio: memory_ratio,
            target: "≤ 2",
            met: Some(memory_ratio <= 2.0),
        },
        Row {
            name: "P12 the same 128,000 resources into one payload (budget unlimited, draining consumer) vs serializing all",
            baseline: show(baseline_t),
            router: show(whole_t),
            ratio: ratio(whole_t, baseline_t),
            target: "≤ 1.2",
            met: Some(ratio(whole_t, baseline_t) <= 1.2),
        },
        Row {
            name: "P11 a query over the 128,000 kept resources (P9 until issue 16)",
            baseline: "—".into(),
            router: show(query_t),
            ratio: query_t.as_secs_f64() * 1e3 / 5.0,
            target: "≤ 5 ms (ratio to 5 ms)",
            met: Some(query_t <= Duration::from_millis(5)),
        },
    ])
}

/// The baseline of P3 and P12: every item of `data` with its server, serialized into one
/// payload as Codex does (the floor of one pass over the listings), `reps` times: the median
/// time and the payload's length.
fn serialize_all(data: &[ServerListing], reps: usize) -> anyhow::Result<(Duration, usize)> {
    let mut times = Vec::new();
    let mut json_len = 0;
    for _ in 0..reps {
        let started = Instant::now();
        let payload = Payload {
            server: None,
            resources: data
                .iter()
                .flat_map(|l| {
                    let items: &[Resource] = match &l.items {
                        Items::Resources(items) => items,
                        Items::Templates(_) => &[],
                    };
                    items.iter().map(|item| WithServer { server: &l.server, item })
                })
                .collect(),
        };
        let text = serde_json::to_string(&payload)?;
        times.push(started.elapsed());
        json_len = text.len();
    }
    Ok((median(times), json_len))
}

/// P12 alone (`p12`): the unlimited-budget payload against serializing all, in alternating
/// rounds so both see the same memory state.
pub(crate) async fn p12_payload(quick: bool) -> anyhow::Result<Vec<Row>> {
    let rounds = if quick { 5 } else { 15 };
    let data = listings(64, 2_000);
    let (mut baseline, mut router) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        baseline.push(serialize_all(&data, 1)?.0);
        router.push(whole_payload(&data, 1).await?);
    }
    let (baseline_t, router_t) = (median(baseline), median(router));
    let r = ratio(router_t, baseline_t);
    Ok(vec![Row {
        name: "P12 128,000 resources into one payload (budget unlimited, draining consumer) vs serializing all, alternating rounds",
        baseline: show(baseline_t),
        router: show(router_t),
        ratio: r,
        target: "≤ 1.2",
        met: Some(r <= 1.2),
    }])
}
