//! Shared helpers: server configs for the demo binary, a loopback HTTP demo server, process
//! inspection through /proc.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use mcp_connection_manager::{ManagerOptions, McpConnectionManager, ServerConfig};
use router_protocol::{EventMsg, EventReceiver, event_channel};
use tool_router::{CallContext, ToolCall, ToolOutput, ToolRouter};

pub(crate) const DEMO: &str = env!("CARGO_BIN_EXE_mcp-demo-server");
pub(crate) const ROUTER: &str = env!("CARGO_BIN_EXE_mcp-router");

pub(crate) fn demo(name: &str, page_size: usize) -> ServerConfig {
    let args = vec![
        "--name".to_string(),
        name.to_string(),
        "--page-size".to_string(),
        page_size.to_string(),
    ];
    ServerConfig::stdio(name, DEMO, args)
}

pub(crate) struct Harness {
    pub(crate) manager: Arc<McpConnectionManager>,
    pub(crate) router: ToolRouter,
    pub(crate) events: EventReceiver,
    ctx: CallContext,
}

impl Harness {
    pub(crate) fn start(servers: Vec<ServerConfig>) -> Self {
        Self::start_with(servers, ManagerOptions::default())
    }

    pub(crate) fn start_with(servers: Vec<ServerConfig>, options: ManagerOptions) -> Self {
        Self::start_with_host(servers, options, Arc::new(mcp_connection_manager::DefaultHost))
    }

    /// A harness whose router has `settings` (budgets, kept results).
    pub(crate) fn start_with_settings(
        servers: Vec<ServerConfig>,
        settings: &tool_router::RouterSettings,
    ) -> Self {
        let mut h = Self::start(servers);
        h.router = ToolRouter::with_mcp_settings(h.manager.clone(), settings).expect("router");
        h
    }

    pub(crate) fn start_with_host(
        servers: Vec<ServerConfig>,
        options: ManagerOptions,
        host: Arc<dyn mcp_connection_manager::HostHandler>,
    ) -> Self {
        let (tx, events) = event_channel();
        let manager =
            Arc::new(McpConnectionManager::start_with_host(servers, tx.clone(), options, host));
        let router = ToolRouter::with_mcp(manager.clone());
        Self { manager, router, events, ctx: CallContext::new(tx) }
    }

    pub(crate) async fn call(&self, name: &str, arguments: &str) -> ToolOutput {
        let call = ToolCall {
            call_id: format!("{name}-call"),
            name: name.to_string(),
            arguments: arguments.to_string().into(),
        };
        self.router.dispatch_to_output(&self.ctx, call).await.expect("no fatal errors")
    }

    /// The JSON payload of a successful function output; panics with the message otherwise.
    pub(crate) async fn payload(&self, name: &str, arguments: &str) -> serde_json::Value {
        match self.call(name, arguments).await {
            ToolOutput::Function { content, success: Some(true), .. } => {
                serde_json::from_str(&content).expect("JSON payload")
            }
            other => panic!("{name} {arguments} failed: {other:?}"),
        }
    }

    /// The summary of the last end event so far (draining the events).
    pub(crate) fn last_summary(&mut self) -> router_protocol::ResourceCallSummary {
        self.drain()
            .into_iter()
            .filter_map(|e| match e {
                EventMsg::McpToolCallEnd(end) => end.summary,
                _ => None,
            })
            .next_back()
            .expect("an end event with a summary")
    }

    pub(crate) fn drain(&mut self) -> Vec<EventMsg> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            out.push(e);
        }
        out
    }
}

/// A server on streamable HTTP that announced its loopback URL on a piped stream; killed on drop.
pub(crate) struct HttpServer {
    child: Child,
    pub(crate) url: String,
}

impl HttpServer {
    /// The demo server on 127.0.0.1 and a free port.
    pub(crate) fn demo(page_size: usize) -> Self {
        Self::demo_at("127.0.0.1:0", page_size)
    }

    /// The demo server on `addr`.
    pub(crate) fn demo_at(addr: &str, page_size: usize) -> Self {
        let mut command = Command::new(DEMO);
        command
            .args(["--http", addr, "--name", "web", "--page-size", &page_size.to_string()])
            .stdout(Stdio::piped());
        Self::spawn(command, "listening on ", str::to_string)
    }

    /// Spawn `command` (stdout or stderr piped) and wait, at most 30 s, for its line
    /// `prefix…`; `url` turns the rest of that line into the server's URL.
    pub(crate) fn spawn(
        mut command: Command,
        prefix: &'static str,
        url: fn(&str) -> String,
    ) -> Self {
        let mut child = command.spawn().expect("spawn HTTP server");
        let stream: Box<dyn Read + Send> = match (child.stdout.take(), child.stderr.take()) {
            (Some(out), _) => Box::new(out),
            (None, Some(err)) => Box::new(err),
            (None, None) => panic!("no piped stream"),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Keep reading after the announcement so the server never blocks on a full pipe.
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix(prefix) {
                    let _ = tx.send(rest.trim().to_string());
                }
            }
        });
        let mut server = Self { child, url: String::new() };
        let announced = rx.recv_timeout(Duration::from_secs(30)).expect("server announced");
        server.url = url(&announced);
        assert!(server.url.starts_with("http://127.0.0.1:"), "{}", server.url);
        server
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `mcp-router exec --config <config>`: stdin and stdout piped, stderr discarded (callers
/// override what they need before spawning).
/// `mcp-router` with a tool catalog cache of its own, empty: every run starts cold, as if on
/// a new machine, and no test sees another's catalogs (or the user's).
pub(crate) fn router_command() -> Command {
    static ROOT: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let root = ROOT.get_or_init(|| tempfile::tempdir().expect("tempdir"));
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut command = Command::new(ROUTER);
    command.env("MCP_ROUTER_CACHE_DIR", root.path().join(n.to_string()));
    command
}

pub(crate) fn exec_command(config: &std::path::Path) -> Command {
    let mut command = router_command();
    command
        .args(["exec", "--config"])
        .arg(config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

/// Pids of live (non-zombie) processes other than this one for which `keep(pid, cmdline,
/// fields)` holds; `fields` are those of `/proc/PID/stat` after the command name (state, ppid,
/// pgrp, …).
pub(crate) fn live_processes(keep: impl Fn(u32, &str, &[&str]) -> bool) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let fields: Vec<&str> =
                stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
            if fields.first().is_none_or(|state| *state == "Z") {
                return false;
            }
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            keep(*pid, &String::from_utf8_lossy(&cmdline), &fields)
        })
        .collect()
}

/// Pids of live (non-zombie) processes whose command line contains `marker`.
pub(crate) fn processes_with(marker: &str) -> Vec<u32> {
    live_processes(|_, cmdline, _| cmdline.contains(marker))
}

/// Poll until no process carries `marker` (or `limit` passes); returns what is left.
pub(crate) fn wait_gone(marker: &str, limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A unique marker for process-leak tests.
pub(crate) fn marker(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

pub(crate) fn write_config(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write config");
    path
}

/// The text of an MCP tool call's first content block; panics on anything else.
pub(crate) fn mcp_text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Mcp { result: Ok(r) } => {
            serde_json::to_value(&r.content).expect("json")[0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        }
        other => panic!("{other:?}"),
    }
}

/// `(server, protocol version)` of every `mcp_server_ready` event, sorted.
pub(crate) fn ready_protocols(events: &[EventMsg]) -> Vec<(String, String)> {
    let mut ready: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            EventMsg::McpServerReady(r) => Some((r.server.clone(), r.protocol_version.clone())),
            _ => None,
        })
        .collect();
    ready.sort();
    ready
}
