//! Tool search through `exec`, as a new user meets it: the packaged time server (PyPI
//! `mcp-server-time`) among demo servers, `tool_search = "on"`.

use serde_json::{Value, json};

use crate::exec::ExecSession;
use crate::interop::python;
use crate::support::{DEMO, exec_command, write_config};

fn config(dir: &tempfile::TempDir, mode: &str) -> std::path::PathBuf {
    let mut text = format!(
        "[mcp_router]\ntool_search = \"{mode}\"\n[mcp_servers.time]\ncommand = {:?}\nargs = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"]\n",
        python()
    );
    for name in ["docs", "notes"] {
        text.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = {DEMO:?}\nargs = [\"--name\", \"{name}\"]\n"
        ));
    }
    write_config(dir, "search.toml", &text)
}

fn tool_names(answer: &Value) -> Vec<String> {
    answer["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect()
}

/// The next `tools` answer (after a `list_tools` request).
fn list_tools(exec: &mut ExecSession, n: usize) -> Value {
    exec.send(&json!({"type": "list_tools"}));
    // `line` looks at the lines read before too: count the answers to find the n-th.
    let seen = std::cell::Cell::new(0);
    exec.line("a tools answer", |v| {
        if v["type"] == "tools" {
            seen.set(seen.get() + 1);
        }
        v["type"] == "tools" && seen.get() == n
    })
}

#[test]
fn search_reveals_the_time_tool_appends_it_and_the_call_works() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exec = ExecSession::spawn(exec_command(&config(&dir, "on")));
    let first = list_tools(&mut exec, 1);
    let base = tool_names(&first);
    assert!(base.contains(&"search_mcp_tools".to_string()), "{base:?}");
    assert!(!base.iter().any(|n| n.starts_with("mcp__")), "{base:?}");
    assert_eq!(first["revealed"], json!([]));
    let query = json!({"query": "current time in a timezone"});
    exec.send(&json!({"call_id": "s1", "name": "search_mcp_tools", "arguments": query}));
    let output = exec.output("s1");
    let found: Value =
        serde_json::from_str(output["content"].as_str().expect("payload")).expect("json");
    assert_eq!(found["tools"][0]["name"], "mcp__time__get_current_time", "{found}");
    let second = list_tools(&mut exec, 2);
    let after = tool_names(&second);
    assert_eq!(after[..base.len()], base[..], "the base stays a prefix");
    assert_eq!(after[base.len()], "mcp__time__get_current_time");
    let revealed = second["revealed"].as_array().expect("revealed").clone();
    assert_eq!(after[base.len()..].len(), revealed.len());
    // A second search appends without reordering: the earlier specs are a byte-identical prefix.
    exec.send(&json!({"call_id": "s2", "name": "search_mcp_tools", "arguments": {"query": "echo text back"}}));
    exec.output("s2");
    let third = list_tools(&mut exec, 3);
    let (before, now) =
        (second["tools"].as_array().expect("tools"), third["tools"].as_array().expect("tools"));
    assert!(now.len() > before.len(), "the echo tools were appended");
    assert_eq!(now[..before.len()], before[..], "byte-identical prefix");
    let arguments = json!({"timezone": "Europe/Berlin"});
    exec.send(
        &json!({"call_id": "c1", "name": "mcp__time__get_current_time", "arguments": arguments}),
    );
    let call = exec.output("c1");
    assert_eq!(call["result"]["Ok"]["isError"], false, "{call}");
    assert!(call.to_string().contains("Europe/Berlin"), "{call}");
    exec.send(&json!({"type": "reset_tools"}));
    let reset = exec.line("tools_reset", |v| v["type"] == "tools_reset");
    assert_eq!(reset["forgotten"].as_u64(), Some(now.len() as u64 - base.len() as u64));
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}

#[test]
fn search_off_lists_every_tool_as_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exec = ExecSession::spawn(exec_command(&config(&dir, "off")));
    let answer = list_tools(&mut exec, 1);
    let names = tool_names(&answer);
    assert!(
        names.contains(&"mcp__time__get_current_time".to_string())
            && names.contains(&"mcp__docs__echo".to_string())
    );
    assert!(!names.contains(&"search_mcp_tools".to_string()));
    assert!(answer.get("revealed").is_none(), "{:?}", answer.get("revealed"));
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "sorted by name, as before");
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}

#[test]
fn with_catalogs_and_search_on_only_the_server_of_the_called_tool_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(&dir, "on");
    let cache = dir.path().join("cache");
    // A first run learns every server's tools and saves the catalogs.
    let mut learn = crate::support::router_command();
    learn.env("MCP_ROUTER_CACHE_DIR", &cache).args(["tools", "--refresh", "--config"]).arg(&config);
    let learned = learn.output().expect("run tools --refresh");
    assert!(learned.status.success(), "{}", String::from_utf8_lossy(&learned.stderr));
    let mut command = exec_command(&config);
    command.env("MCP_ROUTER_CACHE_DIR", &cache);
    let mut exec = ExecSession::spawn(command);
    let query = json!({"query": "current time in a timezone"});
    exec.send(&json!({"call_id": "s1", "name": "search_mcp_tools", "arguments": query}));
    let found: Value =
        serde_json::from_str(exec.output("s1")["content"].as_str().expect("payload"))
            .expect("json");
    assert_eq!(found["tools"][0]["name"], "mcp__time__get_current_time", "found from the catalog");
    let arguments = json!({"timezone": "UTC"});
    exec.send(
        &json!({"call_id": "c1", "name": "mcp__time__get_current_time", "arguments": arguments}),
    );
    assert_eq!(exec.output("c1")["result"]["Ok"]["isError"], false);
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let started: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "mcp_server_starting")
        .filter_map(|l| l["server"].as_str())
        .collect();
    assert_eq!(started, ["time"], "only the server whose tool was called started");
}

/// A lazy server whose tools nothing knows yet (no catalog) is started for the first search,
/// which finds its tools: a search made first thing does not come back empty.
#[test]
fn a_lazy_server_without_a_catalog_is_started_and_found_by_the_first_search() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[mcp_router]\ntool_search = \"on\"\n[mcp_servers.docs]\ncommand = {DEMO:?}\nargs = [\"--name\", \"docs\"]\nstartup = \"lazy\"\n"
    );
    let config = write_config(&dir, "lazy.toml", &text);
    let mut exec = ExecSession::spawn(exec_command(&config));
    let search = |exec: &mut ExecSession, id: &str| -> Value {
        let arguments = json!({"query": "echo the text back"});
        exec.send(&json!({"call_id": id, "name": "search_mcp_tools", "arguments": arguments}));
        serde_json::from_str(exec.output(id)["content"].as_str().expect("payload")).expect("json")
    };
    let first = search(&mut exec, "s1");
    assert_eq!(first["tools"][0]["name"], "mcp__docs__echo", "{first}");
    assert!(first.get("not_searchable_yet").is_none(), "{first}");
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let ready = lines.iter().filter(|v| v["type"] == "mcp_server_ready" && v["server"] == "docs");
    assert_eq!(ready.count(), 1, "started once, for the search");
}

/// Under `auto` on a first run (no catalog), a server slow to start holds up neither the
/// decision (the servers ready pass the threshold) nor a first search, sent before any specs,
/// past its few seconds: it answers with the ready servers' tools and names the slow one as
/// not searchable yet (had it waited for the whole list, the slow server would be ready, 20 s
/// later, and not named). The specs still wait for every server: whether the resource, prompt
/// and skill tools are offered depends on all of them.
#[test]
fn under_auto_a_slow_server_does_not_hold_up_the_first_search() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = "[mcp_router]\ntool_search_threshold_bytes = 1000\n".to_string();
    for name in ["docs", "notes"] {
        text.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = {DEMO:?}\nargs = [\"--name\", \"{name}\"]\n"
        ));
    }
    text.push_str(&format!(
        "[mcp_servers.slow]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"sleep 20; exec {DEMO} --name slow\"]\nstartup_timeout_sec = 60\n"
    ));
    let config = write_config(&dir, "slow.toml", &text);
    let mut exec = ExecSession::spawn(exec_command(&config));
    let arguments = json!({"query": "echo the text back"});
    exec.send(&json!({"call_id": "s1", "name": "search_mcp_tools", "arguments": arguments}));
    let output = exec.output("s1");
    assert_eq!(output["success"], true, "{output}");
    let found: Value =
        serde_json::from_str(output["content"].as_str().expect("payload")).expect("json");
    let names = tool_names(&found);
    assert!(names.iter().any(|n| n.starts_with("mcp__docs__")), "{found}");
    assert_eq!(found["not_searchable_yet"], json!(["slow"]), "{found}");
    // A second search does not wait again: still named, the slow server still starting.
    exec.send(&json!({"call_id": "s2", "name": "search_mcp_tools", "arguments": arguments}));
    let output = exec.output("s2");
    let again: Value =
        serde_json::from_str(output["content"].as_str().expect("payload")).expect("json");
    assert_eq!(again["not_searchable_yet"], json!(["slow"]), "{again}");
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}

#[test]
fn under_auto_servers_whose_catalogs_pass_the_threshold_stay_idle_until_used() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let with_threshold = |bytes: usize| {
        let text = std::fs::read_to_string(config(&dir, "auto")).expect("config");
        let text = text.replacen(
            "tool_search = \"auto\"\n",
            &format!("tool_search = \"auto\"\ntool_search_threshold_bytes = {bytes}\n"),
            1,
        );
        write_config(&dir, &format!("auto-{bytes}.toml"), &text)
    };
    let (small, large) = (with_threshold(1024), with_threshold(10_000_000));
    let mut learn = crate::support::router_command();
    learn.env("MCP_ROUTER_CACHE_DIR", &cache).args(["tools", "--refresh", "--config"]).arg(&large);
    let learned = learn.output().expect("run tools --refresh");
    assert!(learned.status.success(), "{}", String::from_utf8_lossy(&learned.stderr));
    let events = |lines: &[Value], kind: &str| -> Vec<String> {
        let of_kind = lines.iter().filter(|l| l["type"] == kind);
        of_kind.filter_map(|l| l["server"].as_str().map(str::to_string)).collect()
    };

    // Under the threshold: every server starts, every MCP tool is in the specs, as before.
    let mut command = exec_command(&large);
    command.env("MCP_ROUTER_CACHE_DIR", &cache);
    let mut exec = ExecSession::spawn(command);
    let names = tool_names(&list_tools(&mut exec, 1));
    assert!(names.contains(&"mcp__time__get_current_time".to_string()), "{names:?}");
    assert!(!names.contains(&"search_mcp_tools".to_string()), "{names:?}");
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    assert!(events(&lines, "mcp_server_idle").is_empty(), "{lines:?}");

    // Over it: the catalogs already pass it, so no server is started to learn its tools; each
    // says it is idle, the specs hold the search tool, and a call starts only its server.
    let mut command = exec_command(&small);
    command.env("MCP_ROUTER_CACHE_DIR", &cache);
    let mut exec = ExecSession::spawn(command);
    let names = tool_names(&list_tools(&mut exec, 1));
    assert!(names.contains(&"search_mcp_tools".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    let arguments = json!({"timezone": "UTC"});
    exec.send(
        &json!({"call_id": "c1", "name": "mcp__time__get_current_time", "arguments": arguments}),
    );
    assert_eq!(exec.output("c1")["result"]["Ok"]["isError"], false);
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    assert_eq!(events(&lines, "mcp_server_idle"), ["docs", "notes", "time"]);
    let idle_time = lines.iter().find(|l| l["type"] == "mcp_server_idle" && l["server"] == "time");
    assert_eq!(idle_time.expect("time idle")["tools"], 2, "its tools counted from the catalog");
    assert_eq!(events(&lines, "mcp_server_starting"), ["time"]);
}

/// The search answer's tool names, in order (revealed, then the ones named after them).
fn found_names(exec: &mut ExecSession, call_id: &str, query: &str) -> Vec<String> {
    exec.send(
        &json!({"call_id": call_id, "name": "search_mcp_tools", "arguments": {"query": query}}),
    );
    let output = exec.output(call_id);
    let found: Value =
        serde_json::from_str(output["content"].as_str().expect("payload")).expect("json");
    let revealed = found["tools"].as_array().cloned().unwrap_or_default();
    let named = found["more"].as_array().cloned().unwrap_or_default();
    revealed.iter().chain(&named).filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
}

/// The retrieval model, as a user meets it. Installed (`MCP_ROUTER_MODELS`, the harness's): the
/// first search answers at once, whatever the model's thread is doing, and once the tools are
/// embedded (kept in the cache folder) a need no word of the time server matches brings its
/// tools in front. Not installed: the same search still answers, by the words, and the log says
/// once how to get the model (under the default log filter); installed, it says nothing.
#[test]
fn the_retrieval_model_finds_by_meaning_and_its_absence_is_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(&dir, "on");
    let need = "what hour is it in Tokyo";
    let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/harness/models");
    let run = |with_model: bool, log: &std::path::Path| {
        let mut command = exec_command(&config);
        let cache = dir.path().join(if with_model { "cache-model" } else { "cache-none" });
        // The default log filter (warnings): what a user sees.
        command.env("MCP_ROUTER_CACHE_DIR", &cache).env_remove("RUST_LOG");
        let empty = dir.path().join("no-models");
        command.env("MCP_ROUTER_MODELS", if with_model { models.into() } else { empty });
        command.stderr(std::fs::File::create(log).expect("log"));
        (ExecSession::spawn(command), cache)
    };
    let time = |names: &[String]| names.iter().any(|n| n.starts_with("mcp__time__"));

    let without = dir.path().join("without.log");
    let (mut exec, _) = run(false, &without);
    list_tools(&mut exec, 1);
    assert!(!time(&found_names(&mut exec, "w1", need)), "the words alone find the time server");
    found_names(&mut exec, "w2", "echo text back");
    exec.finish();
    let log = std::fs::read_to_string(&without).expect("log");
    let said = log.matches("ranks without its retrieval model").count();
    assert_eq!(said, 1, "said once: {log}");
    assert!(log.contains("scripts/install-search-model"), "{log}");

    let with = dir.path().join("with.log");
    let (mut exec, cache) = run(true, &with);
    list_tools(&mut exec, 1);
    let started = std::time::Instant::now();
    found_names(&mut exec, "m0", need);
    let first = started.elapsed();
    let mut n = 0;
    let found = loop {
        n += 1;
        let names = found_names(&mut exec, &format!("m{n}"), need);
        if time(&names) || started.elapsed() > std::time::Duration::from_secs(120) {
            break names;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    assert!(time(&found), "the model's ranking brings the time server in front: {found:?}");
    exec.finish();
    let kept = std::fs::read_dir(cache.join("embeddings/e5-small-enpt-q4")).expect("kept").count();
    assert!(kept >= 3, "the embeddings are kept on disk: {kept}");
    let log = std::fs::read_to_string(&with).expect("log");
    assert!(!log.contains("retrieval model"), "nothing to say when it is there: {log}");
    println!("first search {first:?}; found after {n} more");
}
