//! Skills (SEP-2640) served from a folder with rmcp's `SkillCatalog`, and the two bundled demo
//! skills (`release-notes`, `csv-report`), written once to a folder of the temp directory named
//! by their content so every demo server process serves the same files.

use std::path::PathBuf;

use std::sync::Arc;

use rmcp::handler::server::skill_catalog::SkillCatalog;
use rmcp::model::ReadResourceResult;
use rmcp::{ErrorData, Peer, RoleServer};

use crate::options::{DemoError, DemoOptions};

/// The bundled skills: (path below the root, content).
const BUNDLED: [(&str, &str); 4] = [
    ("release-notes/SKILL.md", include_str!("../skills/release-notes/SKILL.md")),
    (
        "release-notes/templates/TEMPLATE.md",
        include_str!("../skills/release-notes/templates/TEMPLATE.md"),
    ),
    ("csv-report/SKILL.md", include_str!("../skills/csv-report/SKILL.md")),
    ("csv-report/references/STYLE.md", include_str!("../skills/csv-report/references/STYLE.md")),
];

/// Where the bundled skills are written: the temporary directory, not the router's cache — a
/// sandboxed server may not read the router's state, and may always write temp. The folder is
/// named by its content (`mcp-demo-skills-<hash>`), so every run shares the one copy.
fn skills_parent() -> PathBuf {
    std::env::temp_dir()
}

/// The folder holding the bundled skills, written if it is not there yet.
pub fn bundled_skills_dir() -> Result<PathBuf, DemoError> {
    use sha2::Digest as _;
    let mut hash = sha2::Sha256::new();
    for (path, text) in BUNDLED {
        hash.update(path.as_bytes());
        hash.update(text.as_bytes());
    }
    let digest: String = hash.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    let parent = skills_parent();
    let root = parent.join(format!("mcp-demo-skills-{digest}"));
    if root.join(".complete").exists() {
        return Ok(root);
    }
    // Written beside, then renamed into place: a concurrent demo server never sees half.
    let staging = parent.join(format!("mcp-demo-skills-{digest}.{}", std::process::id()));
    let io = |e: std::io::Error| DemoError::Skills(format!("cannot write the demo skills: {e}"));
    for (path, text) in BUNDLED {
        let file = staging.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&file, text).map_err(io)?;
    }
    std::fs::write(staging.join(".complete"), b"").map_err(io)?;
    if std::fs::rename(&staging, &root).is_err() {
        // Another process was first: use its copy.
        let _ = std::fs::remove_dir_all(&staging);
    }
    Ok(root)
}

/// The skills below `dir`.
pub fn load_skills(dir: &std::path::Path) -> Result<SkillCatalog, DemoError> {
    SkillCatalog::from_dir(dir).map_err(|e| DemoError::Skills(e.to_string()))
}

/// The catalog, read again from its folder first: a change is announced to `peer` with
/// `notifications/resources/list_changed`.
pub(crate) async fn catalog<'a>(
    options: &'a DemoOptions,
    peer: &Peer<RoleServer>,
) -> Result<&'a Arc<SkillCatalog>, ErrorData> {
    let Some(catalog) = &options.skills else {
        return Err(ErrorData::method_not_found::<rmcp::model::ListSkillsRequestMethod>());
    };
    refresh(catalog, peer).await;
    Ok(catalog)
}

/// A skill file, read from the folder as it is now (`None`: not a skill file).
pub(crate) async fn read(
    catalog: &Arc<SkillCatalog>,
    uri: &str,
    peer: &Peer<RoleServer>,
) -> Option<ReadResourceResult> {
    if !uri.starts_with("skill://") {
        return None;
    }
    refresh(catalog, peer).await;
    catalog.read_resource(uri)
}

async fn refresh(catalog: &Arc<SkillCatalog>, peer: &Peer<RoleServer>) {
    let reloading = catalog.clone();
    let changed = tokio::task::spawn_blocking(move || reloading.reload()).await;
    match changed {
        Ok(Ok(true)) => {
            let _ = peer.notify_resource_list_changed().await;
        }
        Ok(Ok(false)) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "skills folder could not be read again"),
        Err(e) => tracing::warn!(error = %e, "skills reload did not finish"),
    }
}
