//! `load_mcp_skill {server?, name | uri}` (SEP-2640 skills): the host approves, the router
//! fetches the skill's `SKILL.md`, checks it (size and digest against the manifest, frontmatter
//! field by field against the listed entry) and returns its body and manifest; the skill's other
//! files are then read with `read_mcp_resource`, each checked the same way. Nothing of a skill
//! is fetched before it is loaded. `list_mcp_skills` (setting `list_skills_tool`) lists them
//! for hosts that do not put skills in their prompt.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_backend::{McpBackend, SkillApproval, SkillsBackend};
use rmcp::model::{Skill, SkillResources};
use router_protocol::{EventMsg, McpSkillRejectedEvent};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::handler::ToolHandler;
use crate::handlers::args::{
    normalize_optional_string, parse_args, parse_args_with_default, respond,
};
use crate::handlers::{
    Failed, Produced, backend_failure, one_server, produced, run, single_failure,
};
use crate::invocation::{CallContext, FunctionCallError, ToolInvocation, ToolOutput};
use crate::skills::{LoadedSkills, frontmatter_drift, read_bytes, split_frontmatter};
use crate::spec::ToolSpec;

/// Name of the skill-loading tool.
pub const LOAD_MCP_SKILL: &str = "load_mcp_skill";
/// Name of the skill-listing tool (offered with `list_skills_tool = true`).
pub const LIST_MCP_SKILLS: &str = "list_mcp_skills";

#[derive(Debug, Default, Deserialize)]
struct LoadArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
}

/// A file of the loaded skill, as the model reads about it.
#[derive(Serialize)]
struct FileInfo<'a> {
    path: &'a str,
    uri: &'a str,
    size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'static str>,
}

#[derive(Serialize)]
struct LoadPayload<'a> {
    server: &'a str,
    name: &'a str,
    uri: &'a str,
    description: &'a str,
    body: &'a str,
    /// The other files, or `"dynamic"`.
    files: serde_json::Value,
    read_with: String,
}

/// Handles `load_mcp_skill`; offered while a server offers skills.
pub(crate) struct LoadSkillHandler {
    backend: Arc<dyn McpBackend>,
    loaded: Arc<LoadedSkills>,
}

impl LoadSkillHandler {
    pub(crate) fn new(backend: Arc<dyn McpBackend>, loaded: Arc<LoadedSkills>) -> Self {
        Self { backend, loaded }
    }

    pub(crate) fn spec() -> ToolSpec {
        ToolSpec {
            name: LOAD_MCP_SKILL.to_string(),
            description: "Load a skill an MCP server offers: returns its SKILL.md instructions and the list of its other files, which you read with read_mcp_resource on the same server when the instructions call for them.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "MCP server that offers the skill (needed when several offer one of that name)."},
                    "name": {"type": "string", "description": "The skill's name."},
                    "uri": {"type": "string", "description": "Instead of name: the skill's SKILL.md URI."}
                },
                "additionalProperties": false
            }),
        }
    }

    /// The backend's skills (a router over a backend without them offers no skill tool).
    fn skills(&self, server: &str) -> Result<&dyn SkillsBackend, Failed> {
        self.backend.skills().ok_or_else(|| {
            backend_failure(server, "skills/list", mcp_backend::no_capability(server, "skills"))
        })
    }

    /// The skill the model named: by name (on one server, or the only server offering it) or
    /// by its `SKILL.md` uri (listed, else `skills/get`).
    /// The skill at `uri` of `server`: its listed entry, else what `skills/get` answers
    /// (checked against the skills spec).
    async fn by_uri(&self, server: &str, uri: &str) -> Result<Skill, Failed> {
        let listed = self.skills(server)?.server_skills(server).await;
        let listed = listed.map_err(|e| backend_failure(server, "skills/list", e))?;
        if let Some(skill) = listed.skills.iter().find(|s| s.uri == uri) {
            return Ok(skill.clone());
        }
        let skill = self.skills(server)?.get_skill(server, uri).await;
        let skill = skill.map_err(|e| backend_failure(server, "skills/get", e))?;
        skill.validate().map_err(|e| {
            let message = format!("skills/get answered an entry that breaks the skills spec: {e}");
            single_failure(server, message)
        })?;
        Ok(skill)
    }

    async fn find(&self, args: &LoadArgs) -> Result<(String, Skill), Failed> {
        let on = |server: &str, message: String| single_failure(server, message);
        if let Some(uri) = &args.uri {
            let Some(server) = &args.server else {
                return Err(on("", "server must be provided with uri".to_string()));
            };
            return Ok((server.clone(), self.by_uri(server, uri).await?));
        }
        let Some(name) = &args.name else {
            return Err(on("", "name (or server and uri) must be provided".to_string()));
        };
        let listing = match &args.server {
            Some(server) => {
                let listed = self.skills(server)?.server_skills(server).await;
                let listed = listed.map_err(|e| backend_failure(server, "skills/list", e))?;
                vec![(server.clone(), listed)]
            }
            None => {
                let all = self.skills("")?.all_skills().await;
                all.servers.into_iter().filter_map(|(s, l)| Some((s, l.ok()?))).collect()
            }
        };
        let mut found: Vec<(String, Skill)> = Vec::new();
        for (server, listed) in &listing {
            let named = listed.skills.iter().filter(|s| &s.frontmatter.name == name);
            found.extend(named.map(|s| (server.clone(), s.clone())));
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => {
                let mut known: Vec<String> = listing
                    .iter()
                    .flat_map(|(server, l)| {
                        l.skills.iter().map(move |s| format!("{} ({server})", s.frontmatter.name))
                    })
                    .collect();
                known.sort();
                let server = args.server.as_deref().unwrap_or("");
                let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                Err(on(
                    server,
                    format!("no skill named \"{name}\"; the skills offered are: {known}"),
                ))
            }
            _ => {
                let places: Vec<String> = found
                    .iter()
                    .map(|(s, skill)| format!("server \"{s}\" at {}", skill.uri))
                    .collect();
                let server = args.server.as_deref().unwrap_or("");
                Err(on(
                    server,
                    format!(
                        "several skills are named \"{name}\" ({}); say which with server, or with server and uri",
                        places.join(", ")
                    ),
                ))
            }
        }
    }

    /// The host's approval of a skill not loaded before (asked once per skill and session).
    async fn approve(&self, server: &str, skill: &Skill) -> Result<(), Failed> {
        if self.loaded.approved(server, &skill.uri) {
            return Ok(());
        }
        match self.skills(server)?.approve_skill(server, skill).await {
            SkillApproval::Allow => {
                self.loaded.approve(server, &skill.uri);
                Ok(())
            }
            SkillApproval::Refuse(why) => {
                let name = &skill.frontmatter.name;
                let message = format!(
                    "the host did not allow loading skill \"{name}\" of server \"{server}\": {why}"
                );
                Err(single_failure(server, message))
            }
        }
    }

    async fn load(&self, ctx: &CallContext, args: &LoadArgs) -> Result<Produced, Failed> {
        let (server, skill) = self.find(args).await?;
        let name = &skill.frontmatter.name;
        self.approve(&server, &skill).await?;
        let reject = |reason: String| {
            ctx.emit(EventMsg::McpSkillRejected(McpSkillRejectedEvent {
                server: server.clone(),
                skill: name.clone(),
                uri: skill.uri.clone(),
                reason: reason.clone(),
            }));
            single_failure(
                &server,
                format!(
                    "load_mcp_skill refused skill \"{name}\": {reason}; its content was not used"
                ),
            )
        };
        let read = self.backend.read_resource(&server, &skill.uri).await;
        let read = read.map_err(|e| backend_failure(&server, "resources/read", e))?;
        let bytes = read_bytes(&read.contents, &skill.uri).map_err(reject)?;
        if let SkillResources::Files(files) = &skill.resources
            && let Some(entry) = files.iter().find(|f| f.uri == skill.uri)
        {
            entry.verify(&bytes).map_err(|e| reject(e.to_string()))?;
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| reject(format!("{} is not UTF-8 text", skill.uri)))?;
        let (frontmatter, body) =
            split_frontmatter(&text).map_err(|why| reject(format!("{}: {why}", skill.uri)))?;
        let listed = serde_json::to_value(&skill.frontmatter).unwrap_or_default();
        let drift = frontmatter_drift(&frontmatter, &listed);
        if !drift.is_empty() {
            return Err(reject(format!(
                "{}: its frontmatter differs from the listed entry ({})",
                skill.uri,
                drift.join("; ")
            )));
        }
        self.loaded.load(&server, &skill);
        let files = files_of(&skill);
        let payload = LoadPayload {
            server: &server,
            name,
            uri: &skill.uri,
            description: &skill.frontmatter.description,
            body,
            files,
            read_with: format!(
                "read_mcp_resource with server \"{server}\" and a file's uri; each file is checked against this skill's manifest"
            ),
        };
        produced(self.backend.as_ref(), &payload, one_server(1))
    }
}

/// The files of a skill beside its `SKILL.md`, as the model sees them: paths under the
/// skill's folder, or `"dynamic"` when the manifest does not list them.
fn files_of(skill: &Skill) -> serde_json::Value {
    let root = skill.uri.strip_suffix(rmcp::model::SKILL_MD).unwrap_or(&skill.uri);
    match &skill.resources {
        SkillResources::Files(files) => {
            let others = files.iter().filter(|f| f.uri != skill.uri).map(|f| FileInfo {
                path: f.uri.strip_prefix(root).unwrap_or(&f.uri),
                uri: &f.uri,
                size: f.size,
                mime_type: mime_of(&f.uri),
            });
            serde_json::to_value(others.collect::<Vec<_>>()).unwrap_or_default()
        }
        _ => json!("dynamic"),
    }
}

/// The MIME type of a skill file, by its extension (the manifest has none).
fn mime_of(uri: &str) -> Option<&'static str> {
    let extension = uri.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    Some(match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

#[async_trait]
impl ToolHandler for LoadSkillHandler {
    async fn offered(&self) -> bool {
        match self.backend.skills() {
            Some(skills) => skills.offers_skills().await,
            None => false,
        }
    }

    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let args: LoadArgs = parse_args(invocation.arguments.as_ref())?;
        let args = LoadArgs {
            server: normalize_optional_string(args.server),
            name: normalize_optional_string(args.name),
            uri: normalize_optional_string(args.uri),
        };
        if args.name.is_none() && args.uri.is_none() {
            return Err(respond("name (or server and uri) must be provided"));
        }
        if args.name.is_some() && args.uri.is_some() {
            return Err(respond("provide either name or uri, not both"));
        }
        if args.uri.is_some() && args.server.is_none() {
            return Err(respond("server must be provided with uri"));
        }
        let (call_id, event_invocation) = invocation.into_event(args.server.clone());
        let work = self.load(ctx, &args);
        run(ctx, call_id, event_invocation, work).await.0
    }
}

/// Handles `list_mcp_skills`: every server's skills, as `ToolRouter::skills` has them.
pub(crate) struct ListSkillsHandler {
    backend: Arc<dyn McpBackend>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

impl ListSkillsHandler {
    pub(crate) fn new(backend: Arc<dyn McpBackend>) -> Self {
        Self { backend }
    }

    pub(crate) fn spec() -> ToolSpec {
        ToolSpec {
            name: LIST_MCP_SKILLS.to_string(),
            description: "List the skills the MCP servers offer (name, description, server). Load one with load_mcp_skill when a task calls for it.".to_string(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }
}

#[async_trait]
impl ToolHandler for ListSkillsHandler {
    async fn offered(&self) -> bool {
        match self.backend.skills() {
            Some(skills) => skills.offers_skills().await,
            None => false,
        }
    }

    async fn handle(
        &self,
        ctx: &CallContext,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, FunctionCallError> {
        let _: NoArgs = parse_args_with_default(invocation.arguments.as_ref())?;
        let (call_id, event_invocation) = invocation.into_event(None);
        let work = async {
            let skills = crate::skills::gather(self.backend.as_ref()).await;
            let mut servers: Vec<&str> = skills.skills.iter().map(|s| s.server.as_str()).collect();
            servers.extend(skills.errors.iter().map(|e| e.server.as_str()));
            servers.sort_unstable();
            servers.dedup();
            let summary = router_protocol::ResourceCallSummary {
                items: skills.skills.len(),
                pages: 1,
                servers: servers.len(),
                failed_servers: skills.errors.clone(),
            };
            produced(self.backend.as_ref(), &skills, summary)
        };
        run(ctx, call_id, event_invocation, work).await.0
    }
}
