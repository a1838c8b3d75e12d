//! What the handlers need from MCP, as one object-safe trait.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{CallToolResult, CompletionInfo, JsonObject, ReadResourceResult};

use router_protocol::{DefinitionKind, HeldNote, ResourceChange};

use crate::error::McpError;

use crate::capabilities::{AppsBackend, PromptsBackend, SkillsBackend, TasksBackend};
use crate::listing::{Aggregate, ListKind, Page, Reuse, SharedListing};
use crate::qualify::QualifiedTool;

/// What [`McpBackend::known_tools`] knows.
#[derive(Debug, Clone, Default)]
pub struct KnownTools {
    /// Every model-visible tool of the servers whose tools are known (shared: the same `Arc`
    /// while the tools do not change, where the backend can tell).
    pub tools: Arc<Vec<QualifiedTool>>,
    /// Servers whose tools are not known yet, sorted.
    pub unknown: Vec<String>,
}

/// The MCP side of the router: the core every backend has (lists, reads, tool calls,
/// completion, the tool set, resource changes) and the optional capabilities (skills, prompts,
/// tasks, apps) it may expose. The connection manager is the real implementation; tests and
/// hosts may provide others.
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
    /// handle instead (see [`TasksBackend::await_task`]).
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
    /// `server`'s tool `tool` as listed (a ready server's live list, else its tool catalog).
    /// Only looks: never starts or waits for a server.
    fn listed_tool(&self, _server: &str, _tool: &str) -> Option<rmcp::model::Tool> {
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

    /// Skills (SEP-2640), if this backend has them: the router offers `load_mcp_skill` (and
    /// `list_mcp_skills`) only then.
    fn skills(&self) -> Option<&dyn SkillsBackend> {
        None
    }
    /// Prompts, if this backend has them: `get_mcp_prompt` is offered only then.
    fn prompts(&self) -> Option<&dyn PromptsBackend> {
        None
    }
    /// Calls handed to the background as tasks (SEP-2663), if this backend does that:
    /// `await_mcp_task` is offered only then.
    fn tasks(&self) -> Option<&dyn TasksBackend> {
        None
    }
    /// MCP Apps' calls from an app, if this backend serves apps.
    fn apps(&self) -> Option<&dyn AppsBackend> {
        None
    }

    /// Resources read through this backend that changed since they were last read, each
    /// reported once: taking them clears them. A backend that does not watch resources has
    /// none.
    fn take_resource_changes(&self) -> Vec<ResourceChange> {
        Vec::new()
    }

    /// The definitions of `kind` held from the model now (not their pinned ones, or new to
    /// pinned servers), one note per server, sorted by server: what the list payloads say of
    /// them. Only looks. A backend that pins nothing holds nothing.
    fn held(&self, _kind: DefinitionKind) -> Vec<HeldNote> {
        Vec::new()
    }
}

/// What a backend without the capability `what` (`skills`, `prompts`, `tasks`) answers for
/// `server`: `-32601`, as for a method nobody serves.
pub fn no_capability(server: &str, what: &str) -> McpError {
    McpError::Server {
        code: -32601,
        message: format!("{what} of MCP server '{server}' are not available in this host"),
        data: None,
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
