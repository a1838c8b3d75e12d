//! exec's host: a call to a tool whose approval policy is `ask` writes a
//! `tool_approval_request` line and waits for the host's `tool_approval` line naming it;
//! everything else is answered as the default host answers it (apps declared with `apps_ui`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use mcp_connection_manager::{Asking, DefaultHost, HostCapabilities, HostHandler};
use router_protocol::{ExecOutput, ToolApproval, ToolApprovalQuestion};
use tokio::sync::{mpsc, oneshot};

use crate::exec_output::Outgoing;

/// The questions written and not answered yet, by request name.
pub(crate) struct ExecHost {
    out: mpsc::UnboundedSender<Outgoing>,
    pending: Mutex<HashMap<String, oneshot::Sender<ToolApproval>>>,
    next: AtomicU64,
    /// Set at the end of exec's input: no answer can come any more.
    gone: std::sync::atomic::AtomicBool,
    apps: bool,
}

impl ExecHost {
    /// Questions go to `out` (exec's one writer); `apps`: the host renders MCP Apps.
    pub(crate) fn new(out: mpsc::UnboundedSender<Outgoing>, apps: bool) -> Self {
        Self {
            out,
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            apps,
            gone: Default::default(),
        }
    }

    /// A `tool_approval` line: the waiting call goes on (or is refused). An unknown request
    /// or decision is said in words for an error line.
    pub(crate) fn answer(
        &self,
        request: &str,
        decision: &str,
        reason: Option<String>,
    ) -> Result<(), String> {
        let approval = match decision {
            "once" => ToolApproval::Once,
            "always" => ToolApproval::Always,
            "refuse" => {
                ToolApproval::Refuse(reason.unwrap_or_else(|| "refused by the user".into()))
            }
            other => {
                return Err(format!(
                    "invalid tool_approval line: `decision` must be \"once\", \"always\" or \"refuse\", got \"{other}\""
                ));
            }
        };
        let waiting = self.pending.lock().ok().and_then(|mut p| p.remove(request));
        let waiting =
            waiting.ok_or_else(|| format!("no tool approval request `{request}` is waiting"))?;
        let _ = waiting.send(approval);
        Ok(())
    }

    /// The host went away (exec's input ended, or a signal): every approval waiting is
    /// refused, and so is every one asked from now on.
    pub(crate) fn went_away(&self) {
        self.gone.store(true, Ordering::SeqCst);
        let waiting: Vec<_> =
            self.pending.lock().map(|mut p| p.drain().collect()).unwrap_or_default();
        for (_, answer) in waiting {
            let _ = answer.send(ToolApproval::Refuse(WENT_AWAY.to_string()));
        }
    }
}

/// Why an approval is refused once exec is ending (its input ended, or a signal came).
const WENT_AWAY: &str = "the host went away before answering (exec is ending)";

#[async_trait]
impl HostHandler for ExecHost {
    fn capabilities(&self) -> HostCapabilities {
        HostCapabilities { apps: self.apps, ..DefaultHost.capabilities() }
    }

    async fn approve_tool_call(&self, _: &Asking, question: &ToolApprovalQuestion) -> ToolApproval {
        if self.gone.load(Ordering::SeqCst) {
            return ToolApproval::Refuse(WENT_AWAY.to_string());
        }
        let request = format!("approval-{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        let (answer, answered) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            // Checked again under the lock: `went_away` may have drained it meanwhile.
            if self.gone.load(Ordering::SeqCst) {
                return ToolApproval::Refuse(WENT_AWAY.to_string());
            }
            pending.insert(request.clone(), answer);
        }
        let line = ExecOutput::ToolApprovalRequest { request, question: question.clone() };
        let _ = self.out.send(line.into());
        answered.await.unwrap_or_else(|_| {
            ToolApproval::Refuse("exec ended before the host answered".to_string())
        })
    }
}

/// `approve_definition`: the server's held definition `name` (every one without a name) pinned
/// as it is now, answered with what was pinned, or `error` with why not.
pub(crate) fn approve(
    running: &crate::setup::Running,
    server: String,
    name: Option<String>,
    error: impl FnOnce(String) -> Option<ExecOutput>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<ExecOutput>> + Send>> {
    let names: Vec<String> = name.into_iter().collect();
    let answer = match running.manager.approve_held(&server, &names) {
        Ok(approved) => Some(ExecOutput::DefinitionsApproved { server, approved }),
        Err(e) => error(format!("approve_definition failed: {e}")),
    };
    Box::pin(std::future::ready(answer))
}
