//! A session's servers when some are its own: the servers every session shares, and the ones
//! run for this session (`shared = false`) or for its working directory (`shared = "cwd"`),
//! as one backend. A request about a server goes to the part that runs it; what spans
//! servers (the tools, every server's lists, skills, prompts, changes) is the parts' answers
//! merged, sorted by server name as one manager sorts them.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_host::backend::{
    Aggregate, AppsBackend, KnownTools, ListKind, Page, PromptsBackend, PromptsListing,
    QualifiedTool, Reuse, ServerSkills, SharedListing, SkillApproval, SkillsBackend, SkillsListing,
    TasksBackend,
};
use mcp_host::{McpBackend, McpError};
use rmcp::model::{
    CallToolResult, CompletionInfo, GetPromptResult, JsonObject, ReadResourceResult, Skill, Tool,
};
use router_protocol::ResourceChange;

use super::backend::SessionBackend;
use super::lock::locked;

/// The parts: the shared servers first, then the session's own.
pub(crate) struct SplitBackend {
    parts: Vec<Arc<SessionBackend>>,
    /// The last merged tools, with the parts' lists they were merged from: the same `Arc`
    /// while no part's tools change (the router keeps its specs while they are the same).
    merged: Mutex<Option<Merged>>,
}

/// The parts' tool lists, and the one list they were merged into.
type Merged = (Vec<Arc<Vec<QualifiedTool>>>, Arc<Vec<QualifiedTool>>);

impl SplitBackend {
    /// Over `parts`: the shared servers' first, then the session's own.
    pub(crate) fn new(parts: Vec<Arc<SessionBackend>>) -> Self {
        assert!(!parts.is_empty(), "the shared servers' part comes first");
        Self { parts, merged: Mutex::default() }
    }

    fn parts(&self) -> impl Iterator<Item = &Arc<SessionBackend>> {
        self.parts.iter()
    }

    fn part(&self, server: &str) -> &SessionBackend {
        part_for(&self.parts, server)
    }

    /// The part whose server a qualified tool name (`mcp__server__tool`) names: the server of
    /// the listed tool of that name; for a name not listed (yet), the session's own server with
    /// the longest name the qualified name could belong to (a name over 64 characters keeps only
    /// its beginning, then a hash: `could_name_a_tool_of`); else the shared servers' part.
    fn part_of_tool(&self, qualified: &str) -> &SessionBackend {
        let listed = self.merged.lock().ok().and_then(|merged| {
            let (_, tools) = merged.as_ref()?;
            mcp_backend::find_listed_tool(qualified, tools)
        });
        if let Some((server, _)) = listed {
            return self.part(&server);
        }
        let own = self.parts[1..]
            .iter()
            .flat_map(|part| part.manager.server_names().into_iter().map(move |name| (part, name)))
            .filter(|(_, name)| mcp_backend::could_name_a_tool_of(qualified, name))
            .max_by_key(|(_, name)| name.len());
        own.map_or(&self.parts[0], |(part, _)| part)
    }
}

/// Of `parts` (the shared servers' first), the one that runs `server` (the shared one for a
/// server no part runs: it answers that it knows no such server).
pub(crate) fn part_for<'a>(parts: &'a [Arc<SessionBackend>], server: &str) -> &'a SessionBackend {
    let own = parts[1..].iter().find(|part| part.manager.status(server).is_some());
    own.unwrap_or(&parts[0])
}

/// `lists` as one list, sorted by server (each server's own order kept).
fn by_server<T>(lists: Vec<Vec<T>>, server: impl Fn(&T) -> &str) -> Vec<T> {
    let mut all: Vec<T> = lists.into_iter().flatten().collect();
    all.sort_by(|a, b| server(a).cmp(server(b)));
    all
}

#[async_trait]
impl McpBackend for SplitBackend {
    async fn list(
        &self,
        server: &str,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page, McpError> {
        self.part(server).list(server, kind, cursor).await
    }

    async fn listing(
        &self,
        server: &str,
        kind: ListKind,
        from: Option<String>,
    ) -> Result<SharedListing, McpError> {
        self.part(server).listing(server, kind, from).await
    }

    fn kept_listing(&self, server: &str, kind: ListKind) -> Option<SharedListing> {
        self.part(server).kept_listing(server, kind)
    }

    async fn list_all(&self, kind: ListKind, reuse: Reuse) -> Result<Aggregate, McpError> {
        let answers =
            futures::future::join_all(self.parts().map(|part| part.list_all(kind, reuse))).await;
        let lists = answers.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(by_server(lists, |listing| listing.listing.server.as_str()))
    }

    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
        self.part(server).read_resource(server, uri).await
    }

    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        self.part(server).call_tool(server, tool, arguments).await
    }

    async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        self.part(server).complete_resource_argument(server, template, argument, value).await
    }

    async fn supports_completions(&self) -> bool {
        for part in self.parts() {
            if part.supports_completions().await {
                return true;
            }
        }
        false
    }

    async fn list_tools(&self) -> Vec<QualifiedTool> {
        let lists = futures::future::join_all(self.parts().map(|part| part.list_tools())).await;
        by_server(lists, |tool| tool.server.as_str())
    }

    async fn known_tools(&self) -> KnownTools {
        let known = futures::future::join_all(self.parts().map(|part| part.known_tools())).await;
        let lists: Vec<_> = known.iter().map(|k| k.tools.clone()).collect();
        let mut unknown: Vec<String> = known.into_iter().flat_map(|k| k.unknown).collect();
        unknown.sort();
        let mut merged = locked(&self.merged);
        if let Some((from, tools)) = merged.as_ref()
            && from.len() == lists.len()
            && from.iter().zip(&lists).all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return KnownTools { tools: tools.clone(), unknown };
        }
        let copies = lists.iter().map(|list| list.as_ref().clone()).collect();
        let tools = Arc::new(by_server(copies, |tool: &QualifiedTool| tool.server.as_str()));
        *merged = Some((lists, tools.clone()));
        KnownTools { tools, unknown }
    }

    fn listed_tool(&self, server: &str, tool: &str) -> Option<Tool> {
        self.part(server).listed_tool(server, tool)
    }

    async fn resolve_tool(&self, qualified_name: &str) -> Option<(String, String)> {
        self.part_of_tool(qualified_name).resolve_tool(qualified_name).await
    }

    fn unavailable_tool(&self, qualified_name: &str) -> Option<String> {
        self.part_of_tool(qualified_name).unavailable_tool(qualified_name)
    }

    fn skills(&self) -> Option<&dyn SkillsBackend> {
        self.parts().any(|part| part.skills().is_some()).then_some(self as &dyn SkillsBackend)
    }

    fn prompts(&self) -> Option<&dyn PromptsBackend> {
        self.parts().any(|part| part.prompts().is_some()).then_some(self as &dyn PromptsBackend)
    }

    fn tasks(&self) -> Option<&dyn TasksBackend> {
        self.parts().any(|part| part.tasks().is_some()).then_some(self as &dyn TasksBackend)
    }

    fn apps(&self) -> Option<&dyn AppsBackend> {
        self.parts().any(|part| part.apps().is_some()).then_some(self as &dyn AppsBackend)
    }

    fn take_resource_changes(&self) -> Vec<ResourceChange> {
        let changes = self.parts().map(|part| part.take_resource_changes()).collect();
        by_server(changes, |change: &ResourceChange| change.server.as_str())
    }

    fn held(&self, kind: router_protocol::DefinitionKind) -> Vec<router_protocol::HeldNote> {
        let notes = self.parts().map(|part| part.held(kind)).collect();
        by_server(notes, |note: &router_protocol::HeldNote| note.server.as_str())
    }
}

/// `server`'s part's capability `what`, or the error a backend without it gives.
fn capability<'a, T: ?Sized>(
    part: &'a SessionBackend,
    server: &str,
    what: &str,
    get: impl FnOnce(&'a SessionBackend) -> Option<&'a T>,
) -> Result<&'a T, McpError> {
    get(part).ok_or_else(|| mcp_host::backend::no_capability(server, what))
}

#[async_trait]
impl SkillsBackend for SplitBackend {
    async fn server_skills(&self, server: &str) -> Result<Arc<ServerSkills>, McpError> {
        let part = self.part(server);
        capability(part, server, "skills", |p| p.skills())?.server_skills(server).await
    }

    async fn offers_skills(&self) -> bool {
        for skills in self.parts().filter_map(|part| part.skills()) {
            if skills.offers_skills().await {
                return true;
            }
        }
        false
    }

    async fn all_skills(&self) -> SkillsListing {
        let parts = self.parts().filter_map(|part| part.skills());
        let listings = futures::future::join_all(parts.map(|skills| skills.all_skills())).await;
        let lists = listings.into_iter().map(|listing| listing.servers).collect();
        SkillsListing { servers: by_server(lists, |(server, _)| server.as_str()) }
    }

    async fn get_skill(&self, server: &str, uri: &str) -> Result<Skill, McpError> {
        let part = self.part(server);
        capability(part, server, "skills", |p| p.skills())?.get_skill(server, uri).await
    }

    async fn approve_skill(&self, server: &str, skill: &Skill) -> SkillApproval {
        match self.part(server).skills() {
            Some(skills) => skills.approve_skill(server, skill).await,
            None => SkillApproval::Refuse(format!("MCP server '{server}' has no skills here")),
        }
    }
}

#[async_trait]
impl PromptsBackend for SplitBackend {
    async fn all_prompts(&self) -> PromptsListing {
        let parts = self.parts().filter_map(|part| part.prompts());
        let listings = futures::future::join_all(parts.map(|prompts| prompts.all_prompts())).await;
        let lists = listings.into_iter().map(|listing| listing.servers).collect();
        PromptsListing { servers: by_server(lists, |(server, _)| server.as_str()) }
    }

    async fn offers_prompts(&self) -> bool {
        for prompts in self.parts().filter_map(|part| part.prompts()) {
            if prompts.offers_prompts().await {
                return true;
            }
        }
        false
    }

    async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, McpError> {
        let part = self.part(server);
        capability(part, server, "prompts", |p| p.prompts())?
            .get_prompt(server, name, arguments)
            .await
    }

    async fn complete_prompt_argument(
        &self,
        server: &str,
        prompt: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        let part = self.part(server);
        capability(part, server, "prompts", |p| p.prompts())?
            .complete_prompt_argument(server, prompt, argument, value)
            .await
    }
}

#[async_trait]
impl TasksBackend for SplitBackend {
    fn backgrounded_task(&self, server: Option<&str>, task: &str) -> Result<String, McpError> {
        if let Some(server) = server {
            let part = self.part(server);
            return capability(part, server, "tasks", |p| p.tasks())?
                .backgrounded_task(Some(server), task);
        }
        // No server named: the part that has such a task (the first error if none has).
        let mut first_error = None;
        for tasks in self.parts().filter_map(|part| part.tasks()) {
            match tasks.backgrounded_task(None, task) {
                Ok(server) => return Ok(server),
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        Err(first_error.unwrap_or_else(|| mcp_host::backend::no_capability("*", "tasks")))
    }

    async fn await_task(
        &self,
        server: &str,
        task: &str,
        wait: std::time::Duration,
    ) -> Result<CallToolResult, McpError> {
        let part = self.part(server);
        capability(part, server, "tasks", |p| p.tasks())?.await_task(server, task, wait).await
    }
}

impl AppsBackend for SplitBackend {
    fn app_tool(&self, server: &str, tool: &str) -> Option<Tool> {
        self.part(server).apps()?.app_tool(server, tool)
    }
}
