//! The optional capabilities of a backend, each its own trait, reached through
//! `McpBackend::{skills, prompts, tasks, apps}`: a backend exposes the ones it has, and the
//! router offers a model tool (or a host method) only for a capability that exists. Nothing
//! here has a "no such feature" default: a backend that has a capability implements all of it.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{CallToolResult, CompletionInfo, GetPromptResult, JsonObject, Skill, Tool};

use crate::error::McpError;
use crate::prompts::PromptsListing;
use crate::skills::{ServerSkills, SkillApproval, SkillsListing};

/// Skills from MCP servers (SEP-2640).
#[async_trait]
pub trait SkillsBackend: Send + Sync {
    /// One server's skills (`skills/list`, every page, checked), kept until its resource list
    /// changes, it restarts, or the server's `ttlMs` (else `list_cache_sec`) passes. Starts a
    /// lazy server. A server that does not declare the extension is an error saying so
    /// ([`crate::no_skills`]).
    async fn server_skills(&self, server: &str) -> Result<Arc<ServerSkills>, McpError>;
    /// Whether any server offers skills (declares the extension), after startups settle; a
    /// lazy server by its tool catalog. Only looks: never starts a server.
    async fn offers_skills(&self) -> bool;
    /// Every server's skills: the servers that declare the extension, waiting for the ones
    /// starting.
    async fn all_skills(&self) -> SkillsListing;
    /// `skills/get`: one skill's entry as the server serves it now.
    async fn get_skill(&self, server: &str, uri: &str) -> Result<Skill, McpError>;
    /// Asks the host before `server`'s `skill` is first loaded (the entry carries its
    /// frontmatter, `allowed-tools` included).
    async fn approve_skill(&self, server: &str, skill: &Skill) -> SkillApproval;
}

/// Prompts (what hosts make slash commands of).
#[async_trait]
pub trait PromptsBackend: Send + Sync {
    /// Every server's prompts (`prompts/list`, every page), of the servers that declare them.
    async fn all_prompts(&self) -> PromptsListing;
    /// Whether any server declares `prompts` (a ready one; a starting one once settled). Only
    /// looks: never starts a server.
    async fn offers_prompts(&self) -> bool;
    /// `prompts/get` with `arguments`; an `input_required` answer (2026-07-28) is answered
    /// through the host and retried.
    async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, McpError>;
    /// `completion/complete` for an argument of a prompt.
    async fn complete_prompt_argument(
        &self,
        server: &str,
        prompt: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError>;
}

/// Tool calls handed to the background as tasks (SEP-2663, `background_tasks_after`). A
/// backend exposes it only while it hands calls to the background: the router offers
/// `await_mcp_task` exactly then.
#[async_trait]
pub trait TasksBackend: Send + Sync {
    /// The server of a task handed to the background: `server` when given and it has such a
    /// task, else the one server that has. Only looks.
    fn backgrounded_task(&self, server: Option<&str>, task: &str) -> Result<String, McpError>;
    /// The result of `server`'s backgrounded task `task`, waiting at most `wait`: the tool's
    /// result once the task has ended (then it is forgotten), or the handle again, with the
    /// task's status, while it runs.
    async fn await_task(
        &self,
        server: &str,
        task: &str,
        wait: std::time::Duration,
    ) -> Result<CallToolResult, McpError>;
}

/// MCP Apps (SEP-1865): the tools an app may call.
pub trait AppsBackend: Send + Sync {
    /// `server`'s tool `tool` if its app may call it: an app-only tool, or a tool of the
    /// model's whose visibility names `"app"` (or says nothing). Only looks: a server that is
    /// not ready has none.
    fn app_tool(&self, server: &str, tool: &str) -> Option<Tool>;
}
