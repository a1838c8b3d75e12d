//! Which servers stay idle at start: `startup = "lazy"`, and with tool search the servers whose
//! tools a catalog already knows (`StartupOptions::lazy_when_cataloged`), under `auto` only when
//! those tools' specs pass the search threshold ([`LazyOver`]). One decision, used by the
//! manager when it starts and by the command line when it reports (`auth status`).

use std::collections::BTreeSet;
use std::sync::Arc;

use rmcp::model::Tool;

use crate::options::ManagerOptions;
use crate::toolcache::CatalogSlot;
use mcp_connection::{ServerConfig, Startup};

/// Tool search `auto`: the servers of `lazy_when_cataloged` are idle only when their catalogs'
/// tools together measure more than `threshold` bytes, `measure` counting one tool's spec by
/// its qualified name (the router's own measure, so the manager and the specs decide alike).
#[derive(Clone, Copy)]
pub struct LazyOver {
    /// `tool_search_threshold_bytes`.
    pub threshold: usize,
    /// One tool's spec bytes, given its qualified name.
    pub measure: fn(&str, &Tool) -> usize,
}

impl std::fmt::Debug for LazyOver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyOver").field("threshold", &self.threshold).finish_non_exhaustive()
    }
}

impl PartialEq for LazyOver {
    fn eq(&self, other: &Self) -> bool {
        self.threshold == other.threshold && std::ptr::fn_addr_eq(self.measure, other.measure)
    }
}

/// The names of the servers (of those given, each with its catalog) that are not started until
/// used.
pub(crate) fn idle_servers<'a>(
    options: &ManagerOptions,
    servers: impl Iterator<Item = (&'a ServerConfig, &'a CatalogSlot)> + Clone,
) -> BTreeSet<String> {
    let cataloged = servers.clone().filter(|(config, catalog)| {
        options.startup.lazy_when_cataloged.contains(&config.name) && catalog.get().is_some()
    });
    // Measured only when some server could be deferred, and only until past the threshold.
    let defer = cataloged.clone().next().is_some()
        && options.startup.lazy_over.is_none_or(|over| {
            let mut bytes = 0usize;
            for (config, catalog) in servers.clone() {
                let Some(catalog) = catalog.get() else { continue };
                for tool in &catalog.tools {
                    let name = mcp_backend::qualified_tool_name(&config.name, &tool.name);
                    bytes = bytes.saturating_add((over.measure)(&name, tool));
                    if bytes > over.threshold {
                        return true;
                    }
                }
            }
            false
        });
    let explicit = servers.filter(|(config, _)| config.startup == Startup::Lazy);
    let mut idle: BTreeSet<String> = explicit.map(|(config, _)| config.name.clone()).collect();
    if defer {
        idle.extend(cataloged.map(|(config, _)| config.name.clone()));
    }
    idle
}

/// The enabled servers of `configs` that a manager with `options` would leave idle at start
/// (reads the tool cache; starts nothing).
pub fn idle_at_start(configs: &[ServerConfig], options: &ManagerOptions) -> BTreeSet<String> {
    let slots: Vec<(&ServerConfig, Arc<CatalogSlot>)> = configs
        .iter()
        .filter(|c| c.enabled)
        .map(|c| (c, Arc::new(CatalogSlot::load(options.startup.tool_cache.clone(), c))))
        .collect();
    idle_servers(options, slots.iter().map(|(c, s)| (*c, s.as_ref())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCache;
    use crate::toolcache::CachedCatalog;

    fn tool(name: &str) -> Tool {
        let schema = serde_json::json!({"type": "object"}).as_object().cloned().unwrap_or_default();
        Tool::new(name.to_string(), "does a thing", Arc::new(schema))
    }

    /// Every server counts its name's length per tool, so thresholds are easy to read.
    fn by_name(name: &str, _: &Tool) -> usize {
        name.len()
    }

    #[test]
    fn cataloged_servers_are_idle_on_and_under_auto_only_past_the_threshold() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ToolCache::at(dir.path());
        let mut lazy = ServerConfig::stdio("lazy", "x", vec![]);
        lazy.startup = Startup::Lazy;
        let (a, b) = (ServerConfig::stdio("a", "x", vec![]), ServerConfig::stdio("b", "x", vec![]));
        let tools = vec![tool("t1"), tool("t2")];
        let catalog = CachedCatalog {
            tools,
            resources: false,
            completions: false,
            skills: false,
            prompts: false,
            app_only: Vec::new(),
        };
        cache.save(&a, &catalog);
        let configs = vec![a, b, lazy];
        let mut options = ManagerOptions::default().with(|o| {
            o.startup.tool_cache = Some(cache);
            o.startup.lazy_when_cataloged = ["a".to_string(), "b".to_string()].into();
        });
        let names = |set: BTreeSet<String>| set.into_iter().collect::<Vec<_>>();
        // `on`: a has a catalog, b has none (it must start to be known), lazy says so itself.
        assert_eq!(names(idle_at_start(&configs, &options)), ["a", "lazy"]);
        // `auto`: a's two tools measure 2 × len("mcp__a__t1") = 20 bytes.
        options.startup.lazy_over = Some(LazyOver { threshold: 20, measure: by_name });
        assert_eq!(names(idle_at_start(&configs, &options)), ["lazy"]);
        options.startup.lazy_over = Some(LazyOver { threshold: 19, measure: by_name });
        assert_eq!(names(idle_at_start(&configs, &options)), ["a", "lazy"]);
        // Without tool search, only what the config says.
        options.startup.lazy_when_cataloged.clear();
        assert_eq!(names(idle_at_start(&configs, &options)), ["lazy"]);
    }
}
