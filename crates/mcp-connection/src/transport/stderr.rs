//! A stdio server's stderr: each line logged (target `mcp_server_stderr`) with configured env
//! values redacted and long lines cut, and the last few kept for a failure to quote.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

/// Longest stderr line kept in the log.
const MAX_STDERR_LINE: usize = 2_000;
/// Most of a server's last stderr lines a failure quotes: lines, and bytes in all.
const TAIL_LINES: usize = 5;
pub(crate) const TAIL_BYTES: usize = 2048;

/// Log the server's stderr lines (target `mcp_server_stderr`), with configured env values
/// redacted and long lines cut, and keep the last few in `tail` for a failure to quote.
pub(crate) async fn log_stderr(
    server: String,
    stderr: tokio::process::ChildStderr,
    secrets: Vec<String>,
    tail: std::sync::Arc<StderrTail>,
) {
    let mut lines = BufReader::new(stderr).split(b'\n');
    while let Ok(Some(line)) = lines.next_segment().await {
        let mut line = String::from_utf8_lossy(&line).into_owned();
        for secret in &secrets {
            if line.contains(secret.as_str()) {
                line = line.replace(secret.as_str(), "[redacted]");
            }
        }
        cut_at(&mut line, MAX_STDERR_LINE);
        tail.push(&line);
        tracing::info!(target: "mcp_server_stderr", server = %server, "{line}");
    }
    tail.end();
}

/// A server's last stderr lines (secrets already redacted): at most [`TAIL_LINES`] lines and
/// [`TAIL_BYTES`] bytes, without terminal escapes or other control characters, and whether
/// its stderr has ended (every process holding it exited).
#[derive(Default)]
pub(crate) struct StderrTail {
    lines: Mutex<std::collections::VecDeque<String>>,
    ended: tokio::sync::Notify,
    done: AtomicBool,
}

impl StderrTail {
    /// Keeps `line`, cleaned, among the last lines.
    pub(crate) fn push(&self, line: &str) {
        let mut clean = plain(line);
        if clean.trim().is_empty() {
            return;
        }
        cut_at(&mut clean, TAIL_BYTES);
        let Ok(mut lines) = self.lines.lock() else { return };
        lines.push_back(clean);
        while lines.len() > TAIL_LINES || lines.iter().map(String::len).sum::<usize>() > TAIL_BYTES
        {
            lines.pop_front();
        }
    }

    /// The lines kept so far.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.lock().map(|l| l.iter().cloned().collect()).unwrap_or_default()
    }

    fn end(&self) {
        self.done.store(true, Ordering::SeqCst);
        self.ended.notify_waiters();
    }

    /// The lines kept once stderr has ended, waited for up to `grace`; what is kept by then
    /// otherwise.
    pub(crate) async fn wait(&self, grace: Duration) -> Vec<String> {
        let ended = self.ended.notified();
        if !self.done.load(Ordering::SeqCst) {
            let _ = tokio::time::timeout(grace, ended).await;
        }
        self.lines()
    }
}

/// `line` without terminal escape sequences (CSI and OSC) and control characters (tabs become
/// spaces).
pub(crate) fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ESC \.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Cuts `line` to at most `max` bytes, on a character boundary.
pub(crate) fn cut_at(line: &mut String, max: usize) {
    if line.len() > max {
        let mut cut = max;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
    }
}
