//! One client's session of the shared router: an MCP server whose tools are what the embedded
//! router offers a model, over the servers every session shares.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::time::Instant;

use mcp_host::backend::KnownTools;
use mcp_host::{CallContext, EventSender, McpConnectionManager, RouterSettings, ToolCall};
use mcp_host::{McpBackend, ToolRouter, TraceContext};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RequestContext, SubscriptionSink};
use rmcp::{ErrorData, Peer, RoleServer};

use super::backend::{ChangeHub, SessionBackend, session_backend};
use super::host::{CallOwners, Owner, SharedHost};
use super::lock::locked;
use super::output::to_call_result;

/// What every session shares: the servers, the settings each session's router is built with,
/// the sessions themselves and the calls in flight (whose session a server's question goes to).
pub(crate) struct Shared {
    pub(crate) manager: Arc<McpConnectionManager>,
    settings: RouterSettings,
    events: EventSender,
    sessions: Mutex<BTreeMap<u64, SessionInfo>>,
    /// Each open session's ledger (its router's), for `status`; a session's run is kept when
    /// it ends.
    ledgers: Mutex<BTreeMap<u64, Arc<mcp_host::ledger::Ledger>>>,
    next_session: AtomicU64,
    /// Open sessions; `idle_since` is when it last fell to zero (`None` while one is open),
    /// watched by `serve` for its idle timeout.
    open: AtomicUsize,
    idle_since: tokio::sync::watch::Sender<Option<Instant>>,
    pub(crate) calls: Arc<CallOwners>,
    /// The resource changes, per session.
    changes: Arc<ChangeHub>,
    /// Each session's client, once initialized: told when the tools change.
    pub(super) peers: Mutex<BTreeMap<u64, Peer<RoleServer>>>,
    started: SystemTime,
    /// Each session's `subscriptions/listen` streams (2026-07-28).
    listeners: Mutex<BTreeMap<u64, Vec<SubscriptionSink>>>,
    /// What the servers' events moved (a session waits on it to hear of its own servers').
    pub(super) moved: super::events::Moved,
    /// Where a session's run is added to the ledger when it ends (`None`: not kept).
    ledger_dir: Option<std::path::PathBuf>,
}

/// What `mcp-router status` says of a session.
pub(crate) type SessionInfo = router_protocol::SessionStatus;

impl Shared {
    pub(crate) fn new(
        manager: Arc<McpConnectionManager>,
        settings: RouterSettings,
        events: EventSender,
        calls: Arc<CallOwners>,
        moved: super::events::Moved,
        ledger_dir: Option<std::path::PathBuf>,
    ) -> Arc<Self> {
        Arc::new(Self {
            ledger_dir,
            moved,
            listeners: Mutex::default(),
            manager,
            settings,
            events,
            sessions: Mutex::default(),
            ledgers: Mutex::default(),
            next_session: AtomicU64::new(1),
            open: AtomicUsize::new(0),
            idle_since: tokio::sync::watch::Sender::new(Some(Instant::now())),
            calls,
            peers: Mutex::default(),
            changes: Arc::default(),
            started: SystemTime::now(),
        })
    }

    /// A new session of `transport` whose agent works in `cwd`, with a router of its own (its
    /// revealed tools, budgets and continuations are its own; the servers are everyone's but
    /// those run per session or per working directory).
    pub(crate) fn open_session(
        self: &Arc<Self>,
        transport: &'static str,
        cwd: Option<&std::path::Path>,
    ) -> anyhow::Result<SessionServer> {
        let id = self.next_session.fetch_add(1, Ordering::Relaxed);
        // Its own servers' requests that no call asks go to its client, once it is initialized.
        let client = Arc::new(Mutex::new(None));
        let host = Arc::new(SharedHost { calls: self.calls.clone(), client: Some(client.clone()) });
        let view = self.manager.view(id, cwd, host);
        let session = Arc::new(session_backend(view, self.changes.clone(), id));
        let backend: Arc<dyn McpBackend> = session.clone();
        let router = ToolRouter::with_mcp_settings(backend.clone(), &self.settings)?;
        let info = SessionInfo {
            id,
            transport: transport.to_string(),
            since: unix_seconds(SystemTime::now()),
            client: None,
            calls_in_flight: 0,
            calls: 0,
            spec_tokens: 0,
            tokens_to_model: 0,
            share: 0.0,
        };
        locked(&self.sessions).insert(id, info);
        locked(&self.ledgers).insert(id, router.ledger().clone());
        self.open.fetch_add(1, Ordering::SeqCst);
        self.idle_since.send_replace(None);
        tracing::info!(session = id, transport, "session opened");
        let guard =
            Arc::new(SessionGuard { shared: self.clone(), id, client, tasks: Mutex::default() });
        Ok(SessionServer {
            shared: self.clone(),
            id,
            backend,
            session,
            router: Arc::new(router),
            next_call: Arc::new(AtomicU64::new(1)),
            ended: Arc::new(tokio::sync::watch::Sender::new(false)),
            guard,
        })
    }

    /// Since when no session has been open (`None` while one is), as it changes.
    pub(crate) fn idle_since(&self) -> tokio::sync::watch::Receiver<Option<Instant>> {
        self.idle_since.subscribe()
    }

    /// The sessions now, by id.
    pub(crate) fn sessions(&self) -> Vec<SessionInfo> {
        let mut sessions: Vec<SessionInfo> = locked(&self.sessions).values().cloned().collect();
        let ledgers = locked(&self.ledgers).clone();
        for session in &mut sessions {
            let Some(ledger) = ledgers.get(&session.id) else { continue };
            let run = ledger.run_now();
            session.spec_tokens = run.servers.iter().map(|s| s.spec_tokens_loaded).sum();
            session.tokens_to_model = run.tools.iter().map(|t| t.tokens_to_model).sum();
        }
        let all: u64 = sessions.iter().map(|s| s.spec_tokens + s.tokens_to_model).sum();
        for session in sessions.iter_mut().filter(|_| all > 0) {
            session.share = (session.spec_tokens + session.tokens_to_model) as f64 / all as f64;
        }
        sessions
    }

    /// The sessions' clients.
    pub(crate) fn peers(&self) -> Vec<Peer<RoleServer>> {
        locked(&self.peers).values().cloned().collect()
    }

    /// Session `id`'s client, once initialized.
    pub(crate) fn peer(&self, id: u64) -> Option<Peer<RoleServer>> {
        locked(&self.peers).get(&id).cloned()
    }

    /// Session `id`'s listen streams.
    pub(crate) fn listeners(&self, id: u64) -> Vec<SubscriptionSink> {
        locked(&self.listeners).get(&id).cloned().unwrap_or_default()
    }

    /// Every session's listen streams.
    pub(crate) fn all_listeners(&self) -> Vec<SubscriptionSink> {
        locked(&self.listeners).values().flatten().cloned().collect()
    }

    /// Session `id` listens on `sink` (`on`), or no longer does.
    pub(crate) fn listen(&self, id: u64, sink: &SubscriptionSink, on: bool) {
        let mut listeners = locked(&self.listeners);
        let sinks = listeners.entry(id).or_default();
        sinks.retain(|s| s.id() != sink.id());
        if on {
            sinks.push(sink.clone());
        } else if sinks.is_empty() {
            listeners.remove(&id);
        }
    }

    /// The resource changes, per session.
    pub(crate) fn changes(&self) -> &ChangeHub {
        &self.changes
    }

    /// When this router started (seconds since the Unix epoch).
    pub(crate) fn started(&self) -> u64 {
        unix_seconds(self.started)
    }

    pub(super) fn update(&self, id: u64, change: impl FnOnce(&mut SessionInfo)) {
        if let Some(info) = locked(&self.sessions).get_mut(&id) {
            change(info);
        }
    }
}

/// A session's run added to the ledger in `dir`, off the runtime's threads (nothing when it
/// recorded nothing; a failure to write is a warning).
fn keep_run(ledger: Arc<mcp_host::ledger::Ledger>, dir: std::path::PathBuf) {
    let keep = move || {
        if let Err(e) = mcp_host::ledger::store::keep(&ledger, &dir) {
            tracing::warn!("cannot add a session's run to the ledger in {}: {e}", dir.display());
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(keep)),
        Err(_) => keep(),
    }
}

fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Ends the session's record when the last clone of its server is dropped (its view, and with
/// it the session's own servers and a working directory's once no session there holds them,
/// end with the last clone of its backend).
pub(super) struct SessionGuard {
    shared: Arc<Shared>,
    id: u64,
    /// The session's client, once it is initialized: asked by its own servers when no call of
    /// it is known to ask (a server's roots request at its start).
    pub(super) client: Arc<Mutex<Option<Owner>>>,
    /// The session's own tasks, ended with it.
    pub(super) tasks: Mutex<Vec<tokio::task::AbortHandle>>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        locked(&self.tasks).drain(..).for_each(|task| task.abort());
        locked(&self.shared.sessions).remove(&self.id);
        let ledger = locked(&self.shared.ledgers).remove(&self.id);
        if let (Some(ledger), Some(dir)) = (ledger, &self.shared.ledger_dir) {
            keep_run(ledger, dir.clone());
        }
        locked(&self.shared.peers).remove(&self.id);
        self.shared.changes.forget(self.id);
        if self.shared.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.shared.idle_since.send_replace(Some(Instant::now()));
        }
        tracing::info!(session = self.id, "session closed");
    }
}

/// One session's MCP server: `tools/list` is the session's router's specs, `tools/call` its
/// dispatch.
#[derive(Clone)]
pub(crate) struct SessionServer {
    pub(super) shared: Arc<Shared>,
    pub(super) id: u64,
    /// The servers as this session sees them (what its router is built over).
    pub(super) backend: Arc<dyn McpBackend>,
    /// The same, with its view of the manager and its resource changes (where a
    /// subscription is kept).
    pub(super) session: Arc<SessionBackend>,
    pub(super) router: Arc<ToolRouter>,
    pub(super) next_call: Arc<AtomicU64>,
    /// Set once the client's side of the session has ended (its input closed): the calls in
    /// flight are given up at once.
    pub(super) ended: Arc<tokio::sync::watch::Sender<bool>>,
    pub(super) guard: Arc<SessionGuard>,
}

impl SessionServer {
    /// This session's id (as `mcp-router status` shows it).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// What tells this session that its client has gone (set by the transport that sees its
    /// input end).
    pub(crate) fn ended(&self) -> Arc<tokio::sync::watch::Sender<bool>> {
        self.ended.clone()
    }

    /// Counts a call in, unless the session has [`MAX_CALLS_IN_FLIGHT`] already.
    fn enter(&self, call_id: &str, owner: Owner) -> Option<InFlight<'_>> {
        let mut admitted = false;
        self.shared.update(self.id, |info| {
            if info.calls_in_flight < MAX_CALLS_IN_FLIGHT {
                info.calls_in_flight += 1;
                info.calls += 1;
                admitted = true;
            }
        });
        if !admitted {
            return None;
        }
        self.shared.calls.insert(call_id.to_string(), owner);
        Some(InFlight { shared: &self.shared, session: self.id, call_id: call_id.to_string() })
    }

    pub(super) async fn dispatch(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let n = self.next_call.fetch_add(1, Ordering::Relaxed);
        let call_id = format!("s{}-{n}", self.id);
        let owner = owner(self.id, &context.peer, context.client_capabilities().as_ref());
        let Some(in_flight) = self.enter(&call_id, owner) else {
            return Ok(to_call_result(mcp_host::ToolOutput::failure(format!(
                "this session already has {MAX_CALLS_IN_FLIGHT} calls in flight: wait for one to end"
            ))));
        };
        let revealed = self.router.revealed_count();
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall {
            call_id: call_id.clone(),
            name: request.name.to_string(),
            arguments: arguments.into(),
        };
        let mut ctx = CallContext::new(self.shared.events.clone());
        // The client's trace context goes on to the servers (W3C, in `_meta`).
        let parent = context.meta.get_traceparent();
        if let Some(trace) =
            parent.and_then(|p| TraceContext::parse(p, context.meta.get_tracestate()))
        {
            ctx = ctx.with_trace_context(trace);
        }
        let mut ended = self.ended.subscribe();
        let outcome = tokio::select! {
            outcome = self.router.dispatch_to_output(&ctx, call) => Ok(outcome),
            () = context.ct.cancelled() => Err("the call was cancelled by the client"),
            _ = ended.wait_for(|ended| *ended) => Err("the session's client went away"),
        };
        drop(in_flight);
        if self.router.revealed_count() != revealed {
            // A search revealed tools: this session's list changed (and only this one's).
            let _ = context.peer.notify_tool_list_changed().await;
        }
        match outcome {
            Ok(Ok(output)) => Ok(to_call_result(output)),
            Ok(Err(e)) => Err(ErrorData::internal_error(e.to_string(), None)),
            Err(why) => Err(ErrorData::internal_error(why, None)),
        }
    }
}

/// Most calls one session may have in flight: past it a call is answered at once with an error
/// the model reads (one agent cannot take every server's capacity).
pub(crate) const MAX_CALLS_IN_FLIGHT: usize = 32;

/// The session of a call, with what its client declared.
pub(super) fn owner(
    session: u64,
    peer: &Peer<RoleServer>,
    declared: Option<&rmcp::model::ClientCapabilities>,
) -> Owner {
    Owner {
        session,
        peer: peer.clone(),
        elicitation: declared.is_some_and(|c| c.elicitation.is_some()),
        roots: declared.is_some_and(|c| c.roots.is_some()),
    }
}

/// One call in flight: its owner entry and its count in the session's record, released
/// however the call ends (answered, cancelled, or its future dropped with the session).
struct InFlight<'a> {
    shared: &'a Shared,
    session: u64,
    call_id: String,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.shared.calls.remove(&self.call_id);
        self.shared.update(self.session, |info| info.calls_in_flight -= 1);
    }
}

/// Whether two tool sets are the same tools (names and definitions) and unknown servers.
pub(crate) fn same_tools(a: &KnownTools, b: &KnownTools) -> bool {
    Arc::ptr_eq(&a.tools, &b.tools)
        || (a.unknown == b.unknown
            && a.tools.len() == b.tools.len()
            && a.tools
                .iter()
                .zip(b.tools.iter())
                .all(|(a, b)| a.qualified_name == b.qualified_name && a.tool == b.tool))
}
