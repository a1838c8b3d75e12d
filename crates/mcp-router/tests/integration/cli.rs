//! The human commands and the demo, as a user runs them.

use crate::support::{DEMO, write_config};

fn run(args: &[&str]) -> (String, String, i32) {
    run_with(&[], args)
}

/// `mcp-router args…` with `env` set: stdout, stderr, exit code.
fn run_with(env: &[(&str, &std::path::Path)], args: &[&str]) -> (String, String, i32) {
    let mut command = crate::support::router_command();
    command.envs(env.iter().copied()).args(args);
    let out = command.output().expect("run mcp-router");
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn demo_prints_the_transcript() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (stdout, _, code) = run_with(&[("TMPDIR", tmp.path())], &["demo"]);
    assert_eq!(code, 0);
    // Nothing left in the temporary directory but the demo skills' one folder, named by its
    // content (a sandboxed server may write temp, not the router's cache): a second run
    // leaves the same, nothing grows.
    let left = || -> Vec<String> {
        let entries = std::fs::read_dir(tmp.path()).expect("tmp").flatten();
        entries.map(|e| e.file_name().to_string_lossy().into_owned()).collect()
    };
    let first = left();
    assert!(matches!(first.as_slice(), [one] if one.starts_with("mcp-demo-skills-")), "{first:?}");
    let (_, _, again) = run_with(&[("TMPDIR", tmp.path())], &["demo"]);
    assert_eq!((again, left()), (0, first));
    for expected in [
        "mcp_server_ready     docs",
        "mcp_server_ready     notes",
        "mcp_tool_call_end    call-1",
        "\"nextCursor\": \"c1.",
        "output (error, as the model sees it):\n     server must be provided",
        "resources/read failed: MCP error -32602: Resource not found: demo://missing",
        "protocol 2026-07-28",
        "mcp_tools_changed    notes: added [mcp__notes__greet], removed []",
        "mcp__notes__garbage mcp__notes__greet mcp__notes__huge",
        "greet: {\\\"to\\\":\\\"you\\\"}",
        "mcp_resource_updated docs demo://notes/welcome",
        "\"changed\": [\n         {\"server\":\"docs\",\"uri\":\"demo://notes/welcome\",\"detected_at\":\"",
        "\"incomplete\": [\n         {\"server\":\"catalog\",\"shown\":",
        "{\"server\":\"catalog\",\"uri\":\"demo://gen/000000\",\"name\":\"invoice-0\"",
        "\"matched\": 171",
        "\"nextCursor\": \"mcp-router:",
        "Tool search (tool_search = \"on\"): 6 specs instead of",
        "   specs   complete_mcp_resource_argument list_mcp_resource_templates list_mcp_resources load_mcp_skill read_mcp_resource search_mcp_tools\n",
        "mcp_tools_revealed   mcp__notes__add",
        "   specs   … mcp__notes__add\n",
        "42",
        "Skills: listed for the host's prompt, loaded by the model, files checked",
        "   skill   docs release-notes: Write release notes for a version",
        "\"body\": \"\\n# Release notes\\n",
        "{\"path\":\"templates/TEMPLATE.md\",\"uri\":\"skill://release-notes/templates/TEMPLATE.md\"",
        "\"text\":\"# {project} {version}",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
    // Resources are grouped by server name: every docs item precedes every notes item.
    let first_notes = stdout.find("{\"server\":\"notes\"").expect("notes items");
    let last_docs = stdout[..stdout.find("── 2.").expect("second call")]
        .rfind("{\"server\":\"docs\"")
        .expect("docs items");
    assert!(last_docs < first_notes);
    // Every end event shows a duration in milliseconds.
    assert!(stdout.lines().filter(|l| l.contains("mcp_tool_call_end")).all(|l| l.contains(" ms ")));
}

#[test]
fn tools_in_both_formats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config =
        write_config(&dir, "c.toml", &format!("[mcp_servers.docs]\ncommand = \"{DEMO}\"\n"));
    let config = config.to_str().expect("utf8 path");
    let (stdout, _, code) = run(&["tools", "--config", config]);
    assert_eq!(code, 0);
    let specs: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let names: Vec<&str> = specs
        .as_array()
        .expect("array")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "complete_mcp_resource_argument",
            "list_mcp_data_sources",
            "list_mcp_resource_templates",
            "list_mcp_resources",
            "mcp__docs__add",
            "mcp__docs__add_note",
            "mcp__docs__add_tool",
            "mcp__docs__ask",
            "mcp__docs__crash",
            "mcp__docs__echo",
            "mcp__docs__fail",
            "mcp__docs__garbage",
            "mcp__docs__huge",
            "mcp__docs__job",
            "mcp__docs__progress",
            "mcp__docs__roots",
            "mcp__docs__sleep",
            "mcp__docs__touch",
            "query_mcp_data",
            "read_mcp_resource"
        ]
    );
    assert!(
        specs
            .as_array()
            .expect("array")
            .iter()
            .all(|s| s["type"] == "function" && s["parameters"]["type"] == "object")
    );
    let (stdout, _, code) = run(&["tools", "--config", config, "--format", "anthropic"]);
    assert_eq!(code, 0);
    let specs: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert!(
        specs
            .as_array()
            .expect("array")
            .iter()
            .all(|s| s["input_schema"]["type"] == "object" && s.get("type").is_none())
    );
}

#[test]
fn conveniences_read_list_and_call() {
    let (stdout, _, code) = run(&["read", "--server", "docs", "--uri", "demo://notes/welcome"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("Welcome! Templates:"), "{stdout}");
    let (stdout, _, code) = run(&["list-resources", "--server", "docs"]);
    assert_eq!(code, 0);
    let next = stdout
        .lines()
        .find_map(|l| l.strip_prefix("(more: --cursor "))
        .and_then(|l| l.strip_suffix(')'))
        .expect("a next page");
    let (stdout, _, code) = run(&["list-resources", "--server", "docs", "--cursor", next]);
    assert_eq!(code, 0);
    assert!(stdout.contains("demo://data/cities.csv"), "{stdout}");
    let (stdout, _, code) = run(&["list-resources", "--json"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("{\"server\":null,\"resources\":["), "{stdout}");
    let (stdout, _, code) = run(&["call", "mcp__notes__add", "{\"a\":1,\"b\":2}"]);
    assert_eq!((stdout.as_str(), code), ("3\n", 0));
    let (_, stderr, code) = run(&["read", "--server", "docs", "--uri", "demo://nope"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("Resource not found: demo://nope"), "{stderr}");
}

#[test]
fn a_bad_server_entry_fails_alone_and_strict_fails_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[mcp_servers.docs]\ncommand = \"{DEMO}\"\n\n[mcp_servers.broken]\ncommand = \"x\"\nargs = \"--oops\"\n"
    );
    let config = write_config(&dir, "bad.toml", &text);
    let config = config.to_str().expect("utf8");
    let why = format!(
        "{config}: server `broken`: key `args`: expected an array of strings, found a string"
    );
    let (_, stderr, code) = run(&["exec", "--strict", "--config", config]);
    assert_ne!(code, 0);
    assert!(stderr.contains(&why), "{stderr}");
    // Without --strict: named on stderr, left out, and the good server runs.
    let (stdout, stderr, code) = run(&["list-resources", "--json", "--config", config]);
    assert!(
        stderr.contains(&format!("mcp-router: warning: {why}; server `broken` is left out")),
        "{stderr}"
    );
    assert_eq!(code, 3, "partial: {stdout}");
    let payload: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert!(payload["resources"].as_array().is_some_and(|r| !r.is_empty()), "{payload}");
    let errors = payload["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{payload}");
    assert_eq!(errors[0]["server"], "broken");
    let error = errors[0]["error"].as_str().expect("error");
    assert!(error.contains(&format!("its config entry cannot be used: {why}")), "{error}");
}

#[test]
fn an_mcp_json_shared_with_other_clients_runs_what_it_can() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = serde_json::json!({"mcpServers": {
        "docs": {"command": DEMO},
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "bad name!": {"command": DEMO},
    }});
    let config = write_config(&dir, "mcp.json", &text.to_string());
    let config = config.to_str().expect("utf8");
    let (stdout, stderr, code) =
        run(&["call", "--config", config, "mcp__docs__echo", r#"{"text":"hi"}"#]);
    assert_eq!((stdout.as_str(), code), ("Echo: hi\n", 0), "{stderr}");
    assert!(
        stderr.contains("server `legacy`: key `type`: the legacy SSE transport is not supported"),
        "{stderr}"
    );
    assert!(stderr.contains("server `bad name!`: invalid name"), "{stderr}");
}

fn run_at_home(home: &std::path::Path, args: &[&str]) -> (String, String, i32) {
    run_with(&[("MCP_ROUTER_HOME", home)], args)
}

#[test]
fn sign_in_only_where_the_server_asks_for_it() {
    let open = crate::support::HttpServer::demo(100);
    let mut command = std::process::Command::new(DEMO);
    command
        .args(["--http", "127.0.0.1:0", "--name", "sec", "--oauth"])
        .stdout(std::process::Stdio::piped());
    let guarded = crate::support::HttpServer::spawn(command, "listening on ", str::to_string);
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[mcp_servers.open]\nurl = \"{}\"\n[mcp_servers.guarded]\nurl = \"{}\"\n",
        open.url, guarded.url
    );
    let config = write_config(&dir, "c.toml", &text);
    let config = config.to_str().expect("utf8");
    let (stdout, stderr, code) = run_at_home(dir.path(), &["login", "--config", config, "open"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "`open` does not ask for sign-in (it answered without authorization); nothing to do.\n"
    );
    let (stdout, _, code) = run_at_home(dir.path(), &["auth", "status", "--config", config]);
    assert_eq!(code, 0);
    let states: Vec<&str> = stdout.lines().filter_map(|l| l.split('\t').nth(2)).collect();
    assert_eq!(states, ["not signed in", "no sign-in needed"], "{stdout}");
}

#[test]
fn one_shot_commands_start_only_the_server_they_name_and_say_why_a_tool_is_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    // `missing` would fail loudly if it were started.
    let text = format!(
        "[mcp_servers.docs]\ncommand = \"{DEMO}\"\nenabled_tools = [\"echo\", \"nosuch\"]\n[mcp_servers.missing]\ncommand = \"/no/such/mcp-server\"\n"
    );
    let config = write_config(&dir, "c.toml", &text);
    let config = config.to_str().expect("utf8");
    let (stdout, stderr, code) =
        run(&["read", "--config", config, "--server", "docs", "--uri", "demo://notes/welcome"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("Welcome!"), "{stdout}");
    assert!(!stderr.contains("missing"), "only docs is started: {stderr}");
    assert!(stderr.contains("the server has no tool of that name"), "{stderr}");
    assert!(stderr.contains("tool=nosuch"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "no colour codes into a pipe: {stderr:?}");
    let (_, stderr, code) =
        run(&["call", "--config", config, "mcp__docs__add", r#"{"a":1,"b":2}"#]);
    assert_eq!(code, 1);
    assert!(!stderr.contains("missing"), "{stderr}");
    assert!(
        stderr.contains(
            "tool `add` of MCP server 'docs' is disabled by configuration (enabled_tools / disabled_tools)"
        ),
        "{stderr}"
    );
    let (stdout, stderr, code) = run(&[
        "read",
        "--config",
        config,
        "--server",
        "docs",
        "--template",
        "demo://notes/{id}",
        "--param",
        "id=welcome",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("Welcome!"), "{stdout}");
    // An all-server list with a failed server answers, says so, and exits 3.
    let (stdout, stderr, code) = run(&["list-resources", "--config", config]);
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stderr.contains("server missing failed: "), "{stderr}");
}

#[test]
fn a_user_error_is_one_line_whatever_rust_backtrace_says() {
    let out = crate::support::router_command()
        .env("RUST_BACKTRACE", "1")
        .args(["exec", "--config", "/no/such/config.toml"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr,
        "mcp-router: /no/such/config.toml: cannot read file: No such file or directory (os error 2)\n"
    );
}

#[test]
fn tools_listed_from_a_catalog_older_than_a_failed_start_say_so_until_refreshed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let web = crate::support::HttpServer::demo(100);
    let addr = web.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let config =
        write_config(&dir, "c.toml", &format!("[mcp_servers.web]\nurl = \"{}\"\n", web.url));
    let config = config.to_str().expect("utf8");
    let cache = dir.path().join("cache");
    let run_cached = |args: &[&str]| {
        let (stdout, stderr, _) = run_with(&[("MCP_ROUTER_CACHE_DIR", cache.as_path())], args);
        (stdout, stderr)
    };
    let (listed, _) = run_cached(&["tools", "--config", config]);
    assert!(listed.contains("mcp__web__echo"), "{listed}");
    drop(web);
    // A start that fails is noted in the catalog.
    run_cached(&["call", "--config", config, "mcp__web__echo", r#"{"text":"x"}"#]);
    let (listed, stderr) = run_cached(&["tools", "--config", config]);
    assert!(listed.contains("mcp__web__echo"), "still listed from the catalog: {listed}");
    assert!(stderr.contains("note: server `web` failed to start at "), "{stderr}");
    assert!(stderr.contains(&format!("connection refused by {addr}")), "{stderr}");
    // Back, and refreshed: the note is gone.
    let _back = crate::support::HttpServer::demo_at(&addr, 100);
    run_cached(&["tools", "--refresh", "--config", config]);
    let (_, stderr) = run_cached(&["tools", "--config", config]);
    assert!(!stderr.contains("failed to start"), "{stderr}");
}

/// A stdio server gets the router's allow-list, its `env`, and what `env_vars` names from the
/// router's environment (Codex's key): nothing else, and the key is not warned about.
#[test]
fn env_vars_pass_named_variables_through_and_nothing_else() {
    use crate::interop::{python, python_script};
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        &dir,
        "config.toml",
        &format!(
            r#"
[mcp_servers.envy]
command = "{}"
args = ["{}"]
env = {{ MCP_ROUTER_TEST_EXPLICIT = "from env", MCP_ROUTER_TEST_BOTH = "env wins" }}
env_vars = ["MCP_ROUTER_TEST_GEM_HOME", "MCP_ROUTER_TEST_BOTH", "MCP_ROUTER_TEST_NEVER_SET"]
"#,
            python(),
            python_script("env_fixture.py")
        ),
    );
    let value = |name: &str| {
        let mut command = crate::support::router_command();
        command
            .env("MCP_ROUTER_TEST_GEM_HOME", "/home/u/.gems")
            .env("MCP_ROUTER_TEST_BOTH", "from the router")
            .env("MCP_ROUTER_TEST_NOT_NAMED", "private")
            .args(["call", "--config"])
            .arg(&config)
            .args(["mcp__envy__env", &format!(r#"{{"name": "{name}"}}"#)]);
        let out = command.output().expect("mcp-router call");
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("unknown config key"), "{stderr}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(value("MCP_ROUTER_TEST_GEM_HOME"), "/home/u/.gems");
    assert_eq!(value("MCP_ROUTER_TEST_EXPLICIT"), "from env");
    assert_eq!(value("MCP_ROUTER_TEST_BOTH"), "env wins");
    assert_eq!(value("MCP_ROUTER_TEST_NEVER_SET"), "(unset)");
    assert_eq!(value("MCP_ROUTER_TEST_NOT_NAMED"), "(unset)", "only what is named passes");
    assert_ne!(value("PATH"), "(unset)", "the allow-list still passes");
    // A name that cannot be a variable, or env_vars on an HTTP entry, names the key.
    for (entry, expected) in [
        ("command = \"x\"\nenv_vars = [\"A=B\"]", "`env_vars`: `A=B` is not a variable name"),
        (
            "url = \"http://127.0.0.1:9/mcp\"\nenv_vars = [\"A\"]",
            "only applies to `command` servers",
        ),
    ] {
        let bad = write_config(&dir, "bad.toml", &format!("[mcp_servers.bad]\n{entry}\n"));
        let (_, stderr, code) =
            run(&["call", "--strict", "--config", bad.to_str().expect("utf-8"), "mcp__bad__t"]);
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.contains(expected), "{entry}: {stderr}");
    }
}

/// A server that cannot start: `call` says so in one `mcp-router: …` line (no log line
/// besides), and `tools` names it and exits 1 when it was the only server; a VS Code
/// `mcp.json` gets the hint to rename its key.
#[test]
fn a_failed_start_is_one_line_and_tools_fails_when_every_server_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        &dir,
        "bad.toml",
        "[mcp_servers.bad]\ncommand = \"sh\"\nargs = [\"-c\", \"echo oops >&2; exit 3\"]\n",
    );
    let config = config.to_str().expect("utf8");
    let (stdout, stderr, code) = run(&["call", "--config", config, "mcp__bad__x", "{}"]);
    assert_eq!((stdout.as_str(), code), ("", 1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("mcp-router: tool call error: MCP server 'bad' failed to start: "),
        "{stderr}"
    );
    assert!(stderr.contains("its last stderr lines: oops"), "{stderr}");
    let (stdout, stderr, code) = run(&["tools", "--refresh", "--config", config]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.starts_with("mcp-router: server `bad` failed: "), "{stderr}");
    // With one server that works, the list is a success.
    let mixed = write_config(
        &dir,
        "mixed.toml",
        &format!(
            "[mcp_servers.bad]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 3\"]\n[mcp_servers.docs]\ncommand = \"{DEMO}\"\n"
        ),
    );
    let (stdout, stderr, code) =
        run(&["tools", "--refresh", "--config", mixed.to_str().expect("utf8")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("mcp__docs__echo") && stderr.contains("server `bad` failed"),
        "{stderr}"
    );
    let vscode = dir.path().join("mcp.json");
    std::fs::write(&vscode, r#"{"servers": {"x": {"command": "true"}}}"#).expect("write");
    let (_, stderr, code) = run(&["tools", "--config", vscode.to_str().expect("utf8")]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("this looks like a VS Code `mcp.json`, whose servers are under `servers`"),
        "{stderr}"
    );
}
