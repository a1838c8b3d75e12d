//! Tool calls a server runs as tasks (SEP-2663), as the model sees one handed to the background:
//! a handle naming the task, its server and how it goes, in place of the tool's result, until
//! `await_mcp_task` collects the result.

use rmcp::model::{CallToolResult, ContentBlock, TaskStatus};
use serde_json::{Value, json};

/// Why a task cannot be awaited when no task of that id runs in the background.
pub const NO_SUCH_TASK: &str =
    "no such task runs in the background (it was collected already, or never handed over)";

/// A task handed to the background, as the model reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskHandle {
    /// The configured server name.
    pub server: String,
    /// The server's task id.
    pub task: String,
    /// The task's status at the last poll.
    pub status: TaskStatus,
    /// What the server last said about it.
    pub status_message: Option<String>,
}

/// A task status as the wire has it (`working`, `input_required`, …).
pub fn status_name(status: TaskStatus) -> String {
    match serde_json::to_value(status) {
        Ok(Value::String(name)) => name,
        _ => format!("{status:?}"),
    }
}

impl TaskHandle {
    /// The handle as a tool result: its JSON, as text and as structured content.
    pub fn to_call_tool_result(&self) -> CallToolResult {
        let mut handle = json!({
            "task": self.task,
            "server": self.server,
            "status": status_name(self.status),
        });
        if let Some(message) = &self.status_message {
            handle["status_message"] = Value::String(message.clone());
        }
        handle["next"] = Value::String(format!(
            "The call goes on in the background: call await_mcp_task with {{\"task\": \"{}\", \"server\": \"{}\"}} to collect its result.",
            self.task, self.server
        ));
        let text = handle.to_string();
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(handle);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_names_its_task_server_status_and_what_to_call() {
        let handle = TaskHandle {
            server: "demo".into(),
            task: "t-1".into(),
            status: TaskStatus::InputRequired,
            status_message: Some("3 of 30 s".into()),
        };
        let result = handle.to_call_tool_result();
        let structured = result.structured_content.clone().expect("structured");
        assert_eq!(structured["status"], "input_required");
        assert_eq!(structured["status_message"], "3 of 30 s");
        let text = result.content[0].as_text().expect("text").text.clone();
        assert_eq!(serde_json::from_str::<Value>(&text).expect("json"), structured);
        assert!(
            text.contains(r#"call await_mcp_task with {\"task\": \"t-1\", \"server\": \"demo\"}"#)
        );
    }
}
