//! The live view's words and widths: a call's progress, the tools column, cut and elided text,
//! the room a server name gets and the columns a narrow terminal keeps.

use std::collections::BTreeMap;

/// A progress report as the calls table shows it: `7/20 step 7 of 20`, or `7` without a total.
pub(super) fn progress_text(e: &router_protocol::McpToolCallProgressEvent) -> String {
    let count = match e.total {
        Some(total) if total > 0.0 => {
            // A bar of ten cells, filled as far as the server counts.
            let filled = ((e.progress / total).clamp(0.0, 1.0) * 10.0).round() as usize;
            format!("[{}{}] {}/{}", "#".repeat(filled), ".".repeat(10 - filled), e.progress, total)
        }
        Some(total) => format!("{}/{}", e.progress, total),
        None => e.progress.to_string(),
    };
    match &e.message {
        Some(message) => format!("{count} {message}"),
        None => count,
    }
}

/// The tools column: how many the server offers, and how many definitions are held from the
/// model (`mcp-router trust` lists and approves them).
pub(super) fn tools_cell(tools: Option<usize>, held: usize) -> String {
    let tools = tools.map(|t| t.to_string()).unwrap_or_default();
    match held {
        0 => tools,
        _ if tools.is_empty() => format!("{held} held"),
        _ => format!("{tools}, {held} held"),
    }
}

/// `text`, at most `max` characters.
pub(super) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Server names as the tables show them: whole when the longest fits in [`NAME_WIDTH`] (and
/// in `room` columns), otherwise elided in the middle (`everyt…p_http`), and whole again if
/// eliding would make two names look alike. Returns the column width and the shown names.
pub(super) fn shown_names<'a>(
    names: impl Iterator<Item = &'a str>,
    room: usize,
) -> (u16, BTreeMap<String, String>) {
    let names: Vec<&str> = names.collect();
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0).max(6);
    let fits = NAME_WIDTH.min(room).max(6);
    let elide = |name: &str| -> String {
        let chars: Vec<char> = name.chars().collect();
        if chars.len() <= fits {
            return name.to_string();
        }
        let head = (fits - 1) / 2;
        let tail = fits - 1 - head;
        let mut shown: String = chars[..head].iter().collect();
        shown.push('…');
        shown.extend(&chars[chars.len() - tail..]);
        shown
    };
    let elided: BTreeMap<String, String> =
        names.iter().map(|n| (n.to_string(), elide(n))).collect();
    let distinct: std::collections::BTreeSet<&String> = elided.values().collect();
    if distinct.len() == elided.len() {
        (longest.min(fits) as u16, elided)
    } else {
        (longest as u16, names.iter().map(|n| (n.to_string(), n.to_string())).collect())
    }
}

/// Widest a server name is shown before it is elided.
pub(super) const NAME_WIDTH: usize = 24;
/// The narrowest the calls' tool column gets.
pub(super) const CALL_TOOL_MIN: usize = 16;
/// The server columns a terminal under 100 columns shows: server, transport, state, tools,
/// last error.
pub(super) const NARROW_SERVER_COLUMNS: [usize; 5] = [0, 1, 2, 4, 7];

/// Columns left for the server name in tables `columns` wide: what the other columns, their
/// gaps and the borders leave in the narrower of the two tables, so a name shows alike in both.
pub(super) fn name_room(columns: u16) -> usize {
    let servers = if columns < 100 {
        15 + 10 + 12 + 10 + 4 + 2
    } else {
        15 + 10 + 10 + 12 + 9 + 8 + 10 + 7 + 2
    };
    let calls = 12 + CALL_TOOL_MIN + 12 + 20 + 4 + 2;
    (columns as usize).saturating_sub(servers.max(calls)).max(6)
}

/// `items` without the columns `keep` leaves out.
pub(super) fn keep_columns<T>(items: &mut Vec<T>, keep: [usize; 5]) {
    let mut i = 0;
    items.retain(|_| {
        let kept = keep.contains(&i);
        i += 1;
        kept
    });
}

pub(super) fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(120) {
        Some((cut, _)) => &line[..cut],
        None => line,
    }
}
