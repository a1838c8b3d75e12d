//! SEP-2640 skills for the router: each server's `skills/list` (every page, checked, kept until
//! its lists change, it restarts, or the server's `ttlMs` — else `list_cache_sec` — passes),
//! `skills/get`, and the host's approval. Nothing here reads a skill's files: retrieval is the
//! router's, on load.

pub(crate) mod cache;

use std::sync::Arc;
use std::time::Duration;

use mcp_backend::{
    Follow, McpError, Paged, ServerSkills, SkillApproval, SkillsBackend, SkillsListing, no_skills,
};
use rmcp::model::{GetSkillRequestParams, PaginatedRequestParams, ServerCapabilities, Skill};

use router_protocol::DefinitionKind;

use crate::declared::Capability;
use crate::manager::McpConnectionManager;

/// The skills extension, as a server declares it and its catalog records it.
const SKILLS: Capability =
    Capability { declared: ServerCapabilities::supports_skills, cataloged: |c| c.skills };

impl McpConnectionManager {
    /// `server`'s skills: kept, or listed anew (every page, up to `max_list_pages`, a repeated
    /// cursor ending the listing).
    pub(crate) async fn skills_of(&self, server: &str) -> Result<Arc<ServerSkills>, McpError> {
        let generation = self.generation(server)?;
        if let Some(kept) = self.skill_cache.fresh(&self.servers.key(server), generation) {
            return Ok(kept);
        }
        let follow = Follow { server, max_pages: self.servers.options.lists.max_pages };
        let followed = follow
            .run(Vec::new(), None, |cursor| async move {
                let page = self
                    .servers
                    .request(server, "skills/list", |conn| {
                        let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
                        async move {
                            if !conn.capabilities.supports_skills() {
                                return Ok(None);
                            }
                            conn.service.list_skills(Some(params)).await.map(Some)
                        }
                    })
                    .await?
                    .ok_or_else(|| no_skills(server))?;
                Ok(Paged { items: page.skills, next_cursor: page.next_cursor, ttl_ms: page.ttl_ms })
            })
            .await;
        let (listed, ttl) = crate::declared::gathered(server, followed)?;
        let by_name = |s: &Skill| s.name().to_string();
        let listed = self.admitted(server, DefinitionKind::Skill, listed, by_name).into_inner();
        let skills = Arc::new(ServerSkills::checked(listed));
        for rejected in &skills.rejected {
            tracing::warn!(server, %rejected, "skill entry left out");
        }
        let ttl = ttl.filter(|ms| *ms > 0).map(Duration::from_millis);
        let ttl = ttl.unwrap_or(self.servers.options.lists.cache);
        self.skill_cache.keep(&self.servers.key(server), generation, ttl, skills.clone());
        Ok(skills)
    }
}

#[async_trait::async_trait]
impl SkillsBackend for McpConnectionManager {
    async fn server_skills(&self, server: &str) -> Result<Arc<ServerSkills>, McpError> {
        self.skills_of(server).await
    }

    /// Every server's skills, sorted by server name: the ones that declare the extension (a
    /// starting server waited for, an idle one started unless its catalog says it has none).
    async fn all_skills(&self) -> SkillsListing {
        let declared =
            self.each_declaring(SKILLS, |name| async move { self.skills_of(&name).await }).await;
        SkillsListing { servers: declared }
    }

    /// Whether any server declares the skills extension (see `any_declaring`). Only looks.
    async fn offers_skills(&self) -> bool {
        self.any_declaring(SKILLS).await
    }

    /// `skills/get`.
    async fn get_skill(&self, server: &str, uri: &str) -> Result<Skill, McpError> {
        if let Some(name) = rmcp::model::skill_name_from_uri(uri) {
            self.not_held(server, DefinitionKind::Skill, name)?;
        }
        let answer = self
            .servers
            .request(server, "skills/get", |conn| {
                let params = GetSkillRequestParams::new(uri);
                async move {
                    if !conn.capabilities.supports_skills() {
                        return Ok(None);
                    }
                    conn.service.get_skill(params).await.map(|r| Some(r.skill))
                }
            })
            .await?;
        answer.ok_or_else(|| no_skills(server))
    }

    /// The host's answer (`HostHandler::approve_skill`), told which call waits on it.
    async fn approve_skill(&self, server: &str, skill: &Skill) -> SkillApproval {
        let call_id = mcp_backend::current_call_id().map(|id| id.to_string());
        let asking = mcp_connection::Asking::new(server, call_id);
        let params = serde_json::json!({"name": skill.name(), "uri": skill.uri});
        let ask = self.servers.host.approve_skill(&asking, skill);
        let told = |answer: &SkillApproval| match answer {
            SkillApproval::Allow => serde_json::json!({"approval": "allow"}),
            SkillApproval::Refuse(reason) => {
                serde_json::json!({"approval": "refuse", "reason": reason})
            }
        };
        let events = &self.servers.events;
        crate::waiting::waiting(events, &asking, "approval/skill", params, ask, told).await
    }
}
