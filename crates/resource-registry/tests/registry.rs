//! The registry through a real rmcp client: seed 002's five feature test sequences and seed
//! 003's cases (0, 1, 100, 1,000 resources; every error path; empty, invalid, stale cursors).
//! The client and server talk over an in-memory duplex here; the demo server tests in
//! `mcp-router` drive the same registry over stdio and HTTP child processes.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use resource_registry::{
    Completer, RegistryConnection, RegistryOptions, ResourceBody, ResourceError, ResourceRegistry,
};
use rmcp::model::{
    ClientConfig, Implementation, PaginatedRequestParams, ReadResourceRequestParams, Resource,
    ResourceContents, ResourceTemplate, ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[derive(Debug, Clone, PartialEq)]
enum Note {
    Updated(String),
    ListChanged,
}

#[derive(Clone)]
struct Recorder(mpsc::UnboundedSender<Note>);

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default().with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(Note::Updated(params.uri));
    }
    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.0.send(Note::ListChanged);
    }
}

struct Session {
    client: RunningService<RoleClient, Recorder>,
    notes: mpsc::UnboundedReceiver<Note>,
}

async fn connect(registry: &Arc<ResourceRegistry>) -> Session {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let server =
        RegistryConnection::new(registry.clone(), Implementation::new("registry-test", "1"));
    tokio::spawn(async move {
        if let Ok(service) = server.serve(server_io).await {
            let _ = service.waiting().await;
        }
    });
    let (tx, notes) = mpsc::unbounded_channel();
    let client = Recorder(tx).serve(client_io).await.expect("initialize");
    Session { client, notes }
}

fn registry(page_size: usize) -> Arc<ResourceRegistry> {
    ResourceRegistry::new(RegistryOptions { page_size, ..Default::default() })
}

fn add_text(registry: &ResourceRegistry, uri: &str, text: &'static str) {
    registry
        .register_resource(
            Resource::new(uri, uri.rsplit('/').next().unwrap_or(uri)),
            move || async move { Ok(ResourceBody::from(text)) },
        )
        .expect("register");
}

async fn read(
    session: &Session,
    uri: &str,
) -> Result<Vec<ResourceContents>, rmcp::model::ErrorData> {
    match session.client.read_resource(ReadResourceRequestParams::new(uri)).await {
        Ok(result) => Ok(result.contents),
        Err(ServiceError::McpError(e)) => Err(e),
        Err(other) => panic!("transport error: {other}"),
    }
}

fn text(contents: &[ResourceContents]) -> &str {
    match contents {
        [ResourceContents::TextResourceContents { text, .. }] => text,
        other => panic!("expected one text content, got {other:?}"),
    }
}

async fn all_pages(session: &Session) -> (Vec<String>, usize) {
    let mut uris = Vec::new();
    let mut pages = 0;
    let mut cursor = None;
    loop {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = session.client.list_resources(params).await.expect("list");
        pages += 1;
        uris.extend(page.resources.into_iter().map(|r| r.uri));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return (uris, pages),
        }
    }
}

// ---- seed 002, feature 1: basic registration

#[tokio::test]
async fn feature1_registration_and_listing() {
    let registry = registry(100);
    let session = connect(&registry).await;
    // 1. Empty list.
    let page = session.client.list_resources(None).await.expect("list");
    assert!(page.resources.is_empty());
    assert_eq!(page.next_cursor, None);
    // 2–3. A minimal resource appears with its fields.
    add_text(&registry, "org://projects.org", "* TODO");
    let page = session.client.list_resources(None).await.expect("list");
    assert_eq!(
        serde_json::to_value(&page.resources).expect("json"),
        json!([{"uri": "org://projects.org", "name": "projects.org"}])
    );
    // 4. A name is required.
    let err = registry
        .register_resource(Resource::new("org://x", ""), || async { Ok(ResourceBody::from("")) })
        .expect_err("no name");
    assert_eq!(err.to_string(), "resource `org://x`: a name is required");
    let err = registry
        .register_resource(Resource::new("org://projects.org", "again"), || async {
            Ok(ResourceBody::from(""))
        })
        .expect_err("duplicate");
    assert_eq!(err.to_string(), "`org://projects.org` is already registered");
    // 5. Unregister.
    assert!(registry.unregister_resource("org://projects.org"));
    assert!(!registry.unregister_resource("org://projects.org"));
    assert!(session.client.list_resources(None).await.expect("list").resources.is_empty());
}

#[tokio::test]
async fn full_metadata_is_listed() {
    let registry = registry(100);
    let resource = Resource::new("file:///doc.md", "doc")
        .with_title("The doc")
        .with_description("A document")
        .with_mime_type("text/markdown")
        .with_size(12);
    registry
        .register_resource(resource, || async { Ok(ResourceBody::from("# doc")) })
        .expect("register");
    let session = connect(&registry).await;
    let page = session.client.list_resources(None).await.expect("list");
    assert_eq!(
        serde_json::to_value(&page.resources).expect("json"),
        json!([{"uri": "file:///doc.md", "name": "doc", "title": "The doc", "description": "A document", "mimeType": "text/markdown", "size": 12}])
    );
}

// ---- seed 002, feature 2: reading direct resources

#[tokio::test]
async fn feature2_reading_direct_resources() {
    let registry = registry(100);
    add_text(&registry, "file:///a.txt", "content a");
    add_text(&registry, "file:///b.txt", "content b");
    registry
        .register_resource(Resource::new("file:///broken", "broken"), || async {
            Err(ResourceError::Internal("disk on fire".into()))
        })
        .expect("register");
    let session = connect(&registry).await;
    // 1. Non-existent.
    let err = read(&session, "file:///missing.txt").await.expect_err("missing");
    assert_eq!(
        (err.code.0, err.message.as_ref()),
        (-32002, "Resource not found: file:///missing.txt")
    );
    assert_eq!(err.data, Some(json!({"uri": "file:///missing.txt"})));
    // 2 + 4. Content, independently.
    let a = read(&session, "file:///a.txt").await.expect("a");
    assert_eq!(
        serde_json::to_value(&a).expect("json"),
        json!([{"uri": "file:///a.txt", "mimeType": "text/plain", "text": "content a"}])
    );
    assert_eq!(text(&read(&session, "file:///b.txt").await.expect("b")), "content b");
    // 3. Handler errors become protocol errors.
    let err = read(&session, "file:///broken").await.expect_err("broken");
    assert_eq!((err.code.0, err.message.as_ref()), (-32603, "Internal error: disk on fire"));
}

// ---- seed 002, features 3–5: templates

fn echo_vars(registry: &ResourceRegistry, template: &str) {
    registry
        .register_template(
            ResourceTemplate::new(template, template),
            |vars| async move { Ok(ResourceBody::from(Value::Object(vars).to_string())) },
            None,
        )
        .expect("register template");
}

#[tokio::test]
async fn features3_to_5_templates() {
    let registry = registry(100);
    // Feature 3.5: invalid syntax is refused at registration.
    let err = registry
        .register_template(
            ResourceTemplate::new("org://{bad", "bad"),
            |_| async { Ok(ResourceBody::from("")) },
            None,
        )
        .expect_err("invalid");
    assert_eq!(err.to_string(), "invalid URI template \"org://{bad\" at byte 6: unclosed `{`");
    let err = registry
        .register_template(
            ResourceTemplate::new("org://{x}", " "),
            |_| async { Ok(ResourceBody::from("")) },
            None,
        )
        .expect_err("no name");
    assert_eq!(err.to_string(), "resource `org://{x}`: a name is required");

    echo_vars(&registry, "org://{filename}/headline/{+path}");
    echo_vars(&registry, "org://id/{id}");
    echo_vars(&registry, "org://{filename}/outline");
    echo_vars(&registry, "org://{filename}");
    add_text(&registry, "org://id/special", "direct wins");
    let session = connect(&registry).await;

    // Feature 4.2: templates are listed with uriTemplate, in registration order.
    let listed = session.client.list_resource_templates(None).await.expect("templates");
    let names: Vec<&str> =
        listed.resource_templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(
        names,
        [
            "org://{filename}/headline/{+path}",
            "org://id/{id}",
            "org://{filename}/outline",
            "org://{filename}"
        ]
    );

    let vars = |uri: &'static str| {
        let session = &session;
        async move {
            serde_json::from_str::<Value>(text(&read(session, uri).await.expect(uri)))
                .expect("json")
        }
    };
    // Features 3.3–3.4, 4.3–4.4, 5.1–5.2: matching, extraction, several variables, reserved paths.
    assert_eq!(
        vars("org://projects.org/headline/Tasks/Urgent").await,
        json!({"filename": "projects.org", "path": "Tasks/Urgent"})
    );
    assert_eq!(vars("org://id/abc-123").await, json!({"id": "abc-123"}));
    assert_eq!(vars("org://notes.org/outline").await, json!({"filename": "notes.org"}));
    // Feature 5.3: overlapping patterns — the first registered template that matches answers.
    assert_eq!(vars("org://id").await, json!({"filename": "id"}));
    // Feature 4.5: direct resources are checked first.
    assert_eq!(text(&read(&session, "org://id/special").await.expect("direct")), "direct wins");
    // Feature 5.4: edge cases — percent-decoding, and URIs no template produces.
    assert_eq!(vars("org://my%20file.org/outline").await, json!({"filename": "my file.org"}));
    let err = read(&session, "org://a/b/c").await.expect_err("no template");
    assert_eq!(err.code.0, -32002);
    let err = read(&session, "org://bad%ZZ/outline").await.expect_err("broken escape");
    assert_eq!(err.code.0, -32002);
}

#[tokio::test]
async fn template_handler_errors_map_to_codes() {
    let registry = registry(100);
    registry
        .register_template(
            ResourceTemplate::new("vault://{name}", "vault"),
            |vars| async move {
                match vars.get("name").and_then(Value::as_str) {
                    Some("secret") => Err(ResourceError::AccessDenied("not for you".into())),
                    Some("nothing") => Err(ResourceError::NotFound("no such entry".into())),
                    Some("bad") => {
                        Err(ResourceError::InvalidParams("name must not be `bad`".into()))
                    }
                    Some("boom") => panic!("handler bug"),
                    Some("bytes") => Ok(ResourceBody::Binary(vec![0, 159, 146, 150])),
                    other => Ok(ResourceBody::from(format!("entry {other:?}"))),
                }
            },
            None,
        )
        .expect("register");
    let session = connect(&registry).await;
    let code = |uri: &'static str| {
        let session = &session;
        async move { read(session, uri).await.expect_err(uri) }
    };
    let denied = code("vault://secret").await;
    assert_eq!(
        (denied.code.0, denied.message.as_ref()),
        (resource_registry::ACCESS_DENIED, "Resource access denied: not for you")
    );
    assert_eq!(denied.data, Some(json!({"uri": "vault://secret"})));
    assert_eq!(code("vault://nothing").await.code.0, -32002);
    assert_eq!(code("vault://bad").await.code.0, -32602);
    let panicked = code("vault://boom").await;
    assert_eq!(
        (panicked.code.0, panicked.message.as_ref()),
        (-32603, "Internal error: the resource handler panicked")
    );
    // The server keeps serving after a panic.
    assert_eq!(text(&read(&session, "vault://fine").await.expect("fine")), "entry Some(\"fine\")");
    let blob = read(&session, "vault://bytes").await.expect("bytes");
    assert_eq!(
        serde_json::to_value(&blob).expect("json"),
        json!([{"uri": "vault://bytes", "mimeType": "application/octet-stream", "blob": "AJ+Slg=="}])
    );
    // An empty URI is invalid params.
    assert_eq!(code("").await.code.0, -32602);
}

// ---- seed 003: pagination over 0, 1, 100 and 1,000 resources

#[tokio::test]
async fn pagination_sees_every_resource_exactly_once() {
    for (count, expected_pages) in [(0, 1), (1, 1), (100, 1), (250, 3), (1_000, 10)] {
        let registry = registry(100);
        for n in 0..count {
            let uri = format!("file:///doc{n}.txt");
            registry
                .register_resource(Resource::new(uri.clone(), format!("doc{n}")), || async {
                    Ok(ResourceBody::from("content"))
                })
                .expect("register");
        }
        let session = connect(&registry).await;
        let (uris, pages) = all_pages(&session).await;
        assert_eq!(uris.len(), count);
        assert_eq!(uris.iter().collect::<HashSet<_>>().len(), count, "no duplicates");
        assert_eq!(pages, expected_pages, "{count} resources");
        let expected: Vec<String> = (0..count).map(|n| format!("file:///doc{n}.txt")).collect();
        assert_eq!(uris, expected, "stable registration order");
    }
}

#[tokio::test]
async fn cursors_empty_invalid_and_stale() {
    let registry = registry(2);
    for n in 0..5 {
        add_text(&registry, Box::leak(format!("file:///{n}").into_boxed_str()), "x");
    }
    let session = connect(&registry).await;
    let list = |cursor: &str| {
        let session = &session;
        let cursor = cursor.to_string();
        async move {
            session
                .client
                .list_resources(Some(PaginatedRequestParams::default().with_cursor(Some(cursor))))
                .await
        }
    };
    // Empty: the first page.
    let first = list("").await.expect("empty cursor");
    assert_eq!(first.resources.len(), 2);
    let next = first.next_cursor.expect("more");
    assert!(next.starts_with("c1."), "opaque cursor {next}");
    // Invalid.
    for bad in ["nope", "c1.###", &"c1.QUFB".repeat(1000)] {
        let Err(ServiceError::McpError(err)) = list(bad).await else { panic!("{bad} accepted") };
        assert_eq!((err.code.0, err.message.as_ref()), (-32602, "Invalid cursor"));
    }
    // A templates cursor is not a resources cursor.
    // Stale: the set changed after the cursor was issued.
    add_text(&registry, "file:///new", "x");
    let Err(ServiceError::McpError(err)) = list(&next).await else { panic!("stale accepted") };
    assert_eq!(err.code.0, -32602);
    assert!(
        err.message.contains("the list changed since this cursor was issued"),
        "{}",
        err.message
    );
}

// ---- notifications, subscriptions, completion (subscribe is legacy in rmcp's 2026 API, but
// it is the 2025-11-25 protocol we serve)

#[tokio::test]
#[allow(deprecated)]
async fn list_changed_and_updated_notifications() {
    let registry = registry(100);
    add_text(&registry, "file:///watched", "v1");
    let mut session = connect(&registry).await;
    session.client.list_resources(None).await.expect("list");
    add_text(&registry, "file:///added-later", "x");
    let note = tokio::time::timeout(Duration::from_secs(5), session.notes.recv())
        .await
        .expect("notification in time");
    assert_eq!(note, Some(Note::ListChanged));

    // Not subscribed: nobody is told.
    assert_eq!(registry.notify_updated("file:///watched").await, 0);
    session
        .client
        .subscribe(SubscribeRequestParams::new("file:///watched"))
        .await
        .expect("subscribe");
    assert_eq!(registry.notify_updated("file:///watched").await, 1);
    let note = tokio::time::timeout(Duration::from_secs(5), session.notes.recv())
        .await
        .expect("notification in time");
    assert_eq!(note, Some(Note::Updated("file:///watched".into())));
    let err = session
        .client
        .subscribe(SubscribeRequestParams::new("file:///nope"))
        .await
        .expect_err("unknown uri");
    assert!(matches!(err, ServiceError::McpError(e) if e.code.0 == -32002));
    session
        .client
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new("file:///watched"))
        .await
        .expect("unsubscribe");
    assert_eq!(registry.notify_updated("file:///watched").await, 0);
}

#[tokio::test]
async fn completion_for_template_arguments() {
    let registry = registry(100);
    let files: Vec<String> =
        (0..150).map(|n| format!("file{n:03}.md")).chain(["readme.md".to_string()]).collect();
    let completer: Completer = Arc::new(move |arg, prefix| {
        if arg == "name" {
            files.iter().filter(|f| f.starts_with(prefix)).cloned().collect()
        } else {
            Vec::new()
        }
    });
    registry
        .register_template(
            ResourceTemplate::new("docs://{name}", "doc"),
            |_| async { Ok(ResourceBody::from("")) },
            Some(completer),
        )
        .expect("register");
    echo_vars(&registry, "plain://{x}");
    let session = connect(&registry).await;
    let caps = session.client.peer_info().expect("info").capabilities.clone();
    assert!(caps.completions.is_some());
    assert_eq!(caps.resources.as_ref().and_then(|r| r.subscribe), Some(true));
    let info = session
        .client
        .complete_resource_argument("docs://{name}", "name", "rea", None)
        .await
        .expect("complete");
    assert_eq!(info.values, ["readme.md"]);
    let info = session
        .client
        .complete_resource_argument("docs://{name}", "name", "file", None)
        .await
        .expect("complete");
    assert_eq!((info.values.len(), info.total, info.has_more), (100, Some(150), Some(true)));
    let info = session
        .client
        .complete_resource_argument("plain://{x}", "x", "", None)
        .await
        .expect("no completer");
    assert!(info.values.is_empty());
    let err = session
        .client
        .complete_resource_argument("nope://{x}", "x", "", None)
        .await
        .expect_err("unknown template");
    assert!(matches!(err, ServiceError::McpError(e) if e.code.0 == -32602));
    let err = session
        .client
        .complete_resource_argument("docs://{name}", "other", "", None)
        .await
        .expect_err("unknown argument");
    assert!(matches!(err, ServiceError::McpError(e) if e.code.0 == -32602));
}

#[tokio::test]
async fn cache_hints_when_configured() {
    let hinted = ResourceRegistry::new(RegistryOptions { page_size: 10, ttl_ms: Some(30_000) });
    add_text(&hinted, "memo://a", "alpha");
    let list = hinted.list_resources(None).expect("list");
    assert_eq!(list.ttl_ms, Some(30_000));
    assert_eq!(list.cache_scope, Some(rmcp::model::CacheScope::Public));
    let templates = hinted.list_resource_templates(None).expect("templates");
    assert_eq!(templates.ttl_ms, Some(30_000));
    let read = hinted.read("memo://a").await.expect("read");
    assert_eq!(read.ttl_ms, Some(30_000));
    assert_eq!(read.cache_scope, Some(rmcp::model::CacheScope::Public));

    let plain = registry(10);
    add_text(&plain, "memo://a", "alpha");
    assert_eq!(plain.list_resources(None).expect("list").ttl_ms, None);
    assert_eq!(plain.read("memo://a").await.expect("read").ttl_ms, None);
}
