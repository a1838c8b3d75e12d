//! Nothing a server sends or does kills the router, under the default config (no
//! `[mcp_router]` section): a server that exits while a huge request is written to it, a request
//! over the message limit, a server that fails to start (named with its status and stderr).

use std::io::Write as _;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::interop::{everything_js, node};
use crate::support::{DEMO, exec_command, write_config};

/// Runs `exec` over `config` with `lines` on stdin; its exit status, its JSON lines, and how
/// long it took.
fn exec(config: &std::path::Path, lines: &[Value]) -> (std::process::ExitStatus, Vec<Value>) {
    let mut child = exec_command(config).spawn().expect("spawn mcp-router exec");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines: Vec<String> = lines.iter().map(Value::to_string).collect();
    // Written from a thread: a line of 70 MB fills the pipe while the router answers.
    let writer = std::thread::spawn(move || {
        for line in lines {
            if writeln!(stdin, "{line}").is_err() {
                return;
            }
        }
    });
    let output = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    let stdout = String::from_utf8(output.stdout).expect("utf8");
    let lines = stdout.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    (output.status, lines)
}

/// The output line of `call_id`: whether it succeeded, and its text (or error).
fn output_of(lines: &[Value], call_id: &str) -> (bool, String) {
    let found = lines
        .iter()
        .filter(|l| l["type"] == "function_call_output" && l["call_id"] == call_id)
        .collect::<Vec<_>>();
    assert_eq!(found.len(), 1, "one output for {call_id}");
    let output = &found[0]["output"];
    if output["type"] == "function" {
        let text = output["content"].as_str().unwrap_or_default().to_string();
        return (output["success"] == true, text);
    }
    let result = &output["result"];
    match result.get("Ok") {
        Some(ok) => (true, ok["content"][0]["text"].as_str().unwrap_or_default().to_string()),
        None => (false, result["Err"].as_str().unwrap_or_default().to_string()),
    }
}

fn call(call_id: &str, name: &str, arguments: Value) -> Value {
    json!({"call_id": call_id, "name": name, "arguments": arguments})
}

/// server-everything exits while the router writes a 12 MB argument to it: that call fails at
/// once with the server's exit status (no SIGPIPE, no tool timeout), the router lives, another
/// server answers, and a later call to the same server is answered by a new process. A 70 MB
/// line (past the 64 MiB limit) is refused naming the limit, nothing of it sent.
#[test]
fn a_server_exiting_while_a_huge_request_is_written_fails_only_that_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        &dir,
        "huge.toml",
        &format!(
            "[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n\
             [mcp_servers.ok]\ncommand = {DEMO:?}\nargs = [\"--name\", \"ok\"]\n",
            node(),
            everything_js("2026")
        ),
    );
    let echo = |id: &str, bytes: usize| {
        call(id, "mcp__everything__echo", json!({"message": "x".repeat(bytes)}))
    };
    let started = Instant::now();
    let (status, lines) = exec(
        &config,
        &[
            echo("twelve", 12_000_000),
            echo("twenty", 20_000_000),
            echo("seventy", 70_000_000),
            call("other", "mcp__ok__echo", json!({"text": "still here"})),
        ],
    );
    assert!(status.success(), "exec ended with {status:?}");
    assert!(started.elapsed() < Duration::from_secs(50), "{:?}", started.elapsed());
    for id in ["twelve", "twenty"] {
        let (ok, text) = output_of(&lines, id);
        assert!(
            ok || text.contains("the server exited ("),
            "{id}: {}",
            &text[..text.len().min(300)]
        );
    }
    let (ok, text) = output_of(&lines, "seventy");
    assert!(!ok);
    assert!(text.contains("at most 67108864 bytes (64 MiB); nothing was sent"), "{text}");
    assert_eq!(output_of(&lines, "other"), (true, "Echo: still here".to_string()));

    // After the server died of it, the next call starts it again and is answered.
    let (status, lines) = exec(
        &config,
        &[
            echo("twelve", 12_000_000),
            call("small", "mcp__everything__echo", json!({"message": "hi"})),
        ],
    );
    assert!(status.success());
    let _ = output_of(&lines, "twelve");
    assert_eq!(output_of(&lines, "small"), (true, "Echo: hi".to_string()));
}

/// A server that fails to start says why without `RUST_LOG`: its exit status and its last
/// stderr lines, in the call's output (a packaged server with a bad option, and a shell).
#[test]
fn a_failed_start_names_the_exit_status_and_the_last_stderr_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let time = crate::interop::harness_dir().join(".venv/bin/mcp-server-time");
    let config = write_config(
        &dir,
        "failing.toml",
        &format!(
            "[mcp_servers.badtime]\ncommand = {time:?}\nargs = [\"--local-timezone\", \"Nowhere/Bad\"]\n\
             [mcp_servers.boom]\ncommand = \"sh\"\nargs = [\"-c\", \"echo boom >&2; exit 3\"]\n",
        ),
    );
    let (status, lines) = exec(
        &config,
        &[
            call("t", "mcp__badtime__get_current_time", json!({"timezone": "UTC"})),
            call("b", "mcp__boom__anything", json!({})),
        ],
    );
    assert!(status.success());
    let (ok, text) = output_of(&lines, "t");
    assert!(!ok);
    assert!(text.contains("the server exited (status 1)"), "{text}");
    assert!(text.contains("its last stderr lines: ") && text.contains("Nowhere/Bad"), "{text}");
    let (ok, text) = output_of(&lines, "b");
    assert!(!ok);
    // (A 2026-era probe that met the same exit is said after it, in parentheses.)
    assert!(text.contains("the server exited (status 3); its last stderr lines: boom"), "{text}");
}

/// When `shutdown()` returns, no server is left, not even as a zombie: the guard reaps its
/// server before it exits. This test process adopts orphans (a child subreaper, as an agent
/// that is PID 1 in a container would), so a server its guard left unreaped would stay here as
/// a zombie.
#[tokio::test]
async fn shutdown_leaves_no_zombie() {
    // SAFETY: prctl with these arguments only sets a flag of this process.
    #[allow(unsafe_code)]
    let set = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(set, 0, "PR_SET_CHILD_SUBREAPER");
    let h = crate::support::Harness::start(vec![
        crate::support::demo("one", 10),
        crate::support::demo("two", 10),
    ]);
    h.manager.wait_until_started().await;
    let servers: Vec<u32> = h.manager.child_pids().into_iter().map(|(_, pid)| pid).collect();
    assert_eq!(servers.len(), 2, "the servers themselves");
    h.manager.shutdown().await;
    for pid in servers {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(stat.is_empty(), "server {pid} is left: {stat}");
    }
}

/// Packaged servers whose tools together pass the default search threshold (16 KiB of specs).
fn packaged_past_the_threshold(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let time = crate::interop::harness_dir().join(".venv/bin/mcp-server-time");
    let filesystem = crate::interop::harness_dir()
        .join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    write_config(
        dir,
        "packaged.toml",
        &format!(
            "[mcp_servers.everything]\ncommand = {node:?}\nargs = [{new:?}, \"stdio\"]\n\
             [mcp_servers.everything_old]\ncommand = {node:?}\nargs = [{old:?}, \"stdio\"]\n\
             [mcp_servers.filesystem]\ncommand = {node:?}\nargs = [{filesystem:?}, {root:?}]\n\
             [mcp_servers.time]\ncommand = {time:?}\n",
            node = node(),
            new = everything_js("2026"),
            old = everything_js("2025"),
            root = dir.path(),
        ),
    )
}

/// Under the default config (`tool_search = "auto"`), `search_mcp_tools` works as the very
/// first line, with a cold catalog and with a warm one, against packaged servers.
#[test]
fn search_works_as_the_first_line_with_a_cold_and_a_warm_catalog() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = packaged_past_the_threshold(&dir);
    let cache = dir.path().join("cache");
    for run in ["cold", "warm"] {
        let mut child = exec_command(&config)
            .env("MCP_ROUTER_CACHE_DIR", &cache)
            .spawn()
            .expect("spawn mcp-router exec");
        let mut stdin = child.stdin.take().expect("stdin");
        let search = call("s", "search_mcp_tools", json!({"query": "current time in a timezone"}));
        writeln!(stdin, "{search}").expect("write");
        drop(stdin);
        let output = child.wait_with_output().expect("wait");
        assert!(output.status.success(), "{run}");
        let stdout = String::from_utf8(output.stdout).expect("utf8");
        let lines: Vec<Value> =
            stdout.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
        let (ok, text) = output_of(&lines, "s");
        assert!(ok, "{run}: {text}");
        let found: Value = serde_json::from_str(&text).expect("the search's JSON");
        let names: Vec<&str> = found["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(names.contains(&"mcp__time__get_current_time"), "{run}: {names:?}");
    }
}

/// A server that hangs in its startup delays no call that is not its own: a call to an
/// unknown server, to an unknown tool of a ready server, or by an unknown name, is answered
/// at once; the hanging server's own call waits for it.
#[test]
fn a_typo_is_answered_at_once_while_a_server_hangs_in_startup() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        &dir,
        "hang.toml",
        &format!(
            "[mcp_servers.hangs]\ncommand = \"sh\"\nargs = [\"-c\", \"sleep 30\"]\nstartup_timeout_sec = 20\n\
             [mcp_servers.ok]\ncommand = {DEMO:?}\nargs = [\"--name\", \"ok\"]\n"
        ),
    );
    let mut child = exec_command(&config).spawn().expect("spawn mcp-router exec");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    // Wait until the demo server is ready (the hanging one never is); the calls below come
    // while the other is still starting.
    let mut read_until = |done: &dyn Fn(&Value) -> bool| -> (Value, Duration) {
        let started = Instant::now();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(stdout.read_line(&mut line).expect("read") > 0, "exec ended early");
            let value: Value = serde_json::from_str(&line).expect("JSON line");
            if done(&value) {
                return (value, started.elapsed());
            }
        }
    };
    let _ = read_until(&|v| v["type"] == "mcp_server_ready" && v["server"] == "ok");
    let mut read_output =
        |id: &str| read_until(&|v| v["type"] == "function_call_output" && v["call_id"] == id);
    for (id, name) in [
        ("unknown-server", "mcp__nosuch__echo"),
        ("unknown-tool", "mcp__ok__no_such_tool"),
        ("unknown-name", "no_such_function"),
    ] {
        writeln!(stdin, "{}", call(id, name, json!({}))).expect("write");
        let (output, took) = read_output(id);
        assert!(took < Duration::from_secs(2), "{id} took {took:?}: {output}");
        let (ok, text) = output_of(std::slice::from_ref(&output), id);
        let refused = !ok || text.to_lowercase().contains("unknown tool");
        assert!(refused, "{id}: {output}");
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
}

/// Every ordering exec promises, over many rounds: a cancelled call's end event comes before
/// its output (30 calls cancelled as soon as they began), and requests are answered in input
/// order, each echoing its `id` (a string or a number, as written), whatever their work.
#[test]
fn exec_keeps_its_orderings_over_many_rounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        &dir,
        "order.toml",
        &format!("[mcp_servers.docs]\ncommand = {DEMO:?}\nargs = [\"--name\", \"docs\"]\n"),
    );
    let mut exec = crate::exec::ExecSession::spawn(exec_command(&config));
    for n in 0..30 {
        let id = format!("c{n}");
        exec.send(&call(&id, "mcp__docs__sleep", json!({"ms": 60_000})));
        exec.line("the begin", |l| l["type"] == "mcp_tool_call_begin" && l["call_id"] == id);
        exec.send(&json!({"type": "cancel", "call_id": id}));
    }
    let mut ids = Vec::new();
    for round in 0..10 {
        for (kind, id) in [
            ("list_tools", json!(round * 3)),
            ("reset_tools", json!(format!("r{round}"))),
            ("take_notices", json!(round * 3 + 2)),
        ] {
            exec.send(&json!({"type": kind, "id": id}));
            ids.push(id);
        }
    }
    // A call id written as a number (refused: ids are strings) is echoed as the number.
    exec.send(&json!({"call_id": 77, "name": "mcp__docs__echo"}));
    // A BOM before a line is not part of it.
    exec.send(&Value::String(format!("\u{feff}{}", json!({"type": "reset_tools", "id": "bom"}))));
    ids.push(json!("bom"));
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    for n in 0..30 {
        let id = format!("c{n}");
        let at = |kind: &str| {
            let found = lines.iter().position(|l| l["type"] == kind && l["call_id"] == id);
            found.unwrap_or_else(|| panic!("no {kind} for {id}"))
        };
        assert!(at("mcp_tool_call_end") < at("function_call_output"), "{id}: output before end");
    }
    let refused = lines.iter().filter(|l| l["call_id"] == json!(77)).count();
    assert_eq!(refused, 2, "the error line and the output, each with the number 77");
    let answered: Vec<Value> = lines
        .iter()
        .filter(|l| ["tools", "tools_reset", "notices"].contains(&l["type"].as_str().unwrap_or("")))
        .map(|l| l["id"].clone())
        .collect();
    assert_eq!(answered, ids, "answers in input order, each with its id");
}

/// Idle servers hide nothing: with the default config and a warm catalog past the search
/// threshold (the servers stay idle), `prompts` and `skills` list on every run what they list
/// with `tool_search = "off"` (every server started), and the model's `load_mcp_skill` loads a
/// skill of an idle server.
#[test]
fn idle_servers_list_the_same_prompts_and_skills_as_started_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let packaged = packaged_past_the_threshold(&dir);
    let servers = std::fs::read_to_string(&packaged).expect("config")
        + &format!(
            "[mcp_servers.docs]\ncommand = {DEMO:?}\nargs = [\"--name\", \"docs\", \"--demo-skills\"]\n"
        );
    let defaults = write_config(&dir, "defaults.toml", &servers);
    let off =
        write_config(&dir, "off.toml", &format!("[mcp_router]\ntool_search = \"off\"\n{servers}"));
    let cache = dir.path().join("cache");
    let run = |config: &std::path::Path, command: &str| -> String {
        let output = crate::support::router_command()
            .env("MCP_ROUTER_CACHE_DIR", &cache)
            .args([command, "--json", "--config"])
            .arg(config)
            .output()
            .expect("run");
        assert!(output.status.success(), "{command}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("utf8")
    };
    for command in ["prompts", "skills"] {
        let started = run(&off, command);
        assert!(started.contains("\"server\""), "{command}: {started}");
        for round in 0..3 {
            assert_eq!(
                run(&defaults, command),
                started,
                "{command}, run {round} under the defaults"
            );
        }
    }
    // The catalogs are warm: the servers stay idle, and the skill loads all the same.
    let mut exec = crate::exec::ExecSession::spawn({
        let mut command = exec_command(&defaults);
        command.env("MCP_ROUTER_CACHE_DIR", &cache);
        command
    });
    exec.send(&call("l", "load_mcp_skill", json!({"name": "release-notes"})));
    let output = exec.output("l");
    assert_eq!(output["success"], true, "{output}");
    assert!(
        output["content"].as_str().unwrap_or_default().contains("\"name\":\"release-notes\""),
        "{output}"
    );
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}

/// A hostile server of our own (raw JSON-RPC) next to a well-behaved one: whatever it sends —
/// a flood of log messages and progress, answers over the 64 MiB limit (id first or last),
/// garbage and answers to ids nobody asked, a closed stdout while it runs — its calls end and
/// say why, the other server's calls keep answering in well under a second, log events are
/// rate-limited with what was dropped counted, and a broken connection is started again.
#[test]
fn a_hostile_server_harms_only_its_own_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        &dir,
        "hostile.toml",
        &format!(
            "[mcp_servers.hostile]\ncommand = {:?}\nargs = [{:?}]\n\
             [mcp_servers.ok]\ncommand = {DEMO:?}\nargs = [\"--name\", \"ok\"]\n",
            crate::interop::python(),
            crate::interop::python_script("hostile_fixture.py"),
        ),
    );
    let mut exec = crate::exec::ExecSession::spawn(exec_command(&config));
    let text_of = |output: &Value| -> String {
        match output["result"].get("Ok") {
            Some(ok) => ok["content"][0]["text"].as_str().unwrap_or_default().to_string(),
            None => output["result"]["Err"].as_str().unwrap_or_default().to_string(),
        }
    };
    let mut n = 0;
    let mut check = |exec: &mut crate::exec::ExecSession,
                     tool: &str,
                     expect: &str,
                     limit: Duration| {
        n += 1;
        let id = format!("{tool}-{n}");
        let started = Instant::now();
        exec.send(&call(&id, &format!("mcp__hostile__{tool}"), json!({})));
        let ok_id = format!("echo-{n}");
        exec.send(&call(&ok_id, "mcp__ok__echo", json!({"text": "still here"})));
        let sent = Instant::now();
        let output = exec.output(&ok_id);
        assert_eq!(text_of(&output), "Echo: still here", "next to {tool}");
        assert!(sent.elapsed() < Duration::from_secs(1), "next to {tool}: {:?}", sent.elapsed());
        let output = exec.output(&id);
        assert!(text_of(&output).contains(expect), "{tool}: {}", text_of(&output));
        assert!(started.elapsed() < limit, "{tool} took {:?}", started.elapsed());
        started.elapsed()
    };
    let limit = "was more than 67108864 bytes (64 MiB), the most one message may have";
    check(&mut exec, "ok", "fine", Duration::from_secs(20));
    let flood = check(&mut exec, "flood", "flooded", Duration::from_secs(30));
    check(&mut exec, "huge", limit, Duration::from_secs(30));
    check(&mut exec, "huge_last", limit, Duration::from_secs(30));
    check(&mut exec, "garbage", "after garbage", Duration::from_secs(5));
    check(
        &mut exec,
        "close_stdout",
        "connection to MCP server 'hostile' failed",
        Duration::from_secs(5),
    );
    // The broken connection is started again by the next call.
    check(&mut exec, "ok", "fine", Duration::from_secs(20));
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let logs: Vec<&Value> = lines.iter().filter(|l| l["type"] == "mcp_server_log").collect();
    // At most the documented allowance (50 a second) per second the flood lasted, plus a
    // report per second.
    let windows = flood.as_secs() as usize + 2;
    let most = windows * (50 + 1);
    assert!(logs.len() <= most, "{} log events for 100,000 messages in {flood:?}", logs.len());
    let dropped: u64 = logs.iter().filter_map(|l| l["dropped_before"].as_u64()).sum();
    let passed = logs.iter().filter(|l| l["logger"] == "flood").count() as u64;
    assert_eq!(passed + dropped, 100_000, "every message sent or counted as dropped");
}

/// The matrix over the startup modes: `tool_search` `off`, `on` and `auto` past its threshold,
/// each with a cold and a warm catalog, servers eager and lazy. Every model tool (lists, reads,
/// templates, completion, an MCP call, a task, a skill load, a refused app-only tool, search
/// where it is on) and every
/// host request (prompts, a prompt, skills) answers what it answers with every server started
/// (`off`, eager), against the demo servers and server-everything.
#[test]
fn every_feature_answers_the_same_whatever_the_startup_mode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let servers = |startup: &str| {
        format!(
            "[mcp_servers.docs]\ncommand = {DEMO:?}\nargs = [\"--name\", \"docs\", \"--demo-skills\"]\n{startup}\
             [mcp_servers.notes]\ncommand = {DEMO:?}\nargs = [\"--name\", \"notes\"]\n{startup}\
             [mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n{startup}",
            node(),
            everything_js("2026"),
        )
    };
    let lines = |search: bool| {
        let mut lines = vec![
            call("lr", "list_mcp_resources", json!({})),
            call("lt", "list_mcp_resource_templates", json!({})),
            call(
                "rt",
                "read_mcp_resource",
                json!({"server": "docs", "template": "demo://notes/{id}", "parameters": {"id": "42"}}),
            ),
            call(
                "ru",
                "read_mcp_resource",
                json!({"server": "notes", "uri": "demo://notes/welcome"}),
            ),
            call(
                "co",
                "complete_mcp_resource_argument",
                json!({"server": "docs", "template": "demo://docs/{name}", "argument": "name", "value": "re"}),
            ),
            call("mc", "mcp__notes__echo", json!({"text": "hi"})),
            call("ev", "mcp__everything__get-sum", json!({"a": 2, "b": 40})),
            call("jb", "mcp__docs__job", json!({"seconds": 0.1})),
            call("sk", "load_mcp_skill", json!({"name": "release-notes"})),
            // A tool for the server's app alone: refused by name, idle server or not.
            call("ap", "mcp__docs__panel_refresh", json!({})),
            json!({"type": "list_prompts", "id": "lp"}),
            json!({"type": "get_prompt", "server": "everything", "name": "simple-prompt", "id": "gp"}),
            json!({"type": "list_skills", "id": "ls"}),
        ];
        if search {
            lines.push(call("se", "search_mcp_tools", json!({"query": "add two numbers"})));
        }
        lines
    };
    // What each line was answered with: outputs by call id, answers by request id.
    let answers = |config: &std::path::Path, cache: &std::path::Path, search: bool| {
        let mut exec = crate::exec::ExecSession::spawn({
            let mut command = exec_command(config);
            command.env("MCP_ROUTER_CACHE_DIR", cache);
            command
        });
        for line in lines(search) {
            exec.send(&line);
        }
        let (lines, code) = exec.finish();
        assert_eq!(code, 0);
        let mut answered = std::collections::BTreeMap::new();
        for line in lines {
            if line["type"] == "function_call_output" {
                answered.insert(
                    line["call_id"].as_str().unwrap_or_default().to_string(),
                    line["output"].clone(),
                );
            } else if let Some(id) = line["id"].as_str() {
                answered.insert(id.to_string(), line);
            }
        }
        answered
    };
    let write = |name: &str, settings: &str, startup: &str| {
        write_config(&dir, name, &format!("{settings}{}", servers(startup)))
    };
    let reference = answers(
        &write("off.toml", "[mcp_router]\ntool_search = \"off\"\n", ""),
        &dir.path().join("c0"),
        false,
    );
    assert_eq!(reference.len(), 13, "{reference:?}");
    assert_eq!(reference["ap"]["success"], false, "{}", reference["ap"]);
    let lazy = "startup = \"lazy\"\n";
    let auto = "[mcp_router]\ntool_search_threshold_bytes = 100\n";
    let mut searched = Vec::new();
    for (n, (label, settings, startup)) in [
        ("off, lazy", "[mcp_router]\ntool_search = \"off\"\n", lazy),
        ("on", "[mcp_router]\ntool_search = \"on\"\n", ""),
        ("on, lazy", "[mcp_router]\ntool_search = \"on\"\n", lazy),
        ("auto past the threshold", auto, ""),
        ("auto past the threshold, lazy", auto, lazy),
    ]
    .into_iter()
    .enumerate()
    {
        let config = write(&format!("m{n}.toml"), settings, startup);
        let cache = dir.path().join(format!("c{}", n + 1));
        let search = !label.starts_with("off");
        for catalog in ["cold", "warm"] {
            let mut got = answers(&config, &cache, search);
            if let Some(hits) = got.remove("se") {
                searched.push((format!("{label}, {catalog}"), hits));
            }
            for (id, expected) in &reference {
                assert_eq!(
                    got.get(id),
                    Some(expected),
                    "{id} under {label} with a {catalog} catalog"
                );
            }
        }
    }
    for (label, hits) in &searched {
        assert_eq!(hits["success"], true, "{label}: {hits}");
        assert!(
            hits["content"].as_str().unwrap_or_default().contains("mcp__everything__get-sum"),
            "{label}: {hits}"
        );
    }
}
