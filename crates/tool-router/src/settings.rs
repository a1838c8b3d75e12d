//! The router's own settings: how reads are shaped and whether CSV resources become data
//! sources. Read from a config file by the `router-config` crate.

use std::time::Duration;

/// Router-wide settings: `[mcp_router]` in TOML, `"mcpRouter"` in `mcp.json`. Every key is
/// optional.
#[derive(Debug, Clone, PartialEq)]
pub struct RouterSettings {
    /// `read_budget_bytes`: most text bytes one `read_mcp_resource` returns (default 64 KiB).
    pub read_budget_bytes: usize,
    /// `image_max_bytes`: larger images are described, not sent (default 4 MiB).
    pub image_max_bytes: usize,
    /// `raw_blobs`: send non-image blobs as base64 instead of describing them (default false).
    pub raw_blobs: bool,
    /// `data_sources`: import CSV resources into SQLite and offer the query tools (default true).
    pub data_sources: bool,
    /// `query_max_rows`: most rows `query_mcp_data` returns (default 200).
    pub query_max_rows: usize,
    /// `query_timeout_sec`: a longer query is interrupted (default 5).
    pub query_timeout: Duration,
    /// `list_budget_bytes`: most bytes of one `list_mcp_resources` / `list_mcp_resource_templates`
    /// payload (default 64 KiB); what does not fit is continued with a cursor.
    pub list_budget_bytes: usize,
    /// `show_user_audience`: also list items annotated for the user only (default false).
    pub show_user_audience: bool,
    /// `event_result_text`: end events carry the result's content (default true). With false
    /// they say `result_omitted: true` instead and keep the summary: for hosts that take the
    /// payload from the output and do not need it twice.
    pub event_result_text: bool,
    /// `event_payload_bytes`: most bytes (as JSON) of a call's arguments and of its result that
    /// begin and end events carry (default 256 KiB); beyond it they carry a cut copy and the
    /// full size. The model's output is not affected.
    pub event_payload_bytes: usize,
    /// `tool_result_budget_bytes`: most bytes one MCP tool result gives the model, counted over
    /// its text items, `structuredContent` (as JSON), audio and embedded resources (default
    /// 64 KiB); what does not fit is kept and read with `read_mcp_resource`.
    pub tool_result_budget_bytes: usize,
    /// `kept_results_max`, `kept_results_bytes`, `kept_results_memory_bytes`: how many cut
    /// tool results are kept, and how many bytes of them in all and in memory.
    pub kept_results: crate::kept::KeptLimits,
    /// `inline_resource_links_bytes`: `resource_link` items of a tool result whose resource
    /// reads to at most this many bytes get the resource embedded after them (default 0: off).
    pub inline_resource_links_bytes: usize,
    /// `tool_search`: `auto` (default: on once the MCP tools' specs pass
    /// `tool_search_threshold_bytes`), `on` or `off`. On, the specs hold the router's tools,
    /// `search_mcp_tools` and the tools revealed so far.
    pub tool_search: crate::ToolSearchMode,
    /// `tool_search_via`: `router` (default: `search_mcp_tools`), `api` (the model API's own
    /// deferral: every MCP tool with `defer_loading: true`) or `both`.
    pub tool_search_via: crate::SearchVia,
    /// `tool_search_threshold_bytes`: where `auto` turns on (default 16 KiB of specs).
    pub tool_search_threshold_bytes: usize,
    /// Servers with `always_load_tools = true`: their tools stay in the specs with search on.
    pub always_load_servers: std::collections::BTreeSet<String>,
    /// `list_skills_tool` (default false): offer `list_mcp_skills` to the model, for hosts that
    /// do not put the servers' skills (`ToolRouter::skills`) in their prompt.
    pub list_skills_tool: bool,
    /// `prompt_tool` (default false): offer `get_mcp_prompt` to the model.
    pub prompt_tool: bool,
}

impl Default for RouterSettings {
    fn default() -> Self {
        Self {
            read_budget_bytes: 64 * 1024,
            image_max_bytes: 4 * 1024 * 1024,
            raw_blobs: false,
            data_sources: true,
            query_max_rows: 200,
            query_timeout: Duration::from_secs(5),
            list_budget_bytes: 64 * 1024,
            show_user_audience: false,
            event_result_text: true,
            event_payload_bytes: crate::event_bounds::DEFAULT_EVENT_PAYLOAD_BYTES,
            tool_result_budget_bytes: 64 * 1024,
            kept_results: crate::kept::KeptLimits::default(),
            inline_resource_links_bytes: 0,
            tool_search: crate::ToolSearchMode::Auto,
            tool_search_via: crate::SearchVia::Router,
            tool_search_threshold_bytes: crate::DEFAULT_TOOL_SEARCH_THRESHOLD_BYTES,
            always_load_servers: std::collections::BTreeSet::new(),
            list_skills_tool: false,
            prompt_tool: false,
        }
    }
}
