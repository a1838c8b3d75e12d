//! The live view's panels beside the calls: the servers table, and the costs panel — the
//! ledger's bars, each server's share of the loaded specs (with its spec tokens) and its p95
//! latency (with its calls and errors), drawn when `c` is pressed in place of the calls.

use ratatui::layout::Constraint;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Wrap};
use router_protocol::ServerCost;

use super::text::{NARROW_SERVER_COLUMNS, keep_columns, name_room, tools_cell};
use super::{LiveState, ServerPhase};

impl LiveState {
    /// The servers; a terminal under 100 columns leaves out protocol, resources and restarts.
    pub(super) fn servers_table(&self, columns: u16) -> Table<'_> {
        let narrow = columns < 100;
        let (width, names) = self.names(name_room(columns));
        let rows = self.servers.iter().map(move |(name, s)| {
            let (phase, color) = match s.phase {
                ServerPhase::Idle => ("idle", Color::Gray),
                ServerPhase::Starting => ("starting", Color::Yellow),
                ServerPhase::Ready => ("ready", Color::Green),
                ServerPhase::Failed => ("failed", Color::Red),
                ServerPhase::Restarting => ("restarting", Color::Yellow),
                ServerPhase::Stopped => ("stopped", Color::Gray),
            };
            let mut cells = vec![
                Cell::from(names.get(name).cloned().unwrap_or_default()),
                Cell::from(s.transport.as_str()),
                Cell::from(phase).style(Style::new().fg(color)),
                Cell::from(s.protocol.as_str()),
                Cell::from(tools_cell(s.tools, s.held.len())),
                Cell::from(if s.resources { "yes" } else { "" }),
                Cell::from(s.restarts.to_string()),
                Cell::from(s.last_error.as_deref().unwrap_or("")),
            ];
            if narrow {
                keep_columns(&mut cells, NARROW_SERVER_COLUMNS);
            }
            Row::new(cells)
        });
        let mut widths = vec![
            Constraint::Length(width),
            Constraint::Length(15),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(12),
            Constraint::Length(9),
            Constraint::Length(8),
            Constraint::Min(10),
        ];
        let mut header = vec![
            "server",
            "transport",
            "state",
            "protocol",
            "tools",
            "resources",
            "restarts",
            "last error",
        ];
        if narrow {
            keep_columns(&mut widths, NARROW_SERVER_COLUMNS);
            keep_columns(&mut header, NARROW_SERVER_COLUMNS);
        }
        Table::new(rows, widths)
            .header(Row::new(header).style(Style::new().add_modifier(Modifier::BOLD)))
            .block(Block::new().borders(Borders::ALL).title(" servers "))
    }

    /// The costs panel in `width` × `height`: a row per server, the most context first.
    pub(super) fn costs(&self, width: u16, height: u16) -> Paragraph<'_> {
        let Some(report) = &self.ledger else {
            let block = Block::new().borders(Borders::ALL).title(" costs (c: calls) ");
            let waiting =
                "no ledger yet: exec sends one after each call, and answers {\"type\": \"ledger\"}";
            return Paragraph::new(waiting).wrap(Wrap { trim: true }).block(block);
        };
        let title = format!(" costs, tokens: {} (c: calls) ", report.tokenizer);
        let block = Block::new().borders(Borders::ALL).title(title);
        let mut servers: Vec<&ServerCost> = report.servers.iter().collect();
        servers.sort_by(|a, b| {
            b.spec_tokens_loaded.cmp(&a.spec_tokens_loaded).then(a.server.cmp(&b.server))
        });
        let inner = width.saturating_sub(2) as usize;
        let name = servers.iter().map(|s| s.server.chars().count()).max().unwrap_or(0).clamp(6, 16);
        let wide = inner >= 100;
        // name, bar, " 100%", " 123456 tok", " │ ", bar, " 12.34 s", and when wide the calls.
        let fixed = name + 1 + 5 + 11 + 3 + 9 + if wide { 18 } else { 0 };
        let bar = (inner.saturating_sub(fixed) / 2).max(3);
        let slowest = servers.iter().map(|s| s.p95_ms).fold(0.0, f64::max);
        let cut = |text: &str| -> String { text.chars().take(bar).collect() };
        let header = format!(
            "{:<name$} {:<bar$}{:>16} │ {:<bar$}{:>9}",
            "server",
            cut("share of specs"),
            "spec tokens",
            cut("latency, p95"),
            "",
        );
        let mut lines = vec![Line::styled(header, Style::new().add_modifier(Modifier::BOLD))];
        let room = (height as usize).saturating_sub(3);
        let shown = if servers.len() > room { room.saturating_sub(1) } else { servers.len() };
        for s in servers.iter().take(shown) {
            lines.push(cost_line(s, name, bar, slowest, wide));
        }
        if servers.len() > shown {
            lines.push(Line::raw(format!(
                "… {} more servers (mcp-router stats)",
                servers.len() - shown
            )));
        }
        for warning in
            report.warnings.iter().take((height as usize).saturating_sub(2 + lines.len()))
        {
            lines.push(Line::styled(format!("warning: {warning}"), Style::new().fg(Color::Yellow)));
        }
        Paragraph::new(lines).block(block)
    }
}

/// One server's row of the costs panel.
fn cost_line(s: &ServerCost, name: usize, bar: usize, slowest: f64, wide: bool) -> Line<'static> {
    let shown: String = s.server.chars().take(name).collect();
    let latency = if slowest > 0.0 { s.p95_ms / slowest } else { 0.0 };
    let mut spans = vec![
        Span::raw(format!("{shown:<name$} ")),
        Span::styled(filled(s.context_share, bar), Style::new().fg(Color::Cyan)),
        Span::raw(format!("{:>4.0}%{:>7} tok │ ", 100.0 * s.context_share, s.spec_tokens_loaded)),
        Span::styled(filled(latency, bar), Style::new().fg(Color::Magenta)),
        Span::raw(format!("{:>9}", p95(s))),
    ];
    if wide {
        let errors = if s.errors > 0 { format!(", {} failed", s.errors) } else { String::new() };
        spans.push(Span::raw(format!("  {} calls{errors}", s.calls)));
    }
    Line::from(spans)
}

/// A bar of `width` cells, `share` (0 to 1) of them filled.
fn filled(share: f64, width: usize) -> String {
    let full = ((share.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    "█".repeat(full) + &"░".repeat(width - full)
}

/// A server's p95, or a dash before its first call.
fn p95(s: &ServerCost) -> String {
    match s.calls {
        0 => "—".to_string(),
        _ if s.p95_ms >= 1000.0 => format!("{:.2} s", s.p95_ms / 1000.0),
        _ => format!("{:.1} ms", s.p95_ms),
    }
}
