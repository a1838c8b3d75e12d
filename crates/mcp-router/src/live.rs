//! The live view: a terminal UI drawn from the public event stream alone (`EventMsg`), for
//! `demo --live`, `exec --live` and `watch`. [`LiveState`] folds events into what is shown and
//! draws it (pure, snapshot-tested through ratatui's test backend); [`LiveView`] runs it on its
//! own thread on the controlling terminal (`/dev/tty`), so stdout stays free for JSON lines.
//!
//! Events reach the view through an unbounded channel: the tool path never waits for it. The
//! view drains every queued event before each frame and draws at most 10 frames a second, so a
//! slow terminal drops frames, never events.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write as _;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Wrap};
use router_protocol::EventMsg;

#[path = "live_panels.rs"]
mod panels;
#[path = "live_text.rs"]
mod text;
use text::{CALL_TOOL_MIN, cut, first_line, name_room, progress_text, shown_names};

/// Most finished calls kept (the oldest are dropped first).
const MAX_CALLS: usize = 500;
/// Most notices kept.
const MAX_NOTICES: usize = 200;

#[derive(Debug, Clone, PartialEq)]
enum ServerPhase {
    /// Configured, not started until something needs it.
    Idle,
    Starting,
    Ready,
    Failed,
    Restarting,
    /// Shut down with the router.
    Stopped,
}

#[derive(Debug, Clone)]
struct ServerRow {
    transport: String,
    phase: ServerPhase,
    protocol: String,
    tools: Option<usize>,
    resources: bool,
    restarts: u32,
    last_error: Option<String>,
    /// Definitions held from the model (kind, name), by the trust events: held or refused in,
    /// approved, accepted or pinned out.
    held: std::collections::BTreeSet<(router_protocol::DefinitionKind, String)>,
}

#[derive(Debug, Clone)]
struct Finished {
    duration: Duration,
    ok: bool,
    items: Option<usize>,
    pages: Option<usize>,
    bytes: usize,
    truncated: bool,
    summary: String,
    /// The whole error text of a failed call (up to [`MAX_DETAIL`]), for the detail pane.
    detail: Option<String>,
}

/// Most characters of a failed call's text kept for the detail pane.
const MAX_DETAIL: usize = 4096;

/// What the view takes: the router's events, and what exec writes besides them.
#[derive(Debug, Clone)]
pub(crate) enum ViewItem {
    Event(EventMsg),
    /// A call's output: a call that no event announced (rejected before reaching a server)
    /// appears by it; a failed one's whole text goes to its detail.
    Output {
        call_id: String,
        name: Option<String>,
        ok: bool,
        text: String,
    },
    /// An exec error line (`line`: the input line it is about).
    Error {
        message: String,
        line: Option<u64>,
        call_id: Option<String>,
    },
    /// A line for the notices panel (e.g. "the demo has finished").
    Notice(String),
    /// What MCP cost so far (the ledger), for the costs panel.
    Ledger(Box<router_protocol::LedgerReport>),
}

impl From<EventMsg> for ViewItem {
    fn from(event: EventMsg) -> Self {
        Self::Event(event)
    }
}

#[derive(Debug, Clone)]
struct CallRow {
    call_id: String,
    server: String,
    tool: String,
    arguments: String,
    began: Instant,
    finished: Option<Finished>,
    /// Known only by its output (no begin/end event announced it).
    by_output: bool,
    /// The server's last progress report while in flight (`[#####.....] 7/20 step 7 of 20`),
    /// or its task's status (`task working: 3 of 30 s`).
    progress: Option<String>,
}

/// What the view shows, folded from events.
pub(crate) struct LiveState {
    title: String,
    servers: BTreeMap<String, ServerRow>,
    calls: VecDeque<CallRow>,
    notices: VecDeque<String>,
    /// While paused, items wait here and the screen stands still.
    paused: Option<Vec<ViewItem>>,
    /// Index into `calls` of the selected call.
    selected: Option<usize>,
    /// Events seen.
    events: u64,
    /// The stream ended (exec or the recording finished).
    ended: bool,
    /// The ledger as last received, and whether its panel replaces the calls (`c`).
    ledger: Option<Box<router_protocol::LedgerReport>>,
    show_costs: bool,
}

impl LiveState {
    pub(crate) fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            servers: BTreeMap::new(),
            calls: VecDeque::new(),
            notices: VecDeque::new(),
            paused: None,
            selected: None,
            events: 0,
            ended: false,
            ledger: None,
            show_costs: false,
        }
    }

    /// Take one item (queued while paused), received at `now`.
    pub(crate) fn push(&mut self, item: impl Into<ViewItem>, now: Instant) {
        let item = item.into();
        match &mut self.paused {
            Some(queue) => queue.push(item),
            None => self.take(item, now),
        }
    }

    fn take(&mut self, item: ViewItem, now: Instant) {
        match item {
            ViewItem::Event(event) => self.apply(&event, now),
            ViewItem::Output { call_id, name, ok, text } => {
                self.output(call_id, name, ok, text, now)
            }
            ViewItem::Error { message, line, call_id } => {
                let line = line.map(|n| format!(" (input line {n})")).unwrap_or_default();
                let call = call_id.map(|c| format!(" [{c}]")).unwrap_or_default();
                self.notice(format!("error{call}{line}: {message}"));
            }
            ViewItem::Notice(text) => self.notice(text),
            ViewItem::Ledger(report) => self.ledger = Some(report),
        }
    }

    /// A call's output: a failed call keeps its whole text; a call no event announced joins
    /// the calls as rejected.
    fn output(
        &mut self,
        call_id: String,
        name: Option<String>,
        ok: bool,
        text: String,
        now: Instant,
    ) {
        let detail = (!ok).then(|| cut(&text, MAX_DETAIL));
        if let Some(call) = self.calls.iter_mut().rev().find(|c| c.call_id == call_id) {
            if let (Some(finished), Some(detail)) = (&mut call.finished, detail) {
                finished.detail.get_or_insert(detail);
            }
            return;
        }
        self.add_call(CallRow {
            call_id,
            server: "—".to_string(),
            tool: name.unwrap_or_else(|| "(no tool)".to_string()),
            arguments: String::new(),
            began: now,
            by_output: true,
            progress: None,
            finished: Some(Finished {
                duration: Duration::ZERO,
                ok,
                items: None,
                pages: None,
                bytes: text.len(),
                truncated: false,
                summary: if ok {
                    "ok".to_string()
                } else {
                    format!("rejected: {}", first_line(&text))
                },
                detail,
            }),
        });
    }

    fn add_call(&mut self, row: CallRow) {
        if self.calls.len() == MAX_CALLS {
            self.calls.pop_front();
            self.selected = self.selected.and_then(|s| s.checked_sub(1));
        }
        self.calls.push_back(row);
    }

    /// The stream has ended.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    fn notice(&mut self, text: String) {
        if self.notices.len() == MAX_NOTICES {
            self.notices.pop_front();
        }
        self.notices.push_back(text);
    }

    fn server(&mut self, name: &str) -> &mut ServerRow {
        self.servers.entry(name.to_string()).or_insert_with(|| ServerRow {
            transport: String::new(),
            phase: ServerPhase::Starting,
            protocol: String::new(),
            tools: None,
            resources: false,
            restarts: 0,
            last_error: None,
            held: Default::default(),
        })
    }

    fn apply(&mut self, event: &EventMsg, now: Instant) {
        self.events += 1;
        match event {
            EventMsg::McpServerIdle(e) => {
                let row = self.server(&e.server);
                row.transport = e.transport.clone();
                row.phase = ServerPhase::Idle;
                row.tools = e.tools;
            }
            EventMsg::McpServerStarting(e) => {
                let row = self.server(&e.server);
                row.transport = e.transport.clone();
                row.phase = ServerPhase::Starting;
            }
            EventMsg::McpServerReady(e) => {
                let row = self.server(&e.server);
                row.phase = ServerPhase::Ready;
                row.protocol = e.protocol_version.clone();
                row.tools = Some(e.tools);
                row.resources = e.capabilities.resources;
            }
            EventMsg::McpServerFailed(e) => {
                let row = self.server(&e.server);
                row.phase = ServerPhase::Failed;
                row.last_error = Some(e.error.clone());
            }
            EventMsg::McpServerStopped(e) => self.server(&e.server).phase = ServerPhase::Stopped,
            EventMsg::McpServerRestarting(e) => {
                let row = self.server(&e.server);
                row.phase = ServerPhase::Restarting;
                row.restarts = e.attempt;
                row.last_error = Some(e.reason.clone());
            }
            EventMsg::McpToolDefinitionChanged(e) => {
                use router_protocol::DefinitionDecision;
                let key = (e.kind, e.tool.clone());
                let held = &mut self.server(&e.server).held;
                match e.decision {
                    DefinitionDecision::Held | DefinitionDecision::Refused => held.insert(key),
                    _ => held.remove(&key),
                };
                self.notice(describe(event));
            }
            EventMsg::McpToolCallBegin(e) => self.begin_call(e, now),
            EventMsg::McpToolCallEnd(e) => self.end_call(e, now),
            EventMsg::McpToolCallProgress(e) => self.progress(e),
            EventMsg::McpTaskStatus(e) if !e.background && e.call_id.is_some() => {
                self.task_status(e)
            }
            // A call waiting on the user: its row says so until the host answers.
            EventMsg::McpServerRequestBegin(e) if e.call_id.is_some() => {
                let waiting = format!("waiting on the host: {}", e.method);
                self.set_progress(e.call_id.as_deref(), Some(waiting));
                self.notice(describe(event));
            }
            EventMsg::McpServerRequest(e) if e.call_id.is_some() => {
                self.set_progress(e.call_id.as_deref(), None);
                self.notice(describe(event));
            }
            other => self.notice(describe(other)),
        }
    }

    /// A call's begin event: a row for it, or the row its output made first.
    fn begin_call(&mut self, e: &router_protocol::McpToolCallBeginEvent, now: Instant) {
        let server = e.invocation.server.clone().unwrap_or_else(|| "(all)".into());
        let arguments =
            e.invocation.arguments.as_ref().map_or_else(|| "null".into(), |a| a.to_string());
        // The output overtook its begin: the row it made is this call's (its end
        // event finishes it), not a second one.
        let by_output = self.calls.iter_mut().rev().find(|c| c.call_id == e.call_id && c.by_output);
        if let Some(call) = by_output {
            call.server = server;
            call.tool = e.invocation.tool.clone();
            call.arguments = arguments;
            return;
        }
        self.add_call(CallRow {
            call_id: e.call_id.clone(),
            server,
            tool: e.invocation.tool.clone(),
            arguments,
            began: now,
            finished: None,
            by_output: false,
            progress: None,
        });
    }

    /// A call's end event: its row finishes (or appears, when no begin was seen).
    fn end_call(&mut self, e: &router_protocol::McpToolCallEndEvent, now: Instant) {
        let finished = finished(e);
        match self
            .calls
            .iter_mut()
            .rev()
            .find(|c| c.call_id == e.call_id && (c.finished.is_none() || c.by_output))
        {
            // A row its output made first (the output overtook the event) becomes
            // the call's.
            Some(call) if call.by_output => {
                call.server = e.invocation.server.clone().unwrap_or_else(|| "(all)".into());
                call.tool = e.invocation.tool.clone();
                call.by_output = false;
                let detail = call.finished.take().and_then(|f| f.detail);
                call.finished = Some(Finished { detail: finished.detail.or(detail), ..finished });
            }
            Some(call) => call.finished = Some(finished),
            None => self.add_call(CallRow {
                call_id: e.call_id.clone(),
                server: e.invocation.server.clone().unwrap_or_else(|| "(all)".into()),
                tool: e.invocation.tool.clone(),
                arguments: String::new(),
                began: now,
                finished: Some(finished),
                by_output: false,
                progress: None,
            }),
        }
    }

    /// A server's progress report: shown on its call's row while the call is in flight.
    fn progress(&mut self, e: &router_protocol::McpToolCallProgressEvent) {
        let call = self.calls.iter_mut().rev().find(|c| c.call_id == e.call_id);
        if let Some(call) = call.filter(|c| c.finished.is_none()) {
            call.progress = Some(progress_text(e));
        }
    }

    /// A server's task status for a call in flight (SEP-2663): shown on its call's row.
    fn task_status(&mut self, e: &router_protocol::McpTaskStatusEvent) {
        let message = e.status_message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
        self.set_progress(e.call_id.as_deref(), Some(format!("task {}{message}", e.status)));
    }

    /// What an unfinished call's row says while in flight.
    fn set_progress(&mut self, call_id: Option<&str>, progress: Option<String>) {
        let call = self.calls.iter_mut().rev().find(|c| Some(c.call_id.as_str()) == call_id);
        if let Some(call) = call.filter(|c| c.finished.is_none()) {
            call.progress = progress;
        }
    }

    /// A key; `true` asks to quit.
    pub(crate) fn key(&mut self, code: KeyCode, modifiers: KeyModifiers, now: Instant) -> bool {
        match code {
            KeyCode::Char('q') | KeyCode::Esc => return true,
            KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => return true,
            KeyCode::Char('c') => self.show_costs = !self.show_costs,
            KeyCode::Char('p') | KeyCode::Char(' ') => match self.paused.take() {
                Some(queued) => {
                    for item in queued {
                        self.take(item, now);
                    }
                }
                None => self.paused = Some(Vec::new()),
            },
            KeyCode::Up => {
                let last = self.calls.len().checked_sub(1);
                self.selected = match self.selected {
                    None => last,
                    Some(i) => Some(i.saturating_sub(1)),
                };
            }
            KeyCode::Down => {
                self.selected = match self.selected {
                    Some(i) if i + 1 < self.calls.len() => Some(i + 1),
                    other => other,
                };
            }
            _ => {}
        }
        false
    }

    /// Draw everything as it stands at `now`.
    pub(crate) fn draw(&self, frame: &mut Frame<'_>, now: Instant) {
        // A small terminal (80×24) gives the calls the room first: the other panels shrink.
        let height = frame.area().height;
        let small = height < 30;
        // A selected call gets its detail pane's few lines (call, arguments, outcome) even
        // then: the servers give up the room.
        let detail_height = match (small, self.selected.is_some()) {
            (false, _) => 8,
            (true, true) => 6,
            (true, false) => 3,
        };
        let servers_most =
            if small { (height / 2).saturating_sub(2 + (detail_height - 3)).max(4) } else { 12 };
        let servers_height = (self.servers.len() as u16 + 3).min(servers_most);
        let [header, servers, calls, detail, notices, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(servers_height),
            Constraint::Min(5),
            Constraint::Length(detail_height),
            Constraint::Length(if small { 3 } else { 5 }),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let width = frame.area().width;
        let in_flight = self.calls.iter().filter(|c| c.finished.is_none()).count();
        let failed =
            self.calls.iter().filter(|c| c.finished.as_ref().is_some_and(|f| !f.ok)).count();
        let mut status = format!(
            "{} — {} servers, {} calls ({in_flight} in flight, {failed} failed), {} events",
            self.title,
            self.servers.len(),
            self.calls.len(),
            self.events
        );
        if self.paused.is_some() {
            status.push_str(" — PAUSED");
        }
        if self.ended {
            status.push_str(" — stream ended");
        }
        frame.render_widget(
            Paragraph::new(status).style(Style::new().add_modifier(Modifier::BOLD)),
            header,
        );
        frame.render_widget(self.servers_table(width), servers);
        let room = calls.height.saturating_sub(3) as usize;
        match self.show_costs {
            true => frame.render_widget(self.costs(width, calls.height), calls),
            false => frame.render_widget(self.calls_table(now, room, width), calls),
        }
        frame.render_widget(self.detail(now), detail);
        let shown = notices.height.saturating_sub(2) as usize;
        let lines: Vec<Line<'_>> = self
            .notices
            .iter()
            .skip(self.notices.len().saturating_sub(shown))
            .map(|n| Line::raw(n.as_str()))
            .collect();
        frame.render_widget(
            Paragraph::new(lines).block(Block::new().borders(Borders::ALL).title(" notices ")),
            notices,
        );
        frame.render_widget(
            Paragraph::new("q quit   p pause   ↑/↓ select a call   c costs")
                .style(Style::new().fg(Color::DarkGray)),
            footer,
        );
    }

    /// The server column's width and each name as shown, for both tables alike, in at most
    /// `room` columns.
    fn names(&self, room: usize) -> (u16, BTreeMap<String, String>) {
        let servers = self.servers.keys().map(String::as_str);
        shown_names(servers.chain(self.calls.iter().map(|c| c.server.as_str())), room)
    }

    /// The calls shown in `room` rows, oldest first: the selected one, then those in flight,
    /// then the newest — so a call in flight, or the one selected, never scrolls out of view.
    fn visible_calls(&self, room: usize) -> Vec<usize> {
        let newest_first = (0..self.calls.len()).rev();
        let in_flight = newest_first.clone().filter(|&i| self.calls[i].finished.is_none());
        // With a call selected, the rest of the room goes to its neighbours (nearest first,
        // the later one before the earlier), so the rows around it stay in their order.
        let mut around: Vec<usize> = (0..self.calls.len()).collect();
        if let Some(selected) = self.selected {
            around.sort_by_key(|&i| (i.abs_diff(selected), std::cmp::Reverse(i)));
        } else {
            around.reverse();
        }
        let mut shown: Vec<usize> = Vec::with_capacity(room);
        for i in self.selected.into_iter().chain(in_flight).chain(around) {
            if shown.len() == room {
                break;
            }
            if !shown.contains(&i) {
                shown.push(i);
            }
        }
        shown.sort_unstable();
        shown
    }

    fn calls_table(&self, now: Instant, room: usize, columns: u16) -> Table<'_> {
        let (width, names) = self.names(name_room(columns));
        // The tool column takes what the others leave, up to 30.
        let tool = (columns as usize).saturating_sub(12 + width as usize + 12 + 20 + 4 + 2);
        let tool = tool.clamp(CALL_TOOL_MIN, 30) as u16;
        let shown = self.visible_calls(room);
        let rows = shown.into_iter().map(|i| (i, &self.calls[i])).map(move |(i, c)| {
            let (elapsed, outcome, style) = match &c.finished {
                None => (
                    format!("{:.1} s …", now.saturating_duration_since(c.began).as_secs_f64()),
                    match &c.progress {
                        Some(progress) => format!("in flight {progress}"),
                        None => "in flight".to_string(),
                    },
                    Style::new().fg(Color::Yellow),
                ),
                Some(f) => (
                    format!("{:.1} ms", f.duration.as_secs_f64() * 1000.0),
                    f.summary.clone(),
                    if f.ok { Style::new() } else { Style::new().fg(Color::Red) },
                ),
            };
            let style = if Some(i) == self.selected {
                style.add_modifier(Modifier::REVERSED)
            } else {
                style
            };
            let server = names.get(&c.server).cloned().unwrap_or_else(|| c.server.clone());
            Row::new(vec![c.call_id.clone(), server, c.tool.clone(), elapsed, outcome]).style(style)
        });
        Table::new(
            rows,
            [
                Constraint::Length(12),
                Constraint::Length(width),
                Constraint::Length(tool),
                Constraint::Length(12),
                Constraint::Min(20),
            ],
        )
        .header(
            Row::new(["call", "server", "tool", "duration", "outcome"])
                .style(Style::new().add_modifier(Modifier::BOLD)),
        )
        .block(Block::new().borders(Borders::ALL).title(" calls "))
    }

    fn detail(&self, now: Instant) -> Paragraph<'_> {
        let text = match self.selected.and_then(|i| self.calls.get(i)) {
            None => vec![Line::raw("(no call selected)")],
            Some(c) => {
                let state = match &c.finished {
                    None => format!(
                        "in flight for {:.1} s",
                        now.saturating_duration_since(c.began).as_secs_f64()
                    ),
                    Some(f) => format!(
                        "{} in {:.3} ms{}{}, {} bytes{}",
                        if f.ok { "ok" } else { "FAILED" },
                        f.duration.as_secs_f64() * 1000.0,
                        f.items.map(|i| format!(", {i} items")).unwrap_or_default(),
                        f.pages.map(|p| format!(", {p} pages")).unwrap_or_default(),
                        f.bytes,
                        if f.truncated { ", truncated" } else { "" }
                    ),
                };
                vec![
                    Line::from(vec![
                        Span::styled("call ", Style::new().add_modifier(Modifier::BOLD)),
                        Span::raw(format!("{} {} {}: {state}", c.call_id, c.server, c.tool)),
                    ]),
                    Line::raw(format!("arguments {}", c.arguments)),
                    // A failure's whole text (wrapped), otherwise the summary.
                    Line::raw(
                        c.finished
                            .as_ref()
                            .map(|f| f.detail.clone().unwrap_or_else(|| f.summary.clone()))
                            .unwrap_or_default(),
                    ),
                ]
            }
        };
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .block(Block::new().borders(Borders::ALL).title(" selected call "))
    }
}

fn finished(e: &router_protocol::McpToolCallEndEvent) -> Finished {
    let (ok, bytes, truncated, summary) = match &e.result {
        Ok(result) => {
            let text = result.text();
            let truncated =
                text.contains("\"truncated\":true") || text.contains("\"incomplete\":[{");
            let ok = !result.is_error();
            let summary = match &e.summary {
                Some(s) if !s.failed_servers.is_empty() => format!(
                    "{} items, {} failed: {}",
                    s.items,
                    s.failed_servers.len(),
                    s.failed_servers
                        .iter()
                        .map(|f| f.server.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some(s) if counts_pages(&e.invocation.tool) => {
                    format!("{} items, {} pages, {} servers", s.items, s.pages, s.servers)
                }
                Some(s) if e.invocation.tool == tool_router::READ_MCP_RESOURCE => {
                    format!("{} contents", s.items)
                }
                _ if ok => "ok".to_string(),
                _ => format!("isError: {}", first_line(&text)),
            };
            (ok, text.len(), truncated, summary)
        }
        Err(message) => (false, 0, false, format!("error: {}", first_line(message))),
    };
    let detail = match &e.result {
        Err(message) => Some(cut(message, MAX_DETAIL)),
        Ok(result) if !ok => Some(cut(&result.text(), MAX_DETAIL)),
        Ok(_) => None,
    };
    let paged = e.summary.as_ref().filter(|_| counts_pages(&e.invocation.tool));
    Finished {
        duration: e.duration,
        ok,
        items: paged.map(|s| s.items),
        pages: paged.map(|s| s.pages),
        bytes,
        truncated,
        summary,
        detail,
    }
}

/// Whether a tool's end summary counts items, pages and servers (the list tools); other tools
/// (search, skills, prompts, reads) are summed up otherwise.
fn counts_pages(tool: &str) -> bool {
    tool == tool_router::LIST_MCP_RESOURCES || tool == tool_router::LIST_MCP_RESOURCE_TEMPLATES
}

/// One readable line per event (what `watch` prints when stdout is not a terminal, and the
/// notices panel).
pub(crate) fn describe(event: &EventMsg) -> String {
    mcp_host::render::describe(event)
}

/// The view on the controlling terminal, on its own thread.
pub(crate) struct LiveView {
    events: Option<mpsc::Sender<ViewItem>>,
    thread: Option<std::thread::JoinHandle<()>>,
    quit: mpsc::Receiver<()>,
}

impl LiveView {
    /// Open the view on `/dev/tty`. `Err` says why there is none (no terminal).
    pub(crate) fn open(title: &str) -> Result<Self, String> {
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .map_err(|e| format!("no terminal for the live view (/dev/tty: {e})"))?;
        let (tx, rx) = mpsc::channel();
        let (quit_tx, quit) = mpsc::channel();
        let title = title.to_string();
        let thread = std::thread::Builder::new()
            .name("live-view".into())
            .spawn(move || {
                if let Err(e) = run_view(tty, rx, &title) {
                    tracing::warn!(error = %e, "the live view stopped");
                }
                let _ = quit_tx.send(());
            })
            .map_err(|e| format!("cannot start the live view: {e}"))?;
        Ok(Self { events: Some(tx), thread: Some(thread), quit })
    }

    /// Queue an item for the view (never blocks).
    pub(crate) fn send(&self, item: impl Into<ViewItem>) {
        if let Some(tx) = &self.events {
            let _ = tx.send(item.into());
        }
    }

    /// A sender to feed the view from another task.
    pub(crate) fn sender(&self) -> Option<mpsc::Sender<ViewItem>> {
        self.events.clone()
    }

    /// Whether the person closed the view.
    pub(crate) fn closed(&self) -> bool {
        !matches!(self.quit.try_recv(), Err(mpsc::TryRecvError::Empty))
    }

    /// Say the stream ended and wait until the person quits (`q`).
    pub(crate) fn wait_for_quit(mut self) {
        self.events.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// Close the view now, restoring the terminal.
    pub(crate) fn close(mut self) {
        self.events.take();
        if let Some(thread) = self.thread.take() {
            CLOSE_NOW.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = thread.join();
        }
    }
}

/// Set by [`LiveView::close`]: the view thread leaves at once instead of waiting for `q`.
static CLOSE_NOW: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Restores the terminal when the view ends, however it ends.
struct TerminalGuard(std::fs::File);

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = crossterm::execute!(
            self.0,
            crossterm::terminal::LeaveAlternateScreen,
            crossterm::cursor::Show
        );
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = self.0.flush();
    }
}

fn run_view(
    tty: std::fs::File,
    events: mpsc::Receiver<ViewItem>,
    title: &str,
) -> std::io::Result<()> {
    let mut out = tty.try_clone()?;
    crossterm::terminal::enable_raw_mode()?;
    crossterm::execute!(out, crossterm::terminal::EnterAlternateScreen, crossterm::cursor::Hide)?;
    let _guard = TerminalGuard(out);
    let backend = ratatui::backend::CrosstermBackend::new(tty);
    let mut terminal = ratatui::Terminal::new(backend)?;
    let mut state = LiveState::new(title);
    let frame = Duration::from_millis(100);
    loop {
        loop {
            match events.try_recv() {
                Ok(event) => state.push(event, Instant::now()),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    state.end();
                    break;
                }
            }
        }
        if CLOSE_NOW.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        terminal.draw(|f| state.draw(f, Instant::now()))?;
        if crossterm::event::poll(frame)? {
            match crossterm::event::read()? {
                Event::Key(key)
                    if key.kind == KeyEventKind::Press
                        && state.key(key.code, key.modifiers, Instant::now()) =>
                {
                    return Ok(());
                }
                Event::Resize(_, _) => terminal.autoresize()?,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
