//! The one assembly: a config (a file, text, or built in code) to a running router, with the
//! host's event sink and `HostHandler`. The `mcp-router` binary, the bench and the examples
//! start the router here, so a host gets what the binary does.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use mcp_connection_manager::{
    AppsHost, DefaultHost, HostHandler, ManagerOptions, McpConnectionManager, ToolCache,
};
use router_config::{ConfigError, ConfigFile, ConfigFormat, Strictness};
use router_protocol::{EventReceiver, EventSender, LedgerReport, event_channel};
use tool_router::{
    CallContext, FunctionCallError, SetupError, ToolCall, ToolFormat, ToolOutput, ToolRouter,
};

/// What stops an assembly from starting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The config file could not be read or used (the message names the file, server and key).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The router's own tools could not be registered (a host's handler under a taken name).
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// [`Assembly::start`] was called outside a tokio runtime: the servers' tasks need one.
    #[error("the router must be started inside a tokio runtime (its servers run as tasks)")]
    NoRuntime,
}

/// A config on its way to a running router. Build it with [`Assembly::from_file`],
/// [`Assembly::from_text`] or [`Assembly::new`] (a [`ConfigFile`] built in code), give it the
/// host's parts, then [`Assembly::start`].
pub struct Assembly {
    config: ConfigFile,
    host: Option<Arc<dyn HostHandler>>,
    events: Option<EventSender>,
    /// Where the ledger keeps its runs (`state_dir/ledger`, else the default state folder's).
    ledger_dir: Option<std::path::PathBuf>,
}

impl Assembly {
    /// An assembly of `config` as it is.
    pub fn new(config: ConfigFile) -> Self {
        Self { config, host: None, events: None, ledger_dir: None }
    }

    /// Keep the router's state under `dir`: tool catalogs in `dir/tools` (when `tool_cache` is
    /// on), pins in `dir/pins` (when `pin_tools` is on), sign-in tokens in
    /// `dir/credentials.json`, the search model's embeddings in `dir/embeddings`. Without it: catalogs and pins under `$MCP_ROUTER_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/mcp-router`, else `~/.cache/mcp-router`; tokens in `credentials.json`
    /// of `$MCP_ROUTER_HOME`, else `$XDG_CONFIG_HOME/mcp-router`, else `~/.config/mcp-router`.
    /// Sandboxed servers cannot read it, wherever it is (outside temp).
    pub fn state_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        let dir = dir.into();
        let manager = &mut self.config.manager;
        if self.config.tool_cache {
            manager.startup.tool_cache = Some(ToolCache::at(dir.join("tools")));
        }
        if self.config.pin_tools {
            manager.trust.pins = Some(mcp_connection_manager::PinStore::at(dir.join("pins")));
        }
        let tokens = dir.join("credentials.json");
        manager.token_store = Some(mcp_connection_manager::oauth::TokenStore::at(tokens));
        self.ledger_dir = Some(dir.join("ledger"));
        self.config.settings.search.embeddings_dir = Some(dir.join("embeddings"));
        self
    }

    /// The config file at `path` (Codex `config.toml`, or `mcp.json` by its extension). A server
    /// entry that cannot be used is left out and named in [`ConfigFile::unusable`]; the others run.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        Self::from_file_with(path, Strictness::Lenient)
    }

    /// [`Assembly::from_file`] with a choice of what a bad server entry does.
    pub fn from_file_with(path: &Path, strictness: Strictness) -> Result<Self, ConfigError> {
        router_config::load_config_file_with(path, strictness).map(Self::new)
    }

    /// Config text in `format` (a bad server entry is left out, as from a file); errors name
    /// `<text>` as the file.
    pub fn from_text(text: &str, format: ConfigFormat) -> Result<Self, ConfigError> {
        let path = Path::new("<text>");
        router_config::parse_config_file_with(text, format, path, Strictness::Lenient)
            .map(Self::new)
    }

    /// The config, to read (its `unusable` entries, say, to warn about them).
    pub fn config(&self) -> &ConfigFile {
        &self.config
    }

    /// The config, to change before starting (add a server, set an option).
    pub fn config_mut(&mut self) -> &mut ConfigFile {
        &mut self.config
    }

    /// Answer the servers' requests (elicitation, sampling, roots) and skill approvals with
    /// `host`. Without it: [`AppsHost`] when the config says `apps_ui`, else [`DefaultHost`].
    pub fn host_handler(mut self, host: Arc<dyn HostHandler>) -> Self {
        self.host = Some(host);
        self
    }

    /// Send the events to `events` (the host's own channel). Without it the assembly makes a
    /// channel and [`Running::take_events`] hands out its receiver.
    pub fn events(mut self, events: EventSender) -> Self {
        self.events = Some(events);
        self
    }

    /// The servers `start` would leave idle until used (reads the tool cache, starts nothing).
    pub fn idle_servers(&self) -> BTreeSet<String> {
        mcp_connection_manager::idle_at_start(&self.config.servers, &manager_options(&self.config))
    }

    /// Start the servers (concurrently; a call waits for the server it needs) and the router.
    /// Must run inside a tokio runtime.
    pub fn start(self) -> Result<Running, StartError> {
        if tokio_runtime_missing() {
            return Err(StartError::NoRuntime);
        }
        let Self { config, host, events, ledger_dir } = self;
        let ledger_dir = ledger_dir
            .or_else(|| mcp_connection_manager::default_state_dir().map(|d| d.join("ledger")))
            .filter(|_| config.settings.ledger.keep);
        let options = manager_options(&config);
        let host = host_or_default(host, config.apps_ui);
        let (events, receiver) = match events {
            Some(events) => (events, None),
            None => {
                let (tx, rx) = event_channel();
                (tx, Some(rx))
            }
        };
        let manager = Arc::new(McpConnectionManager::start_with_host(
            config.servers,
            events.clone(),
            options,
            host,
        ));
        let router = match ToolRouter::with_mcp_settings(manager.clone(), &config.settings) {
            Ok(router) => router,
            Err(e) => {
                tokio_spawn_shutdown(manager);
                return Err(e.into());
            }
        };
        let router = Arc::new(router);
        let kept = ledger_dir.map(|dir| {
            Arc::new(KeptLedger { ledger: router.ledger().clone(), dir, kept: Default::default() })
        });
        Ok(Running { router, manager, events, receiver, kept })
    }

    /// Start the servers alone, without a router: for a host that builds routers of its own
    /// over them (the shared router's per-session servers). The events go to the sender given
    /// with [`Assembly::events`] (without one they are discarded). Must run inside a tokio
    /// runtime.
    pub fn start_servers(self) -> Result<Arc<McpConnectionManager>, StartError> {
        if tokio_runtime_missing() {
            return Err(StartError::NoRuntime);
        }
        let options = manager_options(&self.config);
        let host = host_or_default(self.host, self.config.apps_ui);
        let events = self.events.unwrap_or_else(EventSender::discard);
        Ok(Arc::new(McpConnectionManager::start_with_host(
            self.config.servers,
            events,
            options,
            host,
        )))
    }
}

/// The ledger learns from `manager` each server's restarts and held definitions.
fn tell_facts(ledger: &tool_router::ledger::Ledger, manager: &McpConnectionManager) {
    let mut held: std::collections::BTreeMap<String, u64> = Default::default();
    for (server, _, _) in manager.held_definitions() {
        *held.entry(server).or_default() += 1;
    }
    let facts = manager.restart_counts().into_iter().map(|(server, restarts)| {
        let held = held.get(&server).copied().unwrap_or(0);
        (server, u64::from(restarts), held)
    });
    ledger.server_facts(facts.collect::<Vec<_>>());
}

/// Adds this run to the ledger in `dir` (nothing when nothing was recorded); a failure to
/// write is a warning, never the shutdown's.
async fn keep_run(ledger: Arc<tool_router::ledger::Ledger>, dir: std::path::PathBuf) {
    let kept = counted(ledger, move |ledger| {
        tool_router::ledger::store::keep(ledger, &dir)
            .map_err(|e| format!("cannot add this run to the ledger in {}: {e}", dir.display()))
    })
    .await;
    if let Err(why) = kept {
        tracing::warn!("{why}");
    }
}

/// `read` of `ledger`, on a blocking thread (it waits for the token counts queued): on the
/// caller's when that thread could not run it.
async fn counted<T: Send + 'static>(
    ledger: Arc<tool_router::ledger::Ledger>,
    read: impl Fn(&tool_router::ledger::Ledger) -> T + Send + Sync + 'static,
) -> T {
    let read = Arc::new(read);
    let (on_blocking, theirs) = (read.clone(), ledger.clone());
    match tokio::task::spawn_blocking(move || on_blocking(&theirs)).await {
        Ok(value) => value,
        Err(_) => read(&ledger),
    }
}

/// The host's handler, else [`AppsHost`] when the config says `apps_ui`, else [`DefaultHost`].
fn host_or_default(host: Option<Arc<dyn HostHandler>>, apps_ui: bool) -> Arc<dyn HostHandler> {
    host.unwrap_or_else(|| match apps_ui {
        true => Arc::new(AppsHost),
        false => Arc::new(DefaultHost),
    })
}

/// Whether there is no tokio runtime to start the servers' tasks on.
fn tokio_runtime_missing() -> bool {
    tokio::runtime::Handle::try_current().is_err()
}

/// End `manager`'s servers in the background (nothing will use them).
fn tokio_spawn_shutdown(manager: Arc<McpConnectionManager>) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move { manager.shutdown().await });
    }
}

/// The manager options `config` asks for: its unusable entries named (a call to one says why),
/// the tool cache in its default place when `tool_cache` is on, and the pins beside it when
/// `pin_tools` is on.
fn manager_options(config: &ConfigFile) -> ManagerOptions {
    let mut options = config.manager.clone();
    for unusable in &config.unusable {
        options.unusable.insert(unusable.name.clone(), unusable.error.clone());
    }
    if config.tool_cache && options.startup.tool_cache.is_none() {
        options.startup.tool_cache = ToolCache::default_location();
    }
    if config.pin_tools && options.trust.pins.is_none() {
        options.trust.pins = mcp_connection_manager::PinStore::default_location();
    }
    options
}

/// A running router: the router, the manager under it, the events, and the shutdown.
pub struct Running {
    /// The router: specs, dispatch, skills, prompts. Shared: a host may call it from many tasks.
    pub router: Arc<ToolRouter>,
    /// The connection manager (server status, process ids, sign-in challenges).
    pub manager: Arc<McpConnectionManager>,
    events: EventSender,
    receiver: Option<EventReceiver>,
    /// The ledger's folder, where the run is added at shutdown.
    kept: Option<Arc<KeptLedger>>,
}

/// A run's ledger and the folder it is added to, once (at the first shutdown).
struct KeptLedger {
    ledger: Arc<tool_router::ledger::Ledger>,
    dir: std::path::PathBuf,
    kept: std::sync::atomic::AtomicBool,
}

impl Running {
    /// The event receiver, once (`None` when the host gave its own sender, or after the first
    /// call). It ends after [`Running::shutdown`] sent the last `mcp_server_stopped`, whatever
    /// senders remain.
    pub fn take_events(&mut self) -> Option<EventReceiver> {
        self.receiver.take()
    }

    /// The sender the router and manager emit to (for the host's own events, or a
    /// [`CallContext`] of its own making).
    pub fn event_sender(&self) -> &EventSender {
        &self.events
    }

    /// A context for one model turn's calls, emitting to this router's events.
    pub fn call_context(&self) -> CallContext {
        CallContext::new(self.events.clone())
    }

    /// The tools to give the model, in the provider's `format`: every spec, and with tool
    /// search answered by the provider's API (`tool_search_via`), the deferred MCP tools too
    /// (`ToolRouter::tool_list`; `ToolRouter::specs` alone leaves those out).
    pub async fn tools(&self, format: ToolFormat) -> Vec<serde_json::Value> {
        self.router.tool_list(format).await
    }

    /// Run the model's `call` with this router's own context (its events go where the
    /// assembly's go): the output the model reads, a failure included. The only error is a
    /// router that was shut down (end the turn). A host that needs a call's own context (a
    /// cancellation, other event settings) uses `router.dispatch_to_output` with it.
    pub async fn dispatch(&self, call: ToolCall) -> Result<ToolOutput, FunctionCallError> {
        self.router.dispatch_to_output(&self.call_context(), call).await
    }

    /// A handle that shuts this router down from anywhere (a signal handler, another task).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            manager: self.manager.clone(),
            events: self.events.clone(),
            ledger: self.kept.clone(),
        }
    }

    /// What MCP cost this run so far, per server and tool (the router's ledger; see
    /// [`tool_router::ledger`]). Waits for the token counts of the calls made before it (on a
    /// blocking thread, not the caller's).
    pub async fn ledger(&self) -> LedgerReport {
        tell_facts(self.router.ledger(), &self.manager);
        counted(self.router.ledger().clone(), |ledger| ledger.report()).await
    }

    /// The host's turn ended: what it cost — the calls since the last turn ended, with the
    /// specs as they are now — sent as the `mcp_turn_cost` event and returned.
    pub async fn end_turn(&self) -> LedgerReport {
        tell_facts(self.router.ledger(), &self.manager);
        let report = counted(self.router.ledger().clone(), |ledger| ledger.turn()).await;
        self.events.send(router_protocol::EventMsg::McpTurnCost(Box::new(report.clone())));
        report
    }

    /// Where this run's ledger is kept when it shuts down (`None`: not kept — `ledger =
    /// false`, or no state folder).
    pub fn ledger_dir(&self) -> Option<&Path> {
        self.kept.as_ref().map(|kept| kept.dir.as_path())
    }

    /// Shut down: every server ends (processes exited, HTTP sessions closed), one
    /// `mcp_server_stopped` per server is sent, and the event stream ends. Calls still in flight
    /// fail; a later call's output says the router is shut down.
    pub async fn shutdown(&self) {
        self.shutdown_handle().shutdown().await;
    }
}

/// Shuts a [`Running`] router down; cheap to clone.
#[derive(Clone)]
pub struct ShutdownHandle {
    manager: Arc<McpConnectionManager>,
    events: EventSender,
    /// The ledger and its folder: the run is added there once, at the first shutdown.
    ledger: Option<Arc<KeptLedger>>,
}

impl ShutdownHandle {
    /// See [`Running::shutdown`]. A second shutdown returns at once and sends nothing.
    pub async fn shutdown(&self) {
        if let Some(kept) = &self.ledger {
            tell_facts(&kept.ledger, &self.manager);
        }
        self.manager.shutdown().await;
        if let Some(kept) = &self.ledger
            && !kept.kept.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            keep_run(kept.ledger.clone(), kept.dir.clone()).await;
        }
        self.events.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_that_span_router_and_manager_are_derived_here() {
        let text = "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.bad]\ncommand = 3\n\
                    [mcp_router]\ntool_cache = false\n";
        let assembly = Assembly::from_text(text, ConfigFormat::CodexToml).expect("valid");
        let options = manager_options(assembly.config());
        assert!(options.unusable.contains_key("bad"), "{:?}", options.unusable);
        assert_eq!(options.startup.tool_cache, None, "tool_cache = false keeps no catalog");
    }

    /// `await_mcp_task` follows from the manager's setting alone: offered exactly when long
    /// calls go to the background.
    #[tokio::test]
    async fn await_mcp_task_is_offered_exactly_when_calls_go_to_the_background() {
        for (text, offered) in [
            ("[mcp_servers]\n[mcp_router]\nbackground_tasks_after_sec = 2\n", true),
            ("[mcp_servers]\n", false),
        ] {
            let assembly = Assembly::from_text(text, ConfigFormat::CodexToml).expect("valid");
            let running = assembly.start().expect("starts");
            let specs = running.router.specs().await;
            assert_eq!(specs.iter().any(|s| s.name == "await_mcp_task"), offered, "{text}");
            running.shutdown().await;
        }
    }

    /// A host's state folder holds all the router keeps: the search model's embeddings too.
    #[test]
    fn a_state_folder_holds_the_catalogs_the_pins_and_the_embeddings() {
        let assembly = Assembly::from_text("[mcp_servers]\n", ConfigFormat::CodexToml)
            .expect("valid")
            .state_dir("/state");
        let config = assembly.config();
        let kept = config.settings.search.embeddings_dir.as_deref();
        assert_eq!(kept, Some(std::path::Path::new("/state/embeddings")));
        let pins = config.manager.trust.pins.as_ref().map(|p| p.dir().to_path_buf());
        assert_eq!(pins.as_deref(), Some(std::path::Path::new("/state/pins")));
    }

    #[test]
    fn starting_outside_a_runtime_is_an_error_not_a_panic() {
        let assembly =
            Assembly::from_text("[mcp_servers]\n", ConfigFormat::CodexToml).expect("valid");
        assert!(matches!(assembly.start(), Err(StartError::NoRuntime)));
    }
}
