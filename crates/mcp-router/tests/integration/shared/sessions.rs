//! A session's life in the shared router, with real clients: a server's request that could be
//! any of several sessions' is never answered for a user, a session's calls are counted and
//! capped, a client that goes away ends its session at once, an abandoned HTTP session does not
//! outlive the idle timeout, and an idle router does not wake.

use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use super::{Machine, Session, call, wait_for};
use crate::support::{DEMO, wait_gone};

/// `sleep` on `notes` for `ms`, in the background.
fn sleeping(session: &Session, ms: u64) -> tokio::task::JoinHandle<Option<String>> {
    sleeping_on(session, "notes", ms)
}

/// The status's sessions, by client name: (calls in flight, calls).
fn sessions(machine: &Machine) -> Vec<(String, u64, u64)> {
    let status = machine.status();
    let sessions = status["sessions"].as_array().cloned().unwrap_or_default();
    let count = |s: &Value, key: &str| s[key].as_u64().unwrap_or(0);
    let name = |s: &Value| s["client"].as_str().unwrap_or("").to_string();
    sessions.iter().map(|s| (name(s), count(s, "calls_in_flight"), count(s, "calls"))).collect()
}

fn in_flight(machine: &Machine, client: &str) -> u64 {
    let of = sessions(machine).into_iter().find(|(name, ..)| name.starts_with(client));
    of.map_or(0, |(_, n, _)| n)
}

/// A 2025-11-25 server shared by every session asks for input while calls of several sessions
/// are in flight on it: its request names no call, so no one user can be told to be the one
/// asked — the call fails with an error saying so, never "decline" in a user's name and never
/// another session's user asked. While one session's calls alone are in flight, its user is.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_several_sessions_could_own_is_refused_never_declined() {
    let machine = Machine::new("shared-unclear");
    let marker = machine.marker.clone();
    machine.rewrite(
        "",
        &format!(
            "[mcp_servers.legacy]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"{marker}-legacy\"]\nprotocol = \"2025-11-25\"\n"
        ),
    );
    let (a, b, c) =
        tokio::join!(machine.connect("ada"), machine.connect("bob"), machine.connect("cy"));
    // Each client is named in the status from its handshake, before any list or call.
    let mut names: Vec<String> = sessions(&machine).into_iter().map(|(n, ..)| n).collect();
    names.sort();
    assert_eq!(names, ["ada 1", "bob 1", "cy 1"]);
    // Alone on the server, a session's user is asked, and answers in their own name.
    let (failed, text) = call(&a, "mcp__legacy__ask", json!({})).await;
    assert!(!failed && text == r#"accepted: {"name":"ada"}"#, "{text}");
    // While ada's own slow call is in flight too, the request is still ada's alone.
    let slow = sleeping_on(&a, "legacy", 3_000);
    wait_for("ada's call in flight", Duration::from_secs(10), || in_flight(&machine, "ada") == 1);
    let (failed, text) = call(&a, "mcp__legacy__ask", json!({})).await;
    assert!(!failed && text == r#"accepted: {"name":"ada"}"#, "{text}");
    // Bob's and cy's calls while ada's is in flight: whose user would it be? Nobody is asked.
    let asked = [&a, &b, &c].map(|s| s.agent.asked.load(std::sync::atomic::Ordering::SeqCst));
    for session in [&b, &c] {
        let (failed, text) = call(session, "mcp__legacy__ask", json!({})).await;
        assert!(failed, "{text}");
        assert!(text.contains("no one user can be asked"), "{text}");
        assert!(!text.contains("decline"), "{text}");
        let (failed, text) = call(session, "mcp__legacy__roots", json!({})).await;
        assert!(failed && text.contains("no one user can be asked"), "not 0 roots: {text}");
    }
    let now = [&a, &b, &c].map(|s| s.agent.asked.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(now, asked, "no user was asked for a call that may not be theirs");
    assert_eq!(slow.await.expect("join").as_deref(), Some("slept 3000 ms"));
    // With ada's call ended, bob's user is asked for bob's.
    let (failed, text) = call(&b, "mcp__legacy__ask", json!({})).await;
    assert!(!failed && text == r#"accepted: {"name":"bob"}"#, "{text}");
}

/// `sleep` on `server` for `ms`, in the background.
fn sleeping_on(
    session: &Session,
    server: &str,
    ms: u64,
) -> tokio::task::JoinHandle<Option<String>> {
    let peer = session.service.peer().clone();
    let name = format!("mcp__{server}__sleep");
    tokio::spawn(async move {
        let mut params = CallToolRequestParams::new(name);
        params.arguments = json!({"ms": ms}).as_object().cloned();
        let result = peer.call_tool(params).await.ok()?;
        result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone())
    })
}

/// One session may have 32 calls in flight: the 33rd is answered at once with an error the
/// model reads; the others, and other sessions, are not held up; every count returns to zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sessions_calls_in_flight_are_capped_and_counted_back_to_zero() {
    let machine = Machine::new("shared-cap");
    let (a, b) = tokio::join!(machine.connect("ada"), machine.connect("bob"));
    let calls: Vec<_> = (0..32).map(|_| sleeping(&a, 4_000)).collect();
    wait_for("32 calls in flight", Duration::from_secs(15), || in_flight(&machine, "ada") == 32);
    let started = Instant::now();
    let (failed, text) = call(&a, "mcp__notes__echo", json!({"text": "one more"})).await;
    assert!(failed, "{text}");
    assert_eq!(text, "this session already has 32 calls in flight: wait for one to end");
    assert!(started.elapsed() < Duration::from_secs(3), "answered at once");
    let (failed, text) = call(&b, "mcp__notes__echo", json!({"text": "other"})).await;
    assert!(!failed && text == "Echo: other", "another session is not capped by ada's: {text}");
    for call in calls {
        assert_eq!(call.await.expect("join").as_deref(), Some("slept 4000 ms"));
    }
    let (failed, text) = call(&a, "mcp__notes__echo", json!({"text": "again"})).await;
    assert!(!failed && text == "Echo: again", "{text}");
    let counts = sessions(&machine);
    assert!(counts.iter().all(|(_, in_flight, _)| *in_flight == 0), "{counts:?}");
    let ada = counts.iter().find(|(n, ..)| n.starts_with("ada")).expect("ada");
    assert_eq!(ada.2, 33, "32 slept and one echoed; the refused call is not counted");
}

/// A client that goes away mid-call (its bridge killed, or its input closed) ends its session
/// and its call at once — not after rmcp's 5 s drain, nor the call's own 30 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_gone_mid_call_ends_its_session_at_once() {
    let machine = Machine::new("shared-gone");
    let (keeper, a, b) =
        tokio::join!(machine.connect("keeper"), machine.connect("ada"), machine.connect("bob"));
    let calls = [sleeping(&a, 30_000), sleeping(&b, 30_000)];
    wait_for("both calls in flight", Duration::from_secs(15), || {
        in_flight(&machine, "ada") == 1 && in_flight(&machine, "bob") == 1
    });
    let Session { mut bridge, service, .. } = a;
    bridge.start_kill().expect("kill ada's bridge");
    let killed = Instant::now();
    wait_for("ada's session ended", Duration::from_secs(3), || {
        !sessions(&machine).iter().any(|(n, ..)| n.starts_with("ada"))
    });
    let ada_gone = killed.elapsed();
    // Bob's agent closes its input: the same.
    let Session { service: bob, bridge: bob_bridge, .. } = b;
    let closed = Instant::now();
    drop(bob);
    wait_for("bob's session ended", Duration::from_secs(3), || {
        !sessions(&machine).iter().any(|(n, ..)| n.starts_with("bob"))
    });
    let bob_gone = closed.elapsed();
    drop((service, bob_bridge, calls));
    assert!(ada_gone < Duration::from_secs(3) && bob_gone < Duration::from_secs(3));
    let left = sessions(&machine);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].1, 0, "no call left in flight: {left:?}");
    let (failed, text) = call(&keeper, "mcp__notes__echo", json!({"text": "still"})).await;
    assert!(!failed && text == "Echo: still", "{text}");
}

/// An HTTP session whose client went away without a `DELETE` is closed after the router's idle
/// timeout of silence, so the router stops: not after rmcp's 5 minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_http_session_does_not_outlive_the_idle_timeout() {
    let machine = Machine::new("shared-abandoned");
    let (mut child, url, secret) = super::serve_http_with(&machine, &["--idle-timeout", "2"]);
    let bearer = format!("Bearer {secret}");
    assert_eq!(super::post(&url, &[("authorization", bearer.as_str())]).await, 200);
    wait_for("the session opened", Duration::from_secs(10), || sessions(&machine).len() == 1);
    let opened = Instant::now();
    let deadline = opened + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "the router still runs 30 s after its last request");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
    assert!(opened.elapsed() >= Duration::from_secs(2), "not before the idle timeout");
    assert_eq!(wait_gone(&machine.marker, Duration::from_secs(10)), Vec::<u32>::new());
}

/// Voluntary context switches of every thread of `pid` so far.
fn wakeups(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the router's threads");
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .filter_map(|s| {
            let line = s.lines().find(|l| l.starts_with("voluntary_ctxt_switches:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

/// A router with sessions open and its servers ready, but nothing asked of it, sleeps: no
/// timer of its own wakes it (it waits for events, the config file's inotify, its sockets).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_router_does_not_wake() {
    let machine = Machine::new("shared-idle");
    let (a, b) = tokio::join!(machine.connect("ada"), machine.connect("bob"));
    assert!(!call(&a, "mcp__notes__echo", json!({"text": "x"})).await.0);
    assert!(!call(&b, "mcp__docs__echo", json!({"text": "x"})).await.0);
    let pid = machine.status()["pid"].as_u64().expect("pid") as u32;
    // What the calls and the status question set going settles first.
    std::thread::sleep(Duration::from_secs(1));
    let before = wakeups(pid);
    std::thread::sleep(Duration::from_secs(10));
    let woke = wakeups(pid) - before;
    // A 250 ms tick alone would be 40 here, each of the old loops more.
    assert!(woke <= 3, "the idle router woke {woke} times in 10 s");
}
