//! Following a task to its end: the polls, the statuses reported, input rounds answered,
//! cancellation, and the backgrounded tasks kept for `await_task`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_backend::{McpError, TaskHandle, status_name};
use rmcp::model::{
    CallToolResult, CancelTaskParams, GetTaskParams, Task, TaskPayload, TaskStatus,
    UpdateTaskParams,
};
use router_protocol::{EventMsg, McpTaskStatusEvent};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::lifecycle::Servers;

/// Polls that may fail in a row (the connection broke, the server restarts) before the
/// follow gives up with the last error.
const FAILED_POLLS: u32 = 3;

/// Backgrounded tasks kept at most, counting the running ones: past it the oldest that ended
/// (their results never collected) are forgotten; running ones are never dropped for room.
pub(super) const KEPT_BACKGROUNDED: usize = 64;

/// How a followed call ended (`None` while it runs).
pub(super) type Outcome = Option<Result<CallToolResult, McpError>>;

/// One task being followed: the server's task, where it stands, and the call it came from.
pub(super) struct Follow {
    pub(super) servers: Arc<Servers>,
    pub(super) server: String,
    pub(super) task: String,
    pub(super) call_id: Option<String>,
    /// The last status and message seen.
    pub(super) seen: Mutex<(TaskStatus, Option<String>)>,
}

/// Tasks handed to the background, in the order they were.
#[derive(Default)]
pub(crate) struct Backgrounded {
    pub(super) tasks: Mutex<Vec<Background>>,
}

pub(super) struct Background {
    pub(super) follow: Arc<Follow>,
    pub(super) done: watch::Receiver<Outcome>,
    pub(super) runner: tokio::task::JoinHandle<()>,
}

impl Drop for Background {
    fn drop(&mut self) {
        // A task nobody will collect (the manager is dropped) is cancelled on its server.
        self.runner.abort();
    }
}

fn poll_interval(ms: Option<u64>) -> Duration {
    Duration::from_millis(ms.unwrap_or(1000).clamp(50, 10_000))
}

impl Follow {
    pub(super) fn handle(&self) -> TaskHandle {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        TaskHandle {
            server: self.server.clone(),
            task: self.task.clone(),
            status: seen.0,
            status_message: seen.1,
        }
    }

    pub(super) fn announce(&self, background: bool) {
        let (status, status_message) = self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        self.servers.events.send(EventMsg::McpTaskStatus(McpTaskStatusEvent {
            call_id: self.call_id.clone(),
            server: self.server.clone(),
            task: self.task.clone(),
            status: status_name(status),
            status_message,
            background,
        }));
    }

    /// A poll saw `status` and `message`: an event when either is new.
    fn saw(&self, status: TaskStatus, message: Option<String>) {
        let changed = {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            let changed = seen.0 != status || seen.1 != message;
            *seen = (status, message);
            changed
        };
        if changed {
            self.announce(false);
        }
    }

    /// Polls until the task ends or `task_timeout` passes.
    pub(super) async fn run(&self, task: Task) -> Result<CallToolResult, McpError> {
        let mut cancel = CancelOnDrop { follow: Some(self) };
        let timeout = self.servers.options.tasks.timeout;
        let deadline = Instant::now() + timeout;
        let mut interval = poll_interval(task.poll_interval_ms);
        let mut failed = 0;
        loop {
            tokio::time::sleep_until((Instant::now() + interval).min(deadline)).await;
            if Instant::now() >= deadline {
                cancel.now().await;
                let server = self.server.clone();
                return Err(McpError::Timeout { server, method: "tools/call (task)", timeout });
            }
            let polled = self.poll().await;
            let detailed = match polled {
                Ok(got) => got.task,
                Err(e) if failed < FAILED_POLLS && recoverable(&e) => {
                    failed += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            failed = 0;
            interval = poll_interval(detailed.task.poll_interval_ms);
            self.saw(detailed.status(), detailed.task.status_message.clone());
            let ended = match detailed.payload {
                TaskPayload::InputRequired { input_requests } => {
                    self.answer(input_requests).await?;
                    continue;
                }
                TaskPayload::Completed { result } => self.result(result),
                TaskPayload::Failed { error } => Err(server_error(error)),
                TaskPayload::Cancelled => Err(McpError::Protocol {
                    server: self.server.clone(),
                    error: format!("cancelled task {} before it finished", self.task),
                }),
                _ => continue,
            };
            cancel.follow = None;
            return ended;
        }
    }

    async fn poll(&self) -> Result<rmcp::model::GetTaskResult, McpError> {
        let params = GetTaskParams::new(self.task.clone());
        self.servers
            .request(&self.server, "tasks/get", |conn| {
                let params = params.clone();
                async move { conn.service.get_task(params).await }
            })
            .await
    }

    /// Answers the task's input requests through the host and sends them.
    async fn answer(&self, requests: rmcp::model::InputRequests) -> Result<(), McpError> {
        let conn = self.servers.connection(&self.server).await?;
        let client = conn.service.service();
        let (responses, _) = mcp_connection::answer_inputs(client, requests).await;
        let params = UpdateTaskParams::new(self.task.clone(), responses);
        self.servers
            .request(&self.server, "tasks/update", |conn| {
                let params = params.clone();
                async move { conn.service.update_task(params).await }
            })
            .await
    }

    fn result(&self, result: serde_json::Map<String, Value>) -> Result<CallToolResult, McpError> {
        serde_json::from_value(Value::Object(result)).map_err(|e| McpError::Protocol {
            server: self.server.clone(),
            error: format!("ended task {} with a result that is not a tool result: {e}", self.task),
        })
    }
}

/// A poll failure that a restarted server or a moment's wait may cure.
fn recoverable(error: &McpError) -> bool {
    matches!(
        error,
        McpError::Transport { .. } | McpError::NotStarted { .. } | McpError::Timeout { .. }
    )
}

/// A failed task's JSON-RPC error, as the server's error.
fn server_error(error: serde_json::Map<String, Value>) -> McpError {
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
    let message = error.get("message").and_then(Value::as_str).unwrap_or("the task failed");
    McpError::Server {
        code: i32::try_from(code).unwrap_or(-32603),
        message: message.to_string(),
        data: error.get("data").cloned(),
    }
}

/// Sends `tasks/cancel` when a follow is given up before its task ended.
struct CancelOnDrop<'a> {
    follow: Option<&'a Follow>,
}

impl CancelOnDrop<'_> {
    async fn now(&mut self) {
        if let Some(follow) = self.follow.take() {
            cancel(follow.servers.clone(), follow.server.clone(), follow.task.clone()).await;
        }
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let Some(follow) = self.follow.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (servers, server, task) =
            (follow.servers.clone(), follow.server.clone(), follow.task.clone());
        crate::scope::spawn(&runtime, cancel(servers, server, task));
    }
}

async fn cancel(servers: Arc<Servers>, server: String, task: String) {
    let params = CancelTaskParams::new(task.clone());
    let sent = servers
        .request(&server, "tasks/cancel", |conn| {
            let params = params.clone();
            async move { conn.service.cancel_task(params).await }
        })
        .await;
    if let Err(error) = sent {
        tracing::info!(%server, %task, %error, "could not cancel the task");
    }
}
