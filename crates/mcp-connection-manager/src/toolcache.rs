//! The tool catalog cache: each server's last tool list (after its filters) and whether it
//! offers resources and completions, kept on disk per server config, so the model's tool specs
//! can be given at once while servers start, and a lazy server need not start to be listed.
//!
//! What is kept is the list a server offered when it became ready (a list it changes while
//! running, announced by `mcp_tools_changed`, is not saved: the next start offers the initial
//! list again, most likely).
//!
//! One JSON file per server under `<cache dir>/tools/`, named after the server and a hash of
//! what identifies it (transport, command, arguments, working directory, env and header *names*,
//! URL, tool filters). Values of env and headers are never hashed or written: they may be
//! secrets. A changed config is a new file; the old one is left to age.

use std::path::{Path, PathBuf};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};

use mcp_connection::{ServerConfig, TransportConfig};

/// Bumped when the file's shape changes; other versions are ignored (2: `prompts`, `app_only`).
const FORMAT: u32 = 2;

/// What a server offered the last time it was ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedCatalog {
    /// The tools the model may see (after the enabled/disabled filters), in the server's order.
    pub tools: Vec<Tool>,
    /// It declared `resources`.
    pub resources: bool,
    /// It declared `completions`.
    pub completions: bool,
    /// It declared the skills extension (SEP-2640); absent in older files.
    #[serde(default)]
    pub skills: bool,
    /// It declared `prompts`: an idle server is started to list or get its prompts only then.
    #[serde(default)]
    pub prompts: bool,
    /// The names of its tools for its app alone (`_meta.ui.visibility` without `"model"`): a
    /// call to one by name is refused while the server is idle, as when it is ready.
    #[serde(default)]
    pub app_only: Vec<String>,
}

impl CachedCatalog {
    /// What a ready connection offers.
    pub(crate) fn of(conn: &mcp_connection::Connection) -> Self {
        Self {
            tools: conn.tools().as_ref().clone(),
            resources: conn.capabilities.resources.is_some(),
            completions: conn.capabilities.completions.is_some(),
            skills: conn.capabilities.supports_skills(),
            prompts: conn.capabilities.prompts.is_some(),
            app_only: conn.app_only_tools().iter().map(|t| t.name.to_string()).collect(),
        }
    }
}

/// A start of the server that failed after its catalog was saved: the catalog may be out of
/// date (the server may be gone for good, or offer other tools when it is back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogFailure {
    /// When (RFC 3339 UTC).
    pub at: String,
    /// Why, as the failed start said.
    pub error: String,
    /// When the catalog itself was saved (RFC 3339 UTC).
    #[serde(skip)]
    pub saved_at: String,
}

#[derive(Serialize, Deserialize)]
struct File {
    format: u32,
    server: String,
    key: String,
    saved_at: String,
    /// The last failed start since `saved_at`; a ready start clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failed: Option<CatalogFailure>,
    #[serde(flatten)]
    catalog: CachedCatalog,
}

/// Where catalogs are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCache {
    dir: PathBuf,
}

impl ToolCache {
    /// Catalogs under `dir` (created when first written).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `$MCP_ROUTER_CACHE_DIR`, else `$XDG_CACHE_HOME/mcp-router`, else
    /// `~/.cache/mcp-router`; each with `tools/` below. `None` without any of them.
    pub fn default_location() -> Option<Self> {
        cache_base().map(|base| Self::at(base.join("tools")))
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The catalog saved for `config`, if there is a readable one of this format.
    pub fn load(&self, config: &ServerConfig) -> Option<CachedCatalog> {
        self.load_noted(config).map(|(catalog, _)| catalog)
    }

    /// The server's last failed start since its catalog was saved, if there was one: its
    /// catalog may be out of date.
    pub fn last_failure(&self, config: &ServerConfig) -> Option<CatalogFailure> {
        self.load_noted(config).and_then(|(_, failure)| failure)
    }

    /// The catalog and its noted failure (see [`Self::last_failure`]), in one read.
    pub fn load_noted(
        &self,
        config: &ServerConfig,
    ) -> Option<(CachedCatalog, Option<CatalogFailure>)> {
        let file = self.file(config)?;
        let failure = file.failed.map(|f| CatalogFailure { saved_at: file.saved_at, ..f });
        Some((file.catalog, failure))
    }

    /// Note a failed start in the server's catalog file (nothing when it has none); whether
    /// it was noted.
    pub(crate) fn record_failure(&self, config: &ServerConfig, error: &str) -> bool {
        let Some(mut file) = self.file(config) else { return false };
        let at = mcp_backend::rfc3339(std::time::SystemTime::now());
        file.failed =
            Some(CatalogFailure { at, error: error.to_string(), saved_at: String::new() });
        match self.write(config, &file) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), server = %config.name, error = %e, "cannot note the failure in the tool catalog");
                false
            }
        }
    }

    fn file(&self, config: &ServerConfig) -> Option<File> {
        let path = self.path(config);
        let text = std::fs::read(&path).ok()?;
        match serde_json::from_slice::<File>(&text) {
            Ok(file) if file.format == FORMAT && file.key == key(config) => Some(file),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "ignoring an unreadable tool catalog");
                None
            }
        }
    }

    /// Save `catalog` for `config`: written to a temporary file and renamed over the old one,
    /// so a reader never sees half a file. Failures are logged, not returned: the cache only
    /// speeds things up.
    pub fn save(&self, config: &ServerConfig, catalog: &CachedCatalog) {
        if let Err(e) = self.try_save(config, catalog) {
            tracing::warn!(dir = %self.dir.display(), server = %config.name, error = %e, "cannot save the tool catalog");
        }
    }

    fn try_save(&self, config: &ServerConfig, catalog: &CachedCatalog) -> std::io::Result<()> {
        let file = File {
            format: FORMAT,
            server: config.name.clone(),
            key: key(config),
            saved_at: mcp_backend::rfc3339(std::time::SystemTime::now()),
            failed: None,
            catalog: catalog.clone(),
        };
        self.write(config, &file)
    }

    fn write(&self, config: &ServerConfig, file: &File) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let path = self.path(config);
        let temp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temp, serde_json::to_vec(file)?)?;
        std::fs::rename(&temp, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })
    }

    fn path(&self, config: &ServerConfig) -> PathBuf {
        let key = key(config);
        self.dir.join(format!("{}-{}.json", config.name, &key[..16]))
    }
}

/// A hash of what identifies a server's tool list. No env or header values: they may be
/// secrets.
fn key(config: &ServerConfig) -> String {
    let transport = match &config.transport {
        TransportConfig::Stdio { command, args, env, cwd } => serde_json::json!({
            "stdio": command,
            "args": args,
            "env": env.keys().collect::<Vec<_>>(),
            "cwd": cwd,
        }),
        TransportConfig::StreamableHttp { url, bearer_token_env_var, http_headers, .. } => {
            serde_json::json!({
                "http": url,
                "bearer": bearer_token_env_var,
                "headers": http_headers.keys().collect::<Vec<_>>(),
            })
        }
    };
    let identity = serde_json::json!({
        "name": config.name,
        "transport": transport,
        "enabled_tools": config.enabled_tools,
        "disabled_tools": config.disabled_tools,
        "protocol": config.protocol.as_str(),
    });
    let digest = Sha1::digest(identity.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// One server's catalog in memory: loaded from the cache when the manager starts, replaced
/// (and saved) by every live tool list.
pub(crate) struct CatalogSlot {
    cache: Option<ToolCache>,
    config: ServerConfig,
    current: std::sync::Mutex<Option<std::sync::Arc<CachedCatalog>>>,
    /// The catalog was given out for the server while it was not ready.
    served: std::sync::atomic::AtomicBool,
    /// The file notes a failed start (see [`ToolCache::last_failure`]) until a ready start
    /// saves it again.
    noted: std::sync::atomic::AtomicBool,
}

impl CatalogSlot {
    /// The slot of `config`, with what `cache` holds for it.
    pub(crate) fn load(cache: Option<ToolCache>, config: &ServerConfig) -> Self {
        let loaded = cache.as_ref().and_then(|c| c.load_noted(config));
        let noted = loaded.as_ref().is_some_and(|(_, failure)| failure.is_some());
        let current = loaded.map(|(catalog, _)| std::sync::Arc::new(catalog));
        Self {
            cache,
            config: config.clone(),
            current: std::sync::Mutex::new(current),
            noted: std::sync::atomic::AtomicBool::new(noted),
            served: Default::default(),
        }
    }

    /// The last known catalog.
    pub(crate) fn get(&self) -> Option<std::sync::Arc<CachedCatalog>> {
        self.current.lock().ok().and_then(|c| c.clone())
    }

    /// The catalog is being given out in place of the live list.
    pub(crate) fn mark_served(&self) {
        self.served.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The server could not be started: the catalog given out in its place since the last live
    /// list, if any (its tools are gone from the specs now).
    pub(crate) fn take_served(&self) -> Option<std::sync::Arc<CachedCatalog>> {
        let served = self.served.swap(false, std::sync::atomic::Ordering::SeqCst);
        self.get().filter(|_| served)
    }

    /// The server's live catalog: kept and saved when it differs from the last known one.
    /// Returns the catalog given out in its place since the last live list, when that differs
    /// (the model's specs are then out of date).
    pub(crate) fn live(&self, catalog: CachedCatalog) -> Option<std::sync::Arc<CachedCatalog>> {
        let served = self.served.swap(false, std::sync::atomic::Ordering::SeqCst);
        let previous = self.get();
        // A start succeeded: a failure noted in the file is cleared by saving it again.
        let noted = self.noted.swap(false, std::sync::atomic::Ordering::SeqCst);
        if previous.as_deref() == Some(&catalog) && !noted {
            return None;
        }
        if let Some(cache) = &self.cache {
            cache.save(&self.config, &catalog);
        }
        if previous.as_deref() == Some(&catalog) {
            // Saved again only to clear the noted failure.
            return None;
        }
        if let Ok(mut current) = self.current.lock() {
            *current = Some(std::sync::Arc::new(catalog));
        }
        previous.filter(|_| served)
    }

    /// A start failed: its catalog file says so (see [`ToolCache::last_failure`]).
    pub(crate) fn failed(&self, error: &str) {
        if let Some(cache) = &self.cache
            && cache.record_failure(&self.config, error)
        {
            self.noted.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// The router's cache directory: `$MCP_ROUTER_CACHE_DIR`, else `$XDG_CACHE_HOME/mcp-router`,
/// else `~/.cache/mcp-router`; `None` without any of them.
pub(crate) fn cache_base() -> Option<PathBuf> {
    router_protocol::dirs::cache_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(names: &[&str]) -> CachedCatalog {
        CachedCatalog {
            tools: names
                .iter()
                .map(|n| Tool::new(n.to_string(), "a tool", rmcp::model::JsonObject::new()))
                .collect(),
            resources: true,
            completions: false,
            skills: false,
            prompts: false,
            app_only: Vec::new(),
        }
    }

    #[test]
    fn a_catalog_is_kept_per_config_and_never_holds_env_values() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ToolCache::at(dir.path().join("tools"));
        let mut config = ServerConfig::stdio("docs", "demo", vec!["--x".into()]);
        if let TransportConfig::Stdio { env, .. } = &mut config.transport {
            env.insert("API_KEY".into(), "s3cret-value".into());
        }
        assert_eq!(cache.load(&config), None);
        cache.save(&config, &catalog(&["echo", "add"]));
        assert_eq!(cache.load(&config), Some(catalog(&["echo", "add"])));
        // Replaced in place; no temporary file left.
        cache.save(&config, &catalog(&["echo"]));
        assert_eq!(cache.load(&config), Some(catalog(&["echo"])));
        let files: Vec<_> = std::fs::read_dir(cache.dir()).expect("dir").flatten().collect();
        assert_eq!(files.len(), 1, "{files:?}");
        let text = std::fs::read_to_string(files[0].path()).expect("read");
        assert!(!text.contains("s3cret"), "{text}");
        // Another command, other arguments or other filters: another catalog.
        let mut other = config.clone();
        other.disabled_tools = vec!["echo".into()];
        assert_eq!(cache.load(&other), None);
        let moved = ServerConfig::stdio("docs", "demo", vec!["--y".into()]);
        assert_eq!(cache.load(&moved), None);
        // An env value change is not a new identity (values are not hashed).
        let mut same = config.clone();
        if let TransportConfig::Stdio { env, .. } = &mut same.transport {
            env.insert("API_KEY".into(), "other".into());
        }
        assert_eq!(cache.load(&same), Some(catalog(&["echo"])));
    }

    #[test]
    fn a_damaged_file_is_ignored() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ToolCache::at(dir.path());
        let config = ServerConfig::stdio("docs", "demo", vec![]);
        cache.save(&config, &catalog(&["echo"]));
        let path = cache.path(&config);
        std::fs::write(&path, b"{not json").expect("write");
        assert_eq!(cache.load(&config), None);
    }
}
