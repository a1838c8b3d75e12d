//! OAuth sign-in (issue 14) against the demo server behind its in-process authorization server
//! (`--oauth`) on 127.0.0.1: `mcp-router login` end to end, silent refresh, a revoked refresh
//! token, an authorization server that is down, recovery after a new login in the same running
//! manager, logout, the token file's mode, and no token in any output at `RUST_LOG=trace`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use mcp_backend::{ListKind, McpBackend, McpError, SignIn};
use mcp_connection_manager::oauth::{Login, OAuthConfig, TokenStore};
use mcp_connection_manager::{ManagerOptions, ServerConfig, ServerStatus};
use router_protocol::EventMsg;
use serde_json::Value;
use tool_router::ToolOutput;

use crate::support::{DEMO, Harness, HttpServer, demo};

/// The demo server with OAuth on a free port; `base` is `http://127.0.0.1:PORT`.
struct Protected {
    server: HttpServer,
    base: String,
}

impl Protected {
    fn start(token_ttl_secs: u64) -> Self {
        let mut command = Command::new(DEMO);
        command
            .args(["--http", "127.0.0.1:0", "--name", "remote", "--oauth"])
            .args(["--token-ttl-secs", &token_ttl_secs.to_string()])
            .stdout(Stdio::piped());
        let server = HttpServer::spawn(command, "listening on ", str::to_string);
        let base = server.url.trim_end_matches("/mcp").to_string();
        Self { server, base }
    }

    fn admin(&self, action: &str) {
        let (status, _, _) = http("POST", &format!("{}/admin/{action}", self.base));
        assert_eq!(status, 200, "admin {action}");
    }

    fn stats(&self) -> Value {
        let (_, _, body) = http("GET", &format!("{}/admin/stats", self.base));
        serde_json::from_str(&body).expect("stats")
    }
}

/// One plain HTTP/1.1 request to 127.0.0.1: `(status, headers, body)`.
fn http(method: &str, url: &str) -> (u16, String, String) {
    let rest = url.strip_prefix("http://").expect("http URL");
    let (host, path) = rest.split_once('/').map(|(h, p)| (h, format!("/{p}"))).expect("a path");
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: {host}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// What a browser does with the authorization URL: the demo's authorization server approves
/// at once and redirects; the `Location` is where the browser would go.
fn browse(authorization_url: &str) -> String {
    let (status, head, _) = http("GET", authorization_url);
    assert_eq!(status, 302, "{head}");
    head.lines()
        .find_map(|l| l.strip_prefix("location: ").or_else(|| l.strip_prefix("Location: ")))
        .expect("a Location header")
        .trim()
        .to_string()
}

fn write_config(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("config.toml");
    let demo_args = r#"["--name", "local"]"#;
    std::fs::write(
        &path,
        format!(
            "[mcp_servers.remote]\nurl = \"{url}\"\nauth = \"oauth\"\n\n[mcp_servers.local]\ncommand = \"{DEMO}\"\nargs = {demo_args}\n"
        ),
    )
    .expect("config");
    path
}

/// `mcp-router login remote --no-browser` at `RUST_LOG=trace`, pasting the redirect on stdin;
/// everything it wrote (stdout, then stderr).
fn cli_login(config: &Path, home: &Path) -> String {
    let mut child = crate::support::router_command()
        .args(["login", "remote", "--no-browser", "--config"])
        .arg(config)
        .env("MCP_ROUTER_HOME", home)
        .env("RUST_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn login");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut printed = String::new();
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(stdout.read_line(&mut line).expect("read") > 0, "no URL printed: {printed}");
        printed.push_str(&line);
        if line.starts_with("http://127.0.0.1:") && line.contains("/authorize?") {
            break line.trim().to_string();
        }
    };
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    assert!(url.contains("resource="), "the resource indicator: {url}");
    let redirect = browse(&url);
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{redirect}").expect("paste");
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("rest");
    printed.push_str(&rest);
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("stderr");
    assert!(status.success(), "login failed: {printed}\n{stderr}");
    assert!(stderr.contains("TRACE"), "trace logging was on");
    format!("{printed}\n{stderr}")
}

fn router(args: &[&str], config: &Path, home: &Path) -> String {
    let out = crate::support::router_command()
        .args(args)
        .arg("--config")
        .arg(config)
        .env("MCP_ROUTER_HOME", home)
        .output()
        .expect("run mcp-router");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The access and refresh tokens in the credentials file.
fn stored_tokens(home: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(home.join("credentials.json")).expect("credentials");
    let file: Value = serde_json::from_str(&text).expect("json");
    let mut tokens = Vec::new();
    for entry in file["servers"].as_object().expect("servers").values() {
        for key in ["access_token", "refresh_token"] {
            if let Some(t) = entry["token_response"][key].as_str() {
                tokens.push(t.to_string());
            }
        }
    }
    assert!(!tokens.is_empty(), "no tokens stored");
    tokens
}

#[test]
fn login_then_exec_reads_and_no_token_is_ever_printed() {
    let remote = Protected::start(3600);
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let config = write_config(dir.path(), &remote.server.url);

    let before = router(&["auth", "status"], &config, &home);
    assert!(before.contains("remote\t") && before.contains("not signed in"), "{before}");

    let printed = cli_login(&config, &home);
    assert!(printed.contains("Signed in to `remote`"), "{printed}");
    let file = home.join("credentials.json");
    let mode = std::fs::metadata(&file).expect("file").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "credentials file mode");
    let status = router(&["auth", "status"], &config, &home);
    assert!(status.contains("signed in: mcp offline_access; expires in"), "{status}");
    assert!(status.contains("refreshable"), "{status}");

    // exec at RUST_LOG=trace: the server works, and no token appears on stdout or stderr.
    let mut child = crate::support::router_command()
        .args(["exec", "--config"])
        .arg(&config)
        .env("MCP_ROUTER_HOME", &home)
        .env("RUST_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("exec");
    let mut stdin = child.stdin.take().expect("stdin");
    let calls = [
        r#"{"call_id":"1","name":"list_mcp_resources","arguments":"{\"server\":\"remote\"}"}"#,
        r#"{"call_id":"2","name":"read_mcp_resource","arguments":"{\"server\":\"remote\",\"uri\":\"demo://docs/README.md\"}"}"#,
    ];
    for call in calls {
        writeln!(stdin, "{call}").expect("write");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("exec output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let outputs: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "function_call_output")
        .collect();
    assert_eq!(outputs.len(), 2, "{stdout}");
    for output in &outputs {
        assert_eq!(output["output"]["success"], true, "{output}");
    }
    assert!(outputs[1]["output"]["content"].as_str().unwrap_or("").contains("README"));
    assert!(stderr.contains("TRACE") || stderr.contains("DEBUG"), "trace logging was on");
    for token in stored_tokens(&home) {
        assert!(!stdout.contains(&token), "a token on stdout");
        assert!(!stderr.contains(&token), "a token in the logs");
        assert!(!status.contains(&token) && !printed.contains(&token), "a token printed");
    }

    let logout = router(&["logout", "remote"], &config, &home);
    assert!(logout.contains("Signed out of `remote`"), "{logout}");
    let after = router(&["auth", "status"], &config, &home);
    assert!(after.contains("not signed in"), "{after}");
}

/// A harness on the protected server and a local stdio demo server, with its own token store.
fn harness(remote: &Protected, store: &TokenStore) -> Harness {
    let mut remote_config = ServerConfig::http("remote", remote.server.url.clone());
    if let mcp_connection_manager::TransportConfig::StreamableHttp { oauth, .. } =
        &mut remote_config.transport
    {
        oauth.required = true;
    }
    let options = ManagerOptions::default().with(|o| {
        o.token_store = Some(store.clone());
        o.lifecycle.restart_backoff = Duration::from_millis(50);
    });
    Harness::start_with(vec![remote_config, demo("local", 100)], options)
}

/// Sign in through the library API, as a host that opens the browser itself would.
async fn library_login(remote: &Protected, store: &TokenStore) {
    let redirect_uri = "http://127.0.0.1:9/callback";
    let login = Login::start(
        "remote",
        &remote.server.url,
        &OAuthConfig::default(),
        store,
        redirect_uri,
        None,
    )
    .await
    .expect("login starts");
    let url = login.authorization_url().to_string();
    let redirect = tokio::task::spawn_blocking(move || browse(&url)).await.expect("browse");
    assert!(redirect.starts_with(redirect_uri), "{redirect}");
    login.finish(&redirect).await.expect("login completes");
}

fn text(output: ToolOutput) -> (bool, String) {
    match output {
        ToolOutput::Function { content, success, .. } => {
            (success == Some(true), content.to_string())
        }
        other => panic!("{other:?}"),
    }
}

fn failures(events: &[EventMsg]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EventMsg::McpServerFailed(f) if f.server == "remote" => Some(f.error.clone()),
            _ => None,
        })
        .collect()
}

const LIST_REMOTE: &str = r#"{"server":"remote"}"#;
const LIST_LOCAL: &str = r#"{"server":"local"}"#;

#[tokio::test]
async fn expiry_refreshes_silently_and_a_revoked_sign_in_recovers_after_login() {
    let remote = Protected::start(3600);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::at(dir.path().join("credentials.json"));

    // Not signed in: the server fails at start with the hint; the other one works.
    let mut h = harness(&remote, &store);
    h.manager.wait_until_started().await;
    let (ok, message) = text(h.call("list_mcp_resources", LIST_REMOTE).await);
    assert!(!ok);
    assert!(message.contains("needs sign-in: run `mcp-router login remote`"), "{message}");
    assert_eq!(failures(&h.drain()), ["needs sign-in: run `mcp-router login remote`"]);
    assert!(text(h.call("list_mcp_resources", LIST_LOCAL).await).0);

    // A login while the manager runs: the next use starts the server, no restart needed.
    library_login(&remote, &store).await;
    let (ok, message) = text(h.call("list_mcp_resources", LIST_REMOTE).await);
    assert!(ok, "{message}");

    // The access token expires: the next call refreshes silently.
    remote.admin("expire");
    let (ok, message) = text(h.call("list_mcp_resources", LIST_REMOTE).await);
    assert!(ok, "after expiry: {message}");
    assert_eq!(remote.stats()["refreshes"], 1, "{}", remote.stats());

    // The sign-in is revoked: the call fails with the login hint and `mcp_server_failed`;
    // the other server keeps answering; no retry loop.
    h.drain();
    remote.admin("revoke");
    let (ok, message) = text(h.call("list_mcp_resources", LIST_REMOTE).await);
    assert!(!ok);
    assert!(message.contains("run `mcp-router login remote`"), "{message}");
    let (ok, again) = text(h.call("list_mcp_resources", LIST_REMOTE).await);
    assert!(!ok && again.contains("run `mcp-router login remote`"), "{again}");
    let failed = failures(&h.drain());
    assert_eq!(failed.len(), 1, "one mcp_server_failed, not a loop: {failed:?}");
    assert!(failed[0].contains("needs sign-in"), "{failed:?}");
    assert!(text(h.call("list_mcp_resources", LIST_LOCAL).await).0);
    let rejected = remote.stats()["rejected"].as_u64().expect("count");

    // A new login: the same running manager recovers on the next use.
    library_login(&remote, &store).await;
    let (ok, message) = text(h.call("list_mcp_resources", LIST_REMOTE).await);
    assert!(ok, "after a new login: {message}");
    assert_eq!(remote.stats()["rejected"].as_u64(), Some(rejected), "no refresh retried in a loop");
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_refusal_met_by_an_all_server_list_is_a_sign_in_in_errors_and_in_the_status() {
    let remote = Protected::start(3600);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::at(dir.path().join("credentials.json"));
    library_login(&remote, &store).await;
    let mut h = harness(&remote, &store);
    let all = h.payload("list_mcp_resources", "{}").await;
    assert_eq!(all.get("errors"), None, "{all}");
    assert_eq!(h.manager.status("remote"), Some(ServerStatus::Ready));

    // The sign-in is revoked; the next all-server list is refused by the server (401).
    remote.admin("revoke");
    h.drain();
    let all = h.payload("list_mcp_resources", "{}").await;
    let errors = all["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{all}");
    assert_eq!(errors[0]["server"], "remote");
    let error = errors[0]["error"].as_str().expect("error");
    assert!(error.contains("needs sign-in: run `mcp-router login remote`"), "{error}");
    assert!(all["resources"].as_array().expect("items").iter().any(|r| r["server"] == "local"));
    // Recorded as a sign-in, typed: the status says so, a call gets the typed error.
    assert_eq!(h.manager.status("remote"), Some(ServerStatus::SignInRequired(SignIn::Required)));
    assert_eq!(failures(&h.drain()), ["needs sign-in: run `mcp-router login remote`"]);
    let refused = h.manager.list("remote", ListKind::Resources, None).await;
    assert_eq!(
        refused,
        Err(McpError::SignInRequired { server: "remote".into(), sign_in: SignIn::Required })
    );
    h.manager.shutdown().await;
}

#[tokio::test]
async fn an_authorization_server_that_is_down_fails_that_server_alone_until_it_is_back() {
    let remote = Protected::start(3600);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::at(dir.path().join("credentials.json"));
    library_login(&remote, &store).await;
    let h = harness(&remote, &store);
    assert!(text(h.call("list_mcp_resources", LIST_REMOTE).await).0);

    remote.admin("down");
    remote.admin("expire");
    let (ok, message) = text(h.call("list_mcp_resources", LIST_REMOTE).await);
    assert!(!ok);
    assert!(message.contains("mcp-router login remote"), "{message}");
    assert!(text(h.call("list_mcp_resources", LIST_LOCAL).await).0);

    remote.admin("up");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (ok, message) = text(h.call("list_mcp_resources", LIST_REMOTE).await);
        if ok {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never recovered: {message}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The stored refresh token was used, not a new sign-in.
    assert_eq!(remote.stats()["authorization_codes"], 1);
    h.manager.shutdown().await;
}

#[test]
fn login_receives_the_redirect_on_loopback_through_the_browser() {
    // `$BROWSER` is a script that does what a browser does: follow the authorization URL and
    // its redirect to the router's listener on 127.0.0.1 (Python from the test harness).
    let remote = Protected::start(3600);
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let config = write_config(dir.path(), &remote.server.url);
    let browser = dir.path().join("browser");
    let python = crate::interop::python();
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nexec {python} -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \"$1\" > {}\n",
            dir.path().join("browser.out").display()
        ),
    )
    .expect("script");
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = crate::support::router_command()
        .args(["login", "remote", "--config"])
        .arg(&config)
        .env("MCP_ROUTER_HOME", &home)
        .env("BROWSER", &browser)
        .stdin(Stdio::null())
        .output()
        .expect("login");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("/authorize?"), "the URL is printed: {stdout}");
    assert!(stdout.contains("Signed in to `remote`"), "{stdout}");
    // The redirect went to an ephemeral port on 127.0.0.1, and the browser was told so.
    assert!(stdout.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"), "{stdout}");
    // The "browser" runs on its own: it may still be writing the page when login returns.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let page = loop {
        let page = std::fs::read_to_string(dir.path().join("browser.out")).unwrap_or_default();
        if page.contains("Sign-in received") || std::time::Instant::now() > deadline {
            break page;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(page.contains("Sign-in received"), "{page}");
    assert!(router(&["auth", "status"], &config, &home).contains("signed in: "));
}

#[tokio::test]
async fn two_routers_refreshing_the_same_credentials_take_turns() {
    // Refresh tokens rotate: without the refresh lock, two routers refreshing at once would
    // both spend the same refresh token and one would be refused (`invalid_grant`).
    let remote = Protected::start(3600);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::at(dir.path().join("credentials.json"));
    library_login(&remote, &store).await;
    let (a, b) = (harness(&remote, &store), harness(&remote, &store));
    assert!(text(a.call("list_mcp_resources", LIST_REMOTE).await).0);
    assert!(text(b.call("list_mcp_resources", LIST_REMOTE).await).0);
    for round in 0..3 {
        remote.admin("expire");
        let (x, y) = tokio::join!(
            a.call("list_mcp_resources", LIST_REMOTE),
            b.call("list_mcp_resources", LIST_REMOTE)
        );
        let (x, y) = (text(x), text(y));
        assert!(x.0 && y.0, "round {round}: {x:?} {y:?}");
    }
    let stats = remote.stats();
    assert_eq!(stats["rejected"], 0, "a refresh token was spent twice: {stats}");
    assert!(stats["refreshes"].as_u64().unwrap_or(0) >= 3, "{stats}");
    a.manager.shutdown().await;
    b.manager.shutdown().await;
}

#[test]
fn a_running_exec_recovers_after_a_new_login() {
    // The acceptance path as a user meets it: `exec` runs, the sign-in is revoked, the call
    // fails with the login hint while the other server keeps answering, `mcp-router login`
    // runs beside it, and the same `exec` answers again.
    let remote = Protected::start(3600);
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let config = write_config(dir.path(), &remote.server.url);
    cli_login(&config, &home);
    let mut command = crate::support::exec_command(&config);
    command.env("MCP_ROUTER_HOME", &home);
    let mut exec = crate::exec::ExecSession::spawn(command);
    let list = |id: &str, server: &str| {
        serde_json::json!({
            "call_id": id,
            "name": "list_mcp_resources",
            "arguments": serde_json::json!({"server": server}).to_string(),
        })
    };
    exec.send(&list("1", "remote"));
    assert_eq!(exec.output("1")["success"], true);

    remote.admin("revoke");
    remote.admin("expire");
    exec.send(&list("2", "remote"));
    let failed = exec.output("2");
    assert_eq!(failed["success"], false, "{failed}");
    let message = failed["content"].as_str().unwrap_or_default();
    assert!(message.contains("run `mcp-router login remote`"), "{message}");
    let event = exec.line("mcp_server_failed for remote", |v| {
        v["type"] == "mcp_server_failed" && v["server"] == "remote"
    });
    assert!(event["error"].as_str().unwrap_or_default().contains("mcp-router login remote"));
    exec.send(&list("3", "local"));
    assert_eq!(exec.output("3")["success"], true, "the other server keeps answering");

    cli_login(&config, &home);
    exec.send(&list("4", "remote"));
    let recovered = exec.output("4");
    assert_eq!(recovered["success"], true, "{recovered}");
    let (_, code) = exec.finish();
    assert_eq!(code, 0);
}
