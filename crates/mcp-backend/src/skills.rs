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
}

/// The host's answer before a server's skill is first loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillApproval {
    /// Load it.
    Allow,
    /// Do not: the reason is shown to the model.
    Refuse(String),
}

#[cfg(test)]
mod tests {
    use rmcp::model::{SkillFrontmatter, SkillResource, SkillResources};

    use super::*;

    fn skill(uri: &str, name: &str, files: Vec<SkillResource>) -> Skill {
        let frontmatter = SkillFrontmatter::new(name, "d");
        Skill::new(uri, frontmatter, SkillResources::Files(files))
    }

    fn file(uri: &str, size: u64) -> SkillResource {
        SkillResource::new(uri, format!("sha256:{}", "0".repeat(64)), size)
    }

    #[test]
    fn entries_that_break_the_rules_or_the_limits_are_left_out_and_named() {
        let ok = skill("skill://a/SKILL.md", "a", vec![file("skill://a/SKILL.md", 1)]);
        let twice = ok.clone();
        let renamed = skill("skill://b/SKILL.md", "c", vec![file("skill://b/SKILL.md", 1)]);
        let mut many = vec![file("skill://d/SKILL.md", 1)];
        many.extend((0..MAX_SKILL_FILES).map(|i| file(&format!("skill://d/f{i}"), 1)));
        let many = skill("skill://d/SKILL.md", "d", many);
        let big = skill(
            "skill://e/SKILL.md",
            "e",
            vec![file("skill://e/SKILL.md", 1), file("skill://e/big.bin", MAX_SKILL_BYTES)],
        );
        let dynamic = Skill::new(
            "skill://f/SKILL.md",
            SkillFrontmatter::new("f", "d"),
            SkillResources::Dynamic,
        );
        let checked = ServerSkills::checked(vec![ok, twice, renamed, many, big, dynamic]);
        let kept: Vec<&str> = checked.skills.iter().map(|s| s.name()).collect();
        assert_eq!(kept, ["a", "f"]);
        let why: Vec<&str> =
            checked.rejected.iter().map(|r| r.split_once(": ").expect("uri: why").1).collect();
        assert_eq!(why[0], "listed twice");
        assert!(why[1].contains("c"), "{why:?}");
        assert_eq!(why[2], "513 files, more than the 512 allowed");
        assert_eq!(why[3], "16777217 bytes of files, more than the 16 MiB allowed");
    }
}
