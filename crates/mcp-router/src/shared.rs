//! `mcp-router serve`, `connect`, `status` and `stop`: the `shared-router` library behind
//! command-line arguments. The arguments, the config read as every command reads it, the
//! signals and what is printed are the binary's; the router is the library's.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use router_protocol::{RouterStatus, Scope};
use shared_router::{ConfigSource, Ended, Notice, Place, ServeOptions, SharedRouter};

use crate::setup::{ConfigArg, shell_word};

/// `mcp-router serve`'s options.
#[derive(clap::Args, Default)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    /// Also serve streamable HTTP on this loopback address (`127.0.0.1:0` picks a port); its
    /// bearer secret and URL are written beside the socket. Other addresses are refused.
    #[arg(long)]
    pub(crate) listen: Option<SocketAddr>,
    /// Stop once no session has been open for this many seconds (0: run until stopped).
    #[arg(long, default_value_t = 0)]
    pub(crate) idle_timeout: u64,
}

/// `mcp-router connect`'s options.
#[derive(clap::Args, Default)]
pub(crate) struct ConnectArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    /// A router this `connect` starts stops once no session has been open this many seconds.
    #[arg(long, default_value_t = 60)]
    pub(crate) idle_timeout: u64,
}

/// Run the shared router until SIGINT or SIGTERM, or until it has been idle for the idle
/// timeout; what it does on its own (config edits) is written to stderr.
pub(crate) async fn serve(args: ServeArgs) -> anyhow::Result<i32> {
    let place = Place::for_config(args.config.config.as_deref())?;
    let signals = signals()?;
    let config = crate::setup::config(&args.config)?;
    let follow = args.config.config.clone().map(|path| {
        let arg = args.config.clone();
        ConfigSource { path, read: Arc::new(move || crate::setup::config(&arg)) }
    });
    let idle_timeout = (args.idle_timeout > 0).then(|| Duration::from_secs(args.idle_timeout));
    let options =
        ServeOptions { place, config, follow, listen: args.listen, idle_timeout, state_dir: None };
    let mut router = SharedRouter::start(options).await?;
    if let Some(mut notices) = router.take_notices() {
        tokio::spawn(async move {
            while let Some(notice) = notices.recv().await {
                eprintln!("mcp-router: {}", describe_notice(&notice));
            }
        });
    }
    eprintln!(
        "mcp-router: shared router (pid {}) on {}{}",
        std::process::id(),
        router.socket().display(),
        router.http_url().map(|url| format!(" and {url}")).unwrap_or_default()
    );
    if router.run(signals).await == Ended::Idle {
        eprintln!("mcp-router: no session for {} s; the shared router stops", args.idle_timeout);
    }
    Ok(0)
}

/// A notice of the router as its log says it.
fn describe_notice(notice: &Notice) -> String {
    match notice {
        Notice::ConfigApplied { path, added, restarted, removed } => format!(
            "{} changed: added {added:?}, restarted {restarted:?}, removed {removed:?}",
            path.display()
        ),
        Notice::ConfigUnusable { path, error } => {
            format!("{} changed but cannot be used: {error}", path.display())
        }
        other => format!("{other:?}"),
    }
}

/// The first SIGINT or SIGTERM.
fn signals() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("no SIGINT handler")?;
    let mut terminate = signal(SignalKind::terminate()).context("no SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// Past this size, the log of a router `connect` starts begins afresh.
const LOG_LIMIT: u64 = 1 << 20;

/// Join (or start) the shared router and bridge stdin/stdout to it.
pub(crate) async fn connect(args: ConnectArgs) -> anyhow::Result<i32> {
    let place = Place::for_config(args.config.config.as_deref())?;
    let stream = shared_router::join(&place, |place| spawn_serve(place, &args)).await?;
    shared_router::bridge(stream).await;
    Ok(0)
}

/// `mcp-router serve` for this config, in a process group of its own (the agent's Ctrl-C or
/// exit does not end it; its idle timeout does), its stderr appended to the place's log.
fn spawn_serve(place: &Place, args: &ConnectArgs) -> anyhow::Result<std::process::Child> {
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe().context("cannot find the mcp-router executable")?;
    // Appended to, and started afresh once past 1 MiB.
    let long = std::fs::metadata(place.log()).is_ok_and(|m| m.len() > LOG_LIMIT);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(!long)
        .write(true)
        .truncate(long)
        .open(place.log())
        .with_context(|| format!("cannot open {}", place.log().display()))?;
    let mut command = std::process::Command::new(exe);
    command.arg("serve").arg("--idle-timeout").arg(args.idle_timeout.to_string());
    if let Some(config) = &args.config.config {
        command.arg("--config").arg(std::fs::canonicalize(config)?);
    }
    if args.config.strict {
        command.arg("--strict");
    }
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).process_group(0);
    command.spawn().context("cannot start the shared router")
}

/// The status answer of the router for `config`; `None` (said on stderr) when none runs.
async fn status_text(config: &ConfigArg) -> anyhow::Result<Option<String>> {
    let place = Place::for_config(config.config.as_deref())?;
    let text = shared_router::status_text(&place).await?;
    if text.is_none() {
        eprintln!("mcp-router: no shared router runs for this config");
    }
    Ok(text)
}

/// `mcp-router stop [--config FILE]`: the shared router is sent SIGTERM and its exit awaited
/// (at most 30 s). Exit 1 when none runs.
pub(crate) async fn stop(config: &ConfigArg) -> anyhow::Result<i32> {
    let place = Place::for_config(config.config.as_deref())?;
    let Some(pid) = shared_router::stop(&place).await? else {
        eprintln!("mcp-router: no shared router runs for this config");
        return Ok(1);
    };
    outln!("stopped the shared router (pid {pid})");
    Ok(0)
}

/// `mcp-router status [--config FILE] [--json]`.
pub(crate) async fn status(config: &ConfigArg, as_json: bool) -> anyhow::Result<i32> {
    let Some(text) = status_text(config).await? else { return Ok(1) };
    if as_json {
        outln!("{}", text.trim());
        return Ok(0);
    }
    let status: RouterStatus =
        serde_json::from_str(text.trim()).context("the router's status is not its JSON")?;
    for line in describe(&status, &crate::setup::approve_command(config)) {
        outln!("{line}");
    }
    Ok(0)
}

/// The status as lines for a person; `approve` is the command that approves held definitions.
fn describe(status: &RouterStatus, approve: &str) -> Vec<String> {
    let mut lines = vec![format!(
        "shared router pid {} ({} KiB) on {}{}",
        status.pid,
        status.rss_kib.map_or_else(|| "?".to_string(), |kib| kib.to_string()),
        status.socket.display(),
        status.http.as_ref().map(|url| format!(" and {url}")).unwrap_or_default()
    )];
    lines.push(format!("sessions: {}", status.sessions.len()));
    for s in &status.sessions {
        lines.push(format!(
            "  #{} {} {} calls, {} in flight; {} spec tokens, {} tokens of outputs ({:.0}% of the sessions')",
            s.id,
            s.client.as_deref().unwrap_or(&s.transport),
            s.calls,
            s.calls_in_flight,
            s.spec_tokens,
            s.tokens_to_model,
            100.0 * s.share
        ));
    }
    lines.push("servers:".to_string());
    for s in &status.servers {
        let process = match (s.pid, s.rss_kib) {
            (Some(pid), Some(kib)) => format!(" pid {pid}, {kib} KiB"),
            (Some(pid), None) => format!(" pid {pid}"),
            _ => String::new(),
        };
        let whose = match &s.scope {
            Scope::Session { session, .. } => format!("session #{session}"),
            Scope::WorkingDirectory { cwd: Some(cwd), .. } => format!("for {}", cwd.display()),
            Scope::WorkingDirectory { cwd: None, .. } => "for the router's directory".to_string(),
            Scope::Everyone { .. } => "shared".to_string(),
        };
        lines.push(format!("  {} ({whose}) {}{process}", s.name, s.state));
        if let Some(sandbox) = &s.sandbox {
            lines.push(format!("    sandbox: {sandbox}"));
        }
        if s.held > 0 {
            // A directory's server is approved where its agents work.
            let cd = match &s.scope {
                Scope::WorkingDirectory { cwd: Some(cwd), .. } => {
                    format!("cd {} && ", shell_word(&cwd.to_string_lossy()))
                }
                _ => String::new(),
            };
            lines.push(format!(
                "    held from the model: {} (`{cd}{approve} {}` lets them in)",
                s.held, s.name
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_reads_each_servers_sandbox_and_what_is_held_with_the_command_that_works() {
        let status: RouterStatus = serde_json::from_value(serde_json::json!({
            "pid": 7, "rss_kib": 100, "started": 0, "socket": "/run/r.sock", "events": "/run/r.events",
            "sessions": [],
            "servers": [
                {"name": "calc", "state": "ready", "pid": 8, "rss_kib": 50,
                 "sandbox": "landlock ABI 7: …", "held": 2, "shared": true},
                {"name": "git", "state": "ready", "held": 1, "shared": "cwd", "cwd": "/home/ada/my proj"},
                {"name": "time", "state": "idle", "shared": true}
            ]
        }))
        .expect("a status");
        let lines = describe(&status, "mcp-router trust approve --config /c.toml");
        let text = lines.join("\n");
        assert!(text.contains("  calc (shared) ready pid 8, 50 KiB\n    sandbox: landlock ABI 7: …\n    held from the model: 2 (`mcp-router trust approve --config /c.toml calc` lets them in)"), "{text}");
        assert!(text.contains("    held from the model: 1 (`cd '/home/ada/my proj' && mcp-router trust approve --config /c.toml git` lets them in)"), "{text}");
        assert!(text.ends_with("  time (shared) idle"), "{text}");
    }
}
