//! The live view end to end: `demo --live` and `exec --live` in a real terminal (tmux, read back
//! with `capture-pane`), and `watch` on a recorded exec stream.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{DEMO, ROUTER, exec_command, marker, write_config};

/// A tmux session running `command` in a 120 × 45 terminal; killed on drop.
pub(crate) struct Tmux {
    session: String,
}

impl Tmux {
    pub(crate) fn start(command: &str) -> Self {
        let session = marker("live");
        let status = Command::new("tmux")
            .args(["new-session", "-d", "-s", &session, "-x", "120", "-y", "45", command])
            .status()
            .expect("tmux (tests/harness/install installs it)");
        assert!(status.success(), "tmux new-session failed");
        Self { session }
    }

    pub(crate) fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// The screen once `done` holds for it (at most 30 s).
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "no {what} on the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub(crate) fn keys(&self, keys: &str) {
        let status = Command::new("tmux")
            .args(["send-keys", "-t", &self.session, keys])
            .status()
            .expect("send-keys");
        assert!(status.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.session]).status();
    }
}

#[test]
fn demo_live_shows_servers_and_calls_and_quits_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let done = dir.path().join("exit");
    let command = format!(
        "MCP_ROUTER_CACHE_DIR='{}' '{ROUTER}' demo --live; echo $? > '{}'; sleep 60",
        dir.path().join("cache").display(),
        done.display()
    );
    let tmux = Tmux::start(&command);
    // Both demo servers become ready; calls appear.
    tmux.wait_for("ready servers", |s| {
        s.lines().filter(|l| l.contains(" ready ")).count() >= 3 && s.contains("call-1")
    });
    // The slow call ticks while in flight ("… s …"), then finishes with its duration.
    tmux.wait_for("a call in flight", |s| s.contains("in flight") && s.contains(" s …"));
    let screen = tmux.wait_for("the slow call's duration", |s| {
        s.lines().any(|l| l.contains("sleep") && l.contains(" ms ") && l.contains("ok"))
    });
    for server in ["docs", "notes", "catalog"] {
        assert!(screen.lines().any(|l| l.contains(server) && l.contains("ready")), "{screen}");
    }
    assert!(
        screen.lines().any(|l| l.contains("read_mcp_resource") && l.contains(" ms ")),
        "{screen}"
    );
    // Every step runs, the change steps too, and the view says when the demo is over.
    let screen = tmux.wait_for("the end of the demo", |s| s.contains("the demo has finished"));
    for step in [
        "add_tool",
        "greet",
        "touch",
        "query_mcp_data",
        "search_mcp_tools",
        "load_mcp_skill",
        "job",
    ] {
        assert!(screen.contains(&format!(" {step} ")), "{step} missing:\n{screen}");
    }
    // The call refused before it reached a server is there too.
    assert!(screen.contains("rejected: server must be provided"), "{screen}");
    // Select a call: its arguments show.
    tmux.keys("Up");
    tmux.wait_for("the selected call's arguments", |s| s.contains("arguments {"));
    tmux.keys("q");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done.exists() {
        assert!(Instant::now() < deadline, "demo --live did not exit on q:\n{}", tmux.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(&done).expect("exit code").trim(), "0");
    // The terminal is back: the normal screen, no view left on it.
    let after = tmux.screen();
    assert!(!after.contains("q quit"), "{after}");
}

fn calls() -> Vec<Value> {
    let call = |id: &str, name: &str, args: Value| json!({"call_id": id, "name": name, "arguments": args.to_string()});
    vec![
        call("1", "list_mcp_resources", json!({"server": "docs"})),
        call("2", "read_mcp_resource", json!({"server": "docs", "uri": "demo://notes/welcome"})),
        call("3", "mcp__docs__echo", json!({"text": "hi"})),
        call("4", "read_mcp_resource", json!({"server": "docs", "uri": "demo://nope"})),
    ]
}

fn one_server(dir: &tempfile::TempDir) -> std::path::PathBuf {
    write_config(
        dir,
        "config.toml",
        &format!("[mcp_servers.docs]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"docs\"]\n"),
    )
}

/// (type, call_id) of each line, sorted; durations and other timings left out.
fn shape(lines: &str) -> Vec<(String, String, Value)> {
    let mut shape: Vec<(String, String, Value)> = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
        .map(|v| {
            let kind = v["type"].as_str().unwrap_or("").to_string();
            let id = v["call_id"].as_str().or(v["server"].as_str()).unwrap_or("").to_string();
            let stable = match kind.as_str() {
                "function_call_output" => v["output"].clone(),
                "mcp_tool_call_end" => json!([v["result"], v["summary"]]),
                _ => Value::Null,
            };
            (kind, id, stable)
        })
        .collect();
    shape.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    shape
}

#[test]
fn exec_live_keeps_stdout_the_same_json_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A canary secret in the server's `env`, which it prints on its stderr: never on screen.
    let secret = "s3cr3t-live-env";
    let config = write_config(
        &dir,
        "config.toml",
        &format!(
            "[mcp_servers.docs]\ncommand = \"sh\"\nargs = [\"-c\", \"echo key=$API_KEY >&2; exec {DEMO} --name docs\"]\nenv = {{ API_KEY = \"{secret}\" }}\n"
        ),
    );
    let input = dir.path().join("calls.jsonl");
    let text: String = calls().iter().map(|c| format!("{c}\n")).collect();
    std::fs::write(&input, text).expect("write calls");

    // Without the view (no terminal needed).
    let plain = exec_command(&config)
        .stdin(std::fs::File::open(&input).expect("calls"))
        .output()
        .expect("exec");
    assert!(plain.status.success());
    let plain = String::from_utf8(plain.stdout).expect("utf8");

    // With it, in a terminal: stdin and stdout are files, the view is on the terminal.
    let out = dir.path().join("live.jsonl");
    let done = dir.path().join("exit");
    let command = format!(
        "MCP_ROUTER_CACHE_DIR='{}' '{ROUTER}' exec --config '{}' --live < '{}' > '{}' 2> '{}'; echo $? > '{}'; sleep 60",
        dir.path().join("cache").display(),
        config.display(),
        input.display(),
        out.display(),
        dir.path().join("stderr").display(),
        done.display()
    );
    let tmux = Tmux::start(&command);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut screens = 0;
    while !done.exists() {
        let screen = tmux.screen();
        assert!(Instant::now() < deadline, "exec --live did not finish:\n{screen}");
        assert!(!screen.contains(secret), "the secret on screen:\n{screen}");
        screens += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(screens > 0 && !tmux.screen().contains(secret));
    assert_eq!(std::fs::read_to_string(&done).expect("exit").trim(), "0");
    // The view did open on the terminal.
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert!(!stderr.contains("no terminal"), "{stderr}");
    let live = std::fs::read_to_string(&out).expect("live output");
    assert_eq!(shape(&live), shape(&plain));
    assert_eq!(live.lines().count(), plain.lines().count());

    // Without a terminal at all, --live says so and goes on.
    // (`setsid`: a new session, with no controlling terminal even where the tests have one.)
    let headless = Command::new("setsid")
        .arg(ROUTER)
        .env("MCP_ROUTER_CACHE_DIR", dir.path().join("cache2"))
        .args(["exec", "--config"])
        .arg(&config)
        .arg("--live")
        .stdin(std::fs::File::open(&input).expect("calls"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("exec");
    assert!(headless.status.success());
    let stderr = String::from_utf8_lossy(&headless.stderr);
    assert!(stderr.contains("no terminal for the live view"), "{stderr}");
    assert_eq!(shape(&String::from_utf8(headless.stdout).expect("utf8")), shape(&plain));
}

fn record(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let config = one_server(dir);
    let mut child =
        exec_command(&config).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("exec");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("stdin");
        for call in calls() {
            writeln!(stdin, "{call}").expect("write");
        }
        writeln!(stdin, "not json").expect("write");
    }
    let out = child.wait_with_output().expect("exec");
    let path = dir.path().join("recorded.jsonl");
    std::fs::write(&path, out.stdout).expect("record");
    path
}

fn readable(lines: &str, path: &Path) {
    for expected in [
        "mcp_server_starting  docs (stdio)",
        "mcp_server_ready     docs in",
        "mcp_tool_call_begin  2 server=docs tool=read_mcp_resource",
        "function_call_output 2 success",
        "function_call_output 4 failure",
        "error                invalid input line",
    ] {
        assert!(
            lines.contains(expected),
            "{expected:?} missing from watch {}:\n{lines}",
            path.display()
        );
    }
    let end = lines.lines().find(|l| l.starts_with("mcp_tool_call_end    2 ")).expect("end of 2");
    assert!(end.contains(" ms ok (1 items shown, 1 pages fetched, 1 servers)"), "{end}");
}

#[test]
fn watch_prints_a_recorded_stream_as_readable_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let recorded = record(&dir);
    let out = Command::new(ROUTER).arg("watch").arg(&recorded).output().expect("watch");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    readable(&String::from_utf8(out.stdout).expect("utf8"), &recorded);
    // From stdin, as a host tees its stream into it.
    let out = Command::new(ROUTER)
        .args(["watch", "-"])
        .stdin(std::fs::File::open(&recorded).expect("recorded"))
        .output()
        .expect("watch -");
    assert!(out.status.success());
    readable(&String::from_utf8(out.stdout).expect("utf8"), &recorded);
    // A file that is not there: a clear error.
    let out =
        Command::new(ROUTER).args(["watch", "/nonexistent/stream.jsonl"]).output().expect("watch");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/stream.jsonl"));
}

#[test]
fn watch_replays_a_recording_in_the_view() {
    let dir = tempfile::tempdir().expect("tempdir");
    let recorded = record(&dir);
    let done = dir.path().join("exit");
    let tmux = Tmux::start(&format!(
        "'{ROUTER}' watch '{}'; echo $? > '{}'; sleep 60",
        recorded.display(),
        done.display()
    ));
    let screen = tmux.wait_for("the replayed calls", |s| s.contains("stream ended"));
    // The recording ends with the shutdown: the server was ready (its protocol and tools are
    // shown), then stopped.
    let docs = screen.lines().find(|l| l.starts_with("│docs ")).unwrap_or_default();
    assert!(docs.contains("stopped") && docs.contains("2026-07-28"), "{screen}");
    assert!(screen.lines().any(|l| l.starts_with("│4 ") && l.contains("error")), "{screen}");
    assert!(screen.contains("4 calls (0 in flight, 1 failed)"), "{screen}");
    tmux.keys("q");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done.exists() {
        assert!(Instant::now() < deadline, "watch did not exit on q");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ledger a host asked for in an exec stream (`{"type": "ledger"}`) is the costs panel of
/// `watch` on that stream: `c` shows each server's bars in a real terminal.
#[test]
fn watch_shows_the_ledger_of_a_recorded_stream_as_bars() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = one_server(&dir);
    // The host asks for the ledger once its calls are answered.
    let mut exec = crate::exec::ExecSession::in_state(&config, &dir.path().join("cache"));
    for call in calls() {
        exec.send(&call);
        exec.output(call["call_id"].as_str().expect("id"));
    }
    exec.send(&json!({"type": "ledger"}));
    let ledger = exec.line("the ledger", |v| v["type"] == "ledger");
    let (lines, code) = exec.finish();
    assert_eq!(code, 0);
    let stream = dir.path().join("stream.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&stream, text).expect("write the stream");
    let servers = ledger["report"]["servers"].as_array().expect("servers");
    let docs = servers.iter().find(|s| s["server"] == "docs").expect("docs");
    assert_eq!((&docs["server"], &docs["calls"]), (&json!("docs"), &json!(4)), "{ledger}");
    let tmux = Tmux::start(&format!("'{ROUTER}' watch '{}'; sleep 60", stream.display()));
    tmux.wait_for("the calls", |s| s.contains("mcp__docs__echo") || s.contains(" echo "));
    tmux.keys("c");
    let screen = tmux.wait_for("the costs panel", |s| s.contains("costs, tokens: o200k_base"));
    assert!(
        screen.lines().any(|l| l.contains("docs") && l.contains('█') && l.contains(" ms")),
        "{screen}"
    );
    tmux.keys("q");
}
