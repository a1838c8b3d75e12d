//! Each server's skill listing, kept until its generation changes or its time passes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_backend::ServerSkills;
use tokio::time::Instant;

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
    pub(super) fn fresh(&self, server: &str, generation: u64) -> Option<Arc<ServerSkills>> {
        let kept = self.0.lock().ok()?;
        let kept = kept.get(server)?;
        (kept.generation == generation && kept.until > Instant::now()).then(|| kept.skills.clone())
    }

    pub(super) fn keep(
        &self,
        server: &str,
        generation: u64,
        ttl: Duration,
        skills: Arc<ServerSkills>,
    ) {
        if let Ok(mut kept) = self.0.lock() {
            let until = Instant::now() + ttl;
            kept.insert(server.to_string(), Kept { generation, until, skills });
        }
    }
}
