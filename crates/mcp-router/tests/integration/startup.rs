//! Startup that does not wait for the slowest server: the tool catalog cache and lazy servers,
//! with real server processes (a demo server behind `sh -c "sleep …; exec …"` to start slowly,
//! and a start log file to see whether a server was started at all).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcp_connection_manager::{
    CachedCatalog, ManagerOptions, McpConnectionManager, ServerConfig, ServerStatus, Startup,
    ToolCache,
};
use router_protocol::{EventMsg, event_channel};
use tool_router::{CallContext, ToolCall, ToolOutput, ToolRouter};

use crate::support::{DEMO, router_command, write_config};

/// A demo server named `name` started through `sh`: it appends a line to `log` each time it is
/// started, then sleeps `delay_ms` before serving.
fn logged_server(name: &str, log: &Path, delay_ms: u64) -> ServerConfig {
    let script = format!(
        "echo started >> '{}'; sleep {}; exec '{DEMO}' --name {name}",
        log.display(),
        delay_ms as f64 / 1000.0
    );
    ServerConfig::stdio(name, "sh", vec!["-c".to_string(), script])
}

fn starts(log: &Path) -> usize {
    std::fs::read_to_string(log).map(|t| t.lines().count()).unwrap_or(0)
}

async fn spec_names(router: &ToolRouter) -> Vec<String> {
    router.specs().await.into_iter().map(|s| s.name).filter(|n| n.starts_with("mcp__")).collect()
}

/// The next `mcp_tools_changed` on `rx` (at most 30 s).
async fn next_tools_changed(
    rx: &mut router_protocol::EventReceiver,
) -> router_protocol::McpToolsChangedEvent {
    let wait = async {
        loop {
            match rx.recv().await {
                Some(EventMsg::McpToolsChanged(e)) => break e,
                Some(_) => continue,
                None => panic!("event stream ended"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait).await.expect("mcp_tools_changed")
}

fn tool(name: &str) -> rmcp::model::Tool {
    rmcp::model::Tool::new(name.to_string(), "from an earlier run", rmcp::model::JsonObject::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn specs_come_from_the_catalog_while_a_slow_server_starts_then_switch_to_the_live_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = ToolCache::at(dir.path().join("tools"));
    let log = dir.path().join("slow.log");
    let slow = logged_server("slow", &log, 2_000);
    let fast = ServerConfig::stdio("fast", DEMO, vec!["--name".into(), "fast".into()]);
    // What an earlier run saw: `slow` had one tool, which it no longer offers.
    let earlier = CachedCatalog {
        tools: vec![tool("retired")],
        resources: true,
        completions: false,
        skills: false,
        prompts: false,
        app_only: Vec::new(),
    };
    cache.save(&slow, &earlier);
    let (events, mut rx) = event_channel();
    let options = ManagerOptions::default().with(|o| o.startup.tool_cache = Some(cache.clone()));
    let manager =
        Arc::new(McpConnectionManager::start(vec![fast.clone(), slow.clone()], events, options));
    let router = ToolRouter::with_mcp(manager.clone());

    // `fast` has no catalog, so it is waited for; `slow` is listed from its catalog at once.
    let names = spec_names(&router).await;
    assert_eq!(manager.status("slow"), Some(ServerStatus::Starting), "specs waited for slow");
    assert!(names.contains(&"mcp__slow__retired".to_string()), "{names:?}");
    assert!(names.contains(&"mcp__fast__echo".to_string()), "{names:?}");
    assert!(!names.contains(&"mcp__slow__echo".to_string()), "{names:?}");

    // Once `slow` is ready with a different list: one event, and the live list from then on.
    let changed = next_tools_changed(&mut rx).await;
    assert_eq!(changed.server, "slow");
    assert_eq!(changed.removed, vec!["mcp__slow__retired".to_string()]);
    assert!(changed.added.contains(&"mcp__slow__echo".to_string()), "{changed:?}");
    let names = spec_names(&router).await;
    assert!(names.contains(&"mcp__slow__echo".to_string()), "{names:?}");
    assert!(!names.contains(&"mcp__slow__retired".to_string()), "{names:?}");
    // The catalogs now hold the live lists, for the next start.
    let saved = cache.load(&slow).expect("slow catalog");
    assert!(saved.tools.iter().any(|t| t.name == "echo"));
    assert!(saved.resources);
    assert!(cache.load(&fast).is_some());
    manager.shutdown().await;

    // Next start: both listed at once, nothing announced (the lists are what the catalog says).
    let (events, mut rx) = event_channel();
    let options = ManagerOptions::default().with(|o| o.startup.tool_cache = Some(cache.clone()));
    let manager = Arc::new(McpConnectionManager::start(vec![fast, slow], events, options));
    let router = ToolRouter::with_mcp(manager.clone());
    let warm = spec_names(&router).await;
    assert_eq!(manager.status("slow"), Some(ServerStatus::Starting));
    assert_eq!(warm, names);
    manager.wait_until_started().await;
    assert_eq!(manager.status("slow"), Some(ServerStatus::Ready));
    while let Ok(event) = rx.try_recv() {
        assert!(!matches!(event, EventMsg::McpToolsChanged(_)), "{event:?}");
    }
    assert_eq!(starts(&log), 2);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_server_starts_on_its_first_call_and_is_listed_from_its_catalog_until_then() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = ToolCache::at(dir.path().join("tools"));
    let log = dir.path().join("lazy.log");
    let mut lazy = logged_server("lazy", &log, 0);
    lazy.startup = Startup::Lazy;
    let options = || ManagerOptions::default().with(|o| o.startup.tool_cache = Some(cache.clone()));

    // No catalog yet: listing the tools starts it, to learn them.
    let manager = Arc::new(McpConnectionManager::start(
        vec![lazy.clone()],
        router_protocol::EventSender::discard(),
        options(),
    ));
    assert_eq!(manager.status("lazy"), Some(ServerStatus::NotStarted));
    assert_eq!(starts(&log), 0);
    let router = ToolRouter::with_mcp(manager.clone());
    let learned = spec_names(&router).await;
    assert!(learned.contains(&"mcp__lazy__echo".to_string()), "{learned:?}");
    assert_eq!(starts(&log), 1);
    manager.shutdown().await;

    // With a catalog: listed without starting; the first call starts it.
    let (events, mut rx) = event_channel();
    let manager = Arc::new(McpConnectionManager::start(vec![lazy], events, options()));
    let router = ToolRouter::with_mcp(manager.clone());
    assert_eq!(spec_names(&router).await, learned);
    assert_eq!(manager.status("lazy"), Some(ServerStatus::NotStarted));
    assert_eq!(starts(&log), 1, "listing started the lazy server");
    let (ctx, _ctx_rx) = {
        let (tx, rx) = event_channel();
        (CallContext::new(tx), rx)
    };
    let call = ToolCall {
        call_id: "c1".into(),
        name: "mcp__lazy__echo".into(),
        arguments: r#"{"text":"wake up"}"#.into(),
    };
    let output = router.dispatch(&ctx, call).await.expect("output");
    assert!(matches!(output, ToolOutput::Mcp { result: Ok(_) }), "{output:?}");
    assert_eq!(crate::support::mcp_text(&output), "Echo: wake up");
    assert_eq!(starts(&log), 2);
    assert_eq!(manager.status("lazy"), Some(ServerStatus::Ready));
    // `mcp_server_ready` follows the switch to ready, which the call may beat: wait for it.
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while !seen.iter().any(|e| matches!(e, EventMsg::McpServerReady(_))) {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(event)) => seen.push(event),
            _ => break,
        }
    }
    // Announced idle at start; starting when the call needs it.
    assert!(
        matches!(seen.first(), Some(EventMsg::McpServerIdle(e)) if e.server == "lazy" && e.tools.is_some()),
        "{seen:?}"
    );
    assert!(matches!(seen.get(1), Some(EventMsg::McpServerStarting(_))), "{seen:?}");
    assert!(seen.iter().any(|e| matches!(e, EventMsg::McpServerReady(_))), "{seen:?}");
    manager.shutdown().await;
}

#[test]
fn the_tools_command_answers_from_the_catalog_without_starting_servers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("slow.log");
    let config = write_config(
        &dir,
        "config.toml",
        &format!(
            "[mcp_servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", \"echo started >> '{}'; sleep 1; exec '{DEMO}' --name slow\"]\n\
             [mcp_servers.fast]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"fast\"]\n",
            log.display()
        ),
    );
    let cache = dir.path().join("cache");
    let tools = |extra: &[&str]| {
        let out = router_command()
            .env("MCP_ROUTER_CACHE_DIR", &cache)
            .args(["tools", "--config"])
            .arg(&config)
            .args(extra)
            .output()
            .expect("tools");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf8")
    };
    let cold = tools(&[]);
    assert!(cold.contains("mcp__slow__echo") && cold.contains("mcp__fast__echo"), "{cold}");
    assert_eq!(starts(&log), 1);
    // Warm: the same specs, and the slow server was not started.
    assert_eq!(tools(&[]), cold);
    assert_eq!(starts(&log), 1);
    // --refresh starts every server and lists what it offers now.
    assert_eq!(tools(&["--refresh"]), cold);
    assert_eq!(starts(&log), 2);
    // `tool_cache = false` keeps no catalog: every server is started and waited for.
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, format!("[mcp_router]\ntool_cache = false\n{text}")).expect("write");
    assert_eq!(tools(&[]), cold);
    assert_eq!(starts(&log), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_listed_from_the_catalog_of_a_server_that_then_fails_are_withdrawn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = ToolCache::at(dir.path().join("tools"));
    // It worked once; now it exits after half a second without serving.
    let broken = ServerConfig::stdio("broken", "sh", vec!["-c".into(), "sleep 0.5; exit 3".into()]);
    let earlier = CachedCatalog {
        tools: vec![tool("gone")],
        resources: false,
        completions: false,
        skills: false,
        prompts: false,
        app_only: Vec::new(),
    };
    cache.save(&broken, &earlier);
    let (events, mut rx) = event_channel();
    let options = ManagerOptions::default().with(|o| o.startup.tool_cache = Some(cache.clone()));
    let manager = Arc::new(McpConnectionManager::start(vec![broken.clone()], events, options));
    let router = ToolRouter::with_mcp(manager.clone());
    assert_eq!(spec_names(&router).await, vec!["mcp__broken__gone".to_string()]);
    let changed = next_tools_changed(&mut rx).await;
    assert_eq!(changed.removed, vec!["mcp__broken__gone".to_string()]);
    assert!(changed.added.is_empty());
    assert!(matches!(manager.status("broken"), Some(ServerStatus::Failed(_))));
    assert!(spec_names(&router).await.is_empty());
    // The catalog of a server that failed is kept for its next start.
    assert_eq!(cache.load(&broken), Some(earlier));
    manager.shutdown().await;
}
