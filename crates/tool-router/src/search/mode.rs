//! Tool search (`tool_search` = `auto` | `on` | `off`): with it on, the specs hold the router's
//! own tools, `search_mcp_tools`, and the MCP tools of `always_load_tools` servers — sorted, a
//! stable base — then the MCP tools revealed so far, appended in the order they were revealed
//! (a search found them, or the model called one by name) and never re-sorted or removed until
//! the host resets them, so a host that appends them keeps its prompt-prefix cache. `auto`
//! turns on (for the router's lifetime) once the MCP tools' specs pass
//! `tool_search_threshold_bytes`. Every MCP tool stays callable by its qualified name.

use std::collections::{BTreeSet, HashSet};
use std::hash::{Hash as _, Hasher as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mcp_backend::{McpBackend, QualifiedTool, json_len};
use serde_json::json;

use crate::search::index::SearchIndex;
use crate::spec::{ToolFormat, ToolSpec};

/// `tool_search`: whether MCP tools are deferred behind `search_mcp_tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolSearchMode {
    /// On once the MCP tools' specs pass `tool_search_threshold_bytes` (the default).
    #[default]
    Auto,
    /// Always on.
    On,
    /// Never: every MCP tool in the specs, as before.
    Off,
}

/// `tool_search_via`: who searches the deferred MCP tools once tool search is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchVia {
    /// The router: `search_mcp_tools`, revealed tools appended to the specs (the default).
    #[default]
    Router,
    /// The model API: every MCP tool in the tool list with `defer_loading: true` (OpenAI: one
    /// namespace per server) and the API's own tool-search tool; no `search_mcp_tools`.
    Api,
    /// Both: the API's deferral and the router's `search_mcp_tools`.
    Both,
}

/// How often `auto` looks again at the tools known while it waits for the whole list.
const KNOWN_AGAIN: std::time::Duration = std::time::Duration::from_millis(100);

/// `tool_search_threshold_bytes` when nothing sets it: 16 KiB of specs (as OpenAI function
/// tools), about 4,000 tokens — some 15 tools with rich schemas, or 40 plain ones.
pub const DEFAULT_TOOL_SEARCH_THRESHOLD_BYTES: usize = 16 * 1024;

/// One MCP tool's spec bytes (as an OpenAI function tool), what `auto` measures against
/// `tool_search_threshold_bytes`; hosts that decide ahead (which servers to leave idle) use it
/// to decide alike.
pub fn spec_bytes(qualified_name: &str, tool: &rmcp::model::Tool) -> usize {
    json_len(&ToolSpec::for_mcp_tool(qualified_name, tool).to_format(ToolFormat::OpenAi))
}

/// The spec bytes (as OpenAI function tools) of revealed tools given in full. A tool revealed
/// past them gets a short spec — the start of its description's first sentence and any object
/// as its parameters — since the search result that revealed it carries its whole input
/// schema; past [`REVEALED_SHORT_BYTES`] of revealed specs in all, only a pointer to that
/// result. Twelve searches of limit 3 reveal up to 36 tools; over real catalogs the specs grew
/// by 4–7 KiB (tests hold it under 8 KiB), not by every schema's size.
pub const REVEALED_IN_FULL_BYTES: usize = 2 * 1024;

/// The spec bytes of all revealed tools (in full and short) past which a tool revealed gets a
/// short spec without its description's words.
pub const REVEALED_SHORT_BYTES: usize = 5 * 1024;

/// Most characters of a short spec's description taken from the tool's.
const SHORT_DESCRIPTION_CHARS: usize = 48;

/// What a short spec's description says after the tool's own words.
const SHORT_SPEC_NOTE: &str = "(Input schema: in its search result.)";

/// The short spec of a tool revealed past [`REVEALED_IN_FULL_BYTES`]: at most `chars`
/// characters of its description's first sentence (cut at a word, `…` when cut; none when
/// `chars` is 0), then [`SHORT_SPEC_NOTE`].
fn short_spec(full: &ToolSpec, chars: usize) -> ToolSpec {
    let kept = first_sentence(&full.description, chars);
    let kept = kept.trim_end();
    let separator = if kept.is_empty() { "" } else { " " };
    ToolSpec {
        name: full.name.clone(),
        description: format!("{kept}{separator}{SHORT_SPEC_NOTE}"),
        parameters: json!({"type": "object"}),
    }
}

/// At most `chars` characters of `description`'s first sentence, cut at a word, `…` when cut
/// (nothing when `chars` is 0).
pub(crate) fn first_sentence(description: &str, chars: usize) -> String {
    let description = description.trim();
    let sentence = match description.find(". ").or_else(|| description.find('\n')) {
        Some(end) => &description[..end + 1],
        None => description,
    };
    let mut kept: String = sentence.chars().take(chars).collect();
    if chars > 0 && kept.len() < sentence.trim_end().len() {
        // Cut at the last whole word, when there is one.
        if let Some(space) = kept.rfind(char::is_whitespace) {
            kept.truncate(space);
        }
        kept = kept.trim_end().to_string();
        kept.push('…');
    }
    kept
}

/// The MCP tools the specs show.
pub(crate) enum McpTools {
    /// All of them (search off, or `auto` under the threshold).
    All(Vec<QualifiedTool>),
    /// Search on: the always-loaded servers' tools; the rest are found by search.
    Deferred(Vec<QualifiedTool>),
}

/// The tools in an index, and the index.
pub(crate) struct Indexed {
    pub(crate) tools: Arc<Vec<QualifiedTool>>,
    pub(crate) index: SearchIndex,
    fingerprint: u64,
}

/// Tool search's state in one router.
pub(crate) struct ToolSearch {
    mode: ToolSearchMode,
    pub(crate) via: SearchVia,
    threshold: usize,
    always_load: BTreeSet<String>,
    engaged: AtomicBool,
    revealed: Mutex<Revealed>,
    index: Mutex<Option<Arc<Indexed>>>,
    /// Whether the index takes the retrieval model's signal (`tool_search_model`).
    model: bool,
    /// Where the model's embeddings are kept (`SearchSettings::embeddings_dir`).
    keep: Option<std::path::PathBuf>,
}

#[derive(Default)]
struct Revealed {
    /// In the order they were revealed, as they were then.
    specs: Vec<ToolSpec>,
    names: HashSet<String>,
    /// The spec bytes of the ones given in full (see [`REVEALED_IN_FULL_BYTES`]).
    in_full: usize,
    /// The spec bytes of all of them (see [`REVEALED_SHORT_BYTES`]).
    all: usize,
}

impl Default for ToolSearch {
    fn default() -> Self {
        Self::new(ToolSearchMode::Auto, DEFAULT_TOOL_SEARCH_THRESHOLD_BYTES, BTreeSet::new())
    }
}

impl ToolSearch {
    pub(crate) fn new(
        mode: ToolSearchMode,
        threshold: usize,
        always_load: BTreeSet<String>,
    ) -> Self {
        Self {
            mode,
            via: SearchVia::Router,
            threshold,
            always_load,
            engaged: AtomicBool::new(mode == ToolSearchMode::On),
            revealed: Mutex::default(),
            index: Mutex::default(),
            model: true,
            keep: None,
        }
    }

    /// Whether the retrieval model ranks too, when installed, and where its embeddings are
    /// kept (`None`: the cache folder's).
    pub(crate) fn model(mut self, model: bool, keep: Option<std::path::PathBuf>) -> Self {
        self.model = model;
        #[cfg(feature = "e5")]
        {
            self.keep = keep.or_else(super::semantic::default_keep);
        }
        #[cfg(not(feature = "e5"))]
        {
            self.keep = keep;
        }
        self
    }

    /// Who searches the deferred tools.
    pub(crate) fn via(mut self, via: SearchVia) -> Self {
        self.via = via;
        self
    }

    /// Whether MCP tools are deferred now.
    pub(crate) fn active(&self) -> bool {
        self.engaged.load(Ordering::Relaxed)
    }

    /// Whether `search_mcp_tools` is offered now.
    pub(crate) fn router_searches(&self) -> bool {
        self.active() && self.via != SearchVia::Api
    }

    /// The MCP tools the next specs show. `auto` measures the whole list (as the specs did
    /// without search) until it passes the threshold; `on` only looks at what is known, never
    /// starting a server.
    pub(crate) async fn mcp_tools(&self, backend: &dyn McpBackend) -> McpTools {
        if self.mode == ToolSearchMode::Off {
            return McpTools::All(backend.list_tools().await);
        }
        if !self.active() {
            return self.decide(backend).await;
        }
        self.deferred(backend.known_tools().await.tools)
    }

    /// `auto` not on yet: on when what is known (catalogs, ready servers) passes the threshold
    /// — then no server is waited for or started to learn the rest —, else when the whole list
    /// does. While the whole list is awaited, what is known is looked at again every
    /// [`KNOWN_AGAIN`]: the tools only add up, so once the servers ready pass the threshold a
    /// slow one (up to its startup timeout) no longer holds up the answer.
    async fn decide(&self, backend: &dyn McpBackend) -> McpTools {
        let known = backend.known_tools().await;
        if self.passes_threshold(&known.tools) {
            return self.deferred(known.tools);
        }
        let whole = backend.list_tools();
        tokio::pin!(whole);
        loop {
            tokio::select! {
                tools = &mut whole => {
                    if !self.passes_threshold(&tools) {
                        return McpTools::All(tools);
                    }
                    return self.deferred(Arc::new(tools));
                }
                () = tokio::time::sleep(KNOWN_AGAIN) => {
                    let known = backend.known_tools().await;
                    if self.passes_threshold(&known.tools) {
                        return self.deferred(known.tools);
                    }
                }
            }
        }
    }

    /// Search is on: `tools` indexed now, before the first search (the retrieval model embeds
    /// them in the background; a search never waits for it), and the ones always loaded.
    fn deferred(&self, tools: Arc<Vec<QualifiedTool>>) -> McpTools {
        let indexed = self.index(tools);
        McpTools::Deferred(self.always_loaded(&indexed.tools))
    }

    /// `auto`: decides whether search is on as the specs would (from what is known, else the
    /// whole list), so a call made before any specs were asked for — `search_mcp_tools` as the
    /// first line — gets what the specs offer. Nothing to do once search is on, or in the
    /// other modes.
    pub(crate) async fn settle(&self, backend: &dyn McpBackend) {
        if self.mode == ToolSearchMode::Auto && !self.active() {
            let _ = self.mcp_tools(backend).await;
        }
    }

    /// `auto`: whether these tools' specs pass the threshold; turns search on when they do.
    fn passes_threshold(&self, tools: &[QualifiedTool]) -> bool {
        let bytes: usize = tools.iter().map(|t| spec_bytes(&t.qualified_name, &t.tool)).sum();
        let passes = bytes > self.threshold;
        if passes {
            self.engaged.store(true, Ordering::Relaxed);
        }
        passes
    }

    fn always_loaded(&self, tools: &[QualifiedTool]) -> Vec<QualifiedTool> {
        tools.iter().filter(|t| self.always_load.contains(&t.server)).cloned().collect()
    }

    /// Whether `server`'s tools are always in the specs.
    pub(crate) fn always_loads(&self, server: &str) -> bool {
        self.always_load.contains(server)
    }

    /// The revealed tools' specs, in reveal order.
    pub(crate) fn revealed_specs(&self) -> Vec<ToolSpec> {
        self.revealed.lock().map(|r| r.specs.clone()).unwrap_or_default()
    }

    /// The revealed qualified names in reveal order; `None` while search is off.
    pub(crate) fn revealed_names(&self) -> Option<Vec<String>> {
        self.active().then(|| self.revealed_specs().into_iter().map(|s| s.name).collect())
    }

    /// How many tools are revealed (`None` while search is off): cheap, nothing is copied.
    pub(crate) fn revealed_count(&self) -> Option<usize> {
        self.active().then(|| self.revealed.lock().map(|r| r.names.len()).unwrap_or(0))
    }

    pub(crate) fn is_revealed(&self, name: &str) -> bool {
        self.revealed.lock().is_ok_and(|r| r.names.contains(name))
    }

    /// Append the tools not revealed yet (nor always loaded), in full while the ones in full
    /// stay within [`REVEALED_IN_FULL_BYTES`], short after; the qualified names appended.
    pub(crate) fn reveal<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a QualifiedTool>,
    ) -> Vec<String> {
        let Ok(mut revealed) = self.revealed.lock() else { return Vec::new() };
        let mut added = Vec::new();
        for tool in tools {
            if self.always_loads(&tool.server) || revealed.names.contains(&tool.qualified_name) {
                continue;
            }
            revealed.names.insert(tool.qualified_name.clone());
            let full = ToolSpec::for_mcp_tool(&tool.qualified_name, &tool.tool);
            let bytes = json_len(&full.to_format(ToolFormat::OpenAi));
            let size = |spec: &ToolSpec| json_len(&spec.to_format(ToolFormat::OpenAi));
            let (spec, bytes) = if revealed.in_full + bytes <= REVEALED_IN_FULL_BYTES {
                revealed.in_full += bytes;
                (full, bytes)
            } else {
                let short = short_spec(&full, SHORT_DESCRIPTION_CHARS);
                let short_bytes = size(&short);
                if revealed.all + short_bytes <= REVEALED_SHORT_BYTES {
                    (short, short_bytes)
                } else {
                    let pointer = short_spec(&full, 0);
                    let pointer_bytes = size(&pointer);
                    (pointer, pointer_bytes)
                }
            };
            revealed.all += bytes;
            revealed.specs.push(spec);
            added.push(tool.qualified_name.clone());
        }
        added
    }

    /// Forget the revealed tools (a new conversation); how many there were.
    pub(crate) fn reset(&self) -> usize {
        self.revealed.lock().map(|mut r| std::mem::take(&mut *r).specs.len()).unwrap_or(0)
    }

    /// The index over `tools`: the last one when they are the same tools (the same `Arc`, or
    /// the same fingerprint).
    pub(crate) fn index(&self, tools: Arc<Vec<QualifiedTool>>) -> Arc<Indexed> {
        if let Ok(slot) = self.index.lock()
            && let Some(indexed) = slot.as_ref()
            && Arc::ptr_eq(&indexed.tools, &tools)
        {
            return indexed.clone();
        }
        let fingerprint = fingerprint(&tools);
        if let Ok(slot) = self.index.lock()
            && let Some(indexed) = slot.as_ref()
            && indexed.fingerprint == fingerprint
        {
            return indexed.clone();
        }
        #[cfg(feature = "e5")]
        let semantic = self.model.then(super::semantic::global).flatten();
        #[cfg(feature = "e5")]
        let index = SearchIndex::build_with(&tools, semantic, self.keep.as_deref());
        #[cfg(not(feature = "e5"))]
        let index = SearchIndex::build(&tools);
        let indexed = Arc::new(Indexed { tools, index, fingerprint });
        if let Ok(mut slot) = self.index.lock() {
            *slot = Some(indexed.clone());
        }
        indexed
    }
}

/// Names, and the lengths of titles and descriptions, of `tools`, hashed: the same tools give
/// the same index (a description changed to one of the same length, or a schema that changed
/// alone, keeps the old words until something else changes).
fn fingerprint(tools: &[QualifiedTool]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for tool in tools {
        tool.qualified_name.hash(&mut hasher);
        tool.tool.description.as_deref().map_or(0, str::len).hash(&mut hasher);
        tool.tool.title.as_deref().map_or(0, str::len).hash(&mut hasher);
    }
    hasher.finish()
}

#[cfg(test)]
mod short_spec_tests {
    use super::*;

    fn spec(description: &str) -> ToolSpec {
        ToolSpec {
            name: "mcp__files__read".into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }
    }

    /// The contract of a short spec: the first sentence (at most 48 characters, `…` when cut),
    /// where the schema is, and any object as parameters; past the short budget, no words of
    /// the description.
    #[test]
    fn a_short_spec_keeps_the_first_sentence_and_says_where_the_schema_is() {
        let short = short_spec(&spec("Read a file. Large files are cut at 1 MiB."), 48);
        assert_eq!(short.description, "Read a file. (Input schema: in its search result.)");
        assert_eq!(short.parameters, json!({"type": "object"}));
        assert_eq!(short.name, "mcp__files__read");
        let long = short_spec(&spec(&"word ".repeat(60)), 48);
        assert_eq!(
            long.description,
            format!("{}… (Input schema: in its search result.)", "word ".repeat(9).trim_end())
        );
        let none = short_spec(&spec(""), 48);
        assert_eq!(none.description, "(Input schema: in its search result.)");
        let pointer = short_spec(&spec("Read a file. Large files are cut at 1 MiB."), 0);
        assert_eq!(pointer.description, "(Input schema: in its search result.)");
    }
}
