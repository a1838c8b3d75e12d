//! Protocol eras with servers we did not write: Python SDK 2.3 servers in the 2026-07-28 era over
//! stdio and HTTP (the server itself reports the protocol version our requests carried in
//! `_meta`), a modern-only server that refuses `initialize`, server-everything still through
//! `initialize`, the demo server, all in one list; input-required reads and tool calls answered
//! through the host; and `mcp-server-time` from PyPI started the way users start it.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_connection_manager::{HostHandler, ManagerOptions, ServerConfig};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use router_protocol::EventMsg;
use serde_json::{Value, json};
use tool_router::ToolOutput;

use crate::interop::{Target, harness_dir, shutdown_leaving_nothing};
use crate::support::{Harness, HttpServer, demo, ready_protocols};

const ERA: &str = "era_fixture.py";

fn text_of(output: ToolOutput) -> String {
    match output {
        ToolOutput::Mcp { result: Ok(result) } => serde_json::to_value(&result.content)
            .expect("json")[0]["text"]
            .as_str()
            .expect("text")
            .to_string(),
        ToolOutput::Function { content, .. } => content.to_string(),
        other => panic!("{other:?}"),
    }
}

/// The first `mcp_resource_updated` among the events so far, as `(server, uri)`.
fn first_update(h: &mut Harness) -> Option<(String, String)> {
    h.drain().into_iter().find_map(|e| match e {
        EventMsg::McpResourceUpdated(u) => Some((u.server, u.uri)),
        _ => None,
    })
}

async fn read(h: &Harness, server: &str, uri: &str) -> String {
    let args = json!({"server": server, "uri": uri}).to_string();
    match h.call("read_mcp_resource", &args).await {
        ToolOutput::Function { content, success: Some(true), .. } => {
            let payload: Value = serde_json::from_str(&content).expect("payload");
            payload["contents"][0]["text"].as_str().expect("text").to_string()
        }
        ToolOutput::Function { content, .. } => content.to_string(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn every_era_in_one_config_and_one_list() {
    let modern_only = HttpServer::python(ERA, &["--modern-only"]);
    let dual_http = HttpServer::python(ERA, &[]);
    let servers = vec![
        Target::python_stdio(ERA).config("py-stdio"),
        ServerConfig::http("py-http", dual_http.url.clone()),
        ServerConfig::http("modern-only", modern_only.url.clone()),
        Target::everything_stdio("2026").config("everything"),
        demo("demo", 100),
    ];
    let mut h = Harness::start(servers);
    h.manager.wait_until_started().await;
    let modern = "2026-07-28".to_string();
    assert_eq!(
        ready_protocols(&h.drain()),
        [
            ("demo".to_string(), modern.clone()),
            ("everything".to_string(), "2025-11-25".to_string()),
            ("modern-only".to_string(), modern.clone()),
            ("py-http".to_string(), modern.clone()),
            ("py-stdio".to_string(), modern.clone()),
        ]
    );

    // The servers themselves saw 2026-07-28 in every request's _meta: not a fallback.
    for server in ["py-stdio", "py-http", "modern-only"] {
        let seen = text_of(h.call(&format!("mcp__{server}__meta"), "{}").await);
        assert_eq!(
            serde_json::from_str::<Value>(&seen).expect("json"),
            json!({"meta": "2026-07-28", "negotiated": "2026-07-28"}),
            "{server}"
        );
    }

    // One all-server list, sorted, with every server in it.
    let all = h.payload("list_mcp_resources", "{}").await;
    assert!(all.get("errors").is_none(), "{all}");
    let servers: Vec<&str> = all["resources"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|r| r["server"].as_str())
        .collect();
    let mut sorted = servers.clone();
    sorted.sort();
    assert_eq!(servers, sorted);
    let mut distinct = servers.clone();
    distinct.dedup();
    assert_eq!(distinct, ["demo", "everything", "modern-only", "py-http", "py-stdio"]);

    // Reads and tool calls on each; a missing resource reads the same way whatever code came.
    for server in ["py-stdio", "py-http", "modern-only"] {
        assert_eq!(read(&h, server, "era://hello").await, "hello from both eras");
        let missing = read(&h, server, "era://missing").await;
        assert!(missing.starts_with("resources/read failed: MCP error "), "{missing}");
        assert!(missing.contains("era://missing"), "{missing}");
    }
    let first_everything = all["resources"]
        .as_array()
        .expect("list")
        .iter()
        .find(|r| r["server"] == "everything")
        .and_then(|r| r["uri"].as_str())
        .expect("an everything resource")
        .to_string();
    let body = read(&h, "everything", &first_everything).await;
    assert!(!body.is_empty() && !body.starts_with("resources/read failed"), "{body}");
    let missing = read(&h, "everything", "demo://nope").await;
    assert!(missing.starts_with("resources/read failed: MCP error -32602"), "{missing}");
    let missing = read(&h, "demo", "demo://nope").await;
    assert_eq!(missing, "resources/read failed: MCP error -32602: Resource not found: demo://nope");
    assert_eq!(text_of(h.call("mcp__everything__echo", r#"{"message":"hi"}"#).await), "Echo: hi");
    assert_eq!(text_of(h.call("mcp__demo__echo", r#"{"text":"hi"}"#).await), "Echo: hi");
    shutdown_leaving_nothing(&h).await;
}

/// A host whose user types "Ada" into every form.
struct Ada;

#[async_trait]
impl HostHandler for Ada {
    async fn elicit(
        &self,
        _asking: &mcp_connection_manager::Asking,
        _request: ElicitRequestParams,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"})))
    }
}

fn elicitations(events: &[EventMsg]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            EventMsg::McpServerRequest(r) if r.method == "elicitation/create" => {
                Some((r.server.clone(), r.response.clone().unwrap_or_default()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn input_required_reads_and_calls_go_through_the_host() {
    let http = HttpServer::python(ERA, &["--modern-only"]);
    let servers =
        || vec![Target::python_stdio(ERA).config("s"), ServerConfig::http("h", http.url.clone())];

    let mut accepting =
        Harness::start_with_host(servers(), ManagerOptions::default(), Arc::new(Ada));
    for server in ["s", "h"] {
        assert_eq!(
            text_of(accepting.call(&format!("mcp__{server}__greet"), "{}").await),
            "Hello, Ada!"
        );
        assert_eq!(read(&accepting, server, "secret://k1").await, "secret k1 for Ada");
    }
    let asked = elicitations(&accepting.drain());
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert!(asked.iter().all(|(_, answer)| answer["action"] == "accept"));
    shutdown_leaving_nothing(&accepting).await;

    let mut declining = Harness::start(servers());
    for server in ["s", "h"] {
        assert_eq!(
            text_of(declining.call(&format!("mcp__{server}__greet"), "{}").await),
            "no name given (decline)"
        );
        assert_eq!(read(&declining, server, "secret://k2").await, "secret k2: withheld (decline)");
    }
    let asked = elicitations(&declining.drain());
    assert_eq!(asked.len(), 4);
    assert!(asked.iter().all(|(_, answer)| *answer == json!({"action": "decline"})));
    shutdown_leaving_nothing(&declining).await;
}

#[tokio::test]
async fn mcp_server_time_from_pypi_as_users_start_it() {
    let command = harness_dir().join(".venv/bin/mcp-server-time");
    let config = ServerConfig::stdio(
        "time",
        command.to_str().expect("path"),
        vec!["--local-timezone".into(), "Europe/Paris".into()],
    );
    let mut h = Harness::start(vec![config]);
    h.manager.wait_until_started().await;
    assert_eq!(ready_protocols(&h.drain()), [("time".to_string(), "2026-07-28".to_string())]);
    let args = json!({"source_timezone": "Europe/Paris", "time": "12:00", "target_timezone": "Asia/Tokyo"});
    let converted = text_of(h.call("mcp__time__convert_time", &args.to_string()).await);
    let converted: Value = serde_json::from_str(&converted).expect("json");
    assert_eq!(converted["source"]["timezone"], "Europe/Paris");
    assert_eq!(converted["target"]["timezone"], "Asia/Tokyo");
    shutdown_leaving_nothing(&h).await;
}

#[tokio::test]
async fn server_everything_updates_reach_the_model() {
    // server-everything speaks 2025-11-25: the router subscribes after a read, and the server's
    // `toggle-subscriber-updates` tool starts its simulated updates for subscribed URIs.
    let mut h = Harness::start(vec![Target::everything_stdio("2026").config("everything")]);
    let all = h.payload("list_mcp_resources", r#"{"server":"everything"}"#).await;
    let uri = all["resources"][0]["uri"].as_str().expect("a resource").to_string();
    read(&h, "everything", &uri).await;
    // The subscription goes out on its own task right after the read. Updates come at once and
    // then every 5 s, so a subscription that lands after the first round is served by the next.
    text_of(h.call("mcp__everything__toggle-subscriber-updates", "{}").await);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(12);
    let mut updated = None;
    while updated.is_none() && std::time::Instant::now() < deadline {
        updated = first_update(&mut h);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(updated, Some(("everything".to_string(), uri.clone())));
    let next = h.payload("list_mcp_resources", r#"{"server":"everything"}"#).await;
    assert_eq!(next["changed"][0]["uri"], uri.as_str(), "{next}");
    shutdown_leaving_nothing(&h).await;
}

#[tokio::test]
async fn python_sdk_listen_streams_deliver_updates() {
    let http = HttpServer::python(ERA, &[]);
    let mut h = Harness::start(vec![
        Target::python_stdio(ERA).config("s"),
        ServerConfig::http("h", http.url.clone()),
    ]);
    for server in ["s", "h"] {
        assert_eq!(read(&h, server, "era://hello").await, "hello from both eras");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let touched =
            text_of(h.call(&format!("mcp__{server}__touch"), r#"{"uri":"era://hello"}"#).await);
        assert_eq!(touched, "published an update of era://hello");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut updated = None;
        while updated.is_none() && std::time::Instant::now() < deadline {
            updated = first_update(&mut h);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(updated, Some((server.to_string(), "era://hello".to_string())));
        let next = h.payload("list_mcp_resources", &format!(r#"{{"server":"{server}"}}"#)).await;
        assert_eq!(next["changed"][0]["uri"], "era://hello", "{next}");
    }
    shutdown_leaving_nothing(&h).await;
}

#[tokio::test]
async fn python_sdk_legacy_subscriptions_deliver_updates() {
    // The low-level Python SDK server in the 2025-11-25 era: the router sees
    // `resources.subscribe`, subscribes after a read, and the fixture answers each subscription
    // after one `notifications/resources/updated` for it (on stdio, and on the request's SSE
    // stream over HTTP).
    let script = "fixture_server.py";
    let http = HttpServer::python(script, &["--subscribe"]);
    let legacy = |mut config: ServerConfig| {
        config.protocol = mcp_connection_manager::ProtocolChoice::Legacy;
        config
    };
    let mut stdio = Target::python_stdio(script).config("s");
    if let mcp_connection_manager::TransportConfig::Stdio { args, .. } = &mut stdio.transport {
        args.push("--subscribe".into());
    }
    let mut h =
        Harness::start(vec![legacy(stdio), legacy(ServerConfig::http("h", http.url.clone()))]);
    h.manager.wait_until_started().await;
    assert_eq!(
        ready_protocols(&h.drain()),
        [("h".to_string(), "2025-11-25".to_string()), ("s".to_string(), "2025-11-25".to_string())]
    );
    for server in ["h", "s"] {
        let uri = "fixture://items/0";
        read(&h, server, uri).await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut updated = None;
        while updated.is_none() && std::time::Instant::now() < deadline {
            updated = first_update(&mut h);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(updated, Some((server.to_string(), uri.to_string())));
        let next =
            h.payload("list_mcp_resource_templates", &format!(r#"{{"server":"{server}"}}"#)).await;
        assert_eq!(
            next["changed"],
            json!([{"server": server, "uri": uri, "detected_at": next["changed"][0]["detected_at"]}]),
            "{next}"
        );
        let again =
            h.payload("list_mcp_resource_templates", &format!(r#"{{"server":"{server}"}}"#)).await;
        assert!(again.get("changed").is_none(), "reported twice: {again}");
    }
    shutdown_leaving_nothing(&h).await;
}
