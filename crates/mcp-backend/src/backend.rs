//! What the handlers need from MCP, as one object-safe trait.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{CallToolResult, CompletionInfo, JsonObject, ReadResourceResult};

use router_protocol::ResourceChange;

use crate::error::McpError;

use crate::listing::{Aggregate, ListKind, Page, Reuse, SharedListing};
use crate::qualify::QualifiedTool;
use crate::skills::{ServerSkills, SkillApproval, SkillsListing};

/// What [`McpBackend::known_tools`] knows.
#[derive(Debug, Clone, Default)]
pub struct KnownTools {
    /// Every model-visible tool of the servers whose tools are known (shared: the same `Arc`
    /// while the tools do not change, where the backend can tell).
    pub tools: Arc<Vec<QualifiedTool>>,
    /// Servers whose tools are not known yet, sorted.
    pub unknown: Vec<String>,
}

/// The MCP side of the router. The connection manager is the real implementation; tests may
/// provide others to reach corners real servers rarely show.
///
/// Every method may fail with [`McpError::ShutDown`] once the backend has been shut down: the
/// router reports that to its host, not to the model.
#[async_trait]
pub trait McpBackend: Send + Sync {
    /// One page of `resources/list` or `resources/templates/list` from one server.
    async fn list(
        &self,
        server: &str,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page, McpError>;
    /// One server's list from the page `from` names (`None`: the first) to the end, every page
    /// followed by [`Follow`]'s rules (one page cap, one cycle rule; a stop is the listing's
    /// `error`). A backend that keeps listings answers from a fresh kept one that has that page
    /// (`kept_at` set) and keeps a complete listing from the first page. Fails only when the
    /// server cannot be asked at all.
    ///
    /// [`Follow`]: crate::Follow
    async fn listing(
        &self,
        server: &str,
        kind: ListKind,
        from: Option<String>,
    ) -> Result<SharedListing, McpError>;
    /// `server`'s fresh kept listing of `kind`, if there is one. Only looks: never asks a
    /// server.
    fn kept_listing(&self, server: &str, kind: ListKind) -> Option<SharedListing>;
    /// Every server's resources or templates, each server paged to the end, sorted by server
    /// name; complete listings are kept. With [`Reuse::Kept`], answered from kept listings
    /// when every server of the last complete all-server listing has a fresh one. A server
    /// that fails is part of the answer (its `error`); only a backend that cannot answer at
    /// all (shut down) fails the whole call.
    async fn list_all(&self, kind: ListKind, reuse: Reuse) -> Result<Aggregate, McpError>;
    /// `resources/read`.
    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError>;
    /// `tools/call` by original tool name. A call the server runs as a task (SEP-2663) is
    /// followed to its end; a backend that hands long tasks to the background answers with a
    /// handle instead (see [`McpBackend::await_task`]).
    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError>;
    /// `completion/complete` for a resource template argument.
    async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError>;
    /// Whether any server declares the `completions` capability. Only looks: never starts a
    /// server.
    async fn supports_completions(&self) -> bool;
    /// Every model-visible MCP tool. Never restarts a server; may start a lazy server that has
    /// no tool catalog yet, to learn its tools.
    async fn list_tools(&self) -> Vec<QualifiedTool>;
    /// The MCP tools known now, without waiting for or restarting any server: the live lists
    /// of ready servers and the tool catalogs of the others. Servers whose tools are not known
    /// yet (starting, or lazy, without a catalog) are named in `unknown`; a backend may start
    /// such a lazy server in the background, so that its tools become known.
    async fn known_tools(&self) -> KnownTools {
        KnownTools { tools: Arc::new(self.list_tools().await), unknown: Vec::new() }
    }
    /// The server of a task handed to the background (`background_tasks_after`): `server` when
    /// given and it has such a task, else the one server that has. Only looks.
    fn backgrounded_task(&self, server: Option<&str>, task: &str) -> Result<String, McpError> {
        let _ = server;
        Err(McpError::Task { task: task.to_string(), error: crate::NO_SUCH_TASK.to_string() })
    }
    /// The result of `server`'s backgrounded task `task`, waiting at most `wait`: the tool's
    /// result once the task has ended (then it is forgotten), or the handle again, with the
    /// task's status, while it runs.
    async fn await_task(
        &self,
        server: &str,
        task: &str,
        wait: std::time::Duration,
    ) -> Result<CallToolResult, McpError> {
        let _ = (server, wait);
        Err(McpError::Task { task: task.to_string(), error: crate::NO_SUCH_TASK.to_string() })
    }
    /// `server`'s tool `tool` as listed (a ready server's live list, else its tool catalog).
    /// Only looks: never starts or waits for a server.
    fn listed_tool(&self, _server: &str, _tool: &str) -> Option<rmcp::model::Tool> {
        None
    }
    /// `server`'s tool `tool` if its app may call it (MCP Apps): an app-only tool, or a tool
    /// of the model's whose visibility names `"app"` (or says nothing). Only looks: a server
    /// that is not ready has none.
    fn app_tool(&self, _server: &str, _tool: &str) -> Option<rmcp::model::Tool> {
        None
    }
    /// The server and original tool name behind a qualified name, by [`resolve_tool_name`]'s
    /// rule.
    ///
    /// [`resolve_tool_name`]: crate::resolve_tool_name
    async fn resolve_tool(&self, qualified_name: &str) -> Option<(String, String)>;
    /// Why a qualified name that resolves to nothing is not callable, when the backend knows a
    /// better reason than "unsupported": e.g. the tool is filtered out by the configuration.
    /// Only looks.
    fn unavailable_tool(&self, _qualified_name: &str) -> Option<String> {
        None
    }

    /// SEP-2640: one server's skills (`skills/list`, every page, checked), kept until its
    /// resource list changes, it restarts, or the server's `ttlMs` (else `list_cache_sec`)
    /// passes. Starts a lazy server. A server that does not declare the extension is an error
    /// saying so.
    async fn server_skills(&self, server: &str) -> Result<Arc<ServerSkills>, McpError> {
        Err(no_skills(server))
    }
    /// Whether any server offers skills (declares the extension), after startups settle; a
    /// lazy server by its tool catalog. Only looks: never starts a server.
    async fn offers_skills(&self) -> bool {
        false
    }
    /// Every server's skills: the servers that declare the extension, waiting for the ones
    /// starting; lazy servers not started are named, not started.
    async fn all_skills(&self) -> SkillsListing {
        SkillsListing::default()
    }
    /// SEP-2640 `skills/get`: one skill's entry as the server serves it now.
    async fn get_skill(&self, server: &str, _uri: &str) -> Result<rmcp::model::Skill, McpError> {
        Err(no_skills(server))
    }
    /// Asks the host before `server`'s `skill` is first loaded (the entry carries its
    /// frontmatter, `allowed-tools` included). A backend without a host allows.
    async fn approve_skill(&self, _server: &str, _skill: &rmcp::model::Skill) -> SkillApproval {
        SkillApproval::Allow
    }

    /// Every server's prompts (`prompts/list`, every page), of the servers that declare them;
    /// a starting server is waited for, an idle one named, not started.
    async fn all_prompts(&self) -> crate::PromptsListing {
        crate::PromptsListing::default()
    }
    /// Whether any server declares `prompts` (a ready one; a starting one once settled). Only
    /// looks: never starts a server.
    async fn offers_prompts(&self) -> bool {
        false
    }
    /// `prompts/get` with `arguments`; an `input_required` answer (2026-07-28) is answered
    /// through the host and retried.
    async fn get_prompt(
        &self,
        server: &str,
        _name: &str,
        _arguments: Option<JsonObject>,
    ) -> Result<rmcp::model::GetPromptResult, McpError> {
        Err(McpError::UnknownServer(server.to_string()))
    }
    /// `completion/complete` for an argument of a prompt.
    async fn complete_prompt_argument(
        &self,
        server: &str,
        _prompt: &str,
        _argument: &str,
        _value: &str,
    ) -> Result<CompletionInfo, McpError> {
        Err(McpError::UnknownServer(server.to_string()))
    }

    /// Resources read through this backend that changed since they were last read, each
    /// reported once: taking them clears them. A backend that does not watch resources has
    /// none.
    fn take_resource_changes(&self) -> Vec<ResourceChange> {
        Vec::new()
    }
}

/// A server that does not offer skills: `-32601`, as rmcp answers for an undeclared extension.
pub fn no_skills(server: &str) -> McpError {
    McpError::Server {
        code: -32601,
        message: format!(
            "MCP server '{server}' does not offer skills (it does not declare the io.modelcontextprotocol/skills extension)"
        ),
        data: None,
    }
}
