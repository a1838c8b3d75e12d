//! `mcp-router wire` on a made-up home holding the MCP configs of five agents as their users
//! keep them (comments, trailing commas, other settings, other servers): one `connect` entry
//! added to each in its own format and nothing else changed, wiring again changes nothing, the
//! entry works as an agent starts it, and `--undo` gives every file back byte for byte.

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt as _;
use serde_json::Value;

use crate::support::{DEMO, ROUTER, router_command, write_config};

const CLAUDE_DESKTOP: &str = r#"{
  "mcpServers": {
    "time": {
      "command": "uvx",
      "args": ["mcp-server-time"]
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"#;

const CLAUDE_CODE: &str =
    r#"{"numStartups": 12, "projects": {"/home/ada/p": {"mcpServers": {}}}, "theme": "dark"}"#;

const VSCODE: &str = r#"// Servers for every workspace.
{
	"servers": {
		/* the team's wiki */
		"wiki": {
			"type": "http",
			"url": "http://127.0.0.1:8931/mcp",
		},
	},
	"inputs": [],
}
"#;

const GEMINI: &str = r#"{
    "theme": "GitHub",
    "mcpServers": {}
}
"#;

const CODEX: &str = r#"model = "o4-mini"
# my servers
[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time"]
"#;

/// `after` is `before` with one stretch of text put in: every byte of `before` is kept, in
/// its place.
fn one_insertion(before: &str, after: &str) -> bool {
    let (b, a) = (before.as_bytes(), after.as_bytes());
    let prefix = b.iter().zip(a).take_while(|(x, y)| x == y).count();
    let suffix = b.iter().rev().zip(a.iter().rev()).take_while(|(x, y)| x == y).count();
    a.len() > b.len() && prefix + suffix >= b.len()
}

/// JSON with comments and trailing commas as plain JSON.
fn jsonc(text: &str) -> Value {
    let mut plain = String::new();
    // The fixtures' comments take whole lines.
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        plain.push_str(line);
        plain.push('\n');
    }
    let plain = plain.replace("/* the team's wiki */", "");
    let plain = regex_free_trailing_commas(&plain);
    serde_json::from_str(&plain).unwrap_or_else(|e| panic!("JSON after wiring: {e}\n{text}"))
}

fn regex_free_trailing_commas(text: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if *c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}' | ']')) {
                continue;
            }
        }
        out.push(*c);
    }
    out
}

fn wire(home: &Path, args: &[&str]) -> (String, String, i32) {
    let out = router_command()
        .arg("wire")
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("mcp-router wire runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (text(&out.stdout), text(&out.stderr), out.status.code().unwrap_or(-1))
}

#[tokio::test]
async fn wire_adds_one_entry_to_each_agent_keeps_the_rest_and_undo_restores_every_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let files: [(&str, &str); 5] = [
        (".config/Claude/claude_desktop_config.json", CLAUDE_DESKTOP),
        (".claude.json", CLAUDE_CODE),
        (".config/Code/User/mcp.json", VSCODE),
        (".gemini/settings.json", GEMINI),
        (".codex/config.toml", CODEX),
    ];
    for (path, text) in files {
        let path = home.join(path);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("dirs");
        std::fs::write(path, text).expect("a config");
    }
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(&runtime).expect("runtime");
    let config = write_config(
        &dir,
        "servers.toml",
        &format!("[mcp_servers.docs]\ncommand = \"{DEMO}\"\nargs = [\"--name\", \"docs\"]\n"),
    );
    let config = config.canonicalize().expect("canonical");
    let config_arg = config.display().to_string();

    let (out, err, code) = wire(&home, &["--all", "--config", &config_arg]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("cursor: not set up here"), "{out}");
    assert!(!home.join(".cursor").exists(), "nothing made for an agent not set up");
    let args = serde_json::json!(["connect", "--config", config_arg]);
    let read = |path: &str| std::fs::read_to_string(home.join(path)).expect("the file");
    for (path, before) in &files[..4] {
        let after = read(path);
        assert!(one_insertion(before, &after), "{path}: what was there is kept\n{after}");
        let key = if path.contains("Code") { "servers" } else { "mcpServers" };
        let entry = jsonc(&after)[key]["mcp-router"].clone();
        assert_eq!(entry["command"], ROUTER, "{path}: {after}");
        assert_eq!(entry["args"], args, "{path}");
    }
    let vscode = jsonc(&read(files[2].0));
    assert_eq!(vscode["servers"]["mcp-router"]["type"], "stdio");
    assert_eq!(vscode["servers"]["wiki"]["url"], "http://127.0.0.1:8931/mcp", "kept");
    let code_config = jsonc(&read(files[1].0));
    assert_eq!(
        (&code_config["numStartups"], &code_config["theme"]),
        (&Value::from(12), &Value::from("dark"))
    );
    let codex = read(files[4].0);
    assert!(codex.starts_with(CODEX), "{codex}");
    let codex: toml::Table = toml::from_str(&codex).expect("TOML");
    assert_eq!(codex["mcp_servers"]["mcp-router"]["command"].as_str(), Some(ROUTER));
    assert_eq!(codex["mcp_servers"]["time"]["command"].as_str(), Some("uvx"));

    // Again: nothing changes.
    let wired: Vec<String> = files.iter().map(|(p, _)| read(p)).collect();
    let (out, _, code) = wire(&home, &["--all", "--config", &config_arg]);
    assert_eq!(code, 0);
    assert_eq!(out.matches("already wired").count(), 5, "{out}");
    assert_eq!(files.iter().map(|(p, _)| read(p)).collect::<Vec<_>>(), wired);

    // The entry works as an agent starts it: the router's servers through `connect`.
    let desktop = jsonc(&read(files[0].0));
    let entry = &desktop["mcpServers"]["mcp-router"];
    let entry_args: Vec<String> = entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("a string").to_string())
        .chain(["--idle-timeout".to_string(), "1".to_string()])
        .collect();
    let mut bridge = tokio::process::Command::new(entry["command"].as_str().expect("a command"))
        .args(&entry_args)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("MCP_ROUTER_CACHE_DIR", dir.path().join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the entry's command starts");
    let (stdout, stdin) = (bridge.stdout.take().expect("out"), bridge.stdin.take().expect("in"));
    let client = ().serve((stdout, stdin)).await.expect("a handshake through the entry");
    let tools = client.list_all_tools().await.expect("tools");
    assert!(tools.iter().any(|t| t.name.starts_with("mcp__docs__")), "{tools:?}");
    client.cancel().await.expect("closed");
    let router_stop = router_command()
        .args(["stop", "--config", &config_arg])
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .expect("stop");
    assert!(router_stop.status.success(), "{}", String::from_utf8_lossy(&router_stop.stderr));

    // Undone: every file as it was, byte for byte, and no backup left.
    let (out, err, code) = wire(&home, &["--all", "--undo"]);
    assert_eq!(code, 0, "{out}{err}");
    for (path, before) in files {
        assert_eq!(read(path), before, "{path} restored");
        let folder = home.join(path).parent().map(Path::to_path_buf).unwrap_or_default();
        let left: Vec<_> = std::fs::read_dir(&folder)
            .expect("the folder")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("mcp-router-"))
            .collect();
        assert!(left.is_empty(), "{path}: {left:?}");
    }
}

/// A file wiring made (the agent's folder exists, its config does not) is removed by `--undo`;
/// a file that is not JSON is refused and left as it is; no agent named is an error.
#[test]
fn wire_makes_a_missing_file_refuses_a_broken_one_and_says_what_to_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".cursor")).expect("cursor's folder");
    std::fs::create_dir_all(home.join(".gemini")).expect("gemini's folder");
    std::fs::write(home.join(".gemini/settings.json"), "{ \"theme\": ").expect("broken");
    let (out, err, code) = wire(&home, &["cursor", "gemini"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("cursor: wired"), "{out}");
    assert!(err.contains("gemini: the file is not JSON"), "{err}");
    assert_eq!(
        std::fs::read_to_string(home.join(".gemini/settings.json")).expect("kept"),
        "{ \"theme\": "
    );
    let made: Value = serde_json::from_str(
        &std::fs::read_to_string(home.join(".cursor/mcp.json")).expect("made"),
    )
    .expect("JSON");
    assert_eq!(made["mcpServers"]["mcp-router"]["args"], serde_json::json!(["connect"]));
    let (out, _, code) = wire(&home, &["cursor", "--undo"]);
    assert_eq!(code, 0);
    assert!(out.contains("cursor: restored"), "{out}");
    assert!(!home.join(".cursor/mcp.json").exists());
    let (_, err, code) = wire(&home, &[]);
    assert_ne!(code, 0);
    assert!(err.contains("name an agent"), "{err}");
}

/// `import` takes the servers of five agents' files into the router's config: one `time` for
/// the three files that have it, a name clash renamed after its agent, an HTTP server with its
/// URL, a Claude Code project's server; an SSE server, a disabled one, one needing VS Code's
/// inputs and the router's own connect entry left out with why; the config's own bytes kept.
#[test]
fn import_takes_every_agents_servers_once_and_says_what_it_left_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let files = [
        (
            ".config/Claude/claude_desktop_config.json",
            r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]},
                "notes": {"command": "npx", "args": ["-y", "notes-mcp"], "env": {"NOTES_DIR": "/srv/notes"}},
                "mcp-router": {"command": "/usr/bin/mcp-router", "args": ["connect"]},
                "old": {"command": "x", "disabled": true}}}"#,
        ),
        (
            ".claude.json",
            r#"{"mcpServers": {}, "projects": {"/home/ada/p": {"mcpServers": {"db": {"command": "pg-mcp", "args": ["--ro"]}}}}}"#,
        ),
        (
            ".config/Code/User/mcp.json",
            "{\n  // team servers\n  \"servers\": {\n    \"wiki\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:8931/mcp\"},\n    \"gh\": {\"command\": \"gh-mcp\", \"env\": {\"TOKEN\": \"${input:token}\"}},\n  },\n}\n",
        ),
        (
            ".gemini/settings.json",
            r#"{"mcpServers": {"notes": {"command": "other-notes"}, "events": {"url": "http://127.0.0.1:9/sse"}}}"#,
        ),
        (
            ".codex/config.toml",
            "[mcp_servers.clock]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\n",
        ),
    ];
    for (path, text) in files {
        let path = home.join(path);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("dirs");
        std::fs::write(path, text).expect("a config");
    }
    // The project's own file, where import runs.
    std::fs::create_dir_all(dir.path().join(".vscode")).expect(".vscode");
    std::fs::write(
        dir.path().join(".vscode/mcp.json"),
        r#"{"servers": {"lint": {"command": "lint-mcp"}}}"#,
    )
    .expect("a project file");
    let config = dir.path().join("router.toml");
    let before = "# mine\n[mcp_router]\ntool_search = \"auto\"\n";
    std::fs::write(&config, before).expect("the router's config");
    let config_arg = config.display().to_string();
    let import = || {
        router_command()
            .args(["import", "--all", "--config", &config_arg])
            .current_dir(dir.path())
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .expect("import runs")
    };
    let out = import();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    for line in [
        "claude-desktop: time: taken as `time`",
        "claude-desktop: notes: taken as `notes` (1 env or header values copied as they are there)",
        "claude-desktop: mcp-router: left out (the router's own connect entry)",
        "claude-desktop: old: left out (disabled there)",
        "claude-code (project /home/ada/p): db: taken as `db`",
        "vscode: wiki: taken as `wiki`",
        "vscode: gh: left out (a value uses the agent's own variables",
        "gemini: notes: taken as `notes-gemini`",
        "gemini: events: left out (an SSE server",
        "codex: clock: already there as `time`",
        ": lint: taken as `lint`",
    ] {
        assert!(stdout.contains(line), "{line:?} in\n{stdout}");
    }
    let text = std::fs::read_to_string(&config).expect("the config");
    assert!(text.starts_with(before), "{text}");
    let table: toml::Table = toml::from_str(&text).expect("TOML");
    let servers = table["mcp_servers"].as_table().expect("servers");
    let names: Vec<&String> = servers.keys().collect();
    assert_eq!(names, ["db", "lint", "notes", "notes-gemini", "time", "wiki"], "{text}");
    assert_eq!(servers["wiki"]["url"].as_str(), Some("http://127.0.0.1:8931/mcp"));
    assert_eq!(servers["notes"]["env"]["NOTES_DIR"].as_str(), Some("/srv/notes"));
    // The router reads what import wrote.
    let listed = router_command()
        .args(["trust", "--config", &config_arg])
        .env("MCP_ROUTER_CACHE_DIR", dir.path().join("cache"))
        .output()
        .expect("trust runs");
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    // Again: nothing new.
    let again = import();
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to add"));
    assert_eq!(std::fs::read_to_string(&config).expect("the config"), text);
}
