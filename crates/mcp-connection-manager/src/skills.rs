//! SEP-2640 skills for the router: each server's `skills/list` (every page, checked, kept until
//! its lists change, it restarts, or the server's `ttlMs` — else `list_cache_sec` — passes),
//! `skills/get`, and the host's approval. Nothing here reads a skill's files: retrieval is the
//! router's, on load.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use mcp_backend::{McpError, ServerSkills, SkillsListing, no_skills};
use rmcp::model::{GetSkillRequestParams, PaginatedRequestParams, Skill};
use tokio::time::Instant;

use crate::lifecycle::ServerState;
use crate::manager::McpConnectionManager;

/// One server's kept listing: its generation then, and until when it is fresh.
struct Kept {
    generation: u64,
    until: Instant,
    skills: Arc<ServerSkills>,
}

/// The kept skill listings, by server.
#[derive(Default)]
pub(crate) struct SkillCache(Mutex<BTreeMap<String, Kept>>);

impl SkillCache {
    fn fresh(&self, server: &str, generation: u64) -> Option<Arc<ServerSkills>> {
        let kept = self.0.lock().ok()?;
        let kept = kept.get(server)?;
        (kept.generation == generation && kept.until > Instant::now()).then(|| kept.skills.clone())
    }

    fn keep(&self, server: &str, generation: u64, ttl: Duration, skills: Arc<ServerSkills>) {
        if let Ok(mut kept) = self.0.lock() {
            let until = Instant::now() + ttl;
            kept.insert(server.to_string(), Kept { generation, until, skills });
        }
    }
}

impl McpConnectionManager {
    /// `server`'s skills: kept, or listed anew (every page, up to `max_list_pages`, a repeated
    /// cursor ending the listing).
    pub(crate) async fn skills_of(&self, server: &str) -> Result<Arc<ServerSkills>, McpError> {
        let generation = self.generation(server)?;
        if let Some(kept) = self.skill_cache.fresh(server, generation) {
            return Ok(kept);
        }
        let mut listed: Vec<Skill> = Vec::new();
        let (mut cursor, mut seen) = (None::<String>, HashSet::new());
        let mut ttl: Option<u64> = None;
        for _ in 0..self.servers.options.max_list_pages.max(1) {
            let page = self
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
            ttl = match (ttl, page.ttl_ms) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            listed.extend(page.skills);
            match page.next_cursor {
                Some(next) if !next.is_empty() && seen.insert(next.clone()) => cursor = Some(next),
                _ => break,
            }
        }
        let skills = Arc::new(ServerSkills::checked(listed));
        for rejected in &skills.rejected {
            tracing::warn!(server, %rejected, "skill entry left out");
        }
        let ttl = ttl.filter(|ms| *ms > 0).map(Duration::from_millis);
        let ttl = ttl.unwrap_or(self.servers.options.list_cache);
        self.skill_cache.keep(server, generation, ttl, skills.clone());
        Ok(skills)
    }

    /// Every server's skills, sorted by server name: the ones that declare the extension (a
    /// starting server is waited for), the lazy ones not started named apart.
    pub(crate) async fn every_skill(&self) -> SkillsListing {
        let mut not_started = Vec::new();
        let mut asked = Vec::new();
        for (name, managed) in &self.servers.servers {
            if matches!(&*managed.state.borrow(), ServerState::Lazy) {
                not_started.push(name.clone());
            } else {
                asked.push(name.as_str());
            }
        }
        let answers = join_all(asked.into_iter().map(|name| async move {
            let declares = match self.servers.settled(name).await {
                Ok(ServerState::Ready { conn, .. }) => conn.capabilities.supports_skills(),
                // A failed server is asked anyway: the next use restarts it, or says why not.
                _ => true,
            };
            if !declares {
                return None;
            }
            Some((name.to_string(), self.skills_of(name).await.map_err(|e| e.to_string())))
        }))
        .await;
        let servers = answers.into_iter().flatten().collect();
        SkillsListing { servers, not_started }
    }

    /// Whether any server declares the skills extension: a ready one by its capabilities, a
    /// starting or lazy one by its catalog (as completions are decided), a starting one
    /// without a catalog once settled; a lazy one without a catalog does not count. Only looks.
    pub(crate) async fn any_skills(&self) -> bool {
        let checks = self.servers.servers.iter().map(|(name, managed)| async move {
            let state = managed.state.borrow().clone();
            let waiting = matches!(state, ServerState::Starting | ServerState::Lazy);
            if waiting && let Some(catalog) = managed.catalog.get() {
                return catalog.skills;
            }
            if matches!(state, ServerState::Lazy) {
                return false;
            }
            matches!(
                self.servers.settled(name).await,
                Ok(ServerState::Ready { conn, .. }) if conn.capabilities.supports_skills()
            )
        });
        join_all(checks).await.into_iter().any(|yes| yes)
    }

    /// `skills/get`.
    pub(crate) async fn skill_entry(&self, server: &str, uri: &str) -> Result<Skill, McpError> {
        let answer = self
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
}
