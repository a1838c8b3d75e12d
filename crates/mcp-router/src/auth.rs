//! `mcp-router login`, `logout` and `auth status`: OAuth sign-in for HTTP servers, on the
//! library's `oauth` module. Nothing here prints a token.

use std::time::Duration;

use anyhow::{Context as _, bail};
use mcp_connection_manager::oauth::{
    self, Authorization, Login, OAuthConfig, SignInStatus, TokenStore,
};
use mcp_connection_manager::{ServerConfig, TransportConfig};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// How long `login` waits for the browser to come back.
const LOGIN_WAIT: Duration = Duration::from_secs(300);

fn store() -> anyhow::Result<TokenStore> {
    TokenStore::default_location()
        .context("no directory for credentials: set MCP_ROUTER_HOME, XDG_CONFIG_HOME or HOME")
}

/// The HTTP server `name` of the config: its URL and OAuth settings.
fn http_server(
    config: &crate::setup::ConfigArg,
    name: &str,
) -> anyhow::Result<(String, OAuthConfig)> {
    let servers = crate::setup::config(config)?.servers;
    let server = servers.iter().find(|s| s.name == name).with_context(|| {
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        format!("no server `{name}` in the config (servers: {})", names.join(", "))
    })?;
    match &server.transport {
        TransportConfig::StreamableHttp { url, bearer_token_env_var: None, oauth, .. } => {
            Ok((url.clone(), oauth.clone()))
        }
        TransportConfig::StreamableHttp { .. } => {
            bail!("server `{name}` uses a static bearer token (bearer_token_env_var), not OAuth")
        }
        TransportConfig::Stdio { .. } => {
            bail!("server `{name}` is a stdio server; sign-in applies to `url` servers")
        }
    }
}

/// `mcp-router login NAME`.
pub(crate) async fn login(
    config: &crate::setup::ConfigArg,
    name: &str,
    no_browser: bool,
) -> anyhow::Result<i32> {
    let (url, oauth) = http_server(config, name)?;
    let store = store()?;
    // Only a server that asks for authorization gets a sign-in.
    match oauth::authorization(&url).await {
        Authorization::NotRequired => {
            outln!(
                "`{name}` does not ask for sign-in (it answered without authorization); nothing to do."
            );
            return Ok(0);
        }
        Authorization::Unknown(why) => {
            eprintln!(
                "mcp-router: could not tell whether `{name}` asks for sign-in ({why}); trying to sign in"
            );
        }
        _ => {}
    }
    let listener = if no_browser {
        None
    } else {
        let port = oauth.callback_port.unwrap_or(0);
        let listener =
            tokio::net::TcpListener::bind(("127.0.0.1", port)).await.with_context(|| {
                format!("cannot listen for the sign-in redirect on 127.0.0.1:{port}")
            })?;
        Some(listener)
    };
    let port = match &listener {
        Some(listener) => listener.local_addr()?.port(),
        None => oauth.callback_port.unwrap_or(8765),
    };
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let login = Login::start(name, &url, &oauth, &store, &redirect_uri, None)
        .await
        .map_err(anyhow::Error::msg)?;
    outln!(
        "To sign in to `{name}`, open this URL in a browser:\n\n{}\n",
        login.authorization_url()
    );
    let redirected_to = match listener {
        Some(listener) => {
            open_browser(login.authorization_url());
            outln!("Waiting for the browser to come back to {redirect_uri} …");
            tokio::time::timeout(LOGIN_WAIT, receive_redirect(listener, port))
                .await
                .context("no sign-in within 5 minutes")??
        }
        None => {
            outln!("Then paste the URL your browser was sent to (it starts with {redirect_uri}):");
            let mut line = String::new();
            tokio::io::BufReader::new(tokio::io::stdin()).read_line(&mut line).await?;
            line
        }
    };
    login.finish(&redirected_to).await.map_err(anyhow::Error::msg)?;
    match store.status(&url).map_err(anyhow::Error::msg)? {
        Some(status) => outln!("Signed in to `{name}`: {}", describe(&status)),
        None => outln!("Signed in to `{name}`."),
    }
    Ok(0)
}

/// Open `url` in the user's browser when there is one (`$BROWSER`, else `xdg-open` with a
/// display); otherwise the printed URL is the way.
fn open_browser(url: &str) {
    let browser = std::env::var("BROWSER").ok().filter(|b| !b.trim().is_empty()).or_else(|| {
        let display = ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var_os(v).is_some());
        display.then(|| "xdg-open".to_string())
    });
    if let Some(browser) = browser {
        let started = std::process::Command::new(&browser)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if started.is_err() {
            eprintln!("(could not start `{browser}`; open the URL yourself)");
        }
    }
}

/// Answer requests on `listener` until one brings `/callback?…`; returns it as a full URL.
async fn receive_redirect(listener: tokio::net::TcpListener, port: u16) -> anyhow::Result<String> {
    loop {
        let (mut socket, _) = listener.accept().await?;
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            let n = socket.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        let head = String::from_utf8_lossy(&head);
        let target = head.lines().next().and_then(|line| line.split_whitespace().nth(1));
        let Some(target) = target.filter(|t| t.starts_with("/callback")) else {
            let _ = socket.write_all(response(404, "Not the sign-in callback.").as_bytes()).await;
            continue;
        };
        let target = target.to_string();
        let _ = socket
            .write_all(response(200, "Sign-in received. You can close this tab.").as_bytes())
            .await;
        return Ok(format!("http://127.0.0.1:{port}{target}"));
    }
}

fn response(status: u16, text: &str) -> String {
    let reason = if status == 200 { "OK" } else { "Not Found" };
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    )
}

/// `mcp-router logout NAME`.
pub(crate) fn logout(config: &crate::setup::ConfigArg, name: &str) -> anyhow::Result<i32> {
    let (url, _) = http_server(config, name)?;
    if store()?.remove(&url).map_err(anyhow::Error::msg)? {
        outln!("Signed out of `{name}`.");
    } else {
        outln!("`{name}` was not signed in.");
    }
    Ok(0)
}

/// `mcp-router auth status`: every HTTP server of the config: `no sign-in needed`, `signed in`,
/// `expired` or `not signed in` (a server without stored credentials is asked), and whether
/// the router leaves it idle until it is used.
pub(crate) async fn status(config: &crate::setup::ConfigArg) -> anyhow::Result<i32> {
    let config = crate::setup::config(config)?;
    let idle = crate::setup::idle_servers(&config);
    let servers: Vec<ServerConfig> = config.servers;
    let store = store()?;
    let mut any = false;
    for server in &servers {
        let TransportConfig::StreamableHttp { url, bearer_token_env_var, .. } = &server.transport
        else {
            continue;
        };
        any = true;
        let state = if bearer_token_env_var.is_some() {
            "static bearer token".to_string()
        } else {
            match store.status(url).map_err(anyhow::Error::msg)? {
                Some(status) if expired(&status) => format!(
                    "expired: sign in again with `mcp-router login {}` ({})",
                    server.name,
                    describe(&status)
                ),
                Some(status) => format!("signed in: {}", describe(&status)),
                None => match oauth::authorization(url).await {
                    Authorization::NotRequired => "no sign-in needed".to_string(),
                    Authorization::Required { .. } => "not signed in".to_string(),
                    Authorization::Unknown(why) => format!("not signed in (could not ask: {why})"),
                    _ => "not signed in".to_string(),
                },
            }
        };
        // A server left idle until used (lazy, or tool search and a catalog) says so.
        let idle = if idle.contains(&server.name) { "\tidle: starts on first use" } else { "" };
        outln!("{}\t{url}\t{state}{idle}", server.name);
    }
    if !any {
        outln!("no HTTP servers in the config");
    }
    outln!("credentials: {}", store.path().display());
    Ok(0)
}

/// An access token past its expiry that cannot be refreshed: only a new sign-in helps.
fn expired(status: &SignInStatus) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    !status.refreshable && status.expires_at.is_some_and(|at| at <= now)
}

/// Scopes, expiry, issuer — never a token.
fn describe(status: &SignInStatus) -> String {
    let scopes =
        if status.scopes.is_empty() { "no scopes".to_string() } else { status.scopes.join(" ") };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let expiry = match status.expires_at {
        Some(at) if at > now => format!("expires in {}", human_duration(at - now)),
        Some(_) => "expired".to_string(),
        None => "no expiry given".to_string(),
    };
    let refresh = if status.refreshable { "refreshable" } else { "not refreshable" };
    let issuer = status.issuer.as_deref().unwrap_or("issuer unknown");
    format!("{scopes}; {expiry}, {refresh}; issuer {issuer}")
}

fn human_duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}
