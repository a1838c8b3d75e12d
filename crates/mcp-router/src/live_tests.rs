//! The live view's tests: its state and what it draws, on ratatui's test backend.
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use router_protocol::{
    CallResult, McpInvocation, McpServerFailedEvent, McpServerIdleEvent, McpServerReadyEvent,
    McpServerStartingEvent, McpToolCallBeginEvent, McpToolCallEndEvent, ResourceCallSummary,
    ServerCapabilitySummary, SharedText,
};
use serde_json::json;

use super::*;

fn begin(id: &str, server: &str, tool: &str) -> EventMsg {
    EventMsg::McpToolCallBegin(McpToolCallBeginEvent {
        ui_resource_uri: None,
        call_id: id.into(),
        invocation: McpInvocation {
            server: Some(server.into()),
            tool: tool.into(),
            arguments: Some(std::sync::Arc::new(
                json!({"server": server, "uri": "demo://notes/welcome"}),
            )),
        },
        arguments_truncated_from: None,
    })
}

fn end(
    id: &str,
    server: &str,
    tool: &str,
    ms: u64,
    result: Result<CallResult, String>,
) -> EventMsg {
    EventMsg::McpToolCallEnd(Box::new(McpToolCallEndEvent {
        ui_resource_uri: None,
        call_id: id.into(),
        invocation: McpInvocation {
            server: Some(server.into()),
            tool: tool.into(),
            arguments: None,
        },
        duration: Duration::from_millis(ms),
        result,
        result_omitted: false,
        arguments_truncated_from: None,
        result_truncated_from: None,
        summary: Some(ResourceCallSummary {
            items: 1,
            pages: 1,
            servers: 1,
            failed_servers: vec![],
        }),
    }))
}

/// A starting server, a ready one, a failed one, an idle one, a finished call, a failed call and one in
/// flight for 2.5 s.
fn scripted() -> (LiveState, Instant) {
    let t0 = Instant::now();
    let mut state = LiveState::new("mcp-router live");
    let starting = |s: &str| {
        EventMsg::McpServerStarting(McpServerStartingEvent {
            server: s.into(),
            transport: "stdio".into(),
        })
    };
    for s in ["docs", "notes", "ghost"] {
        state.push(starting(s), t0);
    }
    state.push(
        EventMsg::McpServerIdle(McpServerIdleEvent {
            server: "time".into(),
            transport: "stdio".into(),
            tools: Some(2),
        }),
        t0,
    );
    state.push(
        EventMsg::McpServerReady(McpServerReadyEvent {
            server: "docs".into(),
            elapsed: Duration::from_millis(250),
            server_info: "demo 0.1.0".into(),
            protocol_version: "2026-07-28".into(),
            capabilities: ServerCapabilitySummary {
                tools: true,
                resources: true,
                ..Default::default()
            },
            tools: 12,
            sandbox: None,
        }),
        t0,
    );
    state.push(
        EventMsg::McpServerFailed(McpServerFailedEvent {
            server: "ghost".into(),
            elapsed: Duration::from_millis(3),
            error: "failed to spawn `nope`: No such file or directory".into(),
        }),
        t0,
    );
    state.push(begin("call-1", "docs", "read_mcp_resource"), t0);
    let payload = CallResult::Text(SharedText::from(r#"{"contents":[{"text":"hi"}]}"#));
    state.push(end("call-1", "docs", "read_mcp_resource", 12, Ok(payload)), t0);
    state.push(begin("call-2", "docs", "read_mcp_resource"), t0);
    state.push(
        end(
            "call-2",
            "docs",
            "read_mcp_resource",
            3,
            Err("resources/read failed: not found".into()),
        ),
        t0,
    );
    state.push(begin("call-3", "docs", "mcp__docs__sleep"), t0);
    (state, t0 + Duration::from_millis(2_500))
}

fn render(state: &LiveState, now: Instant, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal.draw(|f| state.draw(f, now)).expect("draw");
    let buffer = terminal.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let line: String =
            (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_string()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[test]
fn the_view_of_a_scripted_session() {
    let (mut state, now) = scripted();
    insta::assert_snapshot!("live_scripted", render(&state, now, 110, 30));
    // Select the failed call: its detail shows.
    state.key(KeyCode::Up, KeyModifiers::NONE, now);
    state.key(KeyCode::Up, KeyModifiers::NONE, now);
    insta::assert_snapshot!("live_selected_failure", render(&state, now, 110, 30));
    // A smaller terminal still draws (resizing).
    let small = render(&state, now, 60, 20);
    assert!(small.contains("servers"), "{small}");
}

#[test]
fn pause_holds_events_and_quit_keys_quit() {
    let (mut state, now) = scripted();
    state.key(KeyCode::Char('p'), KeyModifiers::NONE, now);
    state.push(
        end("call-3", "docs", "mcp__docs__sleep", 2_400, Ok(CallResult::Text("x".into()))),
        now,
    );
    assert!(render(&state, now, 110, 30).contains("in flight"));
    assert!(render(&state, now, 110, 30).contains("PAUSED"));
    state.key(KeyCode::Char('p'), KeyModifiers::NONE, now);
    let after = render(&state, now, 110, 30);
    assert!(after.contains("2400.0 ms"), "{after}");
    assert!(!after.contains("PAUSED"));
    assert!(state.key(KeyCode::Char('q'), KeyModifiers::NONE, now));
    assert!(state.key(KeyCode::Char('c'), KeyModifiers::CONTROL, now));
    assert!(!state.key(KeyCode::Char('x'), KeyModifiers::NONE, now));
}

/// At 80×24 with six servers: every server shows, two names with a common start never
/// look alike, and calls in flight stay in view however many calls finished after them,
/// as does the selected one.
#[test]
fn a_small_terminal_keeps_servers_calls_in_flight_and_the_selection_in_view() {
    let now = Instant::now();
    let mut state = LiveState::new("t");
    let servers = ["everything", "everything_http", "filesystem", "memory", "time", "git"];
    for server in servers {
        state.push(
            EventMsg::McpServerStarting(McpServerStartingEvent {
                server: server.into(),
                transport: "stdio".into(),
            }),
            now,
        );
    }
    state.push(begin("slow-1", "everything_http", "mcp__everything_http__echo"), now);
    state.push(begin("slow-2", "git", "mcp__git__git_log"), now);
    for n in 0..20 {
        let id = format!("fast-{n}");
        state.push(begin(&id, "time", "mcp__time__get_current_time"), now);
        let done = Ok(CallResult::Text("x".into()));
        state.push(end(&id, "time", "mcp__time__get_current_time", 3, done), now);
    }
    let screen = render(&state, now, 80, 24);
    // Elided in the middle where the column is short, never to another's name.
    let shown = ["everything", "everyt…ng_http", "filesystem", "memory", "time", "git"];
    for server in shown {
        assert!(screen.contains(&format!("│{server} ")), "{server}:\n{screen}");
    }
    assert!(screen.contains("slow-1") && screen.contains("slow-2"), "{screen}");
    assert!(screen.contains("fast-19"), "the newest finished call shows too:\n{screen}");
    // Select an old finished call: it comes into view, the calls in flight stay.
    for _ in 0..15 {
        state.key(KeyCode::Up, KeyModifiers::NONE, now);
    }
    let screen = render(&state, now, 80, 24);
    let selected = state.selected.map(|i| state.calls[i].call_id.clone()).expect("selected");
    assert!(screen.contains(&format!("{selected} ")), "{selected}:\n{screen}");
    assert!(screen.contains("slow-1") && screen.contains("slow-2"), "{screen}");
}

/// Names that share a prefix stay told apart in both tables; a long failure is shown
/// whole in the detail; calls rejected before any event, and exec's error lines, appear.
#[test]
fn long_names_rejected_calls_and_whole_errors() {
    let now = Instant::now();
    let mut state = LiveState::new("t");
    for server in [
        "everything",
        "everything_http",
        "a_very_long_server_name_for_the_team_one",
        "a_very_long_server_name_for_the_team_two",
    ] {
        state.push(
            EventMsg::McpServerStarting(McpServerStartingEvent {
                server: server.into(),
                transport: "stdio".into(),
            }),
            now,
        );
    }
    state.push(begin("c1", "everything_http", "mcp__everything_http__echo"), now);
    let long = format!(
        "tool call error: connection to MCP server 'everything_http' failed: {}",
        "x".repeat(300)
    );
    state.push(
        end("c1", "everything_http", "mcp__everything_http__echo", 5, Err(long.clone())),
        now,
    );
    state.push(
        ViewItem::Output {
            call_id: "c2".into(),
            name: Some("no_such_tool".into()),
            ok: false,
            text: "unsupported call: no_such_tool".into(),
        },
        now,
    );
    state.push(
        ViewItem::Error {
            message: "invalid input line: expected value".into(),
            line: Some(7),
            call_id: None,
        },
        now,
    );
    let screen = render(&state, now, 160, 40);
    assert!(screen.contains("│everything_http "), "{screen}");
    assert!(screen.contains("│everything "), "{screen}");
    assert!(screen.contains("c1           everything_http "), "{screen}");
    // Elided in the middle, still two different names.
    assert!(screen.contains("a_very_long…the_team_one"), "{screen}");
    assert!(screen.contains("a_very_long…the_team_two"), "{screen}");
    assert!(screen.contains("c2           —"), "{screen}");
    assert!(screen.contains("rejected: unsupported call: no_such_tool"), "{screen}");
    assert!(
        screen.contains("error (input line 7): invalid input line: expected value"),
        "{screen}"
    );
    state.key(KeyCode::Up, KeyModifiers::NONE, now);
    state.key(KeyCode::Up, KeyModifiers::NONE, now);
    let screen = render(&state, now, 160, 40);
    let shown: String = screen.lines().map(|l| l.trim_matches('│')).collect::<Vec<_>>().concat();
    assert!(shown.contains(&"x".repeat(300)), "the whole error: {screen}");
}

/// A server's progress shows on its call's row while in flight, not in the notices.
#[test]
fn progress_shows_on_the_call_in_flight() {
    let now = Instant::now();
    let mut state = LiveState::new("t");
    state.push(begin("c1", "docs", "progress"), now);
    state.push(
        EventMsg::McpToolCallProgress(router_protocol::McpToolCallProgressEvent {
            call_id: "c1".into(),
            server: "docs".into(),
            progress: 7.0,
            total: Some(20.0),
            message: Some("step 7 of 20".into()),
        }),
        now,
    );
    let screen = render(&state, now, 140, 30);
    assert!(screen.contains("in flight [####......] 7/20 step 7 of 20"), "{screen}");
    assert!(!screen.contains("mcp_tool_call_progress"), "no notice: {screen}");
    state.push(
        EventMsg::McpTaskStatus(router_protocol::McpTaskStatusEvent {
            call_id: Some("c1".into()),
            server: "docs".into(),
            task: "t1".into(),
            status: "input_required".into(),
            status_message: Some("asks for a name".into()),
            background: false,
        }),
        now,
    );
    let screen = render(&state, now, 140, 30);
    assert!(screen.contains("in flight task input_required: asks for a name"), "{screen}");
}

/// An output that overtook its call's begin event leaves one row, finished by the end.
#[test]
fn an_output_before_its_begin_makes_one_row() {
    let now = Instant::now();
    let mut state = LiveState::new("t");
    state.push(
        ViewItem::Output { call_id: "c1".into(), name: None, ok: true, text: "x".into() },
        now,
    );
    state.push(begin("c1", "docs", "mcp__docs__echo"), now);
    state.push(end("c1", "docs", "mcp__docs__echo", 4, Ok(CallResult::Text("x".into()))), now);
    let rows: Vec<&CallRow> = state.calls.iter().collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0].server.as_str(), rows[0].tool.as_str()), ("docs", "mcp__docs__echo"));
    assert_eq!(rows[0].finished.as_ref().map(|f| f.duration), Some(Duration::from_millis(4)));
}

/// Only the list tools count items, pages and servers; a search or a skill says ok.
#[test]
fn only_lists_are_labelled_with_items_and_pages() {
    let now = Instant::now();
    let mut state = LiveState::new("t");
    for (id, tool) in [
        ("l", "list_mcp_resources"),
        ("s", "search_mcp_tools"),
        ("k", "load_mcp_skill"),
        ("r", "read_mcp_resource"),
    ] {
        state.push(begin(id, "docs", tool), now);
        state.push(end(id, "docs", tool, 1, Ok(CallResult::Text("{}".into()))), now);
    }
    let summaries: Vec<&str> = state
        .calls
        .iter()
        .filter_map(|c| c.finished.as_ref().map(|f| f.summary.as_str()))
        .collect();
    assert_eq!(summaries, ["1 items, 1 pages, 1 servers", "ok", "ok", "1 contents"]);
}

/// At 80×24 a selected call shows its call line, its arguments and its outcome.
#[test]
fn a_selected_call_shows_its_detail_at_80_by_24() {
    let (mut state, now) = scripted();
    for server in ["a", "b", "c", "d"] {
        state.push(
            EventMsg::McpServerStarting(McpServerStartingEvent {
                server: server.into(),
                transport: "stdio".into(),
            }),
            now,
        );
    }
    state.key(KeyCode::Up, KeyModifiers::NONE, now);
    state.key(KeyCode::Up, KeyModifiers::NONE, now);
    let screen = render(&state, now, 80, 24);
    assert!(screen.contains("call call-2 docs read_mcp_resource: FAILED"), "{screen}");
    assert!(screen.contains("arguments {\"server\":\"docs\""), "{screen}");
    assert!(screen.contains("resources/read failed: not found"), "{screen}");
}

/// A selected old call is shown among its neighbours, in their order.
#[test]
fn a_selected_call_keeps_its_neighbours_in_order() {
    let now = Instant::now();
    let mut state = LiveState::new("t");
    for n in 0..30 {
        let id = format!("c{n:02}");
        state.push(begin(&id, "time", "mcp__time__now"), now);
        state.push(end(&id, "time", "mcp__time__now", 1, Ok(CallResult::Text("x".into()))), now);
    }
    state.selected = Some(10);
    let shown: Vec<usize> = state.visible_calls(5);
    assert_eq!(shown, [8, 9, 10, 11, 12]);
}

/// A held definition is counted in its server's tools cell until it is approved; a refused
/// one stays held; each decision is also a notice.
#[test]
fn held_definitions_are_counted_until_approved() {
    use router_protocol::{
        DefinitionChange, DefinitionDecision, DefinitionKind, McpToolDefinitionChangedEvent,
    };
    let (mut state, now) = scripted();
    let changed = |kind: DefinitionKind, name: &str, decision: DefinitionDecision| {
        EventMsg::McpToolDefinitionChanged(McpToolDefinitionChangedEvent {
            server: "docs".into(),
            kind,
            tool: name.into(),
            change: DefinitionChange::Changed,
            decision,
            diff: vec![],
            flags: vec![],
            sha256: "0".repeat(64),
        })
    };
    let docs_row = |state: &LiveState| {
        let screen = render(state, now, 110, 30);
        let row = screen.lines().find(|l| l.starts_with("│docs "));
        row.map(str::to_string).expect("docs' row")
    };
    let before = docs_row(&state);
    state.push(changed(DefinitionKind::Tool, "add", DefinitionDecision::Held), now);
    state.push(changed(DefinitionKind::Prompt, "add", DefinitionDecision::Refused), now);
    state.push(changed(DefinitionKind::Skill, "notes", DefinitionDecision::Held), now);
    let row = docs_row(&state);
    assert!(row.contains("3 held"), "{row}");
    state.push(changed(DefinitionKind::Skill, "notes", DefinitionDecision::Approved), now);
    state.push(changed(DefinitionKind::Tool, "add", DefinitionDecision::Accepted), now);
    let row = docs_row(&state);
    assert!(row.contains(", 1 held"), "{row}");
    state.push(changed(DefinitionKind::Prompt, "add", DefinitionDecision::Approved), now);
    assert_eq!(docs_row(&state), before);
}

/// The ledger's report the costs panel draws: three servers, one of them slow and failing.
fn costs_report() -> router_protocol::LedgerReport {
    let server = |name: &str, share: f64, tokens: u64, p95: f64, calls: u64, errors: u64| {
        router_protocol::ServerCost {
            server: name.into(),
            tools_loaded: tokens / 100,
            spec_tokens_loaded: tokens,
            context_share: share,
            calls,
            errors,
            p95_ms: p95,
            ..Default::default()
        }
    };
    router_protocol::LedgerReport {
        tokenizer: "o200k_base".into(),
        runs: 1,
        since: Some(1),
        servers: vec![
            server("docs", 0.25, 877, 52.4, 3, 0),
            server("github_enterprise_server", 0.7, 2400, 1250.0, 5, 2),
            server("notes", 0.05, 150, 0.0, 0, 0),
        ],
        tools: vec![],
        warnings: vec!["MCP server 'github_enterprise_server': its 24 tool specs take …".into()],
    }
}

/// `c` shows the costs in place of the calls, at 80×24 and 160×45: a row per server with the
/// most context first, bars for its share and its p95, a dash before its first call, the
/// warnings; `c` again brings the calls back. Before any ledger the panel says how one comes.
#[test]
fn the_costs_panel_at_80x24_and_160x45() {
    let (mut state, now) = scripted();
    state.key(KeyCode::Char('c'), KeyModifiers::NONE, now);
    let waiting = render(&state, now, 80, 24);
    assert!(waiting.contains("no ledger yet"), "{waiting}");
    state.push(ViewItem::Ledger(Box::new(costs_report())), now);
    let small = render(&state, now, 80, 24);
    insta::assert_snapshot!("live_costs_80x24", small);
    let rows: Vec<&str> = small.lines().filter(|l| l.contains('█') || l.contains('░')).collect();
    assert_eq!(rows.len(), 3, "{small}");
    assert!(rows[0].contains("github_enterpri") && rows[0].contains("1.25 s"), "{small}");
    assert!(rows[2].contains("notes") && rows[2].contains('—'), "{small}");
    assert!(small.lines().all(|l| l.chars().count() <= 80), "{small}");
    let large = render(&state, now, 160, 45);
    insta::assert_snapshot!("live_costs_160x45", large);
    assert!(
        large.contains("5 calls, 2 failed") && large.contains("warning: MCP server"),
        "{large}"
    );
    state.key(KeyCode::Char('c'), KeyModifiers::NONE, now);
    let calls = render(&state, now, 80, 24);
    assert!(!calls.contains("costs, tokens") && calls.contains("call-3"), "{calls}");
}
