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

pub(crate) mod follow;

use follow::{Background, Follow, KEPT_BACKGROUNDED, Outcome};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_backend::{McpError, NO_SUCH_TASK, TasksBackend};
use rmcp::model::{CallToolResult, Task};
use tokio::sync::watch;

use crate::manager::McpConnectionManager;
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
            // Spawned for the call's view: the task's server is the one the call named.
            crate::scope::spawn(&tokio::runtime::Handle::current(), async move {
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
