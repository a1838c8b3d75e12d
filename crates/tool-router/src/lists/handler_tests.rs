//! The list tools over the backend's kept listings, against the scripted backend: what is
//! answered without asking a server, what a change of a server's lists makes stale, and the
//! changes of read resources riding along.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use crate::invocation::ToolOutput;
use crate::lists::handler::LIST_MCP_RESOURCES;
use crate::test_support::{FakeBackend, FakeServer, resource};

/// Server `a` with 50 resources in pages of 10.
fn backend() -> Arc<FakeBackend> {
    let a = FakeServer {
        resources: (0..50).map(|i| resource(&format!("a://{i:02}"), &format!("r{i}"))).collect(),
        page_size: 10,
        ..Default::default()
    };
    FakeBackend::with(vec![("a", a)])
}

/// One list call on a router with a list budget of `budget`: the payload.
async fn list(backend: &Arc<FakeBackend>, budget: usize, arguments: Value) -> Value {
    let policy =
        crate::results::content::ContentPolicy { list_budget_bytes: budget, ..Default::default() };
    let router = crate::ToolRouter::build(
        backend.clone(),
        policy,
        None,
        Default::default(),
        Default::default(),
    );
    let (ctx, _rx) = crate::test_support::context();
    let call = crate::ToolCall {
        call_id: "c".into(),
        name: LIST_MCP_RESOURCES.into(),
        arguments: arguments.to_string().into(),
    };
    match router.dispatch(&ctx, call).await {
        Ok(ToolOutput::Function { content, .. }) => {
            serde_json::from_str(&content).expect("valid JSON")
        }
        other => panic!("{other:?}"),
    }
}

fn asked(backend: &FakeBackend) -> usize {
    backend.pages_asked.load(Ordering::SeqCst)
}

fn uris(payload: &Value) -> Vec<String> {
    let items = payload["resources"].as_array().expect("resources");
    items.iter().map(|r| r["uri"].as_str().expect("uri").to_string()).collect()
}

#[tokio::test]
async fn kept_listings_answer_filtered_lists_until_the_lists_change() {
    let backend = backend();
    let plain = list(&backend, 64 * 1024, json!({})).await;
    assert_eq!(asked(&backend), 5, "every page of the plain list");
    assert_eq!(plain.get("listed_at"), None);

    let filtered = list(&backend, 64 * 1024, json!({"query": "a://0"})).await;
    assert_eq!(asked(&backend), 5, "a filtered list from the kept listing");
    assert!(filtered["listed_at"].is_string(), "{filtered}");
    assert_eq!(filtered["matched"], 10);
    let one = list(&backend, 64 * 1024, json!({"server": "a", "query": "a://4"})).await;
    assert_eq!((asked(&backend), one["matched"].clone()), (5, json!(10)));

    backend.lists_changed("a");
    let again = list(&backend, 64 * 1024, json!({"query": "a://0"})).await;
    assert_eq!(asked(&backend), 10, "a change makes the kept listing stale");
    assert_eq!(again.get("listed_at"), None);
    assert_eq!(uris(&again), uris(&filtered));
}

#[tokio::test]
async fn a_continuation_whose_listing_went_stale_asks_from_its_page_and_misses_nothing() {
    let backend = backend();
    // A budget of a few items: the filtered list continues many times.
    let mut arguments = json!({"server": "a", "query": "a://"});
    let first = list(&backend, 1024, arguments.clone()).await;
    let mut seen = uris(&first);
    assert_eq!(asked(&backend), 5);
    let mut next = first["nextCursor"].as_str().map(str::to_string);
    let mut changed = false;
    while let Some(cursor) = next {
        if !changed && seen.len() > 20 {
            // Past the first pages: the next continuation asks from its page, not from the
            // first.
            backend.lists_changed("a");
            changed = true;
        }
        let before = asked(&backend);
        arguments = json!({"server": "a", "cursor": cursor});
        let payload = list(&backend, 1024, arguments).await;
        assert!(asked(&backend) - before < 5, "never every page again");
        seen.extend(uris(&payload));
        next = payload["nextCursor"].as_str().map(str::to_string);
    }
    assert!(changed);
    let expected: Vec<String> = (0..50).map(|i| format!("a://{i:02}")).collect();
    assert_eq!(seen, expected, "every item exactly once");
}

#[tokio::test]
async fn changed_resources_ride_along_with_the_next_output_once() {
    let backend = backend();
    backend.resource_changed("a", "a://07");
    let payload = list(&backend, 64 * 1024, json!({"server": "a"})).await;
    let keys: Vec<&String> = payload.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["server", "resources", "nextCursor", "changed"], "additive, last");
    assert_eq!(
        payload["changed"],
        json!([{"server": "a", "uri": "a://07", "detected_at": "2026-11-24T00:00:00.000Z"}])
    );
    let after = list(&backend, 64 * 1024, json!({"server": "a"})).await;
    assert_eq!(after.get("changed"), None, "reported once");
}
