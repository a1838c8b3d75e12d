//! What the router asks of MCP for skills (the SEP-2640 extension): each server's listing, one
//! skill's entry, and the host's approval.

use std::sync::Arc;

use rmcp::model::Skill;

/// Most files one skill may list, and most bytes they may add up to (the spec's limits; an
/// entry past either is left out with the reason).
pub const MAX_SKILL_FILES: usize = 512;
/// See [`MAX_SKILL_FILES`]: 16 MiB.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// One server's skills: its `skills/list`, every page, entries checked by the spec's rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSkills {
    /// The usable entries, in the server's order.
    pub skills: Vec<Skill>,
    /// Entries left out, each as `uri: why`.
    pub rejected: Vec<String>,
}

impl ServerSkills {
    /// Check each listed entry: the spec's structural rules (`Skill::validate`), no URI twice,
    /// and the limits. What fails is left out, named in `rejected`.
    pub fn checked(listed: Vec<Skill>) -> Self {
        let mut out = Self::default();
        for skill in listed {
            let why = skill.validate().err().map(|e| e.to_string()).or_else(|| {
                let files = match &skill.resources {
                    rmcp::model::SkillResources::Files(files) => files.as_slice(),
                    _ => &[],
                };
                let bytes: u64 = files.iter().map(|f| f.size).sum();
                if out.skills.iter().any(|s| s.uri == skill.uri) {
                    Some("listed twice".to_string())
                } else if files.len() > MAX_SKILL_FILES {
                    Some(format!("{} files, more than the {MAX_SKILL_FILES} allowed", files.len()))
                } else if bytes > MAX_SKILL_BYTES {
                    Some(format!("{bytes} bytes of files, more than the 16 MiB allowed"))
                } else {
                    None
                }
            });
            match why {
                Some(why) => out.rejected.push(format!("{}: {why}", skill.uri)),
                None => out.skills.push(skill),
            }
        }
        out
    }
}

/// Every server's skills, sorted by server name.
#[derive(Debug, Clone, Default)]
pub struct SkillsListing {
    /// Servers that declare the extension, with their skills or why they could not be listed.
    pub servers: Vec<(String, Result<Arc<ServerSkills>, String>)>,
    /// Servers not started yet (lazy, idle): whether they offer skills is not known.
    pub not_started: Vec<String>,
}

/// The host's answer before a server's skill is first loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillApproval {
    /// Load it.
    Allow,
    /// Do not: the reason is shown to the model.
    Refuse(String),
}
