//! The shared router: agents list `mcp-router connect` as a stdio server; the first one starts
//! `mcp-router serve`, the others join it; every configured server runs once for all of them,
//! and each session keeps what is its own (a server's question goes to the session whose call
//! asked). The router stops after its idle timeout with every server; killed, it leaves none.
//! Its HTTP listener lets in only the bearer secret, and no foreign Origin. Real processes
//! throughout: the router binary, the demo servers, rmcp clients over the bridge's stdio.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::support::{DEMO, marker, router_command, wait_gone, write_config};

mod scopes;
mod sessions;

/// A client that answers every elicitation with its own name and counts what it was sent.
#[derive(Clone)]
struct Agent {
    name: String,
    asked: Arc<AtomicUsize>,
    tools_changed: Arc<AtomicUsize>,
    /// The URIs of the `notifications/resources/updated` it got.
    updated: Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        ClientConfig::new(capabilities, Implementation::new(self.name.clone(), "1"))
            .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let content = json!({"name": self.name});
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.fetch_add(1, Ordering::SeqCst);
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated.lock().expect("updated").push(params.uri);
    }
}

/// One agent's `mcp-router connect` and its MCP session through it.
struct Session {
    agent: Agent,
    service: RunningService<RoleClient, Agent>,
    bridge: tokio::process::Child,
}

/// A user's machine: a runtime directory and a config of two demo servers whose processes
/// carry `marker`.
struct Machine {
    _dir: tempfile::TempDir,
    runtime: PathBuf,
    config: PathBuf,
    marker: String,
}

impl Machine {
    fn new(prefix: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let marker = marker(prefix);
        let text = format!(
            r#"
[mcp_servers.docs]
command = "{DEMO}"
args = ["--name", "{marker}-docs"]

[mcp_servers.notes]
command = "{DEMO}"
args = ["--name", "{marker}-notes"]
"#
        );
        let config = write_config(&dir, "config.toml", &text);
        let config = config.canonicalize().expect("canonical");
        let runtime = dir.path().join("run");
        std::fs::create_dir(&runtime).expect("runtime dir");
        Self { runtime, config, marker, _dir: dir }
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = router_command();
        command.env("XDG_RUNTIME_DIR", &self.runtime).args(args).arg("--config").arg(&self.config);
        // Catalogs and pins of this machine alone.
        command.env("MCP_ROUTER_CACHE_DIR", self.runtime.join("cache"));
        command
    }

    async fn connect(&self, name: &str) -> Session {
        self.connect_in(name, None).await
    }

    /// An agent working in `cwd` (the bridge runs there, as an agent starts its servers).
    async fn connect_in(&self, name: &str, cwd: Option<&std::path::Path>) -> Session {
        let mut command =
            tokio::process::Command::from(self.command(&["connect", "--idle-timeout", "1"]));
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut bridge = command.spawn().expect("spawn mcp-router connect");
        let stdout = bridge.stdout.take().expect("stdout");
        let stdin = bridge.stdin.take().expect("stdin");
        let agent = Agent {
            name: name.to_string(),
            asked: Arc::default(),
            tools_changed: Arc::default(),
            updated: Arc::default(),
        };
        let service = match agent.clone().serve((stdout, stdin)).await {
            Ok(service) => service,
            Err(e) => {
                // The router's last words, once it has had a moment to write them.
                std::thread::sleep(Duration::from_secs(1));
                panic!(
                    "{name}'s handshake through connect: {e}; routers {:?}, files {:?}; the router's log: {}",
                    self.routers(),
                    self.place_files(),
                    self.router_log()
                )
            }
        };
        Session { agent, service, bridge }
    }

    /// `mcp-router status --json`.
    fn status(&self) -> Value {
        let out = self.command(&["status", "--json"]).output().expect("status");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("status JSON")
    }

    /// Until the router's status shows a call in flight (at most 10 s).
    fn wait_for_a_call_in_flight(&self) {
        wait_for("a call in flight", Duration::from_secs(10), || {
            let status = self.status();
            let sessions = status["sessions"].as_array().cloned().unwrap_or_default();
            sessions.iter().any(|s| s["calls_in_flight"].as_u64() > Some(0))
        });
    }

    /// The demo servers' processes (not their guards, which carry the marker too).
    fn servers(&self) -> Vec<u32> {
        crate::support::live_processes(|_, cmdline, _| {
            cmdline.starts_with(DEMO) && cmdline.contains(&self.marker)
        })
    }

    /// The pid of the demo server `name` (`docs`, `notes`, …), if one runs.
    fn server(&self, name: &str) -> Vec<u32> {
        let tag = format!("{}-{name}\0", self.marker);
        crate::support::live_processes(|_, cmdline, _| {
            cmdline.starts_with(DEMO) && cmdline.contains(&tag)
        })
    }

    /// The config with `extra` (TOML) after the two servers.
    fn rewrite(&self, docs_args: &str, extra: &str) {
        let marker = &self.marker;
        let text = format!(
            "[mcp_servers.docs]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-docs\"{docs_args}]\n\n\
             [mcp_servers.notes]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-notes\"]\n\n{extra}"
        );
        // Written beside and renamed over, as editors save.
        let next = self.config.with_extension("next");
        std::fs::write(&next, text).expect("write");
        std::fs::rename(&next, &self.config).expect("rename");
    }

    /// The shared router's processes for this config.
    fn routers(&self) -> Vec<u32> {
        let config = self.config.to_str().expect("UTF-8");
        crate::support::live_processes(|_, cmdline, _| {
            cmdline.contains("serve\0") && cmdline.contains(config)
        })
    }

    /// What the shared router wrote to its log (its stderr) so far.
    fn router_log(&self) -> String {
        let dir = self.runtime.join("mcp-router");
        let logs = std::fs::read_dir(&dir).into_iter().flatten().filter_map(Result::ok);
        let log = logs.map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "log"));
        log.and_then(|path| std::fs::read_to_string(path).ok()).unwrap_or_default()
    }

    fn place_files(&self) -> Vec<String> {
        let dir = self.runtime.join("mcp-router");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries.filter_map(|e| e.ok()?.file_name().to_str().map(str::to_string)).collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

async fn call(session: &Session, name: &str, arguments: Value) -> (bool, String) {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = arguments.as_object().cloned();
    let result = session.service.call_tool(params).await.expect("tools/call");
    let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone());
    (result.is_error == Some(true), text.unwrap_or_default())
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what} did not happen within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn agents_share_one_process_per_server_and_keep_their_own_sessions() {
    let machine = Machine::new("shared");
    // Three agents start at once: one router starts, and each server once.
    let (a, b, c) =
        tokio::join!(machine.connect("ada"), machine.connect("bob"), machine.connect("cy"));
    assert_eq!(machine.routers().len(), 1, "one shared router");
    wait_for("both servers ready", Duration::from_secs(10), || {
        let status = machine.status();
        let servers = status["servers"].as_array().cloned().unwrap_or_default();
        servers.len() == 2 && servers.iter().all(|s| s["state"] == "ready")
    });
    assert_eq!(machine.servers().len(), 2, "one process per server");
    let status = machine.status();
    assert_eq!(status["sessions"].as_array().map(Vec::len), Some(3), "{status:#}");
    for server in status["servers"].as_array().expect("servers") {
        assert_eq!(server["shared"], true, "{server}");
        assert!(
            server["pid"].as_u64().is_some() && server["rss_kib"].as_u64().is_some(),
            "{server}"
        );
    }

    // Each lists and calls tools and reads resources through the shared servers.
    for session in [&a, &b, &c] {
        let tools = session.service.list_all_tools().await.expect("tools/list");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for expected in
            ["list_mcp_resources", "read_mcp_resource", "mcp__docs__ask", "mcp__notes__echo"]
        {
            assert!(names.contains(&expected), "{expected} missing from {names:?}");
        }
        let (failed, text) =
            call(session, "mcp__notes__echo", json!({"text": session.agent.name})).await;
        assert!(!failed && text == format!("Echo: {}", session.agent.name), "{text}");
        let (failed, text) = call(
            session,
            "read_mcp_resource",
            json!({"server": "docs", "uri": "demo://docs/README.md"}),
        )
        .await;
        assert!(!failed && text.contains("\"contents\""), "{text}");
    }
    // A client's trace context (`_meta`) reaches the shared server the call goes to.
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut params = CallToolRequestParams::new("mcp__notes__echo");
    params.arguments = json!({"text": "traced"}).as_object().cloned();
    let mut meta = rmcp::model::RequestMetaObject::new();
    meta.0.set_traceparent(parent);
    params.meta = Some(meta);
    let result = a.service.call_tool(params).await.expect("tools/call");
    let received = result.meta.as_ref().and_then(|m| m.get_traceparent());
    assert_eq!(received, Some(parent), "{result:?}");
    // A server's question goes to the session whose call asked it, never to another.
    let (failed, text) = call(&b, "mcp__docs__ask", json!({})).await;
    assert!(!failed, "{text}");
    assert_eq!(text, r#"accepted: {"name":"bob"}"#);
    assert_eq!([&a, &b, &c].map(|s| s.agent.asked.load(Ordering::SeqCst)), [0, 1, 0]);
    let (_, text) = call(&c, "mcp__docs__ask", json!({})).await;
    assert_eq!(text, r#"accepted: {"name":"cy"}"#);
    assert_eq!(machine.servers().len(), 2, "still one process per server");
    // Each session's share of what the sessions cost (its specs and outputs, its ledger's;
    // tokens are counted off the call path, so the status has them a moment later).
    let counted = |s: &Value, key: &str| s[key].as_u64().unwrap_or(0);
    let mut sessions = Vec::new();
    wait_for("every session's tokens counted", Duration::from_secs(30), || {
        sessions = machine.status()["sessions"].as_array().cloned().expect("sessions");
        sessions.iter().all(|s| counted(s, "spec_tokens") > 0 && counted(s, "tokens_to_model") > 0)
    });
    let shares: f64 = sessions.iter().map(|s| s["share"].as_f64().expect("share")).sum();
    assert!((shares - 1.0).abs() < 1e-9, "{sessions:#?}");
    let text = String::from_utf8(machine.command(&["status"]).output().expect("status").stdout);
    assert!(text.expect("UTF-8").contains(" spec tokens, "), "the status text says it too");

    // An agent killed mid-call leaves the router and the others working.
    let mut a = a;
    let slow = {
        let peer = a.service.peer().clone();
        tokio::spawn(async move {
            let mut params = CallToolRequestParams::new("mcp__notes__sleep");
            params.arguments = json!({"ms": 3000}).as_object().cloned();
            peer.call_tool(params).await
        })
    };
    machine.wait_for_a_call_in_flight();
    a.bridge.kill().await.expect("kill a's bridge");
    assert!(slow.await.expect("join").is_err(), "a's call ended with its bridge");
    let (failed, text) = call(&b, "mcp__notes__echo", json!({"text": "still here"})).await;
    assert!(!failed && text == "Echo: still here", "{text}");
    wait_for("a's session closed", Duration::from_secs(10), || {
        machine.status()["sessions"].as_array().map(Vec::len) == Some(2)
    });
    // Its run is in the ledger of the router's state folder.
    let ledger = machine.runtime.join("cache").join("ledger").join("ledger.jsonl");
    wait_for("a's run in the ledger", Duration::from_secs(10), || {
        std::fs::read_to_string(&ledger)
            .is_ok_and(|text| text.contains("mcp__notes__echo") || text.contains("\"echo\""))
    });

    // The last agents leave: after the idle timeout the router stops, every server with it,
    // and its socket and secret are gone.
    for session in [b, c] {
        let Session { service, mut bridge, .. } = session;
        drop(service);
        let _ = tokio::time::timeout(Duration::from_secs(5), bridge.wait()).await;
    }
    let left = wait_gone(&machine.marker, Duration::from_secs(15));
    assert_eq!(left, Vec::<u32>::new(), "servers left after the idle timeout");
    wait_for("the router stopped", Duration::from_secs(5), || machine.routers().is_empty());
    // Nothing left: sockets, locks and the log all go with a clean end.
    assert_eq!(machine.place_files(), Vec::<String>::new());
}

/// The URIs a resource-tool output says changed since they were read.
fn changed(text: &str) -> Vec<String> {
    let payload: Value = serde_json::from_str(text).unwrap_or_default();
    let changed = payload["changed"].as_array().cloned().unwrap_or_default();
    changed.iter().filter_map(|c| c["uri"].as_str().map(str::to_string)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_session_hears_only_of_changes_to_what_it_read() {
    let machine = Machine::new("shared-changes");
    let (a, b) = tokio::join!(machine.connect("ada"), machine.connect("bob"));
    let (_, listed) = call(&a, "list_mcp_resources", json!({"server": "notes"})).await;
    let listed: Value = serde_json::from_str(&listed).expect("a list payload");
    let uri = listed["resources"][0]["uri"].as_str().expect("a resource").to_string();
    let read = json!({"server": "notes", "uri": uri});
    let (failed, text) = call(&a, "read_mcp_resource", read.clone()).await;
    assert!(!failed, "{text}");
    // The server is watching for the router once `touch` finds a watcher.
    wait_for_async("the subscription", || async {
        let (_, told) = call(&b, "mcp__notes__touch", json!({"uri": uri})).await;
        told.starts_with("told 1 ")
    })
    .await;
    let list = json!({"server": "notes"});
    let mut heard = Vec::new();
    for _ in 0..100 {
        heard = changed(&call(&a, "list_mcp_resources", list.clone()).await.1);
        if !heard.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(heard, vec![uri.clone()], "the session that read it hears of the change");
    assert_eq!(
        changed(&call(&a, "list_mcp_resources", list.clone()).await.1),
        Vec::<String>::new(),
        "once"
    );
    assert_eq!(
        changed(&call(&b, "list_mcp_resources", list.clone()).await.1),
        Vec::<String>::new(),
        "not another session"
    );
    // Both read it now: a change reaches both, and one taking it leaves it for the other.
    assert!(!call(&b, "read_mcp_resource", read.clone()).await.0);
    assert!(!call(&a, "read_mcp_resource", read.clone()).await.0);
    let (_, told) = call(&b, "mcp__notes__touch", json!({"uri": uri})).await;
    assert!(told.starts_with("told 1 "), "{told}");
    let mut heard_a = Vec::new();
    for _ in 0..100 {
        heard_a = changed(&call(&a, "list_mcp_resources", list.clone()).await.1);
        if !heard_a.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(heard_a, vec![uri.clone()]);
    assert_eq!(changed(&call(&b, "list_mcp_resources", list.clone()).await.1), vec![uri.clone()]);
}

// `resources/subscribe` is the 2025-11-25 way, which these sessions speak.
#[allow(deprecated)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_subscribed_session_is_told_of_updates_and_only_it() {
    let machine = Machine::new("shared-subscribe");
    let (a, b) = tokio::join!(machine.connect("ada"), machine.connect("bob"));
    let resources = a.service.list_all_resources().await.expect("resources/list");
    let resource = resources
        .iter()
        .find(|r| r.uri.starts_with("mcp-router://notes/"))
        .expect("a notes resource");
    let qualified = resource.uri.clone();
    let uri = qualified.strip_prefix("mcp-router://notes/").expect("qualified").to_string();
    let subscribe = rmcp::model::SubscribeRequestParams::new(qualified.clone());
    a.service.subscribe(subscribe).await.expect("resources/subscribe");
    let unknown = rmcp::model::SubscribeRequestParams::new("demo://not-qualified");
    let refused = a.service.subscribe(unknown).await.expect_err("no server lists it");
    assert!(refused.to_string().contains("no server lists it"), "{refused}");
    wait_for_async("the server watching", || async {
        let (_, told) = call(&b, "mcp__notes__touch", json!({"uri": uri})).await;
        told.starts_with("told 1 ")
    })
    .await;
    wait_for("the update", Duration::from_secs(5), || {
        !a.agent.updated.lock().expect("updated").is_empty()
    });
    let heard = a.agent.updated.lock().expect("updated").clone();
    assert!(heard.iter().all(|u| *u == qualified), "{heard:?}");
    assert!(b.agent.updated.lock().expect("updated").is_empty(), "b did not subscribe");
    // Unsubscribed: no more updates (the model's own notice still comes with its next list).
    // The touch of another resource it then subscribes to is the barrier: an update of the
    // first, had one been sent, would have come before it.
    let unsubscribe = rmcp::model::UnsubscribeRequestParams::new(qualified.clone());
    a.service.unsubscribe(unsubscribe).await.expect("resources/unsubscribe");
    let before = a.agent.updated.lock().expect("updated").len();
    let (_, told) = call(&b, "mcp__notes__touch", json!({"uri": uri})).await;
    assert!(told.starts_with("told 1 "), "{told}");
    let other = resources
        .iter()
        .find(|r| r.uri.starts_with("mcp-router://notes/") && r.uri != qualified)
        .expect("a second notes resource");
    let other_uri = other.uri.strip_prefix("mcp-router://notes/").expect("qualified").to_string();
    let subscribe = rmcp::model::SubscribeRequestParams::new(other.uri.clone());
    a.service.subscribe(subscribe).await.expect("resources/subscribe");
    wait_for_async("the server watching the other", || async {
        let (_, told) = call(&b, "mcp__notes__touch", json!({"uri": other_uri})).await;
        told.starts_with("told 1 ")
    })
    .await;
    wait_for("the other's update", Duration::from_secs(5), || {
        a.agent.updated.lock().expect("updated").len() > before
    });
    let after = a.agent.updated.lock().expect("updated")[before..].to_vec();
    assert!(after.iter().all(|u| *u == other.uri), "unsubscribed from {qualified}: {after:?}");
}

async fn wait_for_async<F: std::future::Future<Output = bool>>(
    what: &str,
    mut done: impl FnMut() -> F,
) {
    for _ in 0..100 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen within 5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn config_edits_apply_live_to_the_servers_that_changed_only() {
    let machine = Machine::new("shared-edit");
    let (a, b) = tokio::join!(machine.connect("ada"), machine.connect("bob"));
    assert!(!call(&a, "mcp__notes__echo", json!({"text": "x"})).await.0);
    assert!(!call(&b, "mcp__docs__echo", json!({"text": "x"})).await.0);
    let (docs, notes) = (machine.server("docs"), machine.server("notes"));
    assert_eq!((docs.len(), notes.len()), (1, 1));
    // A call in flight on `notes` while a server is added.
    let slow = {
        let peer = a.service.peer().clone();
        tokio::spawn(async move {
            let mut params = CallToolRequestParams::new("mcp__notes__sleep");
            params.arguments = json!({"ms": 1500}).as_object().cloned();
            peer.call_tool(params).await
        })
    };
    machine.wait_for_a_call_in_flight();
    let extra = format!(
        "[mcp_servers.extra]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{}-extra\"]\n",
        machine.marker
    );
    machine.rewrite("", &extra);
    for session in [&a, &b] {
        wait_for_async("the new server's tools", || async {
            let tools = session.service.list_all_tools().await.unwrap_or_default();
            tools.iter().any(|t| t.name == "mcp__extra__echo")
        })
        .await;
        let told = session.agent.tools_changed.clone();
        wait_for_async("told of the new tools", || {
            let told = told.clone();
            async move { told.load(Ordering::SeqCst) > 0 }
        })
        .await;
        let (failed, text) = call(session, "mcp__extra__echo", json!({"text": "new"})).await;
        assert!(!failed && text == "Echo: new", "{text}");
    }
    let finished = slow.await.expect("join").expect("the call in flight finished");
    assert_eq!(finished.is_error, Some(false), "{finished:?}");
    assert_eq!(
        (machine.server("docs"), machine.server("notes")),
        (docs.clone(), notes.clone()),
        "no restart"
    );
    // `docs`' entry changes: it alone is started anew.
    machine.rewrite(", \"--page-size\", \"3\"", &extra);
    wait_for("docs restarted", Duration::from_secs(10), || {
        let now = machine.server("docs");
        now.len() == 1 && now != docs
    });
    assert_eq!(machine.server("notes"), notes, "notes untouched");
    let (failed, text) = call(&b, "mcp__docs__echo", json!({"text": "again"})).await;
    assert!(!failed && text == "Echo: again", "{text}");
    // `extra` is removed: its process ends, its tools go, the others stay.
    machine.rewrite(", \"--page-size\", \"3\"", "");
    wait_for("extra ended", Duration::from_secs(10), || machine.server("extra").is_empty());
    let tools = a.service.list_all_tools().await.expect("tools");
    assert!(!tools.iter().any(|t| t.name.starts_with("mcp__extra__")));
    let (failed, text) = call(&a, "mcp__extra__echo", json!({"text": "gone"})).await;
    assert!(failed, "{text}");
    assert_eq!(machine.server("notes"), notes, "notes untouched");
    // A config that no longer reads leaves the servers as they are: once the router has said
    // so (after it decided), nothing was restarted.
    std::fs::write(&machine.config, "[mcp_servers.docs\n").expect("write");
    wait_for("the router read the broken config", Duration::from_secs(10), || {
        machine.router_log().contains("changed but cannot be used")
    });
    assert!(!call(&a, "mcp__notes__echo", json!({"text": "x"})).await.0);
    assert_eq!(machine.server("notes"), notes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_killed_leaves_no_server_and_ends_its_bridges() {
    let machine = Machine::new("shared-kill");
    let mut session = machine.connect("ada").await;
    let (failed, text) = call(&session, "mcp__docs__echo", json!({"text": "x"})).await;
    assert!(!failed, "{text}");
    wait_for("both servers started", Duration::from_secs(10), || machine.servers().len() == 2);
    let pid = machine.status()["pid"].as_u64().expect("the router's pid") as i32;
    // SAFETY: a plain kill(2) of the router this test started.
    #[allow(unsafe_code)]
    let killed = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(killed, 0);
    assert_eq!(wait_gone(&machine.marker, Duration::from_secs(10)), Vec::<u32>::new());
    let exited = tokio::time::timeout(Duration::from_secs(5), session.bridge.wait()).await;
    assert!(exited.is_ok(), "connect ends when its router is gone");
    // Its socket stays open until the kernel has closed its files (after its memory: its
    // command line is gone before its sockets are), a zombie or gone: a `connect` before then
    // would be queued on a listener nobody accepts on.
    wait_for("the router's end", Duration::from_secs(10), || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
        matches!(state, None | Some("Z" | "X"))
    });
    // A leader that is a zombie may still have threads exiting, which hold its files: until the
    // last has, its socket still takes connections that nobody will answer.
    let sockets: Vec<PathBuf> = machine
        .place_files()
        .iter()
        .filter(|f| {
            f.ends_with(".sock") && !f.ends_with("status.sock") && !f.ends_with("events.sock")
        })
        .map(|f| machine.runtime.join("mcp-router").join(f))
        .collect();
    wait_for("the router's socket refused", Duration::from_secs(10), || {
        sockets.iter().all(|s| std::os::unix::net::UnixStream::connect(s).is_err())
    });
    // The next agent starts a new router over the stale socket file.
    let again = machine.connect("bob").await;
    let (failed, text) = call(&again, "mcp__notes__echo", json!({"text": "back"})).await;
    assert!(!failed && text == "Echo: back", "{text}");
    assert_eq!(machine.routers().len(), 1);
    drop(again);
    assert_eq!(wait_gone(&machine.marker, Duration::from_secs(15)), Vec::<u32>::new());
}

#[tokio::test]
async fn stop_ends_the_shared_router_and_its_servers_by_command() {
    let machine = Machine::new("shared-stop");
    let session = machine.connect("ada").await;
    let (failed, text) = call(&session, "mcp__docs__echo", json!({"text": "x"})).await;
    assert!(!failed, "{text}");
    let status = machine.status();
    let pid = status["pid"].as_u64().expect("the router's pid");
    // Each running stdio server's sandbox, in the words of its ready event.
    let servers = status["servers"].as_array().expect("servers");
    let docs = servers.iter().find(|s| s["name"] == "docs").expect("docs");
    let tier = docs["sandbox"].as_str().expect("a sandbox");
    assert!(tier.contains("landlock ABI ") || tier.starts_with("none: "), "{tier}");
    let out = machine.command(&["stop"]).output().expect("stop");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("stopped the shared router (pid {pid})\n")
    );
    // Its servers went with it, and nothing answers for the config any more.
    assert_eq!(wait_gone(&machine.marker, Duration::from_secs(10)), Vec::<u32>::new());
    let again = machine.command(&["stop"]).output().expect("stop again");
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("no shared router runs for this config")
    );
    drop(session);
}

/// A tool new to a pinned server is held; called by name, the calling session's user is asked
/// (an elicitation) and an acceptance lets it in, for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_tool_is_approved_by_the_user_of_the_calling_session() {
    let machine = Machine::new("shared-held");
    let session = machine.connect("ada").await;
    let (failed, text) = call(&session, "mcp__docs__add_tool", json!({"name": "greet"})).await;
    assert!(!failed, "{text}");
    let asked = || session.agent.asked.load(Ordering::SeqCst);
    assert_eq!(asked(), 0);
    let answer = std::sync::Mutex::new(String::new());
    // The router reads the new list when the server says it changed: until then the name is
    // unknown to it.
    wait_for_async("a call of greet that reaches it", || async {
        let (_, text) = call(&session, "mcp__docs__greet", json!({"to": "you"})).await;
        let known = !text.contains("unsupported") && !text.contains("not in the tool list");
        *answer.lock().expect("answer") = text;
        known
    })
    .await;
    let text = answer.lock().expect("answer").clone();
    assert!(text.starts_with("greet: "), "approved by ada, then run: {text}");
    assert_eq!(asked(), 1, "ada was asked once");
    let (failed, text) = call(&session, "mcp__docs__greet", json!({"to": "me"})).await;
    assert!(!failed && text.starts_with("greet: "), "{text}");
    assert_eq!(asked(), 1, "pinned: not asked again");
}

/// `mcp-router serve --listen 127.0.0.1:0`: the URL and the secret beside the socket.
fn serve_http(machine: &Machine) -> (std::process::Child, String, String) {
    serve_http_with(machine, &[])
}

/// [`serve_http`] with `extra` arguments.
fn serve_http_with(machine: &Machine, extra: &[&str]) -> (std::process::Child, String, String) {
    let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut child = machine
        .command(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let place = machine.runtime.join("mcp-router");
    let address = |name: &str| {
        std::fs::read_dir(&place)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(name)))
    };
    wait_for("the address file", Duration::from_secs(10), || {
        assert!(child.try_wait().expect("try_wait").is_none(), "serve exited");
        address(".http").is_some()
    });
    let read = |p: Option<PathBuf>| std::fs::read_to_string(p.expect("file")).expect("read");
    let url: Value = serde_json::from_str(&read(address(".http"))).expect("JSON");
    let secret = read(address(".secret"));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(address(".secret").expect("secret")).expect("meta").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "the secret is the user's alone");
    (child, url["url"].as_str().expect("url").to_string(), secret)
}

async fn post(url: &str, headers: &[(&str, &str)]) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let client = reqwest::Client::new();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("a response").status().as_u16()
}

#[tokio::test]
async fn http_lets_in_only_the_secret_and_no_foreign_origin() {
    let machine = Machine::new("shared-http");
    let (mut child, url, secret) = serve_http(&machine);
    let bearer = format!("Bearer {secret}");
    assert_eq!(post(&url, &[]).await, 401, "no secret");
    assert_eq!(post(&url, &[("authorization", "Bearer 0123")]).await, 401, "a wrong secret");
    let foreign = [("authorization", bearer.as_str()), ("origin", "http://evil.example")];
    assert_eq!(post(&url, &foreign).await, 403, "a web page's Origin");
    assert_eq!(post(&url, &[("authorization", bearer.as_str())]).await, 200, "the secret");
    let local = [("authorization", bearer.as_str()), ("origin", "http://localhost:6274")];
    assert_eq!(post(&url, &local).await, 200, "a page of this machine");
    // A second router for the same config is refused while this one runs.
    let out = machine.command(&["serve"]).output().expect("serve again");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already runs"));
    // SAFETY: SIGTERM to the router this test started.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    assert!(child.wait().expect("wait").success());
    assert_eq!(wait_gone(&machine.marker, Duration::from_secs(10)), Vec::<u32>::new());
    assert_eq!(machine.place_files(), Vec::<String>::new(), "nothing left after SIGTERM");
}

#[test]
fn a_non_loopback_address_is_refused() {
    let machine = Machine::new("shared-remote");
    let out = machine.command(&["serve", "--listen", "0.0.0.0:0"]).output().expect("serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("loopback addresses only"), "{stderr}");
    assert!(machine.servers().is_empty(), "refused before any server starts");
}

/// An SDK client (`program` with `args`) of the shared router for `machine`, its stdout piped.
fn sdk_client(
    machine: &Machine,
    program: String,
    script: PathBuf,
    name: &str,
) -> std::process::Child {
    std::process::Command::new(program)
        .arg(script)
        .arg(crate::support::ROUTER)
        .arg(&machine.config)
        .arg(name)
        .arg("2500")
        .env("XDG_RUNTIME_DIR", &machine.runtime)
        .env("MCP_ROUTER_CACHE_DIR", machine.runtime.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn an SDK client")
}

/// The client's JSON line (what it saw), read as soon as it is printed.
fn first_line(child: &mut std::process::Child) -> Value {
    use std::io::BufRead as _;
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line).expect("a line");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

#[test]
fn python_and_typescript_sdk_clients_share_one_process_per_server() {
    use crate::interop::{harness_dir, node, python};
    let machine = Machine::new("shared-sdk");
    let mut ts = sdk_client(&machine, node(), harness_dir().join("ts/shared_client.mjs"), "ts");
    let mut py = sdk_client(&machine, python(), harness_dir().join("py/shared_client.py"), "py");
    let (ts_saw, py_saw) = (first_line(&mut ts), first_line(&mut py));
    // Both sessions are open now.
    assert_eq!(machine.routers().len(), 1, "one shared router");
    assert_eq!(machine.servers().len(), 2, "one process per server");
    assert_eq!(machine.status()["sessions"].as_array().map(Vec::len), Some(2));
    for (saw, name) in [(&ts_saw, "ts"), (&py_saw, "py")] {
        let tools = saw["tools"].as_array().expect("tools");
        for expected in ["list_mcp_resources", "read_mcp_resource", "mcp__docs__ask"] {
            assert!(tools.iter().any(|t| t == expected), "{name}: no {expected} in {saw}");
        }
        assert_eq!(saw["echo"], format!("Echo: {name}"), "{saw}");
        assert_eq!(saw["read"], true, "{saw}");
        // The elicitation reached the client whose call asked, and only it.
        assert_eq!(saw["ask"], format!(r#"accepted: {{"name":"{name}"}}"#), "{saw}");
        assert_eq!(saw["asked"], 1, "{saw}");
    }
    assert!(ts.wait().expect("ts").success());
    assert!(py.wait().expect("py").success());
}

#[test]
fn a_python_sdk_client_works_over_http_with_the_secret() {
    use crate::interop::{harness_dir, python};
    let machine = Machine::new("shared-sdk-http");
    let (mut router, url, secret) = serve_http(&machine);
    let out = std::process::Command::new(python())
        .arg(harness_dir().join("py/shared_client.py"))
        .args([url.as_str(), secret.as_str(), "web", "0"])
        .stderr(Stdio::inherit())
        .output()
        .expect("the Python client");
    assert!(out.status.success(), "{out:?}");
    let saw: Value = serde_json::from_slice(&out.stdout).expect("its JSON line");
    assert_eq!(saw["echo"], "Echo: web", "{saw}");
    assert_eq!(saw["read"], true, "{saw}");
    assert_eq!(saw["ask"], r#"accepted: {"name":"web"}"#, "{saw}");
    // SAFETY: SIGTERM to the router this test started.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(router.id() as i32, libc::SIGTERM);
    }
    assert!(router.wait().expect("wait").success());
    assert_eq!(wait_gone(&machine.marker, Duration::from_secs(10)), Vec::<u32>::new());
}

/// Over HTTP too, the SDKs' default clients of both eras list and call: the Python SDK's
/// `mcp.Client` (2026-07-28) and the TypeScript SDK's `Client` (2025-11-25), each with the
/// bearer secret (the Python `ClientSession` is the test above).
#[test]
fn the_sdks_default_clients_of_both_eras_call_over_http() {
    use crate::interop::{harness_dir, node, python};
    let machine = Machine::new("shared-sdk-eras-http");
    let (mut router, url, secret) = serve_http(&machine);
    let modern = std::process::Command::new(python())
        .arg(harness_dir().join("py/modern_client.py"))
        .args([url.as_str(), secret.as_str()])
        .stderr(Stdio::inherit())
        .output()
        .expect("the Python SDK's Client");
    let stdout = String::from_utf8_lossy(&modern.stdout);
    assert!(modern.status.success(), "{modern:?}");
    let saw: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!((&saw["protocol"], &saw["echo"]), (&json!("2026-07-28"), &json!("Echo: modern")));
    let ts = std::process::Command::new(node())
        .arg(harness_dir().join("ts/shared_client.mjs"))
        .args([url.as_str(), secret.as_str(), "ts-http", "0"])
        .stderr(Stdio::inherit())
        .output()
        .expect("the TypeScript SDK's Client");
    assert!(ts.status.success(), "{ts:?}");
    let saw: Value = serde_json::from_slice(&ts.stdout).expect("its JSON line");
    assert_eq!(saw["echo"], "Echo: ts-http", "{saw}");
    assert_eq!(saw["ask"], r#"accepted: {"name":"ts-http"}"#, "{saw}");
    // SAFETY: SIGTERM to the router this test started.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(router.id() as i32, libc::SIGTERM);
    }
    assert!(router.wait().expect("wait").success());
    assert_eq!(wait_gone(&machine.marker, Duration::from_secs(10)), Vec::<u32>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_prompts_pass_through_named_by_server() {
    use crate::interop::{python, python_script};
    let machine = Machine::new("shared-prompts");
    let prompts = machine.runtime.join("prompts.json");
    let file = json!({"tools": [], "prompts": [
        {"name": "review", "description": "Review a change", "arguments": [{"name": "diff"}]}]});
    std::fs::write(&prompts, file.to_string()).expect("write");
    let entry = format!(
        "[mcp_servers.files]\ncommand = \"{}\"\nargs = [\"{}\", \"{}\"]\n",
        python(),
        python_script("tools_file_fixture.py"),
        prompts.display()
    );
    machine.rewrite("", &entry);
    let session = machine.connect("ada").await;
    let listed = session.service.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["files/review"]);
    assert_eq!(listed[0].description.as_deref(), Some("Review a change"));
    let mut asked = rmcp::model::GetPromptRequestParams::new("files/review");
    asked.arguments = json!({"diff": "-a +b"}).as_object().cloned();
    let got = session.service.get_prompt(asked).await.expect("prompts/get");
    let text = serde_json::to_string(&got.messages).expect("JSON");
    assert!(text.contains("review prompt"), "{text}");
    let unknown =
        session.service.get_prompt(rmcp::model::GetPromptRequestParams::new("review")).await;
    let error = unknown.expect_err("an unqualified name").to_string();
    assert!(error.contains("named `server/prompt`"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_shows_every_sessions_events_from_the_events_socket() {
    use std::io::BufRead as _;
    let machine = Machine::new("shared-watch");
    let (a, b) = tokio::join!(machine.connect("ada"), machine.connect("bob"));
    let socket = machine.status()["events"].as_str().expect("the events socket").to_string();
    let mut watch = router_command()
        .args(["watch", &socket])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("watch");
    let (lines, seen) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    // The watcher is connected once a call's events reach it.
    let mut got = Vec::new();
    for session in [&a, &b] {
        let (failed, _) = call(session, "mcp__notes__echo", json!({"text": "seen"})).await;
        assert!(!failed);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if let Ok(line) = seen.recv_timeout(Duration::from_millis(200)) {
            got.push(line);
        }
        let ends = got.iter().filter(|l| l.contains("mcp_tool_call_end")).count();
        if ends >= 2 {
            break;
        }
        // Calls made before the watcher connected are not replayed: call again.
        for session in [&a, &b] {
            let _ = call(session, "mcp__notes__echo", json!({"text": "seen"})).await;
        }
    }
    let ends: Vec<&String> = got.iter().filter(|l| l.contains("mcp_tool_call_end")).collect();
    assert!(ends.iter().any(|l| l.contains(" s1-")), "{got:#?}");
    assert!(ends.iter().any(|l| l.contains(" s2-")), "{got:#?}");
    let _ = watch.kill();
    let _ = watch.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_resources_pass_through_qualified_by_server() {
    let machine = Machine::new("shared-resources");
    let session = machine.connect("ada").await;
    let listed = session.service.list_all_resources().await.expect("resources/list");
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    let readme = "mcp-router://docs/demo://docs/README.md";
    assert!(uris.contains(&readme), "{uris:?}");
    assert!(
        uris.iter()
            .all(|u| u.starts_with("mcp-router://docs/") || u.starts_with("mcp-router://notes/"))
    );
    let read = session
        .service
        .read_resource(rmcp::model::ReadResourceRequestParams::new(readme))
        .await
        .expect("resources/read");
    let contents = serde_json::to_value(&read.contents).expect("JSON");
    assert_eq!(contents[0]["uri"], readme);
    assert!(contents[0]["text"].as_str().is_some_and(|t| !t.is_empty()));
    // A template's expansion stays within its server's prefix.
    let templates = session.service.list_all_resource_templates().await.expect("templates");
    let lines = templates
        .iter()
        .map(|t| t.uri_template.as_str())
        .find(|t| t.starts_with("mcp-router://notes/demo://lines/"))
        .expect("the lines template");
    assert!(lines.ends_with("{name}{?from,to}"), "{lines}");
    let expanded = "mcp-router://notes/demo://lines/README.md?from=1&to=2";
    let read = session
        .service
        .read_resource(rmcp::model::ReadResourceRequestParams::new(expanded))
        .await
        .expect("an expanded template");
    assert_eq!(serde_json::to_value(&read.contents).expect("JSON")[0]["uri"], expanded);
    let unknown = session
        .service
        .read_resource(rmcp::model::ReadResourceRequestParams::new("demo://docs/README.md"))
        .await
        .expect_err("a plain URI both servers have")
        .to_string();
    assert!(
        unknown.contains("`demo://docs/README.md` is a resource of the servers docs, notes: name one as mcp-router://<server>/demo://docs/README.md"),
        "{unknown}"
    );
}

/// The working directory of process `pid`.
fn cwd_of(pid: u32) -> PathBuf {
    std::fs::read_link(format!("/proc/{pid}/cwd")).expect("a live process's cwd")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn servers_not_shared_run_per_session_or_per_working_directory() {
    let machine = Machine::new("own");
    let marker = machine.marker.clone();
    let own = |mine: &str| {
        format!(
            "[mcp_servers.mine]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-{mine}\"]\nshared = false\n\n\
             [mcp_servers.here]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-here\"]\nshared = \"cwd\"\n"
        )
    };
    machine.rewrite("", &own("mine"));
    let (one, two) = (tempfile::tempdir().expect("dir"), tempfile::tempdir().expect("dir"));
    let (one_path, two_path) =
        (one.path().canonicalize().expect("dir"), two.path().canonicalize().expect("dir"));
    let a = machine.connect_in("ada", Some(&one_path)).await;
    let (b, c) = tokio::join!(
        machine.connect_in("bob", Some(&one_path)),
        machine.connect_in("cy", Some(&two_path))
    );
    // Shared: one each; `mine`: one per session; `here`: one per directory.
    wait_for("every server ready", Duration::from_secs(15), || {
        let status = machine.status();
        let servers = status["servers"].as_array().cloned().unwrap_or_default();
        servers.len() == 2 + 3 + 2 && servers.iter().all(|s| s["state"] == "ready")
    });
    assert_eq!(machine.server("docs").len(), 1);
    assert_eq!(machine.server("mine").len(), 3);
    let here = machine.server("here");
    let mut dirs: Vec<PathBuf> = here.iter().map(|pid| cwd_of(*pid)).collect();
    dirs.sort();
    let mut expected = vec![one_path.clone(), two_path.clone()];
    expected.sort();
    assert_eq!(dirs, expected, "one `here` per directory, run there");
    let status = machine.status();
    let servers = status["servers"].as_array().expect("servers");
    let sessions: std::collections::BTreeSet<u64> = servers
        .iter()
        .filter(|s| s["name"] == "mine")
        .map(|s| {
            assert_eq!(s["shared"], false, "{s}");
            s["session"].as_u64().expect("its session")
        })
        .collect();
    assert_eq!(sessions.len(), 3, "{status:#}");

    // Each agent sees and calls them as any other server's, and a per-session server's
    // question goes to its own session.
    for session in [&a, &b, &c] {
        let tools = session.service.list_all_tools().await.expect("tools/list");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for expected in ["mcp__docs__echo", "mcp__mine__echo", "mcp__here__echo"] {
            assert!(names.contains(&expected), "{expected} missing from {names:?}");
        }
        let (failed, text) = call(session, "mcp__mine__ask", json!({})).await;
        assert!(!failed, "{text}");
        assert_eq!(text, format!(r#"accepted: {{"name":"{}"}}"#, session.agent.name));
        let (failed, text) = call(session, "mcp__here__echo", json!({"text": "hi"})).await;
        assert!(!failed && text == "Echo: hi", "{text}");
        let (failed, text) = call(
            session,
            "read_mcp_resource",
            json!({"server": "mine", "uri": "demo://docs/README.md"}),
        )
        .await;
        assert!(!failed && text.contains("\"contents\""), "{text}");
    }
    assert_eq!([&a, &b, &c].map(|s| s.agent.asked.load(Ordering::SeqCst)), [1, 1, 1]);
    let (failed, text) = call(&a, "list_mcp_resources", json!({})).await;
    assert!(!failed, "{text}");
    let listed: Value = serde_json::from_str(&text).expect("JSON");
    let servers: Vec<&str> = listed["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["server"].as_str())
        .collect();
    let mut seen = servers.clone();
    seen.dedup();
    assert_eq!(seen, ["docs", "here", "mine", "notes"], "sorted by server: {servers:?}");

    // An edit of the per-session entry restarts it in every session, and nothing else.
    let (docs, here) = (machine.server("docs"), machine.server("here"));
    machine.rewrite("", &own("mine2"));
    wait_for("`mine` restarted in every session", Duration::from_secs(15), || {
        machine.server("mine").is_empty() && machine.server("mine2").len() == 3
    });
    assert_eq!((machine.server("docs"), machine.server("here")), (docs, here));
    let (failed, text) = call(&b, "mcp__mine__echo", json!({"text": "new"})).await;
    assert!(!failed && text == "Echo: new", "{text}");

    // The agent alone in its directory leaves: its `mine` and its directory's `here` end;
    // the others keep theirs.
    let Session { service, mut bridge, .. } = c;
    drop(service);
    let _ = tokio::time::timeout(Duration::from_secs(5), bridge.wait()).await;
    wait_for("cy's own servers ended", Duration::from_secs(10), || {
        machine.server("mine2").len() == 2 && machine.server("here").len() == 1
    });
    assert_eq!(cwd_of(machine.server("here")[0]), one_path);
    let (failed, text) = call(&a, "mcp__here__echo", json!({"text": "still"})).await;
    assert!(!failed && text == "Echo: still", "{text}");
    for session in [a, b] {
        let Session { service, mut bridge, .. } = session;
        drop(service);
        let _ = tokio::time::timeout(Duration::from_secs(5), bridge.wait()).await;
    }
    let left = wait_gone(&machine.marker, Duration::from_secs(15));
    assert_eq!(left, Vec::<u32>::new(), "servers left after the idle timeout");
}

/// What a process of user `uid` sees when it connects to the Unix socket `path` and sends an
/// MCP `initialize`: `denied` (the file system keeps it out), `closed` (connected, and the
/// router hung up without a word) or `answered: …`.
fn connect_as(uid: u32, path: &std::path::Path) -> String {
    use std::os::unix::process::CommandExt as _;
    let probe = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except PermissionError:
    print("denied"); sys.exit(0)
s.settimeout(5)
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"intruder","version":"1"}}}\n')
    data = s.recv(4096)
except (BrokenPipeError, ConnectionResetError, socket.timeout):
    data = b""
print("answered: " + data.decode() if data else "closed")
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", probe])
        .arg(path)
        .uid(uid)
        .gid(uid)
        .output()
        .expect("python3 as another user");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn chmod(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Another user's process cannot reach the router: the runtime directory keeps it out, and
/// were it let through (a directory and socket opened up by mistake), the router hangs up on
/// it — sessions, status and events alike — while its own user's agent goes on. Needs root
/// (to run a process as another user); as any other user it says so and checks nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_of_another_user_is_refused() {
    // SAFETY: getuid has no preconditions.
    #[allow(unsafe_code)]
    let root = unsafe { libc::getuid() } == 0;
    if !root {
        eprintln!("skipped: running a process as another user needs root");
        return;
    }
    let nobody = 65534;
    let machine = Machine::new("shared-other-user");
    let agent = machine.connect("ada").await;
    let dir = machine.runtime.join("mcp-router");
    let key = machine.status()["socket"].as_str().expect("socket").to_string();
    let socket = PathBuf::from(&key);
    let (status, events) =
        (socket.with_extension("status.sock"), socket.with_extension("events.sock"));
    // Everything up to the router's directory may be entered; the directory (0700) may not.
    let top = machine.runtime.parent().expect("the machine's dir").to_path_buf();
    chmod(&top, 0o711);
    chmod(&machine.runtime, 0o711);
    assert_eq!(connect_as(nobody, &socket), "denied");
    // `connect` as that user refuses the directory rather than use another user's router.
    let mut command = machine.command(&["connect"]);
    command.stdin(Stdio::null());
    std::os::unix::process::CommandExt::uid(&mut command, nobody);
    let out = command.output().expect("connect as another user");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(&dir.display().to_string()), "{said}");
    // Opened up by mistake: the router itself hangs up on another user.
    chmod(&dir, 0o711);
    for path in [&socket, &status, &events] {
        chmod(path, 0o666);
        assert_eq!(connect_as(nobody, path), "closed", "{}", path.display());
    }
    chmod(&dir, 0o700);
    assert_eq!(machine.status()["sessions"].as_array().map(Vec::len), Some(1), "only ada's");
    let (failed, text) = call(&agent, "mcp__notes__echo", json!({"text": "mine"})).await;
    assert!(!failed && text == "Echo: mine", "{text}");
}

/// A call whose approval is `ask` is asked of the calling session's user (an elicitation),
/// never of another session's, and runs once accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_approve_is_asked_of_its_own_session() {
    let machine = Machine::new("shared-approval");
    let marker = machine.marker.clone();
    machine.rewrite(
        "",
        &format!(
            "[mcp_servers.guarded]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-guarded\"]\napproval = \"ask\"\n"
        ),
    );
    let (a, b) = tokio::join!(machine.connect("ada"), machine.connect("bob"));
    let (failed, text) = call(&b, "mcp__guarded__echo", json!({"text": "allowed"})).await;
    assert!(!failed && text == "Echo: allowed", "{text}");
    assert_eq!([&a, &b].map(|s| s.agent.asked.load(Ordering::SeqCst)), [0, 1]);
    // A server that does not ask runs without a question.
    let (failed, text) = call(&a, "mcp__notes__echo", json!({"text": "free"})).await;
    assert!(!failed && text == "Echo: free", "{text}");
    assert_eq!([&a, &b].map(|s| s.agent.asked.load(Ordering::SeqCst)), [0, 1]);
}

/// A connection that never sends `initialize` is closed after the handshake timeout (5 s), so it
/// cannot keep the router from its idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_handshakes_does_not_keep_the_router() {
    let machine = Machine::new("shared-silent");
    let agent = machine.connect("ada").await;
    let socket = PathBuf::from(machine.status()["socket"].as_str().expect("socket"));
    let silent = std::os::unix::net::UnixStream::connect(&socket).expect("a silent connection");
    let Session { service, mut bridge, .. } = agent;
    drop(service);
    let _ = tokio::time::timeout(Duration::from_secs(5), bridge.wait()).await;
    wait_for("the router stopped", Duration::from_secs(15), || machine.routers().is_empty());
    let left = wait_gone(&machine.marker, Duration::from_secs(5));
    assert_eq!(left, Vec::<u32>::new());
    drop(silent);
}

/// A session's roots changing is told to its own servers (`shared = false`), not to another
/// session's, nor to the shared ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_roots_change_is_told_to_its_own_servers_only() {
    let machine = Machine::new("shared-roots");
    let marker = machine.marker.clone();
    let logs = tempfile::tempdir().expect("tempdir");
    let (own_log, shared_log) = (logs.path().join("own.log"), logs.path().join("shared.log"));
    machine.rewrite(
        "",
        &format!(
            "[mcp_servers.mine]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-mine\", \"--request-log\", {own_log:?}]\nshared = false\n\n\
             [mcp_servers.together]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-together\", \"--request-log\", {shared_log:?}]\n"
        ),
    );
    let (a, b) = tokio::join!(machine.connect("ada"), machine.connect("bob"));
    wait_for("every server ready", Duration::from_secs(15), || {
        let status = machine.status();
        let servers = status["servers"].as_array().cloned().unwrap_or_default();
        servers.len() == 3 + 2 && servers.iter().all(|s| s["state"] == "ready")
    });
    let told = |path: &std::path::Path| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines().filter(|l| *l == "notifications/roots/list_changed").count()
    };
    a.service.peer().notify_roots_list_changed().await.expect("notify");
    wait_for("ada's own server told", Duration::from_secs(10), || told(&own_log) == 1);
    b.service.peer().notify_roots_list_changed().await.expect("notify");
    wait_for("bob's own server told", Duration::from_secs(10), || told(&own_log) == 2);
    // Calls on each server are the barrier: a notice sent on, had there been one, is in its
    // log before them.
    let calls = |path: &std::path::Path| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines().filter(|l| *l == "tools/call").count()
    };
    for session in [&a, &b] {
        assert!(!call(session, "mcp__mine__echo", json!({"text": "x"})).await.0);
        assert!(!call(session, "mcp__together__echo", json!({"text": "x"})).await.0);
    }
    wait_for("the calls logged", Duration::from_secs(10), || {
        calls(&own_log) == 2 && calls(&shared_log) == 2
    });
    assert_eq!(told(&own_log), 2, "each session's own server, once");
    assert_eq!(told(&shared_log), 0, "never a shared server");
}

/// A session's own server whose name is long enough that its qualified tool names are hashed
/// (over 64 characters, so the name keeps only its beginning): its tools are listed and called
/// through `connect`, routed to the session's own server, not to the shared ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_own_server_whose_tool_names_are_hashed_is_called_through_connect() {
    let machine = Machine::new("long");
    let marker = machine.marker.clone();
    let long = "own_server_with_a_name_long_enough_to_hash_its_tools_x";
    machine.rewrite(
        "",
        &format!(
            "[mcp_servers.{long}]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-long\"]\nshared = false\n"
        ),
    );
    let echo = mcp_backend::qualified_tool_name(long, "echo");
    assert!(echo.len() == 64 && !echo.contains(long), "{echo} is hashed");
    let a = machine.connect_in("ada", None).await;
    wait_for_async("the own server's tools listed", || async {
        let tools = a.service.list_all_tools().await.expect("tools/list");
        tools.iter().any(|t| t.name == echo)
    })
    .await;
    let (failed, text) = call(&a, &echo, json!({"text": "hi"})).await;
    assert!(!failed && text == "Echo: hi", "{text}");
}

/// The Python SDK's default client negotiates 2026-07-28, which requires `resultType` in every
/// result: it lists and calls through `connect`.
#[test]
fn the_python_sdks_2026_client_calls_through_connect() {
    use crate::interop::{harness_dir, python};
    let machine = Machine::new("modern-sdk");
    let output = std::process::Command::new(python())
        .arg(harness_dir().join("py/modern_client.py"))
        .arg(crate::support::ROUTER)
        .arg(&machine.config)
        .env("XDG_RUNTIME_DIR", &machine.runtime)
        .env("MCP_ROUTER_CACHE_DIR", machine.runtime.join("cache"))
        .stdin(Stdio::null())
        .output()
        .expect("run the client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let saw: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(saw["protocol"], "2026-07-28", "{saw}");
    assert_eq!(saw["echo"], "Echo: modern", "{saw}");
    let tools = saw["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t == "mcp__docs__echo"), "{saw}");
}

/// A hundred sessions open and close — each with a server of its own (`shared = false`), every
/// tenth killed mid-call — while one stays open: afterwards the router has as many tasks
/// alive as before, no call in flight, no session but the one, and no server process but the
/// shared ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_sessions_open_and_close_and_leave_nothing_behind() {
    let machine = Machine::new("soak");
    let mine = format!(
        "[mcp_servers.mine]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{}-mine\"]\nshared = false\n",
        machine.marker
    );
    machine.rewrite("", &mine);
    let keeper = machine.connect("keeper").await;
    let (failed, text) = call(&keeper, "mcp__notes__echo", json!({"text": "k"})).await;
    assert!(!failed, "{text}");
    let (failed, text) = call(&keeper, "mcp__mine__echo", json!({"text": "k"})).await;
    assert!(!failed, "{text}");
    let settled = |status: &Value| {
        let sessions = status["sessions"].as_array().cloned().unwrap_or_default();
        sessions.len() == 1 && sessions.iter().all(|s| s["calls_in_flight"] == 0)
    };
    wait_for("the keeper alone", Duration::from_secs(10), || settled(&machine.status()));
    let baseline = machine.status()["alive_tasks"].as_u64().expect("alive tasks");
    let processes = machine.servers().len();
    assert!(baseline > 0 && processes == 3, "{baseline} tasks, {processes} servers");
    for i in 0..100 {
        let mut session = machine.connect(&format!("s{i}")).await;
        if i % 2 == 0 {
            let (failed, text) = call(&session, "mcp__mine__echo", json!({"text": "x"})).await;
            assert!(!failed, "{text}");
        }
        if i % 10 == 5 {
            // Killed mid-call: the call is in flight when its client goes.
            let peer = session.service.peer().clone();
            let slow = tokio::spawn(async move {
                let mut params = CallToolRequestParams::new("mcp__notes__sleep");
                params.arguments = json!({"ms": 3000}).as_object().cloned();
                peer.call_tool(params).await
            });
            tokio::time::sleep(Duration::from_millis(50)).await;
            session.bridge.kill().await.expect("kill the bridge");
            assert!(slow.await.expect("join").is_err());
        } else {
            let _ = session.service.cancel().await;
            let _ = session.bridge.wait().await;
        }
    }
    let mut last = Value::Null;
    wait_for("every session closed and its tasks ended", Duration::from_secs(30), || {
        last = machine.status();
        settled(&last) && last["alive_tasks"].as_u64() == Some(baseline)
    });
    wait_for("the sessions' own servers gone", Duration::from_secs(10), || {
        machine.servers().len() == processes
    });
    let (failed, text) = call(&keeper, "mcp__notes__echo", json!({"text": "still"})).await;
    assert!(!failed && text == "Echo: still", "{text}");
}

/// Every tool a server lists reaches every session that may see it: a session's first
/// `tools/list`, asked while the servers start, names the same tools as `exec` on that config
/// — shared servers, one of the session's own and one of its directory's alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_s_first_tool_list_is_exec_s_for_servers_of_every_scope() {
    let machine = Machine::new("scopes-tools");
    let own = format!(
        "[mcp_servers.mine]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{m}-mine\"]\nshared = false\n\n\
         [mcp_servers.here]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{m}-here\"]\nshared = \"cwd\"\n",
        m = machine.marker
    );
    machine.rewrite("", &own);
    let session = machine.connect("first").await;
    let listed = session.service.list_all_tools().await.expect("tools/list");
    let mut names: Vec<String> = listed.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    let state = machine.runtime.join("exec-cache");
    let mut exec = crate::exec::ExecSession::in_state(&machine.config, &state);
    exec.send(&json!({"type": "list_tools", "format": "openai"}));
    let tools = exec.line("tools", |v| v["type"] == "tools");
    let mut expected: Vec<String> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    expected.sort();
    let _ = exec.finish();
    for scope in ["mcp__docs__echo", "mcp__mine__echo", "mcp__here__echo"] {
        assert!(names.iter().any(|n| n == scope), "{scope} missing: {names:?}");
    }
    assert_eq!(names, expected, "the session's first list against exec's");
}

/// A per-session server killed between two calls is started again by its session's next call,
/// in that session alone: the other session's instance and the shared servers keep their
/// processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_per_session_server_killed_between_calls_is_restarted_by_the_next() {
    let machine = Machine::new("own-killed");
    let marker = machine.marker.clone();
    machine.rewrite(
        "",
        &format!(
            "[mcp_servers.mine]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-mine\"]\nshared = false\n"
        ),
    );
    let (a, b) = tokio::join!(machine.connect("ada"), machine.connect("bob"));
    for session in [&a, &b] {
        let (failed, text) = call(session, "mcp__mine__echo", json!({"text": "one"})).await;
        assert!(!failed && text == "Echo: one", "{text}");
    }
    let before = machine.server("mine");
    assert_eq!(before.len(), 2);
    let docs = machine.server("docs");
    // Status shows both instances, each with its session.
    let status = machine.status();
    let rows = status["servers"].as_array().cloned().unwrap_or_default();
    let mine: Vec<&Value> = rows.iter().filter(|s| s["name"] == "mine").collect();
    assert_eq!(mine.len(), 2, "{status:#}");
    assert!(mine.iter().all(|s| s["session"].as_u64().is_some()), "{status:#}");
    let victim = before[0];
    // SAFETY: a plain kill(2) of a server this test's router started.
    #[allow(unsafe_code)]
    let killed = unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    assert_eq!(killed, 0);
    wait_for("the killed server gone", Duration::from_secs(10), || {
        !machine.server("mine").contains(&victim)
    });
    let survivor = machine.server("mine");
    assert_eq!(survivor.len(), 1);
    // Whichever session it served: its next call restarts it and is answered; the other's
    // keeps its process.
    let mut answered = 0;
    for session in [&a, &b] {
        let (failed, text) = call(session, "mcp__mine__echo", json!({"text": "two"})).await;
        if !failed && text == "Echo: two" {
            answered += 1;
        } else {
            // A call that met the end before it was noticed fails once, in words.
            assert!(failed && !text.is_empty(), "{text}");
            let (failed, text) = call(session, "mcp__mine__echo", json!({"text": "two"})).await;
            assert!(!failed && text == "Echo: two", "then answered: {text}");
            answered += 1;
        }
    }
    assert_eq!(answered, 2);
    let after = machine.server("mine");
    assert_eq!(after.len(), 2, "one per session again");
    assert!(after.contains(&survivor[0]), "the other session's instance kept its process");
    assert!(!after.contains(&victim));
    assert_eq!(machine.server("docs"), docs, "shared servers untouched");
    for session in [a, b] {
        let Session { service, mut bridge, .. } = session;
        drop(service);
        let _ = tokio::time::timeout(Duration::from_secs(5), bridge.wait()).await;
    }
    let left = wait_gone(&machine.marker, Duration::from_secs(15));
    assert_eq!(left, Vec::<u32>::new(), "servers left after the idle timeout");
}
