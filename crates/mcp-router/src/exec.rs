//! `mcp-router exec`: a JSON-lines tool loop.
//!
//! stdin, one call per line: `{"call_id": "…", "name": "…", "arguments": "<JSON text>"}`
//! (`arguments` may also be a JSON object, or absent). stdout, one JSON object per line: every
//! event (see `router_protocol::EventMsg`) and, per call, exactly one
//! `{"type": "function_call_output", "call_id": "…", "output": <ToolOutput>}`. A line that
//! cannot be taken gets `{"type": "error", "message": "…", "line": N, "call_id": "…"}` (`call_id`
//! when one can be read) — and when it carries a call id, that call still gets its one output, a
//! failure saying why: a host waiting for it never waits forever. Calls run concurrently; a call's end event is
//! always written before its output. At end of input the loop refuses the tool approvals still
//! waiting ("the host went away"), waits for calls in flight (each bounded by its tool timeout),
//! shuts the servers down and exits 0; on SIGTERM or SIGINT, at any moment, it refuses the
//! approvals waiting, cancels the calls in flight (each still gets its one output), shuts the
//! servers down and exits 143/130; a second signal exits at once.
//!
//! The line `{"type": "list_tools", "format": "openai" | "anthropic"}` (format optional, OpenAI
//! by default) asks for the tool specs as they are now (e.g. after `mcp_tools_changed` or
//! `mcp_tools_revealed`), answered with `{"type": "tools", "format": "…", "tools": [<spec>, …]}`
//! (with tool search on, plus `"revealed": [<qualified name>, …]`). `{"type": "reset_tools"}`
//! forgets the revealed tools (a new conversation): `{"type": "tools_reset", "forgotten": n}`.
//! `{"type": "take_notices"}` takes the pending "resources you read changed" notices:
//! `{"type": "notices", "changed": [{server, uri, detected_at}, …], "text": "…" | null}`.
//!
//! Request lines are answered one after the other, in input order, each answer echoing the
//! line's `id` when it has one. A call line whose `call_id` is still in flight is refused (the
//! call in flight goes on); a byte order mark before a line is ignored.

use std::sync::Arc;

use router_protocol::{EventSender, ExecInput, ExecLine, ExecOutput, Rejected, event_channel};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tool_router::{CallContext, ToolArguments, ToolCall, ToolOutput, TraceContext};

use crate::exec_output::{Outgoing, write_lines};
use crate::setup;

#[path = "exec_requests.rs"]
mod requests;
use requests::{Queued, answer_in_order};

pub(crate) async fn run(
    config: &crate::setup::ConfigArg,
    live: bool,
    format: Option<router_protocol::OutputFormat>,
) -> anyhow::Result<i32> {
    let config = setup::config(config)?;
    let view = if live {
        match crate::live::LiveView::open("mcp-router exec --live") {
            Ok(view) => Some(view),
            Err(e) => {
                eprintln!("mcp-router: {e}; going on without it");
                None
            }
        }
    } else {
        None
    };
    let (events, event_rx) = event_channel();
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Outgoing>();
    let host = Arc::new(crate::exec_host::ExecHost::new(out_tx.clone(), config.apps_ui));
    let running = Arc::new(setup::start_with_host(config, events.clone(), host.clone())?);
    let to_view = view.as_ref().and_then(|v| v.sender());
    let writer = tokio::spawn(write_lines(event_rx, out_rx, to_view, format));
    let (requests, queued) = mpsc::unbounded_channel();
    let answering = tokio::spawn(answer_in_order(queued, out_tx.clone()));
    let session = Session {
        running: running.clone(),
        events: events.clone(),
        out: out_tx,
        requests,
        in_flight: Default::default(),
        host,
        view: view.as_ref().and_then(|v| v.sender()),
    };
    let mut calls = JoinSet::new();
    let mut signals = Signals::new()?;
    let exit_code = read_lines(&session, &mut calls, &mut signals).await?;
    // Nobody answers from now on: approvals waiting (and any asked later) are refused.
    session.host.went_away();
    let exit_code = match exit_code {
        // Each call is bounded by its server's tool timeout (reset by progress where so
        // configured); nothing else waits now that approvals are refused.
        0 => wait_for_calls(&mut calls, None, Some(&mut signals)).await.unwrap_or(0),
        signal => signal,
    };
    let late = signals.watch_while_ending(exit_code);
    if exit_code != 0 {
        // Each call in flight is cancelled (its server told) and writes its one output.
        session.cancel_all();
        wait_for_calls(&mut calls, Some(CANCEL_GRACE), None).await;
    }
    // No request comes any more: the answering task ends once it has answered the last one.
    drop(session);
    if exit_code == 0 {
        let _ = answering.await;
    } else {
        answering.abort();
    }
    running.shutdown().await;
    drop((events, running));
    let _ = writer.await;
    if let Some(view) = view {
        view.close();
    }
    let late = late.load(std::sync::atomic::Ordering::SeqCst);
    Ok(if late != 0 { late } else { exit_code })
}

/// SIGTERM and SIGINT, caught for as long as exec runs.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self { term: signal(SignalKind::terminate())?, int: signal(SignalKind::interrupt())? })
    }

    /// The signals while exec ends, the session having ended with `exit_code`: a second
    /// signal exits at once. A first one that comes only now (stdin ended, the calls answered,
    /// then the signal) lets the shutdown finish — every line written — and its code, in what
    /// this returns, is the exit code.
    fn watch_while_ending(mut self, exit_code: i32) -> Arc<std::sync::atomic::AtomicI32> {
        let late = Arc::new(std::sync::atomic::AtomicI32::new(0));
        let told = late.clone();
        tokio::spawn(async move {
            if exit_code == 0 {
                told.store(self.next().await, std::sync::atomic::Ordering::SeqCst);
            }
            std::process::exit(self.next().await)
        });
        late
    }

    /// The next signal, as exec's exit code: 143 for SIGTERM, 130 for SIGINT.
    async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.term.recv() => 143,
            _ = self.int.recv() => 130,
        }
    }
}

/// How long cancelled calls get to write their outputs after a signal.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The calls in flight finish (within `limit`, when given; then what is left is aborted). A
/// signal meanwhile (when `signals` are watched) is returned at once, the calls left as they
/// are.
async fn wait_for_calls(
    calls: &mut JoinSet<()>,
    limit: Option<std::time::Duration>,
    mut signals: Option<&mut Signals>,
) -> Option<i32> {
    let deadline = async {
        match limit {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    loop {
        let signal = async {
            match signals.as_mut() {
                Some(signals) => signals.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            next = calls.join_next() => {
                // Every call has ended.
                next.as_ref()?;
            }
            () = &mut deadline => {
                tracing::warn!(calls = calls.len(), "cancelled calls still in flight; ending them");
                calls.abort_all();
                return None;
            }
            code = signal => return Some(code),
        }
    }
}

/// Stdin's lines to `session` until its end (0) or a signal (143 for SIGTERM, 130 for SIGINT);
/// finished calls are reaped as it goes, so the set does not grow with the session.
async fn read_lines(
    session: &Session,
    calls: &mut JoinSet<()>,
    signals: &mut Signals,
) -> anyhow::Result<i32> {
    // Byte lines: one non-UTF-8 line gets an error line, it does not end the session.
    let mut lines = BufReader::new(tokio::io::stdin()).split(b'\n');
    let mut number = 0u64;
    Ok(loop {
        tokio::select! {
            line = lines.next_segment() => match line {
                Ok(Some(bytes)) => {
                    number += 1;
                    session.take_line(number, bytes, calls);
                }
                Ok(None) => break 0,
                Err(e) => {
                    let message = format!("cannot read stdin: {e}");
                    session.error(Rejected { message, call_id: None }, None, false);
                    break 0;
                }
            },
            Some(_) = calls.join_next(), if !calls.is_empty() => {}
            code = signals.next() => break code,
        }
    })
}

/// What each input line needs: the router, the event sink, the output queue.
struct Session {
    running: Arc<setup::Running>,
    events: EventSender,
    out: mpsc::UnboundedSender<Outgoing>,
    /// Requests, answered one after the other in input order (`answer_in_order`).
    requests: mpsc::UnboundedSender<Queued>,
    /// Calls in flight, by call id: a call's task writes its one output line, after its end
    /// event, whether it ended or was cancelled.
    in_flight: Arc<std::sync::Mutex<InFlight>>,
    /// Where `tool_approval` lines go.
    host: Arc<crate::exec_host::ExecHost>,
    /// The live view, told the ledger after each call (its costs panel).
    view: Option<std::sync::mpsc::Sender<crate::live::ViewItem>>,
}

/// Each call in flight by its id, with what cancels it.
type InFlight = std::collections::HashMap<String, tokio::sync::oneshot::Sender<()>>;

impl Session {
    /// Input line `number`: a call runs on its own task; a request is answered; a line that
    /// cannot be taken gets an error line, and its call (if an id can be read) a failed output.
    fn take_line(&self, number: u64, bytes: Vec<u8>, calls: &mut JoinSet<()>) {
        let line = match String::from_utf8(bytes) {
            Ok(line) => line,
            Err(e) => {
                let lossy = String::from_utf8_lossy(e.as_bytes());
                let call_id = router_protocol::call_id_of(&lossy);
                let message = "invalid input line: not valid UTF-8".to_string();
                let numeric = router_protocol::call_id_is_number(&lossy);
                return self.error(Rejected { message, call_id }, Some(number), numeric);
            }
        };
        // A byte order mark (some Windows tools write one before the first line) is not input.
        let line = match line.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => line,
        };
        if line.trim().is_empty() {
            return;
        }
        match ExecLine::parse(&line) {
            Ok(ExecLine { input: ExecInput::Call(call), .. }) => {
                // An invalid trace context is ignored (a new trace), as W3C asks.
                let parent = call.traceparent.as_deref();
                let trace = parent.and_then(|p| TraceContext::parse(p, call.tracestate.as_deref()));
                self.call(number, to_call(call), trace, calls)
            }
            Ok(ExecLine { input, id }) => self.request(number, id, input),
            Err(rejected) => {
                let numeric = router_protocol::call_id_is_number(&line);
                self.error(rejected, Some(number), numeric)
            }
        }
    }

    /// `cancel`: the call in flight with that id is dropped (its server is told:
    /// `notifications/cancelled`, or `tasks/cancel` for a task). The call's task drops the call
    /// (its end event is sent then) before it writes the output saying so, so the end comes
    /// first here as for every call. Without such a call: why not.
    fn cancel(&self, call_id: &str) -> Result<(), String> {
        let taken = {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            in_flight.remove(call_id)
        };
        match taken {
            Some(cancel) => {
                let _ = cancel.send(());
                Ok(())
            }
            None => Err(format!("no call `{call_id}` is in flight")),
        }
    }

    /// Every call in flight cancelled, as by a `cancel` line each.
    fn cancel_all(&self) {
        let taken: Vec<_> = {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            in_flight.drain().collect()
        };
        for (_, cancel) in taken {
            let _ = cancel.send(());
        }
    }

    /// A call, on its own task. A call id still in flight is refused (the call in flight goes
    /// on): its output could not be told from the other's.
    fn call(
        &self,
        number: u64,
        call: ToolCall,
        trace: Option<TraceContext>,
        calls: &mut JoinSet<()>,
    ) {
        // Held until the call is registered, so a call that ends at once still finds itself.
        let mut registry = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if registry.contains_key(&call.call_id) {
            drop(registry);
            let message = format!(
                "invalid input line: call `{}` is still in flight; this line was not run (give each call its own call_id)",
                call.call_id
            );
            return self.error(Rejected { message, call_id: None }, Some(number), false);
        }
        let (cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
        let running = self.running.clone();
        let in_flight = self.in_flight.clone();
        let key = call.call_id.clone();
        let registered = key.clone();
        let mut ctx = CallContext::new(self.events.clone());
        let out = self.out.clone();
        let view = self.view.clone();
        // The host-side span of the call (GenAI's `execute_tool`): the request spans of the
        // call are its children, so one model call is one trace.
        let span = tracing::info_span!(
            target: "mcp_router::exec",
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", call.name),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %call.name,
            gen_ai.tool.call.id = %call.call_id,
        );
        if let Some(trace) = trace {
            // The host's turn is the call's parent: its span id, its trace.
            #[cfg(feature = "otel")]
            crate::otel::continue_trace(&span, &trace);
            ctx = ctx.with_trace_context(trace);
        }
        calls.spawn(tracing::Instrument::instrument(
            async move {
                let call_id = call.call_id.clone();
                let name = call.name.clone();
                // `dispatch_to_output` already turned model-visible errors into outputs; a fatal
                // error (the servers are shut down) still gets this call's one output line. A
                // cancelled call is dropped here, which sends its end event, before its output.
                let dispatched = running.router.dispatch_to_output(&ctx, call);
                let output = tokio::select! {
                    output = dispatched => {
                        // A cancel that came as it ended found it done: its answer stands.
                        in_flight.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
                        output.unwrap_or_else(|fatal| ToolOutput::failure(fatal.to_string()))
                    }
                    Ok(()) = cancelled => ToolOutput::failure(tool_router::CANCELLED.to_string()),
                };
                let line = ExecOutput::FunctionCallOutput { call_id, output };
                let _ =
                    out.send(Outgoing { line, name: Some(name), id: None, numeric_call_id: false });
                if let Some(view) = view {
                    let report = Box::new(running.ledger().await);
                    let _ = view.send(crate::live::ViewItem::Ledger(report));
                }
            },
            span,
        ));
        registry.insert(registered, cancel);
    }

    /// The error line; then, when the line carried a call id, that call's one output.
    /// `numeric`: the line wrote its call id as a number, which both lines echo as one.
    fn error(&self, rejected: Rejected, line: Option<u64>, numeric: bool) {
        let Rejected { message, call_id } = rejected;
        let output = call_id.clone().map(|call_id| ExecOutput::FunctionCallOutput {
            call_id,
            output: ToolOutput::failure(match line {
                Some(n) => format!("{message} (input line {n})"),
                None => message.clone(),
            }),
        });
        let error = ExecOutput::Error { message, call_id, line };
        let _ = self.out.send(Outgoing { numeric_call_id: numeric, ..error.into() });
        if let Some(output) = output {
            let _ = self.out.send(Outgoing { numeric_call_id: numeric, ..output.into() });
        }
    }
}

/// A call line as the router takes it: `arguments` as JSON text, an object, or nothing (the
/// line's parse refused anything else).
fn to_call(call: router_protocol::ExecCall) -> ToolCall {
    let arguments = match call.arguments {
        Some(Value::String(text)) => ToolArguments::Text(text),
        // Already parsed: handed on as JSON, not printed and parsed again.
        Some(object @ Value::Object(_)) => ToolArguments::Json(object),
        _ => ToolArguments::default(),
    };
    ToolCall { call_id: call.call_id, name: call.name, arguments }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_line(line: &str) -> Result<ToolCall, String> {
        match ExecInput::parse(line).map_err(|r| r.message)? {
            ExecInput::Call(call) => Ok(to_call(call)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn arguments_may_be_text_object_or_absent() {
        let call = parse_line(r#"{"call_id":"1","name":"x","arguments":"{\"a\":1}"}"#).expect("ok");
        assert_eq!(call.arguments, ToolArguments::Text(r#"{"a":1}"#.into()));
        let call = parse_line(r#"{"call_id":"1","name":"x","arguments":{"a":1}}"#).expect("ok");
        assert_eq!(call.arguments, ToolArguments::Json(serde_json::json!({"a": 1})));
        let call = parse_line(r#"{"type":"function_call","call_id":"1","name":"x"}"#).expect("ok");
        assert_eq!(call.arguments, ToolArguments::Text(String::new()));
        assert_eq!(
            parse_line(r#"{"call_id":"1","name":"x","arguments":[1]}"#).err().as_deref(),
            Some("invalid input line: `arguments` must be a JSON string or object, got [1]")
        );
    }
}
