//! The test backend's optional capabilities (skills, prompts, tasks, apps), each scripted by
//! its `FakeServer`s, so the router's handlers of every capability have unit tests.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::{AppsBackend, McpError, PromptsBackend, SkillsBackend, TasksBackend};
use rmcp::model::{
    CallToolResult, CompletionInfo, GetPromptResult, JsonObject, PromptMessage, Role, Tool,
};

use crate::test_support::FakeBackend;

#[async_trait]
impl SkillsBackend for FakeBackend {
    async fn server_skills(
        &self,
        server: &str,
    ) -> Result<Arc<mcp_backend::ServerSkills>, McpError> {
        let skills = self.server(server)?.skills.clone();
        let skills = skills.ok_or_else(|| mcp_backend::no_skills(server))?;
        Ok(Arc::new(mcp_backend::ServerSkills::checked(skills)))
    }
    async fn all_skills(&self) -> mcp_backend::SkillsListing {
        let mut listing = mcp_backend::SkillsListing::default();
        for (name, server) in &self.servers {
            if server.skills.is_some() {
                let skills = self.server_skills(name).await.map_err(|e| e.to_string());
                listing.servers.push((name.clone(), skills));
            }
        }
        listing
    }
    async fn offers_skills(&self) -> bool {
        self.servers.values().any(|s| s.skills.is_some())
    }
    async fn get_skill(&self, server: &str, uri: &str) -> Result<rmcp::model::Skill, McpError> {
        let listed = self.server_skills(server).await?;
        let found = listed.skills.iter().find(|s| s.uri == uri).cloned();
        found.ok_or_else(|| McpError::Server {
            code: -32002,
            message: format!("Skill not found: {uri}"),
            data: None,
        })
    }
    async fn approve_skill(
        &self,
        server: &str,
        _skill: &rmcp::model::Skill,
    ) -> mcp_backend::SkillApproval {
        match self.servers.get(server).and_then(|s| s.refuse_skills.clone()) {
            Some(why) => mcp_backend::SkillApproval::Refuse(why),
            None => mcp_backend::SkillApproval::Allow,
        }
    }
}

#[async_trait]
impl PromptsBackend for FakeBackend {
    async fn all_prompts(&self) -> mcp_backend::PromptsListing {
        let mut listing = mcp_backend::PromptsListing::default();
        for (name, server) in &self.servers {
            if let Some(prompts) = &server.prompts {
                let answer = match &server.fail {
                    Some(e) => Err(e.to_string()),
                    None => Ok(prompts.clone()),
                };
                listing.servers.push((name.clone(), answer));
            }
        }
        listing
    }
    async fn offers_prompts(&self) -> bool {
        self.servers.values().any(|s| s.prompts.is_some())
    }
    /// One user message naming the prompt and its arguments.
    async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, McpError> {
        let prompts = self.server(server)?.prompts.as_ref();
        if !prompts.is_some_and(|p| p.iter().any(|p| p.name == name)) {
            let message = format!("Unknown prompt: {name}");
            return Err(McpError::Server { code: -32602, message, data: None });
        }
        let arguments = serde_json::Value::Object(arguments.unwrap_or_default());
        let text = format!("prompt {name} with {arguments}");
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]))
    }
    async fn complete_prompt_argument(
        &self,
        server: &str,
        _prompt: &str,
        _argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        let all = self.server(server)?.completions.clone().unwrap_or_default();
        let mut info = CompletionInfo::default();
        info.values = all.into_iter().filter(|v| v.starts_with(value)).collect();
        Ok(info)
    }
}

#[async_trait]
impl TasksBackend for FakeBackend {
    fn backgrounded_task(&self, server: Option<&str>, task: &str) -> Result<String, McpError> {
        let tasks = self.background.as_ref().map(|b| b.lock().expect("tasks").clone());
        let found = tasks
            .unwrap_or_default()
            .into_iter()
            .find(|(s, t, _)| t == task && server.is_none_or(|wanted| wanted == s));
        let no_such = || McpError::Task {
            task: task.to_string(),
            error: mcp_backend::NO_SUCH_TASK.to_string(),
        };
        found.map(|(s, _, _)| s).ok_or_else(no_such)
    }
    /// The task's result, once: it is forgotten as it is collected.
    async fn await_task(
        &self,
        server: &str,
        task: &str,
        _wait: std::time::Duration,
    ) -> Result<CallToolResult, McpError> {
        let mut tasks = self.background.as_ref().expect("backgrounding").lock().expect("tasks");
        let at = tasks.iter().position(|(s, t, _)| s == server && t == task);
        let no_such =
            McpError::Task { task: task.to_string(), error: mcp_backend::NO_SUCH_TASK.to_string() };
        at.map(|at| tasks.remove(at).2).ok_or(no_such)
    }
}

impl AppsBackend for FakeBackend {
    fn app_tool(&self, server: &str, tool: &str) -> Option<Tool> {
        self.servers.get(server)?.app_tools.iter().find(|t| t.name == tool).cloned()
    }
}
