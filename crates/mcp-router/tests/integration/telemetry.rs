//! Request spans after OpenTelemetry's MCP conventions, seen by a test subscriber, for real
//! demo servers over stdio and streamable HTTP on 127.0.0.1.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use mcp_connection_manager::ServerConfig;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

use crate::support::{Harness, HttpServer, demo};

type Fields = BTreeMap<String, String>;

/// Every span of target `mcp_router::mcp` with its fields as last recorded, whether it closed,
/// and the fields of every `mcp_router::metrics` event.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<HashMap<u64, (Fields, bool)>>>,
    order: Arc<Mutex<Vec<u64>>>,
    metrics: Arc<Mutex<Vec<Fields>>>,
}

struct Visitor<'a>(&'a mut Fields);
impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        if attrs.metadata().target() != "mcp_router::mcp" {
            return;
        }
        let mut fields = Fields::new();
        attrs.record(&mut Visitor(&mut fields));
        self.spans.lock().expect("lock").insert(id.into_u64(), (fields, false));
        self.order.lock().expect("lock").push(id.into_u64());
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some((fields, _)) = self.spans.lock().expect("lock").get_mut(&id.into_u64()) {
            values.record(&mut Visitor(fields));
        }
    }
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == "mcp_router::metrics" {
            let mut fields = Fields::new();
            event.record(&mut Visitor(&mut fields));
            self.metrics.lock().expect("lock").push(fields);
        }
    }
    fn on_close(&self, id: Id, _: Context<'_, S>) {
        if let Some((_, closed)) = self.spans.lock().expect("lock").get_mut(&id.into_u64()) {
            *closed = true;
        }
    }
}

impl Capture {
    /// The spans in the order they were opened.
    fn spans(&self) -> Vec<(Fields, bool)> {
        let spans = self.spans.lock().expect("lock");
        self.order.lock().expect("lock").iter().filter_map(|id| spans.get(id).cloned()).collect()
    }

    fn named(&self, name: &str, server: &str) -> Vec<Fields> {
        self.spans()
            .into_iter()
            .map(|(fields, _)| fields)
            .filter(|f| f.get("otel.name").map(String::as_str) == Some(name))
            .filter(|f| f.get("mcp_router.server").map(String::as_str) == Some(server))
            .collect()
    }
}

fn get<'a>(fields: &'a Fields, key: &str) -> &'a str {
    fields.get(key).map(String::as_str).unwrap_or_else(|| panic!("no {key} in {fields:?}"))
}

#[tokio::test]
async fn every_request_gets_a_span_with_the_conventions_names_and_attributes() {
    let capture = Capture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    // Other tests' subscribers may have cached an interest in these callsites: ask again.
    tracing::callsite::rebuild_interest_cache();

    let web = HttpServer::demo(100);
    let port = web.url.rsplit(':').next().and_then(|p| p.split('/').next()).expect("port");
    let h = Harness::start(vec![demo("docs", 2), ServerConfig::http("web", &web.url)]);
    let uri = demo_server::resources()[0].uri.clone();

    // All servers: each paged to the end.
    h.payload("list_mcp_resources", "{}").await;
    let read = format!(r#"{{"server": "docs", "uri": "{uri}"}}"#);
    h.payload("read_mcp_resource", &read).await;
    h.call("mcp__docs__echo", r#"{"text": "hi"}"#).await;
    h.call("mcp__docs__fail", "{}").await;
    h.call("mcp__web__echo", r#"{"text": "hi"}"#).await;
    h.call("read_mcp_resource", r#"{"server": "web", "uri": "demo://no-such-thing"}"#).await;
    h.manager.shutdown().await;

    // The handshake and the tool listing of each server.
    for server in ["docs", "web"] {
        let start = capture
            .spans()
            .into_iter()
            .map(|(f, _)| f)
            .find(|f| {
                f.get("mcp_router.server").map(String::as_str) == Some(server)
                    && ["initialize", "server/discover"].contains(&get(f, "otel.name"))
            })
            .unwrap_or_else(|| panic!("no handshake span for {server}"));
        assert!(!get(&start, "mcp.protocol.version").is_empty());
        // One span per page (the demo pages its tools too).
        assert!(!capture.named("tools/list", server).is_empty(), "{server}");
    }

    // Three pages of two: one span per page, each with its own id.
    let pages = capture.named("resources/list", "docs");
    assert_eq!(pages.len(), 3);
    let ids: std::collections::HashSet<&str> =
        pages.iter().map(|p| get(p, "jsonrpc.request.id")).collect();
    assert_eq!(ids.len(), 3);
    assert!(pages.iter().all(|p| get(p, "mcp_router.call_id") == "list_mcp_resources-call"));

    let read = &capture.named("resources/read", "docs")[0];
    assert_eq!(get(read, "mcp.method.name"), "resources/read");
    assert_eq!(get(read, "mcp.resource.uri"), uri);
    assert_eq!(get(read, "otel.kind"), "client");
    assert_eq!(get(read, "network.transport"), "pipe");
    assert_eq!(get(read, "server.address"), "docs");
    assert_eq!(get(read, "mcp_router.call_id"), "read_mcp_resource-call");
    assert!(get(read, "jsonrpc.request.id").parse::<u64>().is_ok(), "{read:?}");
    assert!(!get(read, "mcp.protocol.version").is_empty());
    assert!(!read.contains_key("error.type") && !read.contains_key("otel.status_code"));

    let echo = &capture.named("tools/call echo", "docs")[0];
    assert_eq!(get(echo, "mcp.method.name"), "tools/call");
    assert_eq!(get(echo, "gen_ai.tool.name"), "echo");
    assert_eq!(get(echo, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(get(echo, "mcp_router.call_id"), "mcp__docs__echo-call");
    assert!(!echo.contains_key("error.type"));

    let fail = &capture.named("tools/call fail", "docs")[0];
    assert_eq!(get(fail, "error.type"), "tool_error");
    assert_eq!(get(fail, "otel.status_code"), "ERROR");

    let web_echo = &capture.named("tools/call echo", "web")[0];
    assert_eq!(get(web_echo, "network.transport"), "tcp");
    assert_eq!(get(web_echo, "network.protocol.name"), "http");
    assert_eq!(get(web_echo, "server.address"), "127.0.0.1");
    assert_eq!(get(web_echo, "server.port"), port);

    // A JSON-RPC error: its code is the error type.
    let missing = &capture.named("resources/read", "web")[0];
    assert_eq!(get(missing, "mcp.resource.uri"), "demo://no-such-thing");
    assert!(get(missing, "error.type").parse::<i64>().is_ok_and(|code| code < 0), "{missing:?}");
    assert_eq!(get(missing, "otel.status_code"), "ERROR");

    // Every span ended, and each reported its duration once.
    let spans = capture.spans();
    assert!(spans.iter().all(|(_, closed)| *closed), "{spans:?}");
    let metrics = capture.metrics.lock().expect("lock").clone();
    assert_eq!(metrics.len(), spans.len());
    for metric in &metrics {
        let seconds: f64 =
            get(metric, "histogram.mcp.client.operation.duration").parse().expect("f64");
        assert!((0.0..30.0).contains(&seconds), "{metric:?}");
        assert!(metric.contains_key("mcp.method.name") && metric.contains_key("network.transport"));
    }
    assert!(metrics.iter().any(|m| {
        m.get("error.type").map(String::as_str) == Some("tool_error")
            && m.get("gen_ai.tool.name").map(String::as_str) == Some("fail")
    }));
}
