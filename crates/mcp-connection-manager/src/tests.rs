//! The manager over in-memory transports (`tokio::io::duplex`) to the demo server: restart on
//! next use, back-off and giving up, request timeouts, queries that only look, and shutdown.
//! No child process; paused time where time matters.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use demo_server::{DemoOptions, DemoServer};
use mcp_backend::{ListKind, McpBackend, McpError};
use rmcp::model::JsonObject;
use rmcp::service::RunningService;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{RoleServer, ServiceExt};
use router_protocol::{EventMsg, EventReceiver, event_channel};
use serde_json::json;

use crate::manager::{McpConnectionManager, ServerStatus};
use crate::options::ManagerOptions;
use mcp_connection::DefaultHost;
use mcp_connection::ServerConfig;
use mcp_connection::{ConnectError, Connection, Connector, RouterClient};

/// Connects to a demo server task over a duplex pipe. The first `fail_starts` starts fail.
#[derive(Default)]
struct InMemory {
    starts: AtomicU32,
    fail_starts: u32,
    servers: Mutex<Vec<RunningService<RoleServer, DemoServer>>>,
}

impl InMemory {
    /// End every demo server and wait until it has: its end of the pipe is closed.
    async fn kill_servers(&self) {
        let servers: Vec<_> = self.servers.lock().expect("lock").drain(..).collect();
        for server in servers {
            let _ = server.cancel().await;
        }
    }

    fn starts(&self) -> u32 {
        self.starts.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Connector for InMemory {
    async fn connect(
        &self,
        config: &ServerConfig,
        client: RouterClient,
    ) -> Result<Connection, ConnectError> {
        let n = self.starts.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= self.fail_starts {
            return Err(format!("start {n} failed").into());
        }
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let server =
            tokio::spawn(
                async move { DemoServer::new(DemoOptions::default()).serve(server_io).await },
            );
        let (read, write) = tokio::io::split(client_io);
        let connection =
            Connection::over(config, client, AsyncRwTransport::new_client(read, write)).await?;
        let server = server.await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        self.servers.lock().expect("lock").push(server);
        Ok(connection)
    }
}

fn start(
    connector: Arc<InMemory>,
    options: ManagerOptions,
    tool_timeout: Duration,
) -> (McpConnectionManager, EventReceiver) {
    let (events, rx) = event_channel();
    let mut config = ServerConfig::stdio("demo", "unused-in-memory", vec![]);
    config.tool_timeout = tool_timeout;
    let manager = McpConnectionManager::start_with_connector(
        vec![config],
        events,
        options,
        Arc::new(DefaultHost),
        connector,
    );
    (manager, rx)
}

fn args(value: serde_json::Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

fn restarts(rx: &mut EventReceiver) -> Vec<u32> {
    let mut attempts = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let EventMsg::McpServerRestarting(e) = event {
            attempts.push(e.attempt);
        }
    }
    attempts
}

/// Wait (at most 5 s) until the manager sees the connection closed.
async fn until_closed(manager: &McpConnectionManager) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while manager.status("demo") == Some(ServerStatus::Ready) {
        assert!(tokio::time::Instant::now() < deadline, "the closed connection went unnoticed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn echo(manager: &McpConnectionManager) -> Result<(), McpError> {
    manager.call_tool("demo", "echo", args(json!({"text": "hi"}))).await.map(|_| ())
}

#[tokio::test]
async fn a_dead_server_is_restarted_by_the_next_use() {
    let connector = Arc::new(InMemory::default());
    let (manager, mut rx) =
        start(connector.clone(), ManagerOptions::default(), Duration::from_secs(10));
    echo(&manager).await.expect("first call");
    connector.kill_servers().await;
    // Its end is noticed when it happens; the next call restarts it first and is answered.
    until_closed(&manager).await;
    echo(&manager).await.expect("restarted");
    assert_eq!(connector.starts(), 2);
    assert_eq!(restarts(&mut rx), [1]);
    assert_eq!(manager.status("demo"), Some(ServerStatus::Ready));
}

#[tokio::test(start_paused = true)]
async fn failed_starts_back_off_doubling_then_give_up() {
    let connector = Arc::new(InMemory { fail_starts: u32::MAX, ..Default::default() });
    let options = ManagerOptions::default().with(|o| {
        o.lifecycle.max_restarts = 2;
        o.lifecycle.restart_backoff = Duration::from_millis(100);
    });
    let (manager, mut rx) = start(connector.clone(), options, Duration::from_secs(10));
    let not_started =
        |error: &str| McpError::NotStarted { server: "demo".into(), error: error.into() };
    assert_eq!(echo(&manager).await, Err(not_started("start 1 failed")));
    // Within the back-off nothing is tried again.
    tokio::time::advance(Duration::from_millis(99)).await;
    assert_eq!(echo(&manager).await, Err(not_started("start 1 failed")));
    assert_eq!(connector.starts(), 1);
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(echo(&manager).await, Err(not_started("start 2 failed")));
    // The back-off doubled: 200 ms after restart 1.
    tokio::time::advance(Duration::from_millis(199)).await;
    assert_eq!(echo(&manager).await, Err(not_started("start 2 failed")));
    // The second restart spends the budget: its failure is final at once, and stays so.
    tokio::time::advance(Duration::from_millis(1)).await;
    let gave_up = not_started("start 3 failed (gave up after 2 restarts)");
    assert_eq!(echo(&manager).await, Err(gave_up.clone()));
    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(echo(&manager).await, Err(gave_up));
    assert_eq!(connector.starts(), 3);
    assert_eq!(restarts(&mut rx), [1, 2]);
}

#[tokio::test]
async fn a_request_past_the_tool_timeout_fails_and_the_connection_stays() {
    let connector = Arc::new(InMemory::default());
    let (manager, _rx) =
        start(connector.clone(), ManagerOptions::default(), Duration::from_millis(200));
    let error = manager
        .call_tool("demo", "sleep", args(json!({"ms": 60_000})))
        .await
        .expect_err("times out");
    assert_eq!(error.to_string(), "timed out awaiting tools/call after 200ms (MCP server 'demo')");
    echo(&manager).await.expect("the connection is still usable");
    assert_eq!(connector.starts(), 1);
}

#[tokio::test]
async fn queries_that_only_look_never_restart() {
    let connector = Arc::new(InMemory::default());
    let (manager, mut rx) =
        start(connector.clone(), ManagerOptions::default(), Duration::from_secs(10));
    echo(&manager).await.expect("first call");
    connector.kill_servers().await;
    until_closed(&manager).await;
    manager.wait_until_started().await;
    let _ = manager.list_tools().await;
    let _ = manager.supports_completions().await;
    let _ = manager.resolve_tool("mcp__demo__echo").await;
    assert!(matches!(manager.status("demo"), Some(ServerStatus::Failed(_))));
    assert_eq!(connector.starts(), 1);
    assert!(restarts(&mut rx).is_empty());
}

#[tokio::test]
async fn after_shutdown_every_request_fails_and_nothing_restarts() {
    let connector = Arc::new(InMemory::default());
    let (manager, mut rx) =
        start(connector.clone(), ManagerOptions::default(), Duration::from_secs(10));
    echo(&manager).await.expect("first call");
    manager.shutdown().await;
    assert_eq!(echo(&manager).await, Err(McpError::ShutDown));
    assert_eq!(manager.list("demo", ListKind::Resources, None).await, Err(McpError::ShutDown));
    assert_eq!(
        manager.list_all(ListKind::Templates, mcp_backend::Reuse::Never).await,
        Err(McpError::ShutDown)
    );
    assert_eq!(connector.starts(), 1);
    assert!(restarts(&mut rx).is_empty());
}

/// A host that approves every call "always" (or refuses), counting the questions.
struct Approver {
    answer: router_protocol::ToolApproval,
    asked: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl mcp_connection::HostHandler for Approver {
    async fn approve_tool_call(
        &self,
        asking: &mcp_connection::Asking,
        question: &router_protocol::ToolApprovalQuestion,
    ) -> router_protocol::ToolApproval {
        assert_eq!((asking.server.as_str(), question.tool.as_str()), ("demo", "echo"));
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.answer.clone()
    }
}

#[tokio::test]
async fn a_host_refuses_a_call_or_approves_it_always() {
    use router_protocol::{ApprovalPolicy, ToolApproval};
    let dir = tempfile::tempdir().expect("tempdir");
    for (answer, asked, ran) in
        [(ToolApproval::Refuse("no".into()), 2, false), (ToolApproval::Always, 1, true)]
    {
        let (events, _rx) = event_channel();
        let mut config = ServerConfig::stdio("demo", "unused-in-memory", vec![]);
        config.tool_approvals.insert("echo".into(), ApprovalPolicy::Ask);
        let options = ManagerOptions::default()
            .with(|o| o.trust.pins = Some(crate::PinStore::at(dir.path().join(format!("{ran}")))));
        let host = Arc::new(Approver { answer, asked: Default::default() });
        let manager = McpConnectionManager::start_with_connector(
            vec![config],
            events,
            options,
            host.clone(),
            Arc::new(InMemory::default()),
        );
        for _ in 0..2 {
            let result =
                manager.call_tool("demo", "echo", args(serde_json::json!({"text": "hi"}))).await;
            match &result {
                Ok(_) => assert!(ran),
                Err(e) => {
                    assert!(!ran);
                    assert!(
                        e.to_string().contains("did not approve this call of tool `echo`"),
                        "{e}"
                    );
                }
            }
        }
        assert_eq!(host.asked.load(Ordering::SeqCst), asked, "asked once with always");
        manager.shutdown().await;
    }
}

#[tokio::test]
async fn a_config_change_restarts_only_the_servers_whose_entry_changed() {
    let connector = Arc::new(InMemory::default());
    let timeout = Duration::from_secs(10);
    let (manager, mut rx) = start(connector.clone(), ManagerOptions::default(), timeout);
    echo(&manager).await.expect("first call");
    let demo = |timeout: Duration| {
        let mut config = ServerConfig::stdio("demo", "unused-in-memory", vec![]);
        config.tool_timeout = timeout;
        config
    };
    let extra = ServerConfig::stdio("extra", "unused-in-memory", vec![]);
    // The same entry: nothing happens to it.
    let done = manager.reconfigure(vec![demo(timeout)]);
    assert_eq!((done.kept.as_slice(), done.changed()), (&["demo".to_string()][..], false));
    // A new server starts; the other keeps its connection.
    let done = manager.reconfigure(vec![extra.clone(), demo(timeout)]);
    assert_eq!(done.added, ["extra"]);
    manager.call_tool("extra", "echo", args(json!({"text": "x"}))).await.expect("extra answers");
    assert_eq!(connector.starts(), 2, "only extra was started");
    // A changed entry is started anew; a call in flight on the old connection finishes.
    let slow = manager.call_tool("demo", "sleep", args(json!({"ms": 300})));
    let (result, done) = tokio::join!(slow, async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        manager.reconfigure(vec![extra.clone(), demo(Duration::from_secs(9))])
    });
    assert_eq!(done.restarted, ["demo"]);
    assert_eq!(result.expect("the call in flight").is_error, Some(false));
    echo(&manager).await.expect("the new connection answers");
    assert_eq!(connector.starts(), 3);
    // A removed server ends, is announced, and is unknown from then on.
    let done = manager.reconfigure(vec![extra]);
    assert_eq!(done.removed, ["demo"]);
    assert!(matches!(echo(&manager).await, Err(McpError::UnknownServer(_))));
    assert_eq!(manager.server_names(), ["extra"]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let stopped = loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(EventMsg::McpServerStopped(e))) => break e,
            Ok(Some(_)) => continue,
            _ => panic!("no mcp_server_stopped for the removed server"),
        }
    };
    assert_eq!((stopped.server.as_str(), stopped.was_running), ("demo", true));
    // After a shutdown a config change does nothing.
    manager.shutdown().await;
    assert!(!manager.reconfigure(Vec::new()).changed());
}

/// Scopes in the one manager: a per-session entry runs once per view, a per-directory entry
/// once per directory (shared by the views there); each view sees the shared servers and its
/// own, routes a shortened qualified name to its own instance by identity, and its instances
/// end with it. The manager alone sees the shared servers only.
#[tokio::test]
async fn views_see_the_shared_servers_and_their_own_instances_only() {
    use crate::scope::Scope;
    let connector = Arc::new(InMemory::default());
    let (manager, _rx) =
        start(connector.clone(), ManagerOptions::default(), Duration::from_secs(10));
    let manager = Arc::new(manager);
    // A qualified name of this server's tools is over 64 characters: shortened with a hash.
    let long = "a_session_server_whose_name_is_long_enough_to_need_a_hash";
    let scoped = vec![
        (ServerConfig::stdio(long, "unused-in-memory", vec![]), Scope::Session),
        (ServerConfig::stdio("here", "unused-in-memory", vec![]), Scope::Directory),
    ];
    manager.set_scoped(scoped.clone());
    let in_dir = |dir: &str| std::path::PathBuf::from(dir);
    let host = || Arc::new(DefaultHost) as Arc<dyn mcp_connection::HostHandler>;
    let a = manager.view(1, Some(&in_dir("/w/one")), host());
    let b = manager.view(2, Some(&in_dir("/w/one")), host());
    let c = manager.view(3, Some(&in_dir("/w/two")), host());
    let servers = |tools: Vec<mcp_backend::QualifiedTool>| {
        let mut names: Vec<String> = tools.into_iter().map(|t| t.server).collect();
        names.dedup();
        names
    };
    assert_eq!(servers(a.list_tools().await), [long, "demo", "here"]);
    assert_eq!(servers(manager.list_tools().await), ["demo"], "the manager's own: shared only");
    // demo once, the session entry per view, the directory entry per directory.
    assert_eq!(connector.starts(), 1 + 3 + 2);
    assert_eq!(a.identity("here"), b.identity("here"), "one directory, one instance");
    assert_ne!(a.identity("here"), c.identity("here"));
    assert_ne!(a.identity(long), b.identity(long));
    assert_eq!(a.identity("demo"), "demo");
    // The shortened name resolves to this view's own server, and the call goes to it.
    let tools = a.list_tools().await;
    let echo = tools.iter().find(|t| t.server == long && t.tool.name == "echo").expect("listed");
    assert!(echo.qualified_name.len() <= 64 && !echo.qualified_name.contains(long));
    assert_eq!(a.resolve_tool(&echo.qualified_name).await, Some((long.to_string(), "echo".into())));
    let called = a.call_tool(long, "echo", args(json!({"text": "own"}))).await.expect("called");
    assert_eq!(called.is_error, Some(false));
    assert!(manager.resolve_tool(&echo.qualified_name).await.is_none(), "not the manager's");
    // The same entries again: nothing restarts.
    manager.set_scoped(scoped);
    assert_eq!(connector.starts(), 6);
    // A view dropped ends its instances (the directory's too, when no other view is there).
    assert_eq!(manager.scoped_instances().len(), 5);
    drop(c);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while manager.scoped_instances().len() != 3 {
        assert!(tokio::time::Instant::now() < deadline, "c's instances still held");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(a);
    let left: Vec<_> = manager.scoped_instances().iter().map(|i| (i.scope, i.session)).collect();
    assert_eq!(left, [(Scope::Session, Some(2)), (Scope::Directory, None)], "b holds one's");
    drop(b);
    manager.shutdown().await;
    assert!(manager.scoped_instances().is_empty());
}

/// A scoped instance whose server died between two calls is started again by its view's next
/// call, under the same identity; nothing else restarts until it is used, and the view still
/// holds as many instances.
#[tokio::test]
async fn a_scoped_instance_that_died_is_restarted_by_its_views_next_call() {
    use crate::scope::Scope;
    let connector = Arc::new(InMemory::default());
    let (manager, mut rx) =
        start(connector.clone(), ManagerOptions::default(), Duration::from_secs(10));
    let manager = Arc::new(manager);
    manager.set_scoped(vec![
        (ServerConfig::stdio("mine", "unused-in-memory", vec![]), Scope::Session),
        (ServerConfig::stdio("here", "unused-in-memory", vec![]), Scope::Directory),
    ]);
    let host = || Arc::new(DefaultHost) as Arc<dyn mcp_connection::HostHandler>;
    let dir = std::path::PathBuf::from("/w/one");
    let a = manager.view(1, Some(&dir), host());
    let b = manager.view(2, Some(&dir), host());
    let hi = || args(json!({"text": "hi"}));
    a.call_tool("mine", "echo", hi()).await.expect("a's own");
    b.call_tool("mine", "echo", hi()).await.expect("b's own");
    a.call_tool("here", "echo", hi()).await.expect("the directory's");
    let identity = a.identity("mine");
    // demo, a's and b's session instances, the directory's.
    assert_eq!(connector.starts(), 4);
    connector.kill_servers().await;
    // Every end is noticed when it happens, the instances' too.
    let ready = || {
        let mut statuses = vec![manager.status("demo")];
        for instances in manager.scoped_instances() {
            for name in &instances.names {
                statuses.push(instances.ask(&manager, |m| m.status(name)));
            }
        }
        assert_eq!(statuses.len(), 4);
        statuses.into_iter().filter(|s| *s == Some(ServerStatus::Ready)).count()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while ready() > 0 {
        assert!(tokio::time::Instant::now() < deadline, "the closed connections went unnoticed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let called = a.call_tool("mine", "echo", hi()).await.expect("restarted and answered");
    assert_eq!(called.is_error, Some(false));
    assert_eq!(connector.starts(), 5, "a's instance alone restarted");
    assert_eq!(a.identity("mine"), identity);
    b.call_tool("here", "echo", hi()).await.expect("the directory's, restarted for b");
    assert_eq!(connector.starts(), 6);
    assert_eq!(manager.scoped_instances().len(), 3, "still a's, b's and the directory's");
    echo(&manager).await.expect("the shared server, restarted by its own next use");
    assert_eq!(connector.starts(), 7);
    assert_eq!(restarts(&mut rx).len(), 3, "each restart said once");
    drop((a, b));
    manager.shutdown().await;
}
