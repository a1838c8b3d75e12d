//! Tool calls a server runs as tasks (the tasks extension, SEP-2663). Every connection declares
//! the extension; a `tools/call` answered with `resultType: "task"` is followed here to its end:
//! `tasks/get` every `pollIntervalMs` (kept between 50 ms and 10 s; 1 s when the server names
//! none), each new status or status message an `mcp_task_status` event, `input_required`
//! answered through the host as other input rounds are and sent with `tasks/update`. The whole
//! follow is bounded by `task_timeout`, not the tool timeout (each poll has the tool timeout).
//! A follow given up before the task ended (the call was cancelled, the time ran out) sends
//! `tasks/cancel`, never `notifications/cancelled`.
//!
//! A poll that fails because the connection broke is sent again on a new connection (the server
//! restarted), and a few failed polls in a row are waited out: a server that keeps its tasks
//! goes on, one that lost the task says it does not know it, and that error ends the call.
//!
//! With `background_tasks_after`, a call whose task still runs after that long hands it to the
//! background: the call's result is a handle ([`mcp_backend::TaskHandle`]), the task is
//! followed on, and `TasksBackend::await_task` collects its result. Of the
//! ended ones never collected, the oldest are forgotten past 64 backgrounded tasks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_backend::{McpError, NO_SUCH_TASK, TaskHandle, TasksBackend, status_name};
use rmcp::model::{
    CallToolResult, CancelTaskParams, GetTaskParams, Task, TaskPayload, TaskStatus,
    UpdateTaskParams,
};
use router_protocol::{EventMsg, McpTaskStatusEvent};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::lifecycle::Servers;
use crate::manager::McpConnectionManager;

/// Polls that may fail in a row (the connection broke, the server restarts) before the
/// follow gives up with the last error.
const FAILED_POLLS: u32 = 3;

/// Backgrounded tasks kept at most, counting the running ones: past it the oldest that ended
/// (their results never collected) are forgotten; running ones are never dropped for room.
const KEPT_BACKGROUNDED: usize = 64;

/// How a followed call ended (`None` while it runs).
type Outcome = Option<Result<CallToolResult, McpError>>;

/// One task being followed: the server's task, where it stands, and the call it came from.
struct Follow {
    servers: Arc<Servers>,
    server: String,
    task: String,
    call_id: Option<String>,
    /// The last status and message seen.
    seen: Mutex<(TaskStatus, Option<String>)>,
}

/// Tasks handed to the background, in the order they were.
#[derive(Default)]
pub(crate) struct Backgrounded {
    tasks: Mutex<Vec<Background>>,
}

struct Background {
    follow: Arc<Follow>,
    done: watch::Receiver<Outcome>,
    runner: tokio::task::JoinHandle<()>,
}

impl Drop for Background {
    fn drop(&mut self) {
        // A task nobody will collect (the manager is dropped) is cancelled on its server.
        self.runner.abort();
    }
}

impl McpConnectionManager {
    /// A `tools/call` on `server` answered with `task`: its result once it ends, or — with
    /// `background_tasks_after` and the task still running then — the handle.
    pub(crate) async fn follow_task(
        &self,
        server: &str,
        task: Task,
    ) -> Result<CallToolResult, McpError> {
        let follow = Arc::new(Follow {
            servers: self.servers.clone(),
            server: server.to_string(),
            task: task.task_id.clone(),
            call_id: mcp_backend::current_call_id().map(|id| id.to_string()),
            seen: Mutex::new((task.status, task.status_message.clone())),
        });
        follow.announce(false);
        let Some(after) = self.servers.options.tasks.background_after else {
            return follow.run(task).await;
        };
        let (done_tx, mut done) = watch::channel(None);
        let runner = {
            let follow = follow.clone();
            tokio::spawn(async move {
                let outcome = follow.run(task).await;
                let _ = done_tx.send(Some(outcome));
            })
        };
        // Dropped before it is handed over (the call was cancelled): the runner is aborted,
        // which cancels the task.
        let background = Background { follow, done: done.clone(), runner };
        if let Ok(outcome) = tokio::time::timeout(after, ended(&mut done)).await {
            return outcome;
        }
        background.follow.announce(true);
        let handle = background.follow.handle();
        let mut tasks = self.backgrounded.tasks.lock().unwrap_or_else(|p| p.into_inner());
        // Results nobody collected do not pile up: past the limit the oldest ended ones go.
        while tasks.len() >= KEPT_BACKGROUNDED
            && let Some(ended) = tasks.iter().position(|b| b.done.borrow().is_some())
        {
            tasks.remove(ended);
        }
        tasks.push(background);
        Ok(handle.to_call_tool_result())
    }
}

#[async_trait::async_trait]
impl TasksBackend for McpConnectionManager {
    /// The server of the backgrounded task `task` (`server` when given).
    fn backgrounded_task(&self, server: Option<&str>, task: &str) -> Result<String, McpError> {
        let tasks = self.backgrounded.tasks.lock().unwrap_or_else(|p| p.into_inner());
        let mut servers: Vec<&str> = tasks
            .iter()
            .filter(|b| b.follow.task == task && server.is_none_or(|s| s == b.follow.server))
            .map(|b| b.follow.server.as_str())
            .collect();
        servers.dedup();
        let error = |error: String| McpError::Task { task: task.to_string(), error };
        match servers.as_slice() {
            [one] => Ok(one.to_string()),
            [] => Err(error(NO_SUCH_TASK.to_string())),
            several => Err(error(format!(
                "servers {} each run a task of that id: name the server",
                several.join(", ")
            ))),
        }
    }

    /// Waits at most `wait` for `server`'s backgrounded task `task`: the tool's result once it
    /// ended (the task is then forgotten), else the handle with the task's latest status.
    async fn await_task(
        &self,
        server: &str,
        task: &str,
        wait: Duration,
    ) -> Result<CallToolResult, McpError> {
        let found = {
            let tasks = self.backgrounded.tasks.lock().unwrap_or_else(|p| p.into_inner());
            tasks
                .iter()
                .find(|b| b.follow.task == task && b.follow.server == server)
                .map(|b| (b.follow.clone(), b.done.clone()))
        };
        let Some((follow, mut done)) = found else {
            let error = NO_SUCH_TASK.to_string();
            return Err(McpError::Task { task: task.to_string(), error });
        };
        let Ok(outcome) = tokio::time::timeout(wait, ended(&mut done)).await else {
            return Ok(follow.handle().to_call_tool_result());
        };
        let mut tasks = self.backgrounded.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.retain(|b| !Arc::ptr_eq(&b.follow, &follow));
        outcome
    }
}

/// How the follow behind `done` ended, once it has.
async fn ended(done: &mut watch::Receiver<Outcome>) -> Result<CallToolResult, McpError> {
    match done.wait_for(Option::is_some).await {
        Ok(outcome) => outcome.clone().unwrap_or_else(|| Err(McpError::ShutDown)),
        // The follow was stopped without an outcome: the backend is going away.
        Err(_) => Err(McpError::ShutDown),
    }
}

fn poll_interval(ms: Option<u64>) -> Duration {
    Duration::from_millis(ms.unwrap_or(1000).clamp(50, 10_000))
}

impl Follow {
    fn handle(&self) -> TaskHandle {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        TaskHandle {
            server: self.server.clone(),
            task: self.task.clone(),
            status: seen.0,
            status_message: seen.1,
        }
    }

    fn announce(&self, background: bool) {
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
    async fn run(&self, task: Task) -> Result<CallToolResult, McpError> {
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
        runtime.spawn(cancel(servers, server, task));
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
