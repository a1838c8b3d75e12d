//! Protocol eras against the demo server as a real child process: the `protocol` key chooses the
//! lifecycle, `auto` speaks 2026-07-28 where offered; input-required round trips are bounded;
//! cache hints keep repeated requests from the server (its own request log counts them).

use std::path::Path;
use std::time::Duration;

use mcp_connection_manager::{ManagerOptions, ProtocolChoice, ServerConfig};
use router_protocol::EventMsg;
use tool_router::ToolOutput;

use crate::support::{Harness, demo, ready_protocols};

fn with_protocol(mut config: ServerConfig, protocol: ProtocolChoice) -> ServerConfig {
    config.protocol = protocol;
    config
}

#[tokio::test]
async fn the_protocol_key_chooses_the_era_and_auto_prefers_2026() {
    let mut h = Harness::start(vec![
        demo("auto", 100),
        with_protocol(demo("legacy", 100), ProtocolChoice::Legacy),
        with_protocol(demo("modern", 100), ProtocolChoice::Modern),
    ]);
    h.manager.wait_until_started().await;
    assert_eq!(
        ready_protocols(&h.drain()),
        [
            ("auto".to_string(), "2026-07-28".to_string()),
            ("legacy".to_string(), "2025-11-25".to_string()),
            ("modern".to_string(), "2026-07-28".to_string()),
        ]
    );
    // The same answers in both eras, except the not-found code each era uses.
    let all = h.payload("list_mcp_resources", "{}").await;
    let servers: Vec<&str> = all["resources"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|r| r["server"].as_str())
        .collect();
    assert_eq!(servers.iter().filter(|s| **s == "legacy").count(), 5);
    assert_eq!(servers.iter().filter(|s| **s == "modern").count(), 5);
    for (server, code) in [("legacy", -32002), ("modern", -32602)] {
        let args = format!(r#"{{"server":"{server}","uri":"demo://nope"}}"#);
        match h.call("read_mcp_resource", &args).await {
            ToolOutput::Function { content, success: Some(false), .. } => assert_eq!(
                content,
                format!("resources/read failed: MCP error {code}: Resource not found: demo://nope")
            ),
            other => panic!("{other:?}"),
        }
    }
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_server_that_keeps_asking_is_stopped_at_the_round_limit() {
    let options = ManagerOptions::default().with(|o| o.requests.max_input_rounds = 3);
    let mut h = Harness::start_with(vec![demo("d", 100)], options);
    // Two answers needed: within the limit.
    match h.call("mcp__d__ask", r#"{"times": 2}"#).await {
        ToolOutput::Mcp { result: Ok(result) } => {
            assert_eq!(serde_json::to_value(&result.content).expect("json")[0]["text"], "decline")
        }
        other => panic!("{other:?}"),
    }
    let asked = h.drain().iter().filter(|e| matches!(e, EventMsg::McpServerRequest(_))).count();
    assert_eq!(asked, 2, "each input request is announced");
    // Fifty answers needed: stopped after three rounds, with the server named.
    match h.call("mcp__d__ask", r#"{"times": 50}"#).await {
        ToolOutput::Mcp { result: Err(message) } => assert_eq!(
            message,
            "tool call error: MCP server 'd' still asked for input after 3 rounds of tools/call (the limit, `max_input_rounds`); the request was abandoned"
        ),
        other => panic!("{other:?}"),
    }
    let asked = h.drain().iter().filter(|e| matches!(e, EventMsg::McpServerRequest(_))).count();
    assert_eq!(asked, 3);
    // The connection is still fine.
    assert!(matches!(
        h.call("mcp__d__echo", r#"{"text":"x"}"#).await,
        ToolOutput::Mcp { result: Ok(_) }
    ));
    h.manager.shutdown().await;
}

fn cached_demo(name: &str, log: &Path, ttl_ms: u64, protocol: ProtocolChoice) -> ServerConfig {
    let mut config = demo(name, 100);
    if let mcp_connection_manager::TransportConfig::Stdio { args, .. } = &mut config.transport {
        args.extend([
            "--ttl-ms".to_string(),
            ttl_ms.to_string(),
            "--request-log".to_string(),
            log.display().to_string(),
        ]);
    }
    config.protocol = protocol;
    config
}

/// How many requests of `method` reached the server, by its own log.
fn reached(log: &Path, method: &str) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter(|l| *l == method).count()
}

#[tokio::test]
async fn cache_hints_keep_repeated_requests_from_the_server_until_the_ttl_or_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests.log");
    let h = Harness::start(vec![cached_demo("d", &log, 1_500, ProtocolChoice::Auto)]);
    let list = r#"{"server":"d"}"#;
    let read = r#"{"server":"d","uri":"demo://notes/welcome"}"#;

    let first = h.payload("list_mcp_resources", list).await;
    let first_read = h.payload("read_mcp_resource", read).await;
    assert_eq!(h.payload("list_mcp_resources", list).await, first);
    assert_eq!(h.payload("list_mcp_resource_templates", list).await["server"], "d");
    assert_eq!(h.payload("list_mcp_resource_templates", list).await["server"], "d");
    assert_eq!(h.payload("read_mcp_resource", read).await, first_read);
    // The all-server list pages through the same cache.
    h.payload("list_mcp_resources", "{}").await;
    assert_eq!(reached(&log, "resources/list"), 1);
    assert_eq!(reached(&log, "resources/templates/list"), 1);
    assert_eq!(reached(&log, "resources/read"), 1);

    // After the ttl, the server is asked again.
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    assert_eq!(h.payload("list_mcp_resources", list).await, first);
    h.payload("read_mcp_resource", read).await;
    assert_eq!(reached(&log, "resources/list"), 2);
    assert_eq!(reached(&log, "resources/read"), 2);

    // A restart starts with an empty cache.
    let _ = h.call("mcp__d__crash", "{}").await;
    assert_eq!(h.payload("list_mcp_resources", list).await, first);
    assert_eq!(reached(&log, "resources/list"), 3);
    h.manager.shutdown().await;
}

#[tokio::test]
async fn no_caching_when_turned_off_or_in_the_2025_era() {
    let dir = tempfile::tempdir().expect("tempdir");
    let off_log = dir.path().join("off.log");
    let legacy_log = dir.path().join("legacy.log");
    let options = ManagerOptions::default().with(|o| o.requests.response_cache = false);
    let off = Harness::start_with(
        vec![cached_demo("off", &off_log, 60_000, ProtocolChoice::Auto)],
        options,
    );
    let legacy =
        Harness::start(vec![cached_demo("legacy", &legacy_log, 60_000, ProtocolChoice::Legacy)]);
    for _ in 0..3 {
        off.payload("list_mcp_resources", r#"{"server":"off"}"#).await;
        legacy.payload("list_mcp_resources", r#"{"server":"legacy"}"#).await;
    }
    assert_eq!(reached(&off_log, "resources/list"), 3);
    assert_eq!(reached(&legacy_log, "resources/list"), 3);
    off.manager.shutdown().await;
    legacy.manager.shutdown().await;
}

fn faulty(name: &str, fault: &str, protocol: ProtocolChoice) -> ServerConfig {
    let mut config = with_protocol(demo(name, 100), protocol);
    if let mcp_connection_manager::TransportConfig::Stdio { args, .. } = &mut config.transport {
        args.extend(["--fault".to_string(), fault.to_string()]);
    }
    config
}

fn failures(events: &[EventMsg]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            EventMsg::McpServerFailed(f) => Some((f.server.clone(), f.error.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn auto_falls_back_to_initialize_when_discover_goes_unanswered_or_offers_no_version() {
    let mut silent = faulty("silent", "ignore-discover", ProtocolChoice::Auto);
    silent.startup_timeout = Duration::from_secs(2);
    let old = faulty("old", "legacy-versions", ProtocolChoice::Auto);
    let mut h = Harness::start(vec![silent, old]);
    let started = std::time::Instant::now();
    h.manager.wait_until_started().await;
    let waited = started.elapsed();
    let events = h.drain();
    assert_eq!(failures(&events), []);
    assert_eq!(
        ready_protocols(&events),
        [
            ("old".to_string(), "2025-11-25".to_string()),
            ("silent".to_string(), "2025-11-25".to_string())
        ]
    );
    // The unanswered probe (read, not answered) gets half the startup timeout and a quarter
    // more, then `initialize` on the same pipes the rest.
    assert!(waited >= Duration::from_secs(1) && waited < Duration::from_secs(2), "{waited:?}");
    for server in ["silent", "old"] {
        let page = h.payload("list_mcp_resources", &format!(r#"{{"server":"{server}"}}"#)).await;
        assert_eq!(page["resources"].as_array().map(Vec::len), Some(5), "{server}");
    }
    h.manager.shutdown().await;
}

#[tokio::test]
async fn pinned_eras_fail_clearly_where_the_server_does_not_speak_them() {
    let mut silent = faulty("silent", "ignore-discover", ProtocolChoice::Modern);
    silent.startup_timeout = Duration::from_millis(800);
    let old = faulty("old", "legacy-versions", ProtocolChoice::Modern);
    let mut h = Harness::start(vec![silent, old]);
    h.manager.wait_until_started().await;
    let mut failed = failures(&h.drain());
    failed.sort();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(failed[0].0, "old");
    assert!(failed[0].1.contains("no compatible protocol version"), "{}", failed[0].1);
    // Whether the server has read the probe by then depends on how fast it started.
    assert_eq!(failed[1].0, "silent");
    let phase =
        "startup timed out after 800ms waiting for the answer to server/discover (the server ";
    assert!(failed[1].1.starts_with(phase), "{}", failed[1].1);
    h.manager.shutdown().await;
}
