//! `mcp-router add` against a registry of JSON files served on loopback (the `/v0.1/` paths of
//! the MCP registry: one server in an active, a deprecated and a deleted version) and against a
//! `server.json` file: the entry written with its version pinned and its secret never written,
//! the deprecation said, the deleted version refused, no consent without a terminal or `--yes`,
//! a remote taken when no package can run here.

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::support::router_command;

/// `python3 -m http.server` on 127.0.0.1 serving `dir`; its URL.
fn serve(dir: &Path) -> (Child, String) {
    let mut child = Command::new("python3")
        .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 serves");
    let mut line = String::new();
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    out.read_line(&mut line).expect("its first line");
    let port = line.split("port ").nth(1).and_then(|p| p.split(' ').next()).expect("a port");
    (child, format!("http://127.0.0.1:{port}"))
}

fn notes(version: &str) -> Value {
    json!({
        "name": "io.github.ada/notes",
        "version": version,
        "packages": [{
            "registryType": "npm",
            "identifier": "@ada/notes-mcp",
            "version": version,
            "transport": {"type": "stdio"},
            "packageArguments": [
                {"type": "named", "name": "--root", "value": "/srv"},
                {"type": "named", "name": "--verbose"}
            ],
            "environmentVariables": [
                {"name": "NOTES_DIR", "isRequired": true, "description": "where the notes are"},
                {"name": "NOTES_TOKEN", "isRequired": true, "isSecret": true},
                {"name": "NOTES_LANG", "default": "en"}
            ]
        }]
    })
}

fn publish(root: &Path, version: &str, status: &str, message: Option<&str>) {
    let dir = root.join("v0.1/servers/io.github.ada/notes/versions");
    std::fs::create_dir_all(&dir).expect("dirs");
    let official =
        json!({"status": status, "statusMessage": message, "isLatest": version == "1.1.0"});
    let body = json!({"server": notes(version), "_meta": {"io.modelcontextprotocol.registry/official": official}});
    std::fs::write(dir.join(version), body.to_string()).expect("a version");
    if version == "1.1.0" {
        std::fs::write(dir.join("latest"), body.to_string()).expect("latest");
    }
}

fn add(config: &Path, args: &[&str]) -> (String, String, i32) {
    let out = router_command()
        .arg("add")
        .args(args)
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .output()
        .expect("add runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (text(&out.stdout), text(&out.stderr), out.status.code().unwrap_or(-1))
}

#[test]
fn add_pins_the_version_keeps_secrets_out_and_heeds_the_registrys_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("registry");
    publish(&root, "1.0.0", "active", None);
    publish(&root, "1.1.0", "deprecated", Some("use io.github.ada/notes2"));
    publish(&root, "0.9.0", "deleted", Some("it leaked notes"));
    let (mut registry, url) = serve(&root);
    let config = dir.path().join("router.toml");
    std::fs::write(&config, "# mine\n").expect("a config");

    // No consent without a terminal or --yes.
    let (out, err, code) = add(
        &config,
        &["io.github.ada/notes@1.0.0", "--registry", &url, "--env", "NOTES_DIR=/srv/notes"],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("run with --yes"), "{err}");
    assert_eq!(std::fs::read_to_string(&config).expect("config"), "# mine\n");

    let (out, err, code) = add(
        &config,
        &[
            "io.github.ada/notes@1.0.0",
            "--registry",
            &url,
            "--env",
            "NOTES_DIR=/srv/notes",
            "--yes",
        ],
    );
    if !Path::new("/usr/bin/npx").exists() && which("npx").is_none() {
        assert!(err.contains("npm needs `npx`"), "{err}");
        registry.kill().ok();
        return;
    }
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("command: npx -y @ada/notes-mcp@1.0.0 --root /srv"), "{out}");
    assert!(
        out.contains("env NOTES_TOKEN: a secret, passed from the router's environment"),
        "{out}"
    );
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(text.starts_with("# mine\n"), "{text}");
    let table: toml::Table = toml::from_str(&text).expect("TOML");
    let entry = &table["mcp_servers"]["notes"];
    assert_eq!(entry["command"].as_str(), Some("npx"));
    let args: Vec<&str> =
        entry["args"].as_array().expect("args").iter().filter_map(|a| a.as_str()).collect();
    assert_eq!(args, ["-y", "@ada/notes-mcp@1.0.0", "--root", "/srv"]);
    assert_eq!(entry["env"]["NOTES_DIR"].as_str(), Some("/srv/notes"));
    assert_eq!(entry["env"]["NOTES_LANG"].as_str(), Some("en"));
    assert_eq!(entry["env_vars"].as_array().map(Vec::len), Some(1));
    assert!(!text.contains("NOTES_TOKEN ="), "a secret's value is never written: {text}");
    // The router reads the entry as written.
    let read = router_command().args(["trust", "--config"]).arg(&config).output().expect("trust");
    assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));

    // The name is taken: --as names it; the latest is deprecated: said, with its message.
    let (_, err, code) = add(
        &config,
        &["io.github.ada/notes", "--registry", &url, "--env", "NOTES_DIR=/x", "--yes"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("a server `notes` is already in"), "{err}");
    let (out, err, code) = add(
        &config,
        &[
            "io.github.ada/notes",
            "--registry",
            &url,
            "--env",
            "NOTES_DIR=/x",
            "--as",
            "notes-next",
            "--yes",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("io.github.ada/notes 1.1.0 is deprecated: use io.github.ada/notes2"),
        "{err}"
    );
    assert!(out.contains("@ada/notes-mcp@1.1.0"), "{out}");

    // Deleted: refused, nothing written; a required value missing: refused.
    let before = std::fs::read_to_string(&config).expect("config");
    let (_, err, code) =
        add(&config, &["io.github.ada/notes@0.9.0", "--registry", &url, "--as", "old", "--yes"]);
    assert_ne!(code, 0);
    assert!(err.contains("was deleted from the registry: it leaked notes"), "{err}");
    let (_, err, code) =
        add(&config, &["io.github.ada/notes@1.0.0", "--registry", &url, "--as", "n3", "--yes"]);
    assert_ne!(code, 0);
    assert!(
        err.contains(
            "it needs `NOTES_DIR` (where the notes are): give it with --env NOTES_DIR=VALUE"
        ),
        "{err}"
    );
    let (_, err, code) = add(&config, &["io.github.ada/nope", "--registry", &url, "--yes"]);
    assert_ne!(code, 0);
    assert!(err.contains("no server io.github.ada/nope (version latest) in the registry"), "{err}");
    assert_eq!(std::fs::read_to_string(&config).expect("config"), before);

    // Where each came from is recorded, and `outdated` asks the registry.
    let table: toml::Table = toml::from_str(&before).expect("TOML");
    assert_eq!(table["mcp_servers"]["notes"]["registry"]["version"].as_str(), Some("1.0.0"));
    let out =
        router_command().args(["outdated", "--config"]).arg(&config).output().expect("outdated");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("notes: 1.0.0 → 1.1.0 (io.github.ada/notes)"), "{text}");
    assert!(
        text.contains("notes-next: 1.1.0 is the latest (io.github.ada/notes); 1.1.0 is deprecated: use io.github.ada/notes2"),
        "{text}"
    );
    // Removed: that entry and its note go, every other byte stays.
    let out = router_command()
        .args(["remove", "notes", "--config"])
        .arg(&config)
        .output()
        .expect("remove");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let after = std::fs::read_to_string(&config).expect("config");
    let table: toml::Table = toml::from_str(&after).expect("TOML");
    let names: Vec<&String> = table["mcp_servers"].as_table().expect("servers").keys().collect();
    assert_eq!(names, ["notes-next"], "{after}");
    assert!(after.starts_with("# mine\n") && !after.contains("1.0.0"), "{after}");
    assert!(
        before.ends_with(&after[after.find("# io.github.ada/notes 1.1.0").expect("the note")..])
    );
    let out = router_command()
        .args(["remove", "notes", "--config"])
        .arg(&config)
        .output()
        .expect("remove");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no server `notes` in"));

    // Update: a new version is a new consent; what changes is shown; its own env is kept.
    let (_, err, code) = add(
        &config,
        &[
            "io.github.ada/notes@1.0.0",
            "--registry",
            &url,
            "--env",
            "NOTES_DIR=/srv/n",
            "--as",
            "again",
            "--yes",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let update = |extra: &[&str]| {
        let out = router_command()
            .args(["update", "again", "--config"])
            .arg(&config)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("update");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (text(&out.stdout), text(&out.stderr), out.status.code().unwrap_or(-1))
    };
    let (out, err, code) = update(&[]);
    assert_eq!(code, 1, "no consent without --yes: {out}{err}");
    assert!(out.contains("again io.github.ada/notes 1.0.0 → 1.1.0"), "{out}");
    assert!(
        out.contains("@ada/notes-mcp@1.0.0") && out.contains("@ada/notes-mcp@1.1.0"),
        "the args' change: {out}"
    );
    let (out, err, code) = update(&["--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("1.1.0 is deprecated: use io.github.ada/notes2"), "{err}");
    let table: toml::Table =
        toml::from_str(&std::fs::read_to_string(&config).expect("config")).expect("TOML");
    let again = &table["mcp_servers"]["again"];
    assert_eq!(again["registry"]["version"].as_str(), Some("1.1.0"));
    assert_eq!(again["env"]["NOTES_DIR"].as_str(), Some("/srv/n"), "its own value kept");
    let (out, _, code) = update(&["--yes"]);
    assert_eq!(code, 0);
    assert!(out.contains("again: 1.1.0 is the latest"), "{out}");
    registry.kill().ok();
    registry.wait().ok();

    // A server.json whose only package cannot run here (no uvx on this PATH): its remote.
    let file = dir.path().join("server.json");
    let server = json!({"name": "io.github.ada/search", "version": "2.0.0",
        "packages": [{"registryType": "pypi", "identifier": "ada-search", "version": "2.0.0"}],
        "remotes": [{"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"}]});
    std::fs::write(&file, server.to_string()).expect("server.json");
    let out = router_command()
        .arg("add")
        .arg(&file)
        .args(["--yes", "--config"])
        .arg(&config)
        .env("PATH", dir.path())
        .output()
        .expect("add runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table: toml::Table =
        toml::from_str(&std::fs::read_to_string(&config).expect("config")).expect("TOML");
    assert_eq!(table["mcp_servers"]["search"]["url"].as_str(), Some("http://127.0.0.1:9/mcp"));
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}
