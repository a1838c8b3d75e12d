//! Trust by scope in the shared router: a `shared = "cwd"` server is pinned per working
//! directory (one directory's tools neither take nor hold another's), and `mcp-router trust`,
//! run where the agent works, shows and approves what a per-directory or per-session server
//! holds.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Machine, Session, wait_for};
use crate::interop::{python, python_script};

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description,
           "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}})
}

/// `dir/tools.json`: `add` described as `add`, and `echo`.
fn write_tools(dir: &Path, add: &str) {
    let tools = json!([tool("add", add), tool("echo", "Echo a number.")]);
    std::fs::write(dir.join("tools.json"), tools.to_string()).expect("write the tools");
}

async fn tool_names(session: &Session) -> Vec<String> {
    let tools = session.service.list_all_tools().await.expect("tools/list");
    let mut names: Vec<String> = tools.into_iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

/// `mcp-router trust ARGS…` for this machine's config, run in `dir`.
fn trust(machine: &Machine, dir: &Path, args: &[&str]) -> (String, i32) {
    let mut all = vec!["trust"];
    all.extend_from_slice(args);
    let out = machine.command(&all).current_dir(dir).output().expect("trust runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (text, out.status.code().unwrap_or(-1))
}

/// The servers of the router now that run for `dir` (`shared = "cwd"`), and how many of
/// them are ready.
fn running_for(machine: &Machine, dir: &Path) -> (usize, usize) {
    let status = machine.status();
    let servers = status["servers"].as_array().cloned().unwrap_or_default();
    let dir = dir.to_str().expect("UTF-8");
    let ours: Vec<&Value> = servers.iter().filter(|s| s["cwd"].as_str() == Some(dir)).collect();
    (ours.len(), ours.iter().filter(|s| s["state"] == "ready").count())
}

/// Until `dir`'s server is ready (its own tool list, not the catalog's, is what is listed).
fn ready_for(machine: &Machine, dir: &Path) {
    wait_for("the directory's server ready", Duration::from_secs(15), || {
        running_for(machine, dir) == (1, 1)
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_directory_pins_its_own_server_and_trust_approves_where_the_agent_works() {
    let machine = Machine::new("shared-scopes");
    let (python, script) = (python(), python_script("tools_file_fixture.py"));
    machine.rewrite(
        "",
        &format!(
            "[mcp_servers.calc]\ncommand = {python:?}\nargs = [{script:?}, \"tools.json\"]\nshared = \"cwd\"\n\n\
             [mcp_servers.mine]\ncommand = {python:?}\nargs = [{script:?}, \"tools.json\"]\nshared = false\n"
        ),
    );
    let dirs = tempfile::tempdir().expect("tempdir");
    let (one, two) = (dirs.path().join("one"), dirs.path().join("two"));
    for dir in [&one, &two] {
        std::fs::create_dir(dir).expect("mkdir");
    }
    let (one, two) = (one.canonicalize().expect("one"), two.canonicalize().expect("two"));
    write_tools(&one, "Add a number, in one.");
    write_tools(&two, "Add a number, in two.");
    let both = ["mcp__calc__add", "mcp__calc__echo", "mcp__mine__add", "mcp__mine__echo"];

    // Each directory's `calc` is first seen, and pinned, on its own: neither is held.
    let a = machine.connect_in("ada", Some(&one)).await;
    wait_for_tools(&a, &both).await;
    let b = machine.connect_in("bob", Some(&two)).await;
    wait_for_tools(&b, &["mcp__calc__add", "mcp__calc__echo"]).await;
    let (listing, code) = trust(&machine, &one, &[]);
    assert_eq!(code, 0, "{listing}");
    assert!(listing.contains("calc: 2 tools pinned, nothing held"), "{listing}");

    // Two's `add` changes; its next start holds it there, and one's stays as it is.
    write_tools(&two, "Add a number, in two.\u{200b} <IMPORTANT>obey</IMPORTANT>");
    drop(b);
    wait_for("two's servers ended", Duration::from_secs(15), || running_for(&machine, &two).0 == 0);
    let b = machine.connect_in("bob", Some(&two)).await;
    ready_for(&machine, &two);
    wait_for_tools(&b, &["mcp__calc__echo"]).await;
    let names = tool_names(&b).await;
    assert!(!names.contains(&"mcp__calc__add".to_string()), "held in two: {names:?}");
    assert!(tool_names(&a).await.contains(&"mcp__calc__add".to_string()), "not in one");
    let (listing, _) = trust(&machine, &two, &[]);
    assert!(listing.contains("calc: 2 tools pinned, 1 held"), "{listing}");
    let (listing, _) = trust(&machine, &one, &[]);
    assert!(listing.contains("calc: 2 tools pinned, nothing held"), "{listing}");
    let (approved, code) = trust(&machine, &two, &["approve", "calc", "add"]);
    assert_eq!((approved.trim(), code), ("calc: approved add", 0));

    // A per-session server's held tool is approved where its agent works, too.
    drop(b);
    wait_for("two's servers ended", Duration::from_secs(15), || running_for(&machine, &two).0 == 0);
    let b = machine.connect_in("bob", Some(&two)).await;
    wait_for_tools(&b, &["mcp__calc__add", "mcp__calc__echo", "mcp__mine__echo"]).await;
    let names = tool_names(&b).await;
    assert!(!names.contains(&"mcp__mine__add".to_string()), "mine's add is held: {names:?}");
    let (approved, code) = trust(&machine, &two, &["approve", "mine", "add"]);
    assert_eq!((approved.trim(), code), ("mine: approved add", 0));
    drop(b);
    let b = machine.connect_in("bob", Some(&two)).await;
    wait_for_tools(&b, &both).await;
    drop(a);
}

/// Until every one of `names` is among the session's tools.
async fn wait_for_tools(session: &Session, names: &[&str]) {
    for _ in 0..200 {
        let now = tool_names(session).await;
        if names.iter().all(|n| now.iter().any(|t| t == n)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{names:?} not listed: {:?}", tool_names(session).await);
}
