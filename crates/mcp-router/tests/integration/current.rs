//! Keeping the model current, against the demo server as a real process in both protocol eras
//! and both transports: a server that changes its tool list is read again, the router's specs
//! and dispatch follow, and `mcp_tools_changed` says what changed; a burst of notifications
//! costs one re-read; and the watched set stays put past its cap, on the demo server and on
//! server-everything.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_connection_manager::{ProtocolChoice, ServerConfig};
use router_protocol::EventMsg;
use tool_router::ToolOutput;

use crate::support::{Harness, HttpServer, demo, mcp_text};

/// Wait for an `mcp_tools_changed` event of `server` (at most 20 s: it comes within about a
/// second, but a loaded CI machine is slow); other events are dropped, and listed if none
/// comes.
async fn tools_changed(h: &mut Harness, server: &str) -> (Vec<String>, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        for event in h.drain() {
            if let EventMsg::McpToolsChanged(e) = &event
                && e.server == server
            {
                return (e.added.clone(), e.removed.clone());
            }
            seen.push(serde_json::to_string(&event).unwrap_or_default());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no mcp_tools_changed from {server} within 20 s; other events: {seen:#?}");
}

async fn spec_names(h: &Harness) -> Vec<String> {
    h.router.specs().await.iter().map(|s| s.name.to_string()).collect()
}

fn text(output: ToolOutput) -> String {
    mcp_text(&output)
}

async fn tool_lifecycle(mut h: Harness, server: &str) {
    h.manager.wait_until_started().await;
    let fresh = format!("mcp__{server}__fresh");
    assert!(!spec_names(&h).await.contains(&fresh));
    let added = text(h.call(&format!("mcp__{server}__add_tool"), r#"{"name":"fresh"}"#).await);
    assert_eq!(added, "added tool fresh");
    assert_eq!(tools_changed(&mut h, server).await, (vec![fresh.clone()], vec![]));
    assert!(spec_names(&h).await.contains(&fresh), "the specs follow");
    assert_eq!(text(h.call(&fresh, r#"{"x":1}"#).await), r#"fresh: {"x":1}"#);

    text(h.call(&format!("mcp__{server}__add_tool"), r#"{"name":"fresh","remove":true}"#).await);
    assert_eq!(tools_changed(&mut h, server).await, (vec![], vec![fresh.clone()]));
    assert!(!spec_names(&h).await.contains(&fresh));
    h.manager.shutdown().await;
}

fn pinned(mut config: ServerConfig, protocol: ProtocolChoice) -> ServerConfig {
    config.protocol = protocol;
    config
}

#[tokio::test]
async fn a_changed_tool_list_is_read_again_over_stdio_in_2025_11_25() {
    let h = Harness::start(vec![pinned(demo("d", 100), ProtocolChoice::Legacy)]);
    tool_lifecycle(h, "d").await;
}

#[tokio::test]
async fn a_changed_tool_list_is_read_again_over_stdio_in_2026_07_28() {
    let h = Harness::start(vec![pinned(demo("d", 100), ProtocolChoice::Modern)]);
    tool_lifecycle(h, "d").await;
}

#[tokio::test]
async fn a_changed_tool_list_is_read_again_over_http_in_both_eras() {
    let server = HttpServer::demo(100);
    for protocol in [ProtocolChoice::Modern, ProtocolChoice::Legacy] {
        let config = pinned(ServerConfig::http("w", server.url.clone()), protocol);
        tool_lifecycle(Harness::start(vec![config]), "w").await;
    }
}

/// The demo server `d` speaking `protocol`, logging the requests it gets to a file in `dir`.
fn logged_demo(dir: &tempfile::TempDir, protocol: ProtocolChoice) -> (ServerConfig, PathBuf) {
    let log = dir.path().join("requests.log");
    let mut config = pinned(demo("d", 100), protocol);
    if let mcp_connection_manager::TransportConfig::Stdio { args, .. } = &mut config.transport {
        args.extend(["--request-log".to_string(), log.display().to_string()]);
    }
    (config, log)
}

fn logged(log: &Path, method: &str) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter(|l| *l == method).count()
}

#[tokio::test]
async fn a_burst_of_notifications_costs_one_re_read() {
    for protocol in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (config, log) = logged_demo(&dir, protocol);
        let mut h = Harness::start(vec![config]);
        h.manager.wait_until_started().await;
        assert_eq!(logged(&log, "tools/list"), 1, "{protocol:?}");
        text(h.call("mcp__d__add_tool", r#"{"name":"burst","repeat":100}"#).await);
        eprintln!("{protocol:?}: {}", std::fs::read_to_string(&log).unwrap_or_default());
        assert_eq!(tools_changed(&mut h, "d").await.0, ["mcp__d__burst"]);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            logged(&log, "tools/list"),
            2,
            "{protocol:?}: one re-read for 100 notifications"
        );
        assert!(h.drain().iter().all(|e| !matches!(e, EventMsg::McpToolsChanged(_))));
        h.manager.shutdown().await;
    }
}

/// Wait (at most 5 s) for `mcp_resource_updated` of `server`; returns its URI.
async fn resource_updated(h: &mut Harness, server: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        for event in h.drain() {
            if let EventMsg::McpResourceUpdated(e) = event
                && e.server == server
            {
                return e.uri;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no mcp_resource_updated from {server} within 5 s");
}

/// `touch` until the server says a watching client was told (the watch is set up right after
/// a read, on its own task); at most 5 s.
async fn touch_until_told(h: &Harness, server: &str, uri: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let told =
            text(h.call(&format!("mcp__{server}__touch"), &format!(r#"{{"uri":"{uri}"}}"#)).await);
        if told.starts_with("told 1 ") {
            return;
        }
        assert!(Instant::now() < deadline, "{server} never watched {uri}: {told}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_working_set_larger_than_the_cap_leaves_the_watched_set_stable() {
    for protocol in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (config, log) = logged_demo(&dir, protocol);
        let options = mcp_connection_manager::ManagerOptions::default()
            .with(|o| o.watching.max_resources = 3);
        let h = Harness::start_with(vec![config], options);
        let uri = |n: usize| format!("demo://sized/{n}");
        // Ten resources read twice each, with room to watch three.
        for _ in 0..2 {
            for n in 1..=10 {
                let read = format!(r#"{{"server":"d","uri":"{}"}}"#, uri(n));
                h.payload("read_mcp_resource", &read).await;
            }
        }
        // The first three read stay watched (the server tells them); the rest are not watched,
        // and nothing was unsubscribed (the old rule swapped one in and one out per read).
        for n in 1..=3 {
            touch_until_told(&h, "d", &uri(n)).await;
        }
        for n in 4..=10 {
            let told = text(h.call("mcp__d__touch", &format!(r#"{{"uri":"{}"}}"#, uri(n))).await);
            assert!(told.starts_with("told 0 "), "{protocol:?} {}: {told}", uri(n));
        }
        assert_eq!(logged(&log, "resources/unsubscribe"), 0, "{protocol:?}");
        if protocol == ProtocolChoice::Legacy {
            assert_eq!(logged(&log, "resources/subscribe"), 3, "one request per watched URI");
        }
        h.manager.shutdown().await;
    }
}

/// The subscribe and unsubscribe requests server-everything acknowledged, as the log messages
/// it sends for each (`Received Subscribe Resource request for URI: …`), from the events seen
/// so far; waits (at most 20 s) until `subscribed` have come, then half a second for more.
async fn everything_subscriptions(
    h: &mut Harness,
    seen: &mut Vec<String>,
    subscribed: usize,
) -> (Vec<String>, usize) {
    let tally = |seen: &[String]| {
        let subscribed: Vec<String> = seen
            .iter()
            .filter_map(|l| l.strip_prefix("Received Subscribe Resource request for URI: "))
            .map(|uri| uri.trim().to_string())
            .collect();
        let unsubscribed =
            seen.iter().filter(|l| l.starts_with("Received Unsubscribe Resource")).count();
        (subscribed, unsubscribed)
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut settle = None;
    loop {
        for event in h.drain() {
            if let EventMsg::McpServerLog(log) = event
                && let Some(text) = log.data.as_str()
            {
                seen.push(text.to_string());
            }
        }
        if settle.is_none() && tally(seen).0.len() >= subscribed {
            settle = Some(Instant::now() + Duration::from_millis(500));
        }
        if settle.is_some_and(|at| Instant::now() >= at) || Instant::now() >= deadline {
            return tally(seen);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn server_everything_keeps_its_watched_set_while_a_host_reads_thousands() {
    // Past the cap nothing is swapped: 2,000 different resources read, 3 watched, the first
    // three, and no unsubscribe. Counted from server-everything's own acknowledgements, in
    // 2025-11-25, where each subscription is a request it logs.
    let target = crate::interop::Target::everything_stdio("2026");
    let config = pinned(target.config("e"), ProtocolChoice::Legacy);
    let options =
        mcp_connection_manager::ManagerOptions::default().with(|o| o.watching.max_resources = 3);
    let mut h = Harness::start_with(vec![config], options);
    h.manager.wait_until_started().await;
    let uri = |n: usize| format!("demo://resource/dynamic/text/{n}");
    let mut seen = Vec::new();
    for n in 1..=2_000 {
        let read = format!(r#"{{"server":"e","uri":"{}"}}"#, uri(n));
        let payload = h.payload("read_mcp_resource", &read).await;
        assert_eq!(payload["contents"][0]["uri"], uri(n), "{payload}");
    }
    let (mut subscribed, unsubscribed) = everything_subscriptions(&mut h, &mut seen, 3).await;
    subscribed.sort();
    assert_eq!(subscribed, [uri(1), uri(2), uri(3)], "{seen:#?}");
    assert_eq!(unsubscribed, 0, "{seen:#?}");
    // Read again, the watched ones and the others: still nothing more.
    for n in [1, 2, 3, 4, 1_999, 2_000] {
        h.payload("read_mcp_resource", &format!(r#"{{"server":"e","uri":"{}"}}"#, uri(n))).await;
    }
    let (subscribed, unsubscribed) = everything_subscriptions(&mut h, &mut seen, 3).await;
    assert_eq!((subscribed.len(), unsubscribed), (3, 0), "{seen:#?}");
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_read_costs_one_request_and_watching_it_one_more_once() {
    for protocol in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (config, log) = logged_demo(&dir, protocol);
        let h = Harness::start(vec![config]);
        h.manager.wait_until_started().await;
        let uri = "demo://notes/welcome";
        let read = format!(r#"{{"server":"d","uri":"{uri}"}}"#);
        for _ in 0..50 {
            h.payload("read_mcp_resource", &read).await;
        }
        touch_until_told(&h, "d", uri).await;
        let requests = std::fs::read_to_string(&log).unwrap_or_default();
        let count = |method: &str| requests.lines().filter(|l| *l == method).count();
        let listens = requests.lines().filter(|l| l.starts_with("subscriptions/listen")).count();
        // Every read reaches the server once (2025-11-25 has no cache hints; the demo server
        // sends none in 2026-07-28), and nothing else is asked per read.
        assert_eq!(count("resources/read"), 50, "{protocol:?}: {requests}");
        assert_eq!(count("resources/list") + count("resources/templates/list"), 0, "{protocol:?}");
        assert_eq!(count("tools/list"), 1, "{protocol:?}: the startup listing only");
        assert_eq!(count("resources/unsubscribe"), 0, "{protocol:?}");
        match protocol {
            // One subscription for the watched URI, whatever the number of reads.
            ProtocolChoice::Legacy => assert_eq!(count("resources/subscribe"), 1, "{requests}"),
            // The stream opened at start and again with the URI in it: not once per read.
            _ => assert!((2..=3).contains(&listens), "{requests}"),
        }
        h.manager.shutdown().await;
    }
}

async fn changed(h: &Harness, server: &str) -> serde_json::Value {
    let payload = h.payload("list_mcp_resources", &format!(r#"{{"server":"{server}"}}"#)).await;
    payload.get("changed").cloned().unwrap_or_default()
}

async fn update_notice(mut h: Harness, server: &str) {
    h.manager.wait_until_started().await;
    let uri = "demo://notes/welcome";
    let read = format!(r#"{{"server":"{server}","uri":"{uri}"}}"#);
    let touch = format!(r#"{{"uri":"{uri}"}}"#);
    h.payload("read_mcp_resource", &read).await;
    touch_until_told(&h, server, uri).await;
    assert_eq!(resource_updated(&mut h, server).await, uri);
    let notice = changed(&h, server).await;
    assert_eq!(notice[0]["server"], server, "{notice}");
    assert_eq!(notice[0]["uri"], uri);
    assert!(notice[0]["detected_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{notice}");
    assert_eq!(notice.as_array().map(Vec::len), Some(1));
    assert_eq!(changed(&h, server).await, serde_json::Value::Null, "reported once");

    // A re-read clears a pending notice.
    text(h.call(&format!("mcp__{server}__touch"), &touch).await);
    resource_updated(&mut h, server).await;
    h.payload("read_mcp_resource", &read).await;
    assert_eq!(changed(&h, server).await, serde_json::Value::Null);

    // A URI nobody read is not watched.
    let other =
        text(h.call(&format!("mcp__{server}__touch"), r#"{"uri":"demo://data/cities.csv"}"#).await);
    assert!(other.starts_with("told 0 "), "{other}");
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_read_resource_that_changes_is_announced_and_noticed_in_2025_11_25() {
    update_notice(Harness::start(vec![pinned(demo("d", 100), ProtocolChoice::Legacy)]), "d").await;
}

#[tokio::test]
async fn a_read_resource_that_changes_is_announced_and_noticed_in_2026_07_28() {
    update_notice(Harness::start(vec![pinned(demo("d", 100), ProtocolChoice::Modern)]), "d").await;
}

#[tokio::test]
async fn resource_notices_over_http_in_both_eras() {
    let server = HttpServer::demo(100);
    for protocol in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let config = pinned(ServerConfig::http("w", server.url.clone()), protocol);
        update_notice(Harness::start(vec![config]), "w").await;
    }
}

#[tokio::test]
async fn watching_survives_a_restart() {
    for protocol in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let mut h = Harness::start(vec![pinned(demo("d", 100), protocol)]);
        let uri = "demo://notes/welcome";
        h.payload("read_mcp_resource", &format!(r#"{{"server":"d","uri":"{uri}"}}"#)).await;
        let _ = h.call("mcp__d__crash", "{}").await;
        // The next call restarts the server, which is asked to watch the resource again.
        text(h.call("mcp__d__echo", r#"{"text":"x"}"#).await);
        touch_until_told(&h, "d", uri).await;
        assert_eq!(resource_updated(&mut h, "d").await, uri);
        assert_eq!(changed(&h, "d").await[0]["uri"], uri);
        h.manager.shutdown().await;
    }
}

#[tokio::test]
async fn a_resource_list_change_reaches_the_next_list_even_through_the_cache() {
    for protocol in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let mut config = pinned(demo("d", 100), protocol);
        if let mcp_connection_manager::TransportConfig::Stdio { args, .. } = &mut config.transport {
            // Lists may be cached for a minute (2026-07-28): the change must drop them.
            args.extend(["--ttl-ms".to_string(), "60000".to_string()]);
        }
        let mut h = Harness::start(vec![config]);
        let uris = |payload: &serde_json::Value| -> Vec<String> {
            payload["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .filter_map(|r| r["uri"].as_str().map(str::to_string))
                .collect()
        };
        let before = uris(&h.payload("list_mcp_resources", "{}").await);
        assert!(!before.contains(&"demo://added/n1".to_string()));
        let added = text(h.call("mcp__d__add_note", r#"{"id":"n1","text":"hello"}"#).await);
        assert_eq!(added, "added demo://added/n1");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = false;
        while !seen && Instant::now() < deadline {
            seen = h
                .drain()
                .iter()
                .any(|e| matches!(e, EventMsg::McpResourcesChanged(c) if c.server == "d"));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(seen, "{protocol:?}: no mcp_resources_changed");
        let after = uris(&h.payload("list_mcp_resources", "{}").await);
        assert!(after.contains(&"demo://added/n1".to_string()), "{protocol:?}: {after:?}");
        h.manager.shutdown().await;
    }
}

#[tokio::test]
async fn a_slow_event_consumer_loses_nothing_and_notices_stay_one_per_resource() {
    let mut h = Harness::start(vec![demo("d", 100)]);
    let uri = "demo://notes/welcome";
    h.payload("read_mcp_resource", &format!(r#"{{"server":"d","uri":"{uri}"}}"#)).await;
    touch_until_told(&h, "d", uri).await;
    resource_updated(&mut h, "d").await;
    changed(&h, "d").await;
    h.drain();
    // Nobody reads the events while 50 updates arrive.
    for _ in 0..50 {
        text(h.call("mcp__d__touch", &format!(r#"{{"uri":"{uri}"}}"#)).await);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut updates = 0;
    while updates < 50 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        updates +=
            h.drain().iter().filter(|e| matches!(e, EventMsg::McpResourceUpdated(_))).count();
    }
    assert_eq!(updates, 50, "every update is an event");
    let notice = changed(&h, "d").await;
    assert_eq!(notice.as_array().map(Vec::len), Some(1), "one notice per resource: {notice}");
    h.manager.shutdown().await;
}
