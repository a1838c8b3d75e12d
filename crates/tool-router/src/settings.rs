//! The router's own settings, grouped by concern: reads, lists, tool results, data sources,
//! events, tool search, and the optional model tools. Read from a config file by the
//! `router-config` crate (each field names its `[mcp_router]` key); built in code from
//! `Default` and changed field by field (`RouterSettings::default().with(|s| s.search.mode =
//! ToolSearchMode::On)`). Every group is `#[non_exhaustive]`: a new setting is not a breaking
//! change.

use std::time::Duration;

use crate::results::content::ContentPolicy;
use crate::results::kept::KeptLimits;
use crate::{SearchVia, ToolSearchMode};

/// Router-wide settings: `[mcp_router]` in TOML, `"mcpRouter"` in `mcp.json`. Every key is
/// optional.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct RouterSettings {
    /// What `read_mcp_resource` gives the model.
    pub reads: ReadSettings,
    /// What `list_mcp_resources` / `list_mcp_resource_templates` give the model.
    pub lists: ListSettings,
    /// What an MCP tool's result gives the model.
    pub results: ResultSettings,
    /// CSV resources as data sources.
    pub data: DataSettings,
    /// What begin/end events carry.
    pub events: EventSettings,
    /// Tool search.
    pub search: SearchSettings,
    /// Model tools offered only when asked for.
    pub tools: OptionalTools,
    /// The ledger of what MCP costs.
    pub ledger: LedgerSettings,
}

impl RouterSettings {
    /// These settings with `change` made: `RouterSettings::default().with(|s| s.reads.raw_blobs
    /// = true)`.
    pub fn with(mut self, change: impl FnOnce(&mut Self)) -> Self {
        change(&mut self);
        self
    }
}

/// Reads.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReadSettings {
    /// `read_budget_bytes`: most text bytes one `read_mcp_resource` returns (default 64 KiB).
    pub budget_bytes: usize,
    /// `image_max_bytes`: larger images are described, not sent (default 4 MiB).
    pub image_max_bytes: usize,
    /// `raw_blobs`: send non-image blobs as base64 instead of describing them (default false).
    pub raw_blobs: bool,
}

impl Default for ReadSettings {
    fn default() -> Self {
        Self { budget_bytes: 64 * 1024, image_max_bytes: 4 * 1024 * 1024, raw_blobs: false }
    }
}

/// Lists.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ListSettings {
    /// `list_budget_bytes`: most bytes of one list payload (default 64 KiB); what does not fit
    /// is continued with a cursor.
    pub budget_bytes: usize,
    /// `show_user_audience`: also list items annotated for the user only (default false).
    pub show_user_audience: bool,
}

impl Default for ListSettings {
    fn default() -> Self {
        Self { budget_bytes: 64 * 1024, show_user_audience: false }
    }
}

/// MCP tool results.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResultSettings {
    /// `tool_result_budget_bytes`: most bytes one MCP tool result gives the model, counted over
    /// its text items, `structuredContent` (as JSON), audio and embedded resources (default
    /// 64 KiB); what does not fit is kept and read with `read_mcp_resource`.
    pub budget_bytes: usize,
    /// `kept_results_max`, `kept_results_bytes`, `kept_results_memory_bytes`: how many cut
    /// tool results are kept, and how many bytes of them in all and in memory.
    pub kept: KeptLimits,
    /// `inline_resource_links_bytes`: `resource_link` items of a tool result whose resource
    /// reads to at most this many bytes get the resource embedded after them (default 0: off).
    pub inline_links_bytes: usize,
}

impl Default for ResultSettings {
    fn default() -> Self {
        Self { budget_bytes: 64 * 1024, kept: KeptLimits::default(), inline_links_bytes: 0 }
    }
}

/// CSV resources as data sources.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DataSettings {
    /// `data_sources`: import CSV resources into SQLite and offer the query tools (default
    /// true; a build without the `data-sources` feature has none whatever this says).
    pub enabled: bool,
    /// `query_max_rows`: most rows `query_mcp_data` returns (default 200).
    pub max_rows: usize,
    /// `query_timeout_sec`: a longer query is interrupted (default 5).
    pub timeout: Duration,
}

impl Default for DataSettings {
    fn default() -> Self {
        Self { enabled: true, max_rows: 200, timeout: Duration::from_secs(5) }
    }
}

/// What begin/end events carry. A call's [`crate::CallContext`] may say otherwise for its own
/// events (`with_result_text`, `with_event_payload_bytes`); these are the router's defaults.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EventSettings {
    /// `event_result_text`: end events carry the result's content (default true). With false
    /// they say `result_omitted: true` instead and keep the summary: for hosts that take the
    /// payload from the output and do not need it twice.
    pub result_text: bool,
    /// `event_payload_bytes`: most bytes (as JSON) of a call's arguments and of its result that
    /// begin and end events carry (default 256 KiB); beyond it they carry a cut copy and the
    /// full size. The model's output is not affected.
    pub payload_bytes: usize,
}

impl Default for EventSettings {
    fn default() -> Self {
        Self {
            result_text: true,
            payload_bytes: crate::results::event_bounds::DEFAULT_EVENT_PAYLOAD_BYTES,
        }
    }
}

/// Tool search.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SearchSettings {
    /// `tool_search`: `auto` (default: on once the MCP tools' specs pass `threshold_bytes`),
    /// `on` or `off`. On, the specs hold the router's tools, `search_mcp_tools` and the tools
    /// revealed so far.
    pub mode: ToolSearchMode,
    /// `tool_search_via`: `router` (default: `search_mcp_tools`), `api` (the model API's own
    /// deferral: every MCP tool with `defer_loading: true`) or `both`.
    pub via: SearchVia,
    /// `tool_search_threshold_bytes`: where `auto` turns on (default 16 KiB of specs).
    pub threshold_bytes: usize,
    /// Servers with `always_load_tools = true`: their tools stay in the specs with search on.
    pub always_load_servers: std::collections::BTreeSet<String>,
    /// `tool_search_model`: rank with the retrieval model too when it is installed (default
    /// on; only with the `e5` feature).
    pub model: bool,
    /// Where the retrieval model's embeddings are kept (`None`: `embeddings/` in the router's
    /// cache folder; `Assembly::state_dir` sets `dir/embeddings`).
    pub embeddings_dir: Option<std::path::PathBuf>,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            mode: ToolSearchMode::Auto,
            via: SearchVia::Router,
            threshold_bytes: crate::DEFAULT_TOOL_SEARCH_THRESHOLD_BYTES,
            always_load_servers: std::collections::BTreeSet::new(),
            model: true,
            embeddings_dir: None,
        }
    }
}

/// Model tools offered only when the host asks for them (each also needs its capability in
/// the backend and a server that declares it).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct OptionalTools {
    /// `list_skills_tool` (default false): offer `list_mcp_skills`, for hosts that do not put
    /// the servers' skills (`ToolRouter::skills`) in their prompt.
    pub list_skills: bool,
    /// `prompt_tool` (default false): offer `get_mcp_prompt`.
    pub get_prompt: bool,
}

/// The ledger (see `tool_router::ledger`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LedgerSettings {
    /// `ledger` (default true): keep each run's ledger in the router's state folder when it
    /// shuts down (`mcp-router stats` adds the runs up). The running router counts either way.
    pub keep: bool,
    /// `context_window_tokens` (default 200,000): the model's context, for the share below.
    pub context_tokens: u64,
    /// `spec_share_warning` (default 0.05): a server whose loaded tool specs take more than
    /// this share of the context is named in the ledger's warnings.
    pub spec_share_warning: f64,
}

impl Default for LedgerSettings {
    fn default() -> Self {
        Self { keep: true, context_tokens: 200_000, spec_share_warning: 0.05 }
    }
}

impl Default for ContentPolicy {
    fn default() -> Self {
        Self::from(&RouterSettings::default())
    }
}

impl From<&RouterSettings> for ContentPolicy {
    fn from(settings: &RouterSettings) -> Self {
        Self {
            read_budget_bytes: settings.reads.budget_bytes,
            image_max_bytes: settings.reads.image_max_bytes,
            raw_blobs: settings.reads.raw_blobs,
            list_budget_bytes: settings.lists.budget_bytes,
            show_user_audience: settings.lists.show_user_audience,
            result_budget_bytes: settings.results.budget_bytes,
            inline_links_bytes: settings.results.inline_links_bytes,
        }
    }
}
