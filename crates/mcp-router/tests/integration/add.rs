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

fn notes(version: &str, url: &str) -> Value {
    json!({
        "name": "io.github.ada/notes",
        "version": version,
        "packages": [{
            "registryType": "npm",
            "registryBaseUrl": url,
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

/// `io.github.ada/notes` at `version` in the MCP registry folder `root` (served at `url`), and
/// its npm package in the same folder (npm's paths).
fn publish(root: &Path, url: &str, version: &str, status: &str, message: Option<&str>) {
    let dir = root.join("v0.1/servers/io.github.ada/notes/versions");
    std::fs::create_dir_all(&dir).expect("dirs");
    let official =
        json!({"status": status, "statusMessage": message, "isLatest": version == "1.1.0"});
    let body = json!({"server": notes(version, url), "_meta": {"io.modelcontextprotocol.registry/official": official}});
    std::fs::write(dir.join(version), body.to_string()).expect("a version");
    if version == "1.1.0" {
        std::fs::write(dir.join("latest"), body.to_string()).expect("latest");
    }
    if which("npm").is_some() && status != "deleted" {
        let work = root.parent().expect("the registry's folder").join("packing");
        let tarball = pack(&work, "notes-mcp", version, &root.join("tarballs"));
        publish_npm(root, url, "notes-mcp", version, &sha512_integrity(&tarball));
    }
}

fn add(config: &Path, args: &[&str]) -> (String, String, i32) {
    let out = router_beside(config)
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
    std::fs::create_dir_all(&root).expect("registry");
    let (mut registry, url) = serve(&root);
    publish(&root, &url, "1.0.0", "active", None);
    publish(&root, &url, "1.1.0", "deprecated", Some("use io.github.ada/notes2"));
    publish(&root, &url, "0.9.0", "deleted", Some("it leaked notes"));
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
    if which("npm").is_none() || which("node").is_none() {
        assert!(err.contains("npm needs `npm` and `node`"), "{err}");
        registry.kill().ok();
        return;
    }
    assert_eq!(code, 0, "{out}{err}");
    let program =
        dir.path().join("packages/npm/@ada+notes-mcp@1.0.0/node_modules/@ada/notes-mcp/server.js");
    assert!(out.contains(&format!("command: node {} --root /srv", program.display())), "{out}");
    assert!(
        out.contains("env NOTES_TOKEN: a secret, passed from the router's environment"),
        "{out}"
    );
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(text.starts_with("# mine\n"), "{text}");
    let table: toml::Table = toml::from_str(&text).expect("TOML");
    let entry = &table["mcp_servers"]["notes"];
    assert_eq!(entry["command"].as_str(), Some("node"));
    let args: Vec<&str> =
        entry["args"].as_array().expect("args").iter().filter_map(|a| a.as_str()).collect();
    assert_eq!(args, [program.to_str().expect("a path"), "--root", "/srv"]);
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
    assert!(out.contains("@ada+notes-mcp@1.1.0"), "{out}");

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
        let out = router_beside(&config)
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
        out.contains("@ada+notes-mcp@1.0.0") && out.contains("@ada+notes-mcp@1.1.0"),
        "the args' and integrity's change: {out}"
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
    // The registry named in the config's [mcp_router] section, without --registry.
    let own = dir.path().join("own.toml");
    std::fs::write(&own, format!("[mcp_router]\nregistry = \"{url}\"\n")).expect("config");
    let (out, err, code) =
        add(&own, &["io.github.ada/notes@1.0.0", "--env", "NOTES_DIR=/srv/n", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    let table: toml::Table =
        toml::from_str(&std::fs::read_to_string(&own).expect("config")).expect("TOML");
    assert_eq!(table["mcp_servers"]["notes"]["registry"]["url"].as_str(), Some(url.as_str()));
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

/// A small MCP server in plain Node.js (no dependency): one tool, `greet`, whose description
/// is `description`; each start appends a line to the file its `--log=FILE` argument names.
const GREETER: &str = r#"#!/usr/bin/env node
const fs = require('fs');
const log = process.argv.find((a) => a.startsWith('--log='));
if (log) fs.appendFileSync(log.slice(6), 'started\n');
const loud = process.argv.includes('--loud');
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch (e) { return; }
  if (m.id === undefined) return;
  const ok = (result) => send({ jsonrpc: '2.0', id: m.id, result });
  if (m.method === 'initialize') return ok({ protocolVersion: '2025-11-25',
    capabilities: { tools: {} }, serverInfo: { name: 'greeter', version: '1.0.0' } });
  if (m.method === 'tools/list') return ok({ tools: [{ name: 'greet', description: 'DESCRIPTION',
    inputSchema: { type: 'object', properties: {} } }] });
  const token = process.env.GREETING_TOKEN;
  if (m.method === 'tools/call') return ok({ content: [{ type: 'text',
    text: (loud ? 'HELLO' : 'hello') + ' from the greeter'
      + (token ? ' (a token of ' + token.length + ' characters)' : '') }] });
  if (m.method === 'ping') return ok({});
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } });
});
"#;

/// The npm package `@ada/<name>` at `version` (the greeter server), packed by npm into `out`;
/// its tarball's path.
fn pack(dir: &Path, name: &str, version: &str, out: &Path) -> std::path::PathBuf {
    pack_described(dir, name, version, "Greet the user.", out)
}

/// [`pack`], its tool described as `description`.
fn pack_described(
    dir: &Path,
    name: &str,
    version: &str,
    description: &str,
    out: &Path,
) -> std::path::PathBuf {
    let source = dir.join(format!("{name}-{version}"));
    std::fs::create_dir_all(&source).expect("dir");
    let manifest =
        json!({"name": format!("@ada/{name}"), "version": version, "bin": {name: "server.js"}});
    std::fs::write(source.join("package.json"), manifest.to_string()).expect("package.json");
    std::fs::write(source.join("server.js"), GREETER.replace("DESCRIPTION", description))
        .expect("server.js");
    std::fs::create_dir_all(out).expect("out");
    let packed = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(out)
        .current_dir(&source)
        .env("npm_config_cache", dir.join("npm-cache"))
        .output()
        .expect("npm pack");
    assert!(packed.status.success(), "{}", String::from_utf8_lossy(&packed.stderr));
    out.join(format!("ada-{name}-{version}.tgz"))
}

/// npm's metadata of `@ada/<name>` at `version` in the registry folder `root` (served at
/// `url`), with `integrity` for its tarball (`tarballs/ada-<name>-<version>.tgz`).
fn publish_npm(root: &Path, url: &str, name: &str, version: &str, integrity: &str) {
    let dir = root.join("@ada").join(name);
    std::fs::create_dir_all(&dir).expect("dir");
    let tarball = format!("{url}/tarballs/ada-{name}-{version}.tgz");
    let meta = json!({"name": format!("@ada/{name}"), "version": version,
        "dist": {"tarball": tarball, "integrity": integrity}});
    std::fs::write(dir.join(version), meta.to_string()).expect("metadata");
}

/// `mcp-router` for a test whose config is `config`: packages installed beside it, npm's cache
/// there too, and npm's registry a closed port (a test's packages have no dependency).
fn router_beside(config: &Path) -> Command {
    let dir = config.parent().expect("the config's folder");
    let mut command = router_command();
    command
        .env("MCP_ROUTER_HOME", dir.join("home"))
        .env("MCP_ROUTER_PACKAGES", dir.join("packages"))
        .env("npm_config_cache", dir.join("npm-cache"))
        .env("npm_config_registry", "http://127.0.0.1:9");
    command
}

fn sha512_integrity(file: &Path) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let bytes = std::fs::read(file).expect("tarball");
    let digest = sha2::Sha512::digest(&bytes);
    format!("sha512-{}", base64::engine::general_purpose::STANDARD.encode(digest))
}

/// `add` of an npm package installs it itself: the tarball checked against the registry's
/// integrity (a wrong one refused, nothing installed), installed with its scripts off, run with
/// `node`, its folder's digest recorded; a file of it changed afterwards refuses its next start
/// before anything of it runs.
#[test]
fn an_npm_package_is_installed_checked_and_refused_once_tampered() {
    if which("npm").is_none() || which("node").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("registry");
    let tarball = pack(dir.path(), "greeter", "1.0.0", &root.join("tarballs"));
    let (mut registry, url) = serve(&root);
    publish_npm(&root, &url, "greeter", "1.0.0", &sha512_integrity(&tarball));
    let log = dir.path().join("greeter.log");
    let server = |version: &str| {
        json!({"name": "io.github.ada/greeter", "version": version, "packages": [{
            "registryType": "npm", "registryBaseUrl": url, "identifier": "@ada/greeter",
            "version": version, "transport": {"type": "stdio"},
            "packageArguments": [{"type": "positional", "value": "--loud"},
                {"type": "positional", "value": format!("--log={}", log.display())}],
            "environmentVariables": [{"name": "GREETING_TOKEN", "isSecret": true, "isRequired": true}]}]})
    };
    let file = dir.path().join("server.json");
    std::fs::write(&file, server("1.0.0").to_string()).expect("server.json");
    let (config, packages) = (dir.path().join("router.toml"), dir.path().join("packages"));
    let file_arg = file.to_string_lossy().into_owned();
    // Its secret, given as `add` runs: kept in the secret store, only its name in the config.
    let (out, err, code) = add(&config, &[&file_arg, "--env", "GREETING_TOKEN=s3cret!", "--yes"]);
    assert!(out.contains("env GREETING_TOKEN: a secret, kept in the secret store"), "{out}");
    assert!(!out.contains("s3cret!"), "{out}");
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(
        text.contains("env_secrets = [\"GREETING_TOKEN\"]") && !text.contains("s3cret!"),
        "{text}"
    );
    assert_eq!(code, 0, "{out}{err}");
    let installed = packages.join("npm/@ada+greeter@1.0.0");
    let program = installed.join("node_modules/@ada/greeter/server.js");
    let command = format!("command: node {} --loud --log={}", program.display(), log.display());
    assert!(out.contains(&command), "{out}");
    assert!(out.contains("its tarball matched the registry's sha512-"), "{out}");
    assert!(out.contains("is checked before every start"), "{out}");
    let table: toml::Table =
        toml::from_str(&std::fs::read_to_string(&config).expect("config")).expect("TOML");
    let entry = &table["mcp_servers"]["greeter"];
    assert_eq!(entry["command"].as_str(), Some("node"));
    let recorded = entry["integrity"]["sha256"].as_str().expect("a digest").to_string();
    assert_eq!(recorded, mcp_connection_manager::package_digest(&installed).expect("digest"));
    assert_eq!(entry["integrity"]["path"].as_str(), installed.to_str());
    let staging: Vec<_> = std::fs::read_dir(packages.join("npm"))
        .expect("the store")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(staging, ["@ada+greeter@1.0.0"], "no staging folder left");

    // It runs, from where it was installed.
    let home = dir.path().join("home");
    let call = |config: &Path| greet(config, "greeter", Some(&home));
    let said = call(&config);
    assert!(said.contains("HELLO from the greeter (a token of 7 characters)"), "{said}");
    let starts = std::fs::read_to_string(&log).unwrap_or_default().lines().count();
    assert_eq!(starts, 1, "one start");

    // Its secret forgotten: the entry cannot be used, and says how to mend it; kept again from
    // stdin, it runs again.
    let secret = |args: &[&str], stdin: &str| {
        use std::io::Write as _;
        let mut child = router_beside(&config)
            .arg("secret")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("secret");
        child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write");
        let out = child.wait_with_output().expect("secret runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(secret(&["list"], ""), "greeter: GREETING_TOKEN\n");
    secret(&["remove", "greeter", "GREETING_TOKEN"], "");
    let said = call(&config);
    assert!(said.contains("the secret `GREETING_TOKEN` is not in the secret store"), "{said}");
    assert!(said.contains("mcp-router secret set greeter GREETING_TOKEN"), "{said}");
    secret(&["set", "greeter", "GREETING_TOKEN"], "another\n");
    let said = call(&config);
    assert!(said.contains("(a token of 7 characters)"), "{said}");
    let starts = std::fs::read_to_string(&log).unwrap_or_default().lines().count();

    // A file of it changed: refused before anything of it runs.
    let mut text = std::fs::read_to_string(&program).expect("server.js");
    text.push_str("\n// one more line\n");
    std::fs::write(&program, text).expect("tamper");
    let said = call(&config);
    assert!(said.contains("is not what was installed"), "{said}");
    assert!(said.contains("refused before anything of it ran"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap_or_default().lines().count(),
        starts,
        "nothing of it ran"
    );

    // A tarball that does not match the registry's integrity: refused, nothing installed.
    let other = pack(dir.path(), "greeter", "2.0.0", &root.join("tarballs"));
    publish_npm(&root, &url, "greeter", "2.0.0", &sha512_integrity(&tarball));
    assert!(other.exists());
    std::fs::write(&file, server("2.0.0").to_string()).expect("server.json");
    let before = std::fs::read_to_string(&config).expect("config");
    let (out, err, code) = add(&config, &[&file_arg, "--as", "greeter2", "--yes"]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("does not match the registry's integrity"), "{err}");
    assert!(err.contains("nothing installed"), "{err}");
    assert_eq!(std::fs::read_to_string(&config).expect("config"), before);
    let store: Vec<_> = std::fs::read_dir(packages.join("npm"))
        .expect("the store")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(store, ["@ada+greeter@1.0.0"], "nothing of 2.0.0");
    // Removed: its entry and the package installed for it.
    let out = router_beside(&config)
        .args(["remove", "greeter", "--config"])
        .arg(&config)
        .output()
        .expect("remove");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!installed.exists(), "its package is gone");
    assert!(String::from_utf8_lossy(&out.stdout).contains("forgot its 1 secrets"));
    let listed = router_beside(&config).args(["secret", "list"]).output().expect("list");
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "", "no secret left");
    registry.kill().ok();
    registry.wait().ok();
}

/// A zip of `files` (path, text, executable), deflated, as an MCP bundle.
fn bundle(files: &[(&str, &str, bool)]) -> Vec<u8> {
    use std::io::Write as _;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, text, executable) in files {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(if *executable { 0o755 } else { 0o644 });
        zip.start_file(*path, options).expect("an entry");
        zip.write_all(text.as_bytes()).expect("its bytes");
    }
    zip.finish().expect("the zip").into_inner()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// An MCP bundle: refused when it does not match its `fileSha256` or would unpack outside its
/// folder (nothing unpacked); else unpacked into the store and run as its manifest says
/// (`${__dirname}`, a user value given with `--env`, a sensitive one passed by name only), its
/// folder's digest checked before every start: a file made executable refuses the next.
#[test]
fn an_mcp_bundle_is_checked_by_its_sha256_and_refused_once_changed() {
    if which("node").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("registry");
    std::fs::create_dir_all(root.join("bundles")).expect("dirs");
    let (mut registry, url) = serve(&root);
    let manifest = json!({"manifest_version": "0.3", "name": "greeter-bundle", "version": "1.0.0",
        "server": {"type": "node", "entry_point": "server/index.js", "mcp_config": {
            "command": "node",
            "args": ["${__dirname}/server/index.js", "--loud", "--log=${user_config.log}"],
            "env": {"GREETING_TOKEN": "${user_config.token}"}}},
        "user_config": {"log": {"type": "string", "title": "the log", "required": true},
            "token": {"type": "string", "title": "a token", "sensitive": true}}});
    let manifest = manifest.to_string();
    let server_js = GREETER.replace("DESCRIPTION", "Greet the user.");
    let good =
        bundle(&[("manifest.json", &manifest, false), ("server/index.js", &server_js, false)]);
    let escaping = bundle(&[("manifest.json", &manifest, false), ("../evil.js", "x", false)]);
    std::fs::write(root.join("bundles/greeter.mcpb"), &good).expect("bundle");
    std::fs::write(root.join("bundles/escaping.mcpb"), &escaping).expect("bundle");
    let server_json = |file: &str, sha256: &str| {
        json!({"name": "io.github.ada/greeter-bundle", "version": "1.0.0", "packages": [{
            "registryType": "mcpb", "identifier": format!("{url}/bundles/{file}"),
            "version": "1.0.0", "fileSha256": sha256, "transport": {"type": "stdio"}}]})
        .to_string()
    };
    let file = dir.path().join("server.json");
    let file_arg = file.to_string_lossy().into_owned();
    let (config, packages) = (dir.path().join("router.toml"), dir.path().join("packages"));
    std::fs::write(&config, "").expect("config");
    let log = dir.path().join("bundle.log");
    let log_value = format!("log={}", log.display());
    let listing = || -> Vec<String> {
        std::fs::read_dir(packages.join("mcpb"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };

    // Not what its fileSha256 says, or escaping its folder: refused, nothing unpacked.
    std::fs::write(&file, server_json("greeter.mcpb", &sha256_hex(b"another"))).expect("json");
    let (out, err, code) = add(&config, &[&file_arg, "--env", &log_value, "--yes"]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("does not match its fileSha256"), "{err}");
    assert!(err.contains("nothing unpacked or run"), "{err}");
    std::fs::write(&file, server_json("escaping.mcpb", &sha256_hex(&escaping))).expect("json");
    let (_, err, code) = add(&config, &[&file_arg, "--env", &log_value, "--yes"]);
    assert_ne!(code, 0);
    assert!(err.contains("lies outside it: refused"), "{err}");
    assert_eq!(listing(), Vec::<String>::new(), "nothing unpacked, no staging left");
    assert_eq!(std::fs::read_to_string(&config).expect("config"), "");

    // Matching: unpacked and run from the store.
    std::fs::write(&file, server_json("greeter.mcpb", &sha256_hex(&good))).expect("json");
    let (out, err, code) = add(&config, &[&file_arg, "--env", &log_value, "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    let installed = packages.join("mcpb/greeter-bundle@1.0.0");
    let program = installed.join("server/index.js");
    assert!(
        out.contains(&format!(
            "command: node {} --loud --log={}",
            program.display(),
            log.display()
        )),
        "{out}"
    );
    assert!(out.contains("its SHA-256 matched the fileSha256 given"), "{out}");
    assert!(
        out.contains("env GREETING_TOKEN: a secret, passed from the router's environment"),
        "{out}"
    );
    let text = std::fs::read_to_string(&config).expect("config");
    let table: toml::Table = toml::from_str(&text).expect("TOML");
    let entry = &table["mcp_servers"]["greeter-bundle"];
    assert_eq!(entry["env_vars"].as_array().map(Vec::len), Some(1), "{text}");
    assert!(entry.get("env").is_none(), "no sensitive value written: {text}");
    let recorded = entry["integrity"]["sha256"].as_str().expect("a digest");
    assert_eq!(recorded, mcp_connection_manager::package_digest(&installed).expect("digest"));
    let call = || greet(&config, "greeter-bundle", None);
    let said = call();
    assert!(said.contains("HELLO from the greeter"), "{said}");
    let starts = || std::fs::read_to_string(&log).unwrap_or_default().lines().count();
    assert_eq!(starts(), 1);

    // A file of it made executable: refused before anything of it runs.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let said = call();
    assert!(said.contains("is not what was installed"), "{said}");
    assert_eq!(starts(), 1, "nothing of it ran");
    registry.kill().ok();
    registry.wait().ok();
}

/// `update` to a version whose tool says something new: the new version is started once on
/// trial (sandboxed, nothing pinned), its tools held against what was approved of the current
/// version, the change shown before consent; no consent changes nothing; with consent the new
/// version's tools are pinned as shown, under its new identity.
#[test]
fn update_shows_what_a_new_version_changes_after_a_trial_start() {
    if which("npm").is_none() || which("node").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("registry");
    std::fs::create_dir_all(&root).expect("registry");
    let (mut registry, url) = serve(&root);
    let entries = root.join("v0.1/servers/io.github.ada/greeter/versions");
    std::fs::create_dir_all(&entries).expect("dirs");
    // The npm packages on a real npm registry, published with npm.
    let npm = Verdaccio::start(&dir.path().join("verdaccio"));
    for (version, description) in [
        ("1.0.0", "Greet the user."),
        ("1.1.0", "Greet the user loudly."),
        ("1.2.0", "It does not start."),
    ] {
        let work = dir.path().join("packing");
        pack_described(&work, "greeter", version, description, &work.join("out"));
        let source = work.join(format!("greeter-{version}"));
        if version == "1.2.0" {
            std::fs::write(source.join("server.js"), "process.exit(3)\n").expect("a broken one");
        }
        npm.publish(&source, &work.join("npm-cache"));
        let server = json!({"name": "io.github.ada/greeter", "version": version, "packages": [{
            "registryType": "npm", "registryBaseUrl": npm.url, "identifier": "@ada/greeter",
            "version": version, "transport": {"type": "stdio"}}]});
        let body = json!({"server": server, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active"}}});
        std::fs::write(entries.join(version), body.to_string()).expect("a version");
    }
    let latest = std::fs::read(entries.join("1.0.0")).expect("1.0.0");
    std::fs::write(entries.join("latest"), latest).expect("latest");
    let config = dir.path().join("router.toml");
    std::fs::write(&config, "").expect("config");
    let state = dir.path().join("state");
    let (_, err, code) =
        add(&config, &["io.github.ada/greeter@1.0.0", "--registry", &url, "--yes"]);
    assert_eq!(code, 0, "{err}");
    // Its first start pins its tool.
    let mut command = crate::support::exec_command(&config);
    command.env("MCP_ROUTER_CACHE_DIR", &state);
    let mut exec = crate::exec::ExecSession::spawn(command);
    exec.send(
        &json!({"type": "call", "call_id": "g", "name": "mcp__greeter__greet", "arguments": {}}),
    );
    assert!(exec.output("g").to_string().contains("hello from the greeter"));
    exec.finish();
    // 1.1.0 is published.
    let newer = std::fs::read(entries.join("1.1.0")).expect("1.1.0");
    std::fs::write(entries.join("latest"), newer).expect("latest");
    let update = |extra: &[&str]| {
        let out = router_beside(&config)
            .args(["update", "greeter", "--config"])
            .arg(&config)
            .args(extra)
            .env("MCP_ROUTER_CACHE_DIR", &state)
            .stdin(Stdio::null())
            .output()
            .expect("update");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (text(&out.stdout), text(&out.stderr), out.status.code().unwrap_or(-1))
    };
    let before = std::fs::read_to_string(&config).expect("config");
    let (out, err, code) = update(&[]);
    assert_eq!(code, 1, "no consent: {out}{err}");
    assert!(out.contains("definitions after a trial start: 1 tools (greet)"), "{out}");
    assert!(out.contains("tool greet: changed"), "{out}");
    assert!(out.contains("description: \"Greet the user.\" → \"Greet the user loudly.\""), "{out}");
    assert_eq!(std::fs::read_to_string(&config).expect("config"), before, "nothing changed");
    let store = dir.path().join("packages/npm");
    let installed: Vec<String> = std::fs::read_dir(&store)
        .expect("the store")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(installed, ["@ada+greeter@1.0.0"], "1.1.0 not kept without consent");

    let (out, err, code) = update(&["--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("its definitions pinned as shown"), "{out}");
    // Pinned under the new version's identity, as shown, before it ever started for real.
    let file = router_config::load_config_file(&config).expect("the config");
    let server = file.servers.iter().find(|s| s.name == "greeter").expect("greeter");
    let pins = mcp_connection_manager::PinStore::at(state.join("pins"));
    let pinned = pins.load(&mcp_connection_manager::PinKey::of(server)).expect("readable");
    let pinned = pinned.expect("pins of the new version");
    let tool = pinned.pin(router_protocol::DefinitionKind::Tool, "greet").expect("greet pinned");
    assert!(tool.definition.to_string().contains("Greet the user loudly."), "{tool:?}");

    // A version whose trial start fails: said, and with consent it takes the old version's
    // pins, so its first start holds whatever differs from them.
    let newest = std::fs::read(entries.join("1.2.0")).expect("1.2.0");
    std::fs::write(entries.join("latest"), newest).expect("latest");
    let (out, err, code) = update(&["--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("its trial start failed"), "{out}");
    let file = router_config::load_config_file(&config).expect("the config");
    let server = file.servers.iter().find(|s| s.name == "greeter").expect("greeter");
    let pinned = pins.load(&mcp_connection_manager::PinKey::of(server)).expect("readable");
    let pinned = pinned.expect("the old version's pins, carried");
    let tool = pinned.pin(router_protocol::DefinitionKind::Tool, "greet").expect("greet pinned");
    assert!(tool.definition.to_string().contains("Greet the user loudly."), "{tool:?}");
    registry.kill().ok();
    registry.wait().ok();
}

/// The greeter as a Python package (no dependency): `ada_greeter.main`.
const PY_GREETER: &str = r#"import json, sys

def main():
    loud = '--loud' in sys.argv
    for arg in sys.argv:
        if arg.startswith('--log='):
            with open(arg[6:], 'a') as log:
                log.write('started\n')
    for line in sys.stdin:
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if 'id' not in m:
            continue
        def send(**body):
            sys.stdout.write(json.dumps(dict(jsonrpc='2.0', id=m['id'], **body)) + '\n')
            sys.stdout.flush()
        method = m.get('method')
        if method == 'initialize':
            send(result={'protocolVersion': '2025-11-25', 'capabilities': {'tools': {}},
                         'serverInfo': {'name': 'greeter', 'version': '1.0.0'}})
        elif method == 'tools/list':
            send(result={'tools': [{'name': 'greet', 'description': 'Greet the user.',
                                    'inputSchema': {'type': 'object', 'properties': {}}}]})
        elif method == 'tools/call':
            send(result={'content': [{'type': 'text',
                                      'text': ('HELLO' if loud else 'hello') + ' from the python greeter'}]})
        elif method == 'ping':
            send(result={})
        else:
            send(error={'code': -32601, 'message': 'no such method'})
"#;

/// A wheel of `ada-greeter` 1.0.0 (pure Python, one console script), as pip takes it.
fn greeter_wheel() -> Vec<u8> {
    use base64::Engine as _;
    use sha2::Digest as _;
    let info = "ada_greeter-1.0.0.dist-info";
    let files = [
        ("ada_greeter/__init__.py".to_string(), PY_GREETER.to_string()),
        (
            format!("{info}/METADATA"),
            "Metadata-Version: 2.1\nName: ada-greeter\nVersion: 1.0.0\n".into(),
        ),
        (
            format!("{info}/WHEEL"),
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                .into(),
        ),
        (
            format!("{info}/entry_points.txt"),
            "[console_scripts]\nada-greeter = ada_greeter:main\n".into(),
        ),
    ];
    let mut record = String::new();
    for (path, text) in &files {
        let digest = sha2::Sha256::digest(text.as_bytes());
        let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
        record.push_str(&format!("{path},sha256={hash},{}\n", text.len()));
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    let mut all: Vec<(&str, &str, bool)> =
        files.iter().map(|(p, t)| (p.as_str(), t.as_str(), false)).collect();
    let record_path = format!("{info}/RECORD");
    all.push((&record_path, &record, false));
    bundle(&all)
}

/// A PyPI package: found in the index's simple API, its wheel checked against the sha256 there
/// (a wrong one refused, nothing installed), installed by pip into a virtual environment of its
/// own, run with its console script's entry point; a changed file refuses the next start.
#[test]
fn a_pypi_package_is_installed_checked_and_refused_once_tampered() {
    if which("python3").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("registry");
    std::fs::create_dir_all(root.join("packages")).expect("dirs");
    std::fs::create_dir_all(root.join("simple/ada-greeter")).expect("dirs");
    let wheel = greeter_wheel();
    let file_name = "ada_greeter-1.0.0-py3-none-any.whl";
    std::fs::write(root.join("packages").join(file_name), &wheel).expect("wheel");
    let index = |sha256: &str| {
        let link =
            format!("<a href=\"../../packages/{file_name}#sha256={sha256}\">{file_name}</a>\n");
        std::fs::write(root.join("simple/ada-greeter/index.html"), link).expect("index");
    };
    index(&sha256_hex(b"not the wheel"));
    let (mut registry, url) = serve(&root);
    let log = dir.path().join("python.log");
    let server = json!({"name": "io.github.ada/py-greeter", "version": "1.0.0", "packages": [{
        "registryType": "pypi", "registryBaseUrl": url, "identifier": "ada-greeter",
        "version": "1.0.0", "transport": {"type": "stdio"},
        "packageArguments": [{"type": "positional", "value": "--loud"},
            {"type": "positional", "value": format!("--log={}", log.display())}]}]});
    let file = dir.path().join("server.json");
    std::fs::write(&file, server.to_string()).expect("server.json");
    let file_arg = file.to_string_lossy().into_owned();
    let config = dir.path().join("router.toml");
    std::fs::write(&config, "").expect("config");
    let add_quietly = |args: &[&str]| {
        let out = router_beside(&config)
            .arg("add")
            .args(args)
            .arg("--config")
            .arg(&config)
            .env("PIP_NO_INDEX", "1")
            .stdin(Stdio::null())
            .output()
            .expect("add runs");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (text(&out.stdout), text(&out.stderr), out.status.code().unwrap_or(-1))
    };

    let (out, err, code) = add_quietly(&[&file_arg, "--yes"]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("does not match the index's sha256"), "{err}");
    assert!(!dir.path().join("packages/pypi/ada-greeter@1.0.0").exists(), "nothing installed");

    // The real index: pypiserver (from the harness) serving the wheel, with its sha256.
    let pypi = PypiServer::start(&root.join("packages"));
    let server = json!({"name": "io.github.ada/py-greeter", "version": "1.0.0", "packages": [{
        "registryType": "pypi", "registryBaseUrl": pypi.url, "identifier": "ada-greeter",
        "version": "1.0.0", "transport": {"type": "stdio"},
        "packageArguments": [{"type": "positional", "value": "--loud"},
            {"type": "positional", "value": format!("--log={}", log.display())}]}]});
    std::fs::write(&file, server.to_string()).expect("server.json");
    let (out, err, code) = add_quietly(&[&file_arg, "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("its wheel matched the index's sha256"), "{out}");
    let installed = dir.path().join("packages/pypi/ada-greeter@1.0.0");
    let table: toml::Table =
        toml::from_str(&std::fs::read_to_string(&config).expect("config")).expect("TOML");
    let entry = &table["mcp_servers"]["py-greeter"];
    assert_eq!(entry["command"].as_str(), installed.join("venv/bin/python").to_str());
    let call = || greet(&config, "py-greeter", None);
    let said = call();
    assert!(said.contains("HELLO from the python greeter"), "{said}");
    let starts = || std::fs::read_to_string(&log).unwrap_or_default().lines().count();
    assert_eq!(starts(), 1);
    let said = call();
    assert!(
        said.contains("HELLO from the python greeter"),
        "a second start is the same package: {said}"
    );
    assert_eq!(starts(), 2);

    // A file of it changed: refused before anything of it runs.
    let module = std::fs::read_dir(installed.join("venv/lib"))
        .expect("lib")
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages/ada_greeter/__init__.py"))
        .find(|p| p.exists())
        .expect("the installed module");
    let mut text = std::fs::read_to_string(&module).expect("module");
    text.push_str("\n# one more line\n");
    std::fs::write(&module, text).expect("tamper");
    let said = call();
    assert!(said.contains("is not what was installed"), "{said}");
    assert_eq!(starts(), 2, "nothing of it ran");
    registry.kill().ok();
    registry.wait().ok();
}

/// A real npm registry on loopback: Verdaccio from the harness, its storage in a folder of the
/// test's, no uplink (nothing reaches out), a user who may publish.
struct Verdaccio {
    child: Child,
    url: String,
    /// `--//127.0.0.1:PORT/:_authToken=…` for `npm publish`.
    auth: String,
}

impl Verdaccio {
    fn start(dir: &Path) -> Self {
        let harness = crate::interop::harness_dir();
        let port = free_port();
        std::fs::create_dir_all(dir).expect("its folder");
        let config = dir.join("verdaccio.yaml");
        let text = format!(
            "storage: {storage}\nauth:\n  htpasswd:\n    file: {htpasswd}\n    max_users: 10\nuplinks: {{}}\npackages:\n  '@*/*':\n    access: $all\n    publish: $authenticated\n  '**':\n    access: $all\n    publish: $authenticated\nlog: {{ type: stdout, format: pretty, level: warn }}\n",
            storage = dir.join("storage").display(),
            htpasswd = dir.join("htpasswd").display()
        );
        std::fs::write(&config, text).expect("its config");
        let child = Command::new(harness.join("node_modules/.bin/verdaccio"))
            .arg("--config")
            .arg(&config)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("verdaccio starts");
        let url = format!("http://127.0.0.1:{port}");
        let body = r#"{"name": "ada", "password": "a-password-for-tests"}"#;
        let token = until("verdaccio's start and a user who may publish", || {
            let answer = http(port, "PUT", "/-/user/org.couchdb.user:ada", body)?;
            let json = &answer[answer.find('{')?..];
            serde_json::from_str::<Value>(json).ok()?["token"].as_str().map(str::to_string)
        });
        Self { child, auth: format!("--//127.0.0.1:{port}/:_authToken={token}"), url }
    }

    /// `npm publish` of the package in `source`.
    fn publish(&self, source: &Path, cache: &Path) {
        let out = Command::new("npm")
            .args(["publish", "--registry", &format!("{}/", self.url), &self.auth])
            .current_dir(source)
            .env("npm_config_cache", cache)
            .output()
            .expect("npm publish");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Verdaccio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request to 127.0.0.1:`port` with a JSON `body`; the whole answer when it is a
/// success.
fn http(port: u16, method: &str, path: &str, body: &str) -> Option<String> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let status = answer.split_whitespace().nth(1).unwrap_or_default();
    status.starts_with('2').then_some(answer)
}

/// A real PyPI index on loopback: pypiserver from the harness, serving the files of a folder
/// (its simple API names each with its sha256).
struct PypiServer {
    child: Child,
    url: String,
}

impl PypiServer {
    fn start(packages: &Path) -> Self {
        let harness = crate::interop::harness_dir();
        let port = free_port();
        let child = Command::new(harness.join(".venv/bin/pypi-server"))
            .args(["run", "-p", &port.to_string(), "-i", "127.0.0.1", "--hash-algo", "sha256"])
            .arg(packages)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pypiserver starts");
        until("pypiserver's start", || http(port, "GET", "/simple/", ""));
        Self { child, url: format!("http://127.0.0.1:{port}") }
    }
}

impl Drop for PypiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A secret the server needs, asked for on a real terminal (tmux) when it is not given: typed,
/// never shown, kept in the secret store; only its name in the config.
#[test]
fn a_secret_is_asked_for_on_the_terminal_and_kept_out_of_sight() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("registry");
    std::fs::create_dir_all(root.join("bundles")).expect("dirs");
    let (mut registry, url) = serve(&root);
    let manifest = json!({"manifest_version": "0.3", "name": "greeter-bundle", "version": "1.0.0",
        "server": {"type": "node", "entry_point": "server/index.js", "mcp_config": {
            "command": "node", "args": ["${__dirname}/server/index.js"],
            "env": {"GREETING_TOKEN": "${user_config.token}"}}},
        "user_config": {"token": {"type": "string", "title": "a token", "sensitive": true}}})
    .to_string();
    let good = bundle(&[("manifest.json", &manifest, false), ("server/index.js", GREETER, false)]);
    std::fs::write(root.join("bundles/greeter.mcpb"), &good).expect("bundle");
    let server = json!({"name": "io.github.ada/greeter-bundle", "version": "1.0.0", "packages": [{
        "registryType": "mcpb", "identifier": format!("{url}/bundles/greeter.mcpb"),
        "version": "1.0.0", "fileSha256": sha256_hex(&good), "transport": {"type": "stdio"}}]});
    let file = dir.path().join("server.json");
    std::fs::write(&file, server.to_string()).expect("server.json");
    let config = dir.path().join("router.toml");
    std::fs::write(&config, "").expect("config");
    let home = dir.path().join("home");
    let command = format!(
        "env MCP_ROUTER_HOME={} MCP_ROUTER_PACKAGES={} PATH={} {} add {} --config {}; echo \"add exited $?\"; sleep 60",
        home.display(),
        dir.path().join("packages").display(),
        std::env::var("PATH").unwrap_or_default(),
        crate::support::ROUTER,
        file.display(),
        config.display()
    );
    let tmux = crate::live::Tmux::start(&command);
    tmux.wait_for("the secret's prompt", |s| {
        s.contains("GREETING_TOKEN, a secret of greeter-bundle")
    });
    tmux.keys("typed-s3cret");
    tmux.keys("Enter");
    let screen = tmux.wait_for("the consent question", |s| s.contains("Add it? [y/N]"));
    assert!(screen.contains("env GREETING_TOKEN: a secret, kept in the secret store"), "{screen}");
    tmux.keys("y");
    tmux.keys("Enter");
    let screen = tmux.wait_for("the end of add", |s| s.contains("add exited"));
    assert!(screen.contains("add exited 0"), "{screen}");
    assert!(!screen.contains("typed-s3cret"), "never shown: {screen}");
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(
        text.contains("env_secrets = [\"GREETING_TOKEN\"]") && !text.contains("typed-s3cret"),
        "{text}"
    );
    let store = router_config::SecretStore::at(home.join("secrets.json"));
    assert_eq!(store.get("greeter-bundle", "GREETING_TOKEN"), Ok(Some("typed-s3cret".into())));
    drop(tmux);
    registry.kill().ok();
    registry.wait().ok();
}

/// A registry of the OCI distribution API on loopback (Python's http.server): one image,
/// `ada/greeter`, whose tag `1.0.0` is served after an anonymous bearer-token challenge, and a
/// tag `lying` whose digest header is not its manifest's.
const OCI_REGISTRY: &str = r#"
import hashlib, http.server, json, sys
manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": 2,
               "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
    "layers": []}).encode()
digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        port = self.server.server_address[1]
        if self.path.startswith("/token?"):
            return self.answer(200, json.dumps({"token": "t0k"}).encode(), {})
        for tag, header in (("1.0.0", digest), ("lying", "sha256:" + "0" * 64)):
            if self.path == "/v2/ada/greeter/manifests/" + tag:
                if self.headers.get("Authorization") != "Bearer t0k":
                    challenge = 'Bearer realm="http://127.0.0.1:%d/token",service="test",scope="repository:ada/greeter:pull"' % port
                    return self.answer(401, b"{}", {"WWW-Authenticate": challenge})
                return self.answer(200, manifest, {"Docker-Content-Digest": header,
                    "Content-Type": "application/vnd.oci.image.manifest.v1+json"})
        self.answer(404, b"{}", {})
    def answer(self, status, body, headers):
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], digest, flush=True)
server.serve_forever()
"#;

/// An OCI image is run by the digest its registry serves for the tag at add time (found after
/// the registry's anonymous token challenge); a registry whose digest is not its manifest's is
/// refused.
#[test]
fn an_oci_image_is_run_by_the_digest_its_tag_had_when_added() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("registry.py");
    std::fs::write(&script, OCI_REGISTRY).expect("script");
    let mut registry = Command::new("python3")
        .arg("-u")
        .arg(&script)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 serves");
    let mut line = String::new();
    std::io::BufReader::new(registry.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("its port and digest");
    let (port, digest) = line.trim().split_once(' ').expect("port digest");
    let server = |tag: &str| {
        json!({"name": "io.github.ada/greeter-image", "version": tag, "packages": [{
            "registryType": "oci", "registryBaseUrl": format!("http://127.0.0.1:{port}"),
            "identifier": "ada/greeter", "version": tag, "transport": {"type": "stdio"}}]})
        .to_string()
    };
    let file = dir.path().join("server.json");
    let file_arg = file.to_string_lossy().into_owned();
    let config = dir.path().join("router.toml");
    std::fs::write(&config, "").expect("config");
    std::fs::write(&file, server("1.0.0")).expect("server.json");
    let (out, err, code) = add(&config, &[&file_arg, "--yes"]);
    if which("docker").is_none() {
        assert!(err.contains("oci needs `docker`"), "{err}");
        registry.kill().ok();
        registry.wait().ok();
        return;
    }
    assert_eq!(code, 0, "{out}{err}");
    let pinned = format!("127.0.0.1:{port}/ada/greeter@{digest}");
    assert!(out.contains(&format!("command: docker run -i --rm {pinned}")), "{out}");
    assert!(out.contains(&format!("is {digest} now; it runs by that digest")), "{out}");
    let table: toml::Table =
        toml::from_str(&std::fs::read_to_string(&config).expect("config")).expect("TOML");
    let args: Vec<&str> = table["mcp_servers"]["greeter-image"]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(args, ["run", "-i", "--rm", pinned.as_str()]);

    std::fs::write(&file, server("lying")).expect("server.json");
    let (out, err, code) = add(&config, &[&file_arg, "--as", "lying", "--yes"]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("is not its manifest's"), "{err}");
    registry.kill().ok();
    registry.wait().ok();
}

/// A port free on 127.0.0.1 now (for a server that takes its port as an argument).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// What `ready` gives once it gives something (looked at every 100 ms, at most 30 s).
fn until<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(found) = ready() {
            return found;
        }
        assert!(std::time::Instant::now() < deadline, "no {what} within 30 s");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `mcp__<server>__greet` called through `exec` on `config` (the secret store in `home`, when
/// given): the call's output line as text.
fn greet(config: &Path, server: &str, home: Option<&Path>) -> String {
    let mut command = crate::support::exec_command(config);
    if let Some(home) = home {
        command.env("MCP_ROUTER_HOME", home);
    }
    let mut exec = crate::exec::ExecSession::spawn(command);
    let name = format!("mcp__{server}__greet");
    exec.send(&json!({"type": "call", "call_id": "g", "name": name, "arguments": {}}));
    let output = exec.output("g");
    exec.finish();
    output.to_string()
}
