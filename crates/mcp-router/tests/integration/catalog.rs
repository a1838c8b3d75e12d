//! Big catalogs (issue 15) against real demo servers with generated catalogs
//! (`--generated N`): the list payload stays within its budget, every server is represented,
//! continuations return every item exactly once in the server's order, the query and type
//! filters select over all servers and one, items for the user only stay hidden unless the
//! setting shows them, and `sort: "priority"` puts the important ones first.

use std::collections::BTreeMap;

use mcp_backend::{ListKind, McpBackend};
use mcp_connection_manager::{McpConnectionManager, ServerConfig, TransportConfig};
use rmcp::model::{Resource, Role};
use serde_json::{Value, json};
use tool_router::{CallContext, RouterSettings, ToolCall, ToolOutput, ToolRouter};

use crate::support::{Harness, demo};

const BUDGET: usize = 64 * 1024;

fn generated(name: &str, count: usize) -> ServerConfig {
    let mut config = demo(name, 1000);
    if let TransportConfig::Stdio { args, .. } = &mut config.transport {
        args.extend(["--generated".to_string(), count.to_string()]);
    }
    config
}

/// Every resource of `server`, in its order, through the manager's own paging (the oracle).
async fn everything(manager: &McpConnectionManager, server: &str) -> Vec<Resource> {
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = manager.list(server, ListKind::Resources, cursor).await.expect("page");
        if let mcp_backend::Items::Resources(items) = page.items {
            all.extend(items);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return all,
        }
    }
}

fn for_assistant(resource: &Resource) -> bool {
    resource
        .annotations
        .as_ref()
        .and_then(|a| a.audience.as_ref())
        .is_none_or(|audience| audience.contains(&Role::Assistant))
}

/// The raw text and JSON of a successful list call.
async fn list(router: &ToolRouter, ctx: &CallContext, arguments: Value) -> (usize, Value) {
    let call = ToolCall {
        call_id: "c".into(),
        name: "list_mcp_resources".into(),
        arguments: arguments.to_string().into(),
    };
    match router.dispatch_to_output(ctx, call).await.expect("no fatal error") {
        ToolOutput::Function { content, success: Some(true), .. } => {
            let payload: Value = serde_json::from_str(&content).expect("valid JSON");
            (content.len(), payload)
        }
        other => panic!("list {arguments} failed: {other:?}"),
    }
}

fn uris(payload: &Value, server: &str) -> Vec<String> {
    payload["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter(|r| r["server"] == server)
        .map(|r| r["uri"].as_str().expect("uri").to_string())
        .collect()
}

/// Follow `server`'s continuation from `cursor` to the end (with the filters in `extra`),
/// checking every answer's size; the URIs returned.
async fn follow(
    router: &ToolRouter,
    ctx: &CallContext,
    server: &str,
    mut cursor: Option<String>,
    extra: &Value,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut calls = 0;
    while let Some(next) = cursor {
        let mut arguments = json!({"server": server, "cursor": next});
        if let (Some(args), Some(more)) = (arguments.as_object_mut(), extra.as_object()) {
            args.extend(more.clone());
        }
        let (size, payload) = list(router, ctx, arguments).await;
        assert!(size <= BUDGET, "a continuation of {size} bytes");
        out.extend(uris(&payload, server));
        cursor = payload["nextCursor"].as_str().map(str::to_string);
        calls += 1;
        assert!(calls < 1_000, "no end to the continuations of {server}");
    }
    out
}

#[tokio::test]
async fn a_big_catalog_fits_the_budget_and_continuations_return_everything_once() {
    let servers = ["alpha", "beta", "gamma"];
    let h = Harness::start(servers.iter().map(|s| generated(s, 20_000)).collect());
    h.manager.wait_until_started().await;
    let ctx = CallContext::new(router_protocol::EventSender::discard());

    let (size, payload) = list(&h.router, &ctx, json!({})).await;
    assert!(size <= BUDGET, "the all-server payload is {size} bytes");
    assert_eq!(payload["server"], Value::Null);
    assert_eq!(payload.get("errors"), None, "every server listed: {}", payload["errors"]);
    let incomplete: BTreeMap<String, Value> = payload["incomplete"]
        .as_array()
        .expect("incomplete")
        .iter()
        .map(|e| (e["server"].as_str().expect("server").to_string(), e.clone()))
        .collect();
    assert_eq!(incomplete.keys().collect::<Vec<_>>(), servers.iter().collect::<Vec<_>>());
    let mut total = 0;
    for server in servers {
        let expected: Vec<String> = everything(&h.manager, server)
            .await
            .into_iter()
            .filter(for_assistant)
            .map(|r| r.uri)
            .collect();
        total += expected.len();
        let shown = uris(&payload, server);
        assert!(!shown.is_empty(), "{server} is represented");
        let entry = &incomplete[server];
        assert_eq!(entry["shown"], shown.len());
        assert_eq!(entry["total"], expected.len());
        let cursor = entry["nextCursor"].as_str().map(str::to_string);
        let mut got = shown;
        got.extend(follow(&h.router, &ctx, server, cursor, &json!({})).await);
        assert_eq!(got.len(), expected.len(), "{server}: every item exactly once");
        assert_eq!(got, expected, "{server}: in the server's order");
    }
    // 20,000 generated (2,857 of them for the user only) plus the demo's own, per server.
    assert!(total > 3 * 17_000, "{total}");
    h.manager.shutdown().await;
}

#[tokio::test]
async fn query_and_type_filters_select_over_all_servers_and_one() {
    let servers = ["alpha", "beta"];
    let h = Harness::start(servers.iter().map(|s| generated(s, 5_000)).collect());
    h.manager.wait_until_started().await;
    let ctx = CallContext::new(router_protocol::EventSender::discard());
    let mut catalogs = BTreeMap::new();
    for server in servers {
        let visible: Vec<Resource> =
            everything(&h.manager, server).await.into_iter().filter(for_assistant).collect();
        catalogs.insert(server, visible);
    }
    let cases = [
        (
            json!({"query": "INVOICE"}),
            Box::new(|r: &Resource| {
                let text =
                    format!("{} {} {}", r.uri, r.name, r.description.clone().unwrap_or_default());
                text.to_lowercase().contains("invoice")
            }) as Box<dyn Fn(&Resource) -> bool>,
        ),
        (
            json!({"mimeType": "application/"}),
            Box::new(|r: &Resource| {
                r.mime_type.as_deref().is_some_and(|m| m.starts_with("application/"))
            }),
        ),
        (
            json!({"mimeType": "application/json"}),
            Box::new(|r: &Resource| r.mime_type.as_deref() == Some("application/json")),
        ),
    ];
    for (filter, keep) in &cases {
        let (size, payload) = list(&h.router, &ctx, filter.clone()).await;
        assert!(size <= BUDGET);
        let expected_total: usize =
            catalogs.values().map(|c| c.iter().filter(|r| keep(r)).count()).sum();
        assert_eq!(payload["matched"], expected_total, "{filter}");
        for server in servers {
            let expected: Vec<String> =
                catalogs[server].iter().filter(|r| keep(r)).map(|r| r.uri.clone()).collect();
            let mut got = uris(&payload, server);
            let cursor = payload["incomplete"]
                .as_array()
                .and_then(|list| list.iter().find(|e| e["server"] == server))
                .and_then(|e| e["nextCursor"].as_str().map(str::to_string));
            got.extend(follow(&h.router, &ctx, server, cursor, &Value::Null).await);
            assert_eq!(got, expected, "{filter} on {server}, through the all-server list");

            // The same filter on one server from the start, continued with the filter repeated.
            let mut arguments = filter.clone();
            arguments["server"] = json!(server);
            let (_, first) = list(&h.router, &ctx, arguments).await;
            assert_eq!(first["matched"], expected.len(), "{filter} on {server} alone");
            let mut got = uris(&first, server);
            let cursor = first["nextCursor"].as_str().map(str::to_string);
            got.extend(follow(&h.router, &ctx, server, cursor, filter).await);
            assert_eq!(got, expected, "{filter} on {server} alone, continued");
        }
    }
    // A continuation with other filters is refused with a clear message.
    let (_, first) =
        list(&h.router, &ctx, json!({"server": "alpha", "query": "invoice", "limit": 3})).await;
    let cursor = first["nextCursor"].as_str().expect("more invoices");
    let call = ToolCall {
        call_id: "x".into(),
        name: "list_mcp_resources".into(),
        arguments: json!({"server": "alpha", "cursor": cursor, "query": "report"})
            .to_string()
            .into(),
    };
    match h.router.dispatch_to_output(&ctx, call).await.expect("no fatal error") {
        ToolOutput::Function { content, success: Some(false), .. } => {
            assert!(content.contains("other filters"), "{content}");
        }
        other => panic!("{other:?}"),
    }
    h.manager.shutdown().await;
}

#[tokio::test]
async fn user_only_items_are_hidden_unless_asked_and_priority_sorts() {
    let h = Harness::start(vec![generated("alpha", 300)]);
    h.manager.wait_until_started().await;
    let ctx = CallContext::new(router_protocol::EventSender::discard());
    let all = everything(&h.manager, "alpha").await;
    let user_only: Vec<&Resource> = all.iter().filter(|r| !for_assistant(r)).collect();
    assert_eq!(user_only.len(), 43, "every 7th of 300 from 3 on");

    let (_, payload) = list(&h.router, &ctx, json!({"server": "alpha"})).await;
    let shown = uris(&payload, "alpha");
    assert!(user_only.iter().all(|r| !shown.contains(&r.uri)), "user-only items hidden");
    assert_eq!(shown.len(), all.len() - user_only.len());

    let settings = RouterSettings::default().with(|s| s.lists.show_user_audience = true);
    let router = ToolRouter::with_mcp_settings(h.manager.clone(), &settings).expect("router");
    let (_, payload) = list(&router, &ctx, json!({"server": "alpha"})).await;
    assert_eq!(uris(&payload, "alpha").len(), all.len(), "the setting shows them");

    let (_, sorted) =
        list(&h.router, &ctx, json!({"server": "alpha", "sort": "priority", "limit": 3})).await;
    let first = uris(&sorted, "alpha");
    assert_eq!(first, ["demo://gen/000042", "demo://gen/000142", "demo://gen/000242"]);
    let rest = follow(
        &h.router,
        &ctx,
        "alpha",
        sorted["nextCursor"].as_str().map(str::to_string),
        &Value::Null,
    )
    .await;
    assert_eq!(first.len() + rest.len(), all.len() - user_only.len(), "sorted, every item once");
    assert!(!rest.iter().any(|u| first.contains(u)));
    h.manager.shutdown().await;
}

/// Requests of `method` the demo server logged so far.
fn logged(log: &std::path::Path, method: &str) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter(|l| *l == method).count()
}

#[tokio::test]
async fn kept_listings_serve_filters_and_continuations_until_the_list_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests.log");
    let mut config = generated("alpha", 3_000);
    if let TransportConfig::Stdio { args, .. } = &mut config.transport {
        args.extend(["--request-log".to_string(), log.display().to_string()]);
    }
    let h = Harness::start(vec![config]);
    h.manager.wait_until_started().await;
    let ctx = CallContext::new(router_protocol::EventSender::discard());

    // A plain list asks the server (every page) and keeps the listing.
    let (_, plain) = list(&h.router, &ctx, json!({})).await;
    assert_eq!(plain.get("listed_at"), None, "a plain list is never served from the cache");
    let asked = logged(&log, "resources/list");
    assert!(asked >= 3, "3,000+ resources in pages of 1,000: {asked}");

    // A filtered list within the window comes from the kept listing: no request, `listed_at`.
    let (_, filtered) = list(&h.router, &ctx, json!({"query": "report"})).await;
    let listed_at = filtered["listed_at"].as_str().expect("listed_at").to_string();
    assert!(listed_at.ends_with('Z') && listed_at.contains('T'), "{listed_at}");
    assert_eq!(logged(&log, "resources/list"), asked, "no request for a filtered list");
    // Its continuation too, to the end.
    let cursor = filtered["incomplete"][0]["nextCursor"].as_str().map(str::to_string);
    let rest = follow(&h.router, &ctx, "alpha", cursor, &Value::Null).await;
    let reports = uris(&filtered, "alpha").len() + rest.len();
    assert_eq!(reports, filtered["matched"].as_u64().expect("matched") as usize);
    assert_eq!(logged(&log, "resources/list"), asked, "continuations from the kept listing");
    // A continuation of the plain list (no filter) is served from it as well.
    let cursor = plain["incomplete"][0]["nextCursor"].as_str().expect("plain continuation");
    let (_, next) = list(&h.router, &ctx, json!({"server": "alpha", "cursor": cursor})).await;
    assert!(next["listed_at"].is_string(), "{}", next["listed_at"]);
    assert_eq!(logged(&log, "resources/list"), asked);

    // The server's list changes (`resources/list_changed`): the kept listing is dropped, the
    // next filtered list asks again and sees the new resource.
    let call = ToolCall {
        call_id: "n".into(),
        name: "mcp__alpha__add_note".into(),
        arguments: json!({"id": "report-extra", "text": "x"}).to_string().into(),
    };
    h.router.dispatch_to_output(&ctx, call).await.expect("add_note");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let found = loop {
        let (_, after) =
            list(&h.router, &ctx, json!({"server": "alpha", "query": "report-extra"})).await;
        if after["matched"] == 1 {
            break after;
        }
        assert!(std::time::Instant::now() < deadline, "the change never showed: {after}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(uris(&found, "alpha"), ["demo://added/report-extra"]);
    assert!(logged(&log, "resources/list") > asked, "listed again after the change");
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_cache_window_of_zero_keeps_nothing() {
    let options = mcp_connection_manager::ManagerOptions::default()
        .with(|o| o.lists.cache = std::time::Duration::ZERO);
    let h = Harness::start_with(vec![generated("alpha", 500)], options);
    h.manager.wait_until_started().await;
    let ctx = CallContext::new(router_protocol::EventSender::discard());
    list(&h.router, &ctx, json!({})).await;
    let (_, filtered) = list(&h.router, &ctx, json!({"query": "invoice"})).await;
    assert_eq!(filtered.get("listed_at"), None);
    h.manager.shutdown().await;
}
