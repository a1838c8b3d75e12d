//! The shared router in process: real Unix-socket sessions from rmcp clients, real demo servers
//! on loopback HTTP (each in a runtime of its own, as a separate process would be), the idle
//! timeout under paused time. Nothing here sleeps to wait: each waits for what it expects.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use router_config::{ConfigFile, ConfigFormat};
use router_protocol::RouterStatus;
use tokio::time::Instant;

use crate::{ConfigSource, Ended, Notice, Place, ServeOptions, SharedRouter};

/// A config with no server.
const NO_SERVERS: &str = "[mcp_servers]\n";

/// A demo server on streamable HTTP (127.0.0.1, a free port), on a thread and runtime of its
/// own for the test's life; its URL.
fn demo_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
        let runtime = runtime.expect("a runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = demo_server::run_http(demo_server::DemoOptions::default(), listener).await;
        });
    });
    url
}

/// A user's folder: the router's place and state, and its config file.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    fn place(&self) -> Place {
        Place::in_dir(self.dir.path().join("run"), None).expect("place")
    }

    /// The router over `text` (written to the config file, followed when `follow`).
    async fn start(&self, text: &str, idle: Option<Duration>, follow: bool) -> SharedRouter {
        std::fs::write(self.config_path(), text).expect("config");
        let path = self.config_path();
        let follow = follow.then(|| ConfigSource {
            path: path.clone(),
            read: Arc::new(move || Ok(read_config(&path)?)),
        });
        let options = ServeOptions {
            place: self.place(),
            config: read_config(&self.config_path()).expect("config"),
            follow,
            listen: None,
            idle_timeout: idle,
            state_dir: Some(self.dir.path().join("state")),
        };
        SharedRouter::start(options).await.expect("the router starts")
    }

    /// Options for a router with no server and nothing followed, in this home.
    fn no_servers(&self) -> ServeOptions {
        ServeOptions {
            place: self.place(),
            config: ConfigFile::from_servers(Vec::new()),
            follow: None,
            listen: None,
            idle_timeout: None,
            state_dir: Some(self.dir.path().join("state")),
        }
    }

    async fn status(&self) -> RouterStatus {
        let text = crate::status_text(&self.place()).await.expect("status").expect("a router");
        serde_json::from_str(text.trim()).expect("status JSON")
    }
}

fn read_config(path: &Path) -> Result<ConfigFile, router_config::ConfigError> {
    let text = std::fs::read_to_string(path).expect("config text");
    router_config::parse_config_file(&text, ConfigFormat::CodexToml, path)
}

/// An agent: counts the tool-list changes it is told of.
#[derive(Clone, Default)]
struct Agent {
    tools_changed: Arc<tokio::sync::watch::Sender<u64>>,
}

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.send_modify(|n| *n += 1);
    }
}

/// A session of `agent` on the router's socket.
async fn session(socket: &Path, agent: Agent) -> RunningService<RoleClient, Agent> {
    let stream = tokio::net::UnixStream::connect(socket).await.expect("connect");
    let (read, write) = stream.into_split();
    agent.serve((read, write)).await.expect("handshake")
}

/// The session's tool names.
async fn tool_names(client: &RunningService<RoleClient, Agent>) -> Vec<String> {
    let tools = client.list_all_tools().await.expect("tools/list");
    tools.into_iter().map(|tool| tool.name.to_string()).collect()
}

/// The text of a tool call's result.
async fn call(client: &RunningService<RoleClient, Agent>, name: &str, text: &str) -> String {
    let arguments = serde_json::json!({"text": text}).as_object().cloned();
    let mut request = CallToolRequestParams::new(name.to_string());
    request.arguments = arguments;
    let result = client.call_tool(request).await.expect("tools/call");
    serde_json::to_string(&result.content).expect("content")
}

/// The router run on a task of its own, and what stops it.
fn running(
    router: SharedRouter,
) -> (tokio::task::JoinHandle<Ended>, tokio::sync::oneshot::Sender<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(router.run(async move {
        let _ = stopped.await;
    }));
    (run, stop)
}

/// Stops the router and waits for it.
async fn stop_router(run: tokio::task::JoinHandle<Ended>, stop: tokio::sync::oneshot::Sender<()>) {
    stop.send(()).expect("the router runs");
    assert_eq!(run.await.expect("the router's task"), Ended::Stopped);
}

/// Until `check` holds (at most 20 s), looking again each time the router may have moved.
async fn until<F: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within 20 s");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn the_router_stops_after_its_idle_timeout_and_never_while_a_session_is_open() {
    let home = Home::new();
    let router = home.start(NO_SERVERS, Some(Duration::from_secs(5)), false).await;
    let socket = router.socket().to_path_buf();
    let run = tokio::spawn(router.run(std::future::pending()));
    // Three idle seconds, then a session: the idle clock starts again when it closes.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let client = session(&socket, Agent::default()).await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!run.is_finished(), "a session is open: the router stays");
    let closed = Instant::now();
    client.cancel().await.expect("closed");
    let ended = run.await.expect("the router's task");
    assert_eq!(ended, Ended::Idle);
    let idle = closed.elapsed();
    assert!(
        idle >= Duration::from_secs(5) && idle < Duration::from_secs(6),
        "stopped {idle:?} after the last session closed"
    );
    assert!(!socket.exists(), "its socket is gone");
    assert!(!home.place().serve_lock().exists(), "its lock is gone");
}

#[tokio::test(start_paused = true)]
async fn a_router_nobody_joins_stops_after_its_timeout_and_a_stopped_one_at_once() {
    let home = Home::new();
    let router = home.start(NO_SERVERS, Some(Duration::from_secs(30)), false).await;
    let started = Instant::now();
    assert_eq!(router.run(std::future::pending()).await, Ended::Idle);
    let after = started.elapsed();
    assert!(after >= Duration::from_secs(30) && after < Duration::from_secs(31), "{after:?}");
    let router = home.start(NO_SERVERS, None, false).await;
    let stop = tokio::time::sleep(Duration::from_secs(7));
    let started = Instant::now();
    assert_eq!(router.run(stop).await, Ended::Stopped);
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[tokio::test]
async fn a_second_router_for_the_same_place_is_refused() {
    let home = Home::new();
    let router = home.start(NO_SERVERS, None, false).await;
    let started = std::time::Instant::now();
    let error = SharedRouter::start(home.no_servers()).await.err().expect("refused").to_string();
    assert!(error.contains("a shared router already runs for this config"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(1), "refused at once: it takes sessions");
    drop(router);
}

/// A router killed a moment ago may still hold the serve lock while its socket already refuses
/// (the kernel lets go of its files in its own time): the next router waits for the lock.
#[tokio::test(start_paused = true)]
async fn a_lock_held_with_nobody_listening_is_waited_for() {
    let home = Home::new();
    let place = home.place();
    let held = crate::place::lock(&place.serve_lock(), false).expect("lock").expect("free");
    let letting_go = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        drop(held);
    });
    let started = Instant::now();
    let router = home.start(NO_SERVERS, None, false).await;
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(3), "{waited:?}");
    letting_go.await.expect("let go");
    // Held past the wait with nobody listening: refused, after 5 s.
    drop(router);
    let held = crate::place::lock(&place.serve_lock(), false).expect("lock").expect("free");
    let started = Instant::now();
    let error = SharedRouter::start(home.no_servers()).await.err().expect("refused").to_string();
    assert!(error.contains("a shared router already runs for this config"), "{error}");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(5) && waited < Duration::from_secs(6), "{waited:?}");
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_open_and_close_and_leave_no_task_behind() {
    let home = Home::new();
    let url = demo_server();
    let text = format!(
        "[mcp_servers.everyone]\nurl = \"{url}\"\n\n[mcp_servers.mine]\nurl = \"{url}\"\nshared = false\n"
    );
    let router = home.start(&text, None, false).await;
    let socket = router.socket().to_path_buf();
    let (run, stopper) = running(router);
    // The tasks of the router with its shared server ready and no session.
    until("the shared server ready", || async {
        home.status().await.servers.iter().all(|s| s.state == "ready")
    })
    .await;
    // (A status answer's own task may still be ending as the next is counted: the baseline is
    // what the router holds with nothing open, and no round may leave more.)
    let idle_tasks = home.status().await.alive_tasks;
    for round in 0..3 {
        let mut clients = Vec::new();
        for n in 0..4 {
            let client = session(&socket, Agent::default()).await;
            let said = call(&client, "mcp__mine__echo", &format!("{round}-{n}")).await;
            assert!(said.contains(&format!("{round}-{n}")), "{said}");
            clients.push(client);
        }
        let status = home.status().await;
        assert_eq!(status.sessions.len(), 4);
        let mine = status.servers.iter().filter(|s| s.name == "mine").count();
        assert_eq!(mine, 4, "one `mine` per session: {:?}", status.servers);
        for client in clients {
            client.cancel().await.expect("closed");
        }
        until("every session gone, with its tasks and servers", || async {
            let status = home.status().await;
            status.sessions.is_empty()
                && status.servers.iter().all(|s| s.name != "mine")
                && status.alive_tasks <= idle_tasks
        })
        .await;
    }
    stop_router(run, stopper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_own_server_with_a_long_name_is_listed_and_called_by_its_identity() {
    let home = Home::new();
    let url = demo_server();
    let long = "a_server_of_this_session_whose_name_is_long_enough_to_be_cut";
    let long_dir = "the_server_of_this_directory_whose_name_is_long_enough_too";
    let text = format!(
        "[mcp_servers.everyone]\nurl = \"{url}\"\n\n[mcp_servers.{long}]\nurl = \"{url}\"\nshared = false\n\n\
         [mcp_servers.{long_dir}]\nurl = \"{url}\"\nshared = \"cwd\"\n"
    );
    let router = home.start(&text, None, false).await;
    let socket = router.socket().to_path_buf();
    let (run, stopper) = running(router);
    for _ in 0..2 {
        let client = session(&socket, Agent::default()).await;
        let names = tool_names(&client).await;
        assert!(names.contains(&"mcp__everyone__echo".to_string()), "{names:?}");
        let everyone = names.iter().filter(|n| n.starts_with("mcp__everyone__")).count();
        for prefix in ["mcp__a_server_of", "mcp__the_server_of"] {
            let own: Vec<&String> = names.iter().filter(|n| n.starts_with(prefix)).collect();
            assert_eq!(own.len(), everyone, "every tool of its own server: {names:?}");
            assert!(own.iter().all(|n| n.len() <= 64), "{own:?}");
            // Each cut name is called on the session's own server (never refused as unknown).
            let tools = client.list_all_tools().await.expect("tools/list");
            let echo = tools
                .iter()
                .find(|t| {
                    t.name.starts_with(prefix)
                        && t.description
                            .as_deref()
                            .is_some_and(|d| d.contains("Echo the text back"))
                })
                .expect("its echo tool");
            let said = call(&client, &echo.name, "long names route").await;
            assert!(said.contains("long names route"), "{said}");
        }
        client.cancel().await.expect("closed");
    }
    stop_router(run, stopper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_edit_starts_the_new_server_and_tells_the_sessions() {
    let home = Home::new();
    let url = demo_server();
    let first = format!("[mcp_servers.a]\nurl = \"{url}\"\n");
    let mut router = home.start(&first, None, true).await;
    let mut notices = router.take_notices().expect("notices");
    assert!(router.take_notices().is_none(), "taken once");
    let socket = router.socket().to_path_buf();
    let (run, stopper) = running(router);
    let agent = Agent::default();
    let mut changed = agent.tools_changed.subscribe();
    let client = session(&socket, agent).await;
    until("a's tools", || async { tool_names(&client).await.contains(&"mcp__a__echo".into()) })
        .await;
    changed.borrow_and_update();

    std::fs::write(home.config_path(), format!("{first}\n[mcp_servers.b]\nurl = \"{url}\"\n"))
        .expect("edit");
    let notice = tokio::time::timeout(Duration::from_secs(20), notices.recv()).await;
    let Ok(Some(Notice::ConfigApplied { added, removed, .. })) = notice else {
        panic!("the edit applied: {notice:?}")
    };
    assert_eq!((added, removed), (vec!["b".to_string()], Vec::<String>::new()));
    let told = tokio::time::timeout(Duration::from_secs(20), changed.changed()).await;
    assert!(told.is_ok(), "the session is told its tools changed");
    until("b's tools", || async { tool_names(&client).await.contains(&"mcp__b__echo".into()) })
        .await;
    assert!(call(&client, "mcp__b__echo", "from b").await.contains("from b"));

    std::fs::write(home.config_path(), "[mcp_servers.a]\nurl = 7\n").expect("a bad edit");
    let notice = tokio::time::timeout(Duration::from_secs(20), notices.recv()).await;
    assert!(
        matches!(notice, Ok(Some(Notice::ConfigUnusable { .. }))),
        "a file that cannot be used is told: {notice:?}"
    );
    assert!(tool_names(&client).await.contains(&"mcp__b__echo".into()), "the servers stay");
    client.cancel().await.expect("closed");
    stop_router(run, stopper).await;
}
