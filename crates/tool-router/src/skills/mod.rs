//! Skills from MCP servers (SEP-2640), the host's side: what a host shows (`ToolRouter::skills`),
//! the skills the model loaded — identity (server, `SKILL.md` uri), manifest — and the checks
//! every retrieved file passes before the model sees it: size and digest against the manifest
//! entry, the `SKILL.md` frontmatter field by field against the listed one, and while a skill is
//! loaded, no file of its folder that its manifest does not list.

pub(crate) mod handler;
#[cfg(test)]
mod handler_tests;

use std::collections::HashSet;
use std::sync::Mutex;

use mcp_backend::{McpBackend, SkillsListing};
use rmcp::model::{ResourceContents, Skill, SkillResource, SkillResources};
use router_protocol::{ServerFailure, SkillSummary, Skills};
use serde_json::Value;

/// Every server's skills, from the backend's listing.
pub(crate) fn skills_of(listing: SkillsListing) -> Skills {
    let mut out = Skills::default();
    for (server, answer) in listing.servers {
        match answer {
            Ok(listed) => {
                out.skills.extend(listed.skills.iter().map(|s| SkillSummary {
                    server: server.clone(),
                    name: s.frontmatter.name.clone(),
                    description: s.frontmatter.description.clone(),
                    uri: s.uri.clone(),
                }));
                out.errors.extend(listed.rejected.iter().map(|why| ServerFailure {
                    server: server.clone(),
                    error: format!("skill left out: {why}"),
                }));
            }
            Err(error) => out.errors.push(ServerFailure { server, error }),
        }
    }
    out
}

/// Every server's skills, gathered through `backend`.
pub(crate) async fn gather(backend: &dyn McpBackend) -> Skills {
    let mut skills = match backend.skills() {
        Some(skills) => skills_of(skills.all_skills().await),
        None => Skills::default(),
    };
    // After the listing: it is what finds them held.
    skills.held = backend.held(router_protocol::DefinitionKind::Skill);
    skills
}

/// A skill the model loaded.
#[derive(Debug, Clone)]
struct Loaded {
    server: String,
    name: String,
    /// The folder: the `SKILL.md` uri without `SKILL.md`.
    root: String,
    /// The manifest; `None` for a `dynamic` skill (nothing to check against).
    files: Option<Vec<SkillResource>>,
}

/// What a read of a loaded skill's file must match.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    pub(crate) skill: String,
    pub(crate) entry: SkillResource,
}

/// The loaded skills and the host's approvals.
#[derive(Debug, Default)]
pub(crate) struct LoadedSkills {
    loaded: Mutex<Vec<Loaded>>,
    approved: Mutex<HashSet<(String, String)>>,
}

impl LoadedSkills {
    /// Whether the host already allowed `server`'s skill at `uri`.
    pub(crate) fn approved(&self, server: &str, uri: &str) -> bool {
        let key = (server.to_string(), uri.to_string());
        self.approved.lock().is_ok_and(|a| a.contains(&key))
    }

    pub(crate) fn approve(&self, server: &str, uri: &str) {
        if let Ok(mut approved) = self.approved.lock() {
            approved.insert((server.to_string(), uri.to_string()));
        }
    }

    /// `skill` of `server` is loaded (replacing an earlier load of it: a new manifest).
    pub(crate) fn load(&self, server: &str, skill: &Skill) {
        let root = skill.uri.strip_suffix(rmcp::model::SKILL_MD).unwrap_or(&skill.uri);
        let files = match &skill.resources {
            SkillResources::Files(files) => Some(files.clone()),
            _ => None,
        };
        let loaded = Loaded {
            server: server.to_string(),
            name: skill.frontmatter.name.clone(),
            root: root.to_string(),
            files,
        };
        if let Ok(mut all) = self.loaded.lock() {
            all.retain(|l| !(l.server == server && l.root == loaded.root));
            all.push(loaded);
        }
    }

    /// The name of the loaded skill of `server` whose folder holds `uri`.
    pub(crate) fn owner(&self, server: &str, uri: &str) -> Option<String> {
        let all = self.loaded.lock().ok()?;
        let owner = all.iter().filter(|l| l.server == server && uri.starts_with(&l.root));
        owner.max_by_key(|l| l.root.len()).map(|l| l.name.clone())
    }

    /// Before `server` is asked for `uri`: the manifest entry it must match when it is a file
    /// of a loaded skill, or why it is refused (in that skill's folder, not in its manifest).
    pub(crate) fn before_read(&self, server: &str, uri: &str) -> Result<Option<Expected>, String> {
        let Ok(all) = self.loaded.lock() else { return Ok(None) };
        // The innermost loaded skill whose folder holds the file.
        let Some(skill) = all
            .iter()
            .filter(|l| l.server == server && uri.starts_with(&l.root))
            .max_by_key(|l| l.root.len())
        else {
            return Ok(None);
        };
        let Some(files) = &skill.files else { return Ok(None) };
        match files.iter().find(|f| f.uri == uri) {
            Some(entry) => Ok(Some(Expected { skill: skill.name.clone(), entry: entry.clone() })),
            None => Err(format!(
                "resources/read refused: {uri} is not in the manifest of skill \"{}\" (server \"{server}\"), which is loaded; its files are listed by load_mcp_skill, which also fetches a newer manifest",
                skill.name
            )),
        }
    }
}

/// The bytes a read returned for `uri`: its one content's text (UTF-8) or decoded blob.
pub(crate) fn read_bytes(contents: &[ResourceContents], uri: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let matching: Vec<&ResourceContents> = contents
        .iter()
        .filter(|c| match c {
            ResourceContents::TextResourceContents { uri: u, .. }
            | ResourceContents::BlobResourceContents { uri: u, .. } => u == uri,
            _ => false,
        })
        .collect();
    let one: &ResourceContents = match (matching.as_slice(), contents) {
        ([one], _) => one,
        ([], [one]) => one,
        _ => {
            return Err(format!(
                "{uri}: the server answered with {} contents, not the one file the manifest lists",
                contents.len()
            ));
        }
    };
    match one {
        ResourceContents::TextResourceContents { text, .. } => Ok(text.as_bytes().to_vec()),
        ResourceContents::BlobResourceContents { blob, .. } => {
            base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|e| format!("{uri}: the server's blob is not valid base64 ({e})"))
        }
        _ => Err(format!("{uri}: the server answered with content of an unknown kind")),
    }
}

/// A `SKILL.md`'s frontmatter (as JSON) and its body, or why it has none.
pub(crate) fn split_frontmatter(text: &str) -> Result<(Value, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("it does not begin with a --- frontmatter block")?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            let value: Value = yaml_serde::from_str(yaml)
                .map_err(|e| format!("its frontmatter is not valid YAML ({e})"))?;
            return match value {
                Value::Object(_) => Ok((value, body)),
                _ => Err("its frontmatter is not a mapping".to_string()),
            };
        }
        offset += line.len();
    }
    Err("its frontmatter block is not closed by ---".to_string())
}

/// Field by field: the fields that differ between the file's frontmatter and the listed one,
/// each side named by its size and digest only: a refusal never quotes the text it refused
/// (a poisoned description would reach the model through the very check that stopped it).
pub(crate) fn frontmatter_drift(file: &Value, listed: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (file, listed) = (file.as_object().unwrap_or(&empty), listed.as_object().unwrap_or(&empty));
    let mut keys: Vec<&String> = file.keys().chain(listed.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| file.get(*k).unwrap_or(&Value::Null) != listed.get(*k).unwrap_or(&Value::Null))
        .map(|k| {
            let show = |v: Option<&Value>| v.map_or("absent".to_string(), fingerprint);
            format!("{k}: the file has {}, the entry {}", show(file.get(k)), show(listed.get(k)))
        })
        .collect()
}

/// A value as a refusal names it: its JSON's size and the start of its SHA-256.
fn fingerprint(value: &Value) -> String {
    use sha2::{Digest as _, Sha256};
    let json = value.to_string();
    let digest: String =
        Sha256::digest(json.as_bytes()).iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{} bytes (sha256 {digest}…)", json.len())
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
