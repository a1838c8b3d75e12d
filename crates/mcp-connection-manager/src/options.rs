//! The manager's options, grouped by concern: startup, lifecycle (restarts, shutdown), lists,
//! requests, tasks, watching and trust (pinned tool definitions), beside the sign-in store and the entries left out of the
//! config. Built from `Default` and changed field by field (`ManagerOptions::default().with(|o|
//! o.lifecycle.max_restarts = 0)`); read from `[mcp_router]` by `router-config`, each field
//! naming its key. Every group is `#[non_exhaustive]`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Tunables that are not per server.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ManagerOptions {
    /// When servers start.
    pub startup: StartupOptions,
    /// Restarts and shutdown.
    pub lifecycle: LifecycleOptions,
    /// Resource and template listings.
    pub lists: ListOptions,
    /// Every request to a server.
    pub requests: RequestOptions,
    /// Tool calls a server runs as tasks (SEP-2663).
    pub tasks: TaskOptions,
    /// Resources watched for changes.
    pub watching: WatchOptions,
    /// Tool definitions pinned and held.
    pub trust: TrustOptions,
    /// The sandbox of a stdio server whose entry names none (`[mcp_router] sandbox`; the
    /// default profile unless set).
    pub sandbox: router_protocol::Sandbox,
    /// Where OAuth credentials are kept ([`mcp_connection::oauth::TokenStore::default_location`]
    /// when `None`; without any, HTTP servers are reached without sign-in).
    pub token_store: Option<mcp_connection::oauth::TokenStore>,
    /// Servers named in the config whose entries cannot be used (name → why): never started;
    /// `mcp_server_failed` says why at start, and so does every call to one and every
    /// all-server list (in `errors`).
    pub unusable: BTreeMap<String, String>,
}

impl ManagerOptions {
    /// These options with `change` made.
    pub fn with(mut self, change: impl FnOnce(&mut Self)) -> Self {
        change(&mut self);
        self
    }
}

/// Tool definitions pinned on first sight and held when they change (see [`crate::PinStore`]).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TrustOptions {
    /// Where the pins are kept (`pin_tools`); `None` pins nothing and holds nothing (invisible
    /// characters are taken out of what the model sees all the same).
    pub pins: Option<crate::PinStore>,
    /// `destructive_tools`: whether a call to a tool annotated `destructiveHint` (and not
    /// `readOnlyHint`) runs, is asked of the host, or is refused, where neither its server's
    /// `approval` nor its `tool_approvals` entry says.
    pub destructive: router_protocol::ApprovalPolicy,
    /// The command a held definition's message tells the user to run, before the server and
    /// the names (`None`: `mcp-router trust approve`). The binary names its config here.
    pub approve_command: Option<String>,
}

/// When servers start.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct StartupOptions {
    /// Where each server's last tool list is kept, so tools are listed at once while servers
    /// start (see [`crate::ToolCache`]); `None` keeps none and waits for every server.
    pub tool_cache: Option<crate::ToolCache>,
    /// Servers started lazily when they have a tool catalog (tool search on, no `startup` in
    /// their entry): their tools are known without them, so they start on first use.
    pub lazy_when_cataloged: BTreeSet<String>,
    /// Tool search `auto`: those servers are lazy only when the cataloged tools' specs pass a
    /// threshold; `None` (tool search `on`) makes them lazy whenever they have a catalog.
    pub lazy_over: Option<crate::LazyOver>,
}

/// Restarts and shutdown.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LifecycleOptions {
    /// Restarts of a server that died or failed to start, before it stays failed (default 5).
    pub max_restarts: u32,
    /// Wait after a failed start before the next use may try again; doubles per failure
    /// (capped at 30 s; default 500 ms).
    pub restart_backoff: Duration,
    /// How long a stdio server gets to exit after SIGTERM at shutdown before it is killed
    /// (default 2 s).
    pub shutdown_grace: Duration,
}

impl Default for LifecycleOptions {
    fn default() -> Self {
        Self {
            max_restarts: 5,
            restart_backoff: Duration::from_millis(500),
            shutdown_grace: Duration::from_secs(2),
        }
    }
}

/// Resource and template listings.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ListOptions {
    /// Most pages followed per server by an all-server list; reaching it stops that server's
    /// listing, keeps what was gathered and reports the server in `errors`.
    pub max_pages: usize,
    /// `list_cache_sec`: how long a server's complete listing is kept for continuations and
    /// filtered lists when it sends no positive `ttlMs` (default 30 s; zero keeps only listings
    /// with a positive `ttlMs`).
    pub cache: Duration,
    /// `list_cache_bytes`: most bytes (as JSON, counted without serializing: see
    /// `mcp_backend::KeptListings`) of listings kept, per list kind (default 64 MiB).
    pub cache_bytes: usize,
}

impl Default for ListOptions {
    fn default() -> Self {
        Self {
            max_pages: mcp_backend::DEFAULT_MAX_PAGES,
            cache: Duration::from_secs(30),
            cache_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Every request to a server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RequestOptions {
    /// `max_input_rounds`: most `input_required` answers (protocol 2026-07-28) one request is
    /// retried after before it is abandoned with an error (default 10).
    pub max_input_rounds: usize,
    /// `response_cache`: honour the cache hints (`ttlMs`, `cacheScope`) servers send; `false`
    /// sends every request (default true).
    pub response_cache: bool,
    /// `progress_interval_ms`: at most one `mcp_tool_call_progress` event per call this often
    /// (default 100 ms; the last one, progress reaching total, always goes).
    pub progress_interval: Duration,
    /// `reset_timeout_on_progress`: a `tools/call` or `resources/read` whose server reports
    /// progress gets its tool timeout anew from each report (default false).
    pub reset_timeout_on_progress: bool,
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self {
            max_input_rounds: 10,
            response_cache: true,
            progress_interval: Duration::from_millis(100),
            reset_timeout_on_progress: false,
        }
    }
}

/// Tool calls a server runs as tasks (SEP-2663).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskOptions {
    /// `task_timeout_sec`: how long a task is followed before it is cancelled (default 1 hour;
    /// each poll has the tool timeout).
    pub timeout: Duration,
    /// `background_tasks_after_sec`: a call whose task still runs after this long returns a
    /// handle and the task goes on in the background (`await_mcp_task`, offered exactly
    /// then); `None` (the default) waits for every task.
    pub background_after: Option<Duration>,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(3600), background_after: None }
    }
}

/// Resources watched for changes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WatchOptions {
    /// `max_watched_resources`: most resources watched per server (those the model read; the
    /// least recently read is dropped first); 0 watches nothing (default 256).
    pub max_resources: usize,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self { max_resources: 256 }
    }
}

/// Where `options` keep the router's state: the pins' and the catalogs' folders, and the
/// token store (its folder, unless that is `/`, the home directory or above it: then the file
/// alone). What a sandboxed server may not read, wherever it lies; the folders are made when
/// missing (private to this user), so they are protected from the first start.
pub(crate) fn state_paths(options: &ManagerOptions) -> Vec<std::path::PathBuf> {
    let out = state_places(options);
    for place in &out {
        if !place.exists() && place.extension().is_none() {
            use std::os::unix::fs::DirBuilderExt as _;
            let mut builder = std::fs::DirBuilder::new();
            let _ = builder.recursive(true).mode(0o700).create(place);
        }
    }
    out
}

fn state_places(options: &ManagerOptions) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Some(pins) = &options.trust.pins {
        out.push(pins.dir().to_path_buf());
    }
    if let Some(cache) = &options.startup.tool_cache {
        out.push(cache.dir().to_path_buf());
    }
    if let Some(tokens) = &options.token_store {
        let file = tokens.path();
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        match file.parent() {
            Some(dir)
                if dir.parent().is_some()
                    && home.as_ref().is_none_or(|home| !home.starts_with(dir)) =>
            {
                out.push(dir.to_path_buf());
            }
            _ => out.push(file.to_path_buf()),
        }
    }
    out
}
