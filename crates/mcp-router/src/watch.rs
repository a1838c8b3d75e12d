//! `mcp-router watch`: an exec JSON-lines stream, or a shared router's events socket, in the
//! live view (`crate::live`) or as readable lines.

use std::io::Write as _;

use router_protocol::{EventMsg, ToolOutput};

use crate::live::{LiveView, ViewItem, describe};

/// `mcp-router watch [FILE|SOCKET|-]`: an exec JSON-lines stream (events, outputs, errors), or
/// a shared router's events socket, in the live view when stdout is a terminal (it stays until
/// `q`), else as one readable line each.
pub(crate) fn watch(file: Option<&std::path::Path>) -> anyhow::Result<i32> {
    use std::io::{BufRead, IsTerminal};
    let input = watched(file)?;
    let name = file.map(|p| p.display().to_string()).unwrap_or_else(|| "stdin".into());
    let view = if std::io::stdout().is_terminal() {
        LiveView::open(&format!("mcp-router watch {name}"))
            .inspect_err(|e| eprintln!("mcp-router: {e}; printing lines instead"))
            .ok()
    } else {
        None
    };
    let mut stdout = std::io::stdout().lock();
    for (n, line) in std::io::BufReader::new(input).lines().enumerate() {
        let line = line.map_err(|e| anyhow::anyhow!("cannot read {name}: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let text = match serde_json::from_str::<EventMsg>(&line) {
            Ok(event) => {
                if let Some(view) = &view {
                    view.send(event);
                    continue;
                }
                describe(&event)
            }
            Err(_) => match serde_json::from_str::<serde_json::Value>(&line) {
                Ok(other) => {
                    if let Some(view) = &view {
                        if let Some(item) = view_item(&other) {
                            view.send(item);
                        }
                        continue;
                    }
                    other_line(&other)
                }
                Err(e) => format!("line {}: not JSON ({e})", n + 1),
            },
        };
        if view.is_none() && writeln!(stdout, "{text}").is_err() {
            break;
        }
    }
    if let Some(view) = view {
        view.wait_for_quit();
    }
    Ok(0)
}

/// An exec line that is not an event, for the view: an output, an error line or the ledger.
fn view_item(value: &serde_json::Value) -> Option<ViewItem> {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    match value["type"].as_str()? {
        "function_call_output" => {
            let output: ToolOutput = serde_json::from_value(value["output"].clone()).ok()?;
            Some(ViewItem::Output {
                call_id: text(&value["call_id"])?,
                name: None,
                ok: output.is_success(),
                text: output_text(&output),
            })
        }
        "ledger" => Some(ViewItem::Ledger(serde_json::from_value(value["report"].clone()).ok()?)),
        "error" => Some(ViewItem::Error {
            message: text(&value["message"]).unwrap_or_default(),
            line: value["line"].as_u64(),
            call_id: text(&value["call_id"]),
        }),
        _ => None,
    }
}

/// What a failed output says (its text), for the detail pane.
pub(crate) fn output_text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Function { content, .. } => content.to_string(),
        ToolOutput::Mcp { result: Err(message) } => message.clone(),
        ToolOutput::Mcp { result: Ok(result) } => {
            serde_json::to_string(&result.content).unwrap_or_default()
        }
    }
}

/// A readable line for an exec line that is not an event.
fn other_line(value: &serde_json::Value) -> String {
    match value["type"].as_str() {
        Some("function_call_output") => {
            let output = &value["output"];
            let ok = match output["type"].as_str() {
                Some("mcp") => output["result"].get("Ok").is_some_and(|r| r["isError"] != true),
                _ => output["success"] != false,
            };
            format!(
                "function_call_output {} {}",
                value["call_id"].as_str().unwrap_or("?"),
                if ok { "success" } else { "failure" }
            )
        }
        Some("error") => {
            format!("error                {}", value["message"].as_str().unwrap_or(""))
        }
        Some(other) => other.to_string(),
        None => "a line without a type".to_string(),
    }
}

/// What `mcp-router watch` reads: stdin (no path, or `-`), a shared router's events socket, or
/// a file of exec lines.
fn watched(path: Option<&std::path::Path>) -> anyhow::Result<Box<dyn std::io::Read>> {
    use std::os::unix::fs::FileTypeExt as _;
    let Some(path) = path.filter(|p| p.as_os_str() != "-") else {
        return Ok(Box::new(std::io::stdin()));
    };
    if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        let stream = std::os::unix::net::UnixStream::connect(path)
            .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", path.display()))?;
        return Ok(Box::new(stream));
    }
    let file = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    Ok(Box::new(file))
}
