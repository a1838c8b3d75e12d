//! Takes a model's tool call and sends it to the handler that owns it: the MCP resource tools
//! (`list_mcp_resources`, `list_mcp_resource_templates`, `read_mcp_resource`, and beyond Codex
//! `complete_mcp_resource_argument`, `query_mcp_data`, `list_mcp_data_sources`) and every
//! MCP-qualified tool (`mcp__server__tool`). Handlers emit begin/end events with durations.
//!
//! It reaches servers only through [`McpBackend`] (crate `mcp-backend`); it depends on no
//! transport and no connection manager. Its only IO is the data-source database (a private
//! temporary SQLite file, through `data-sources`) and the kept tool results that overflow
//! memory (a private temporary directory, [`kept`]).
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod handler;
mod handlers;
mod host;
mod invocation;
pub mod ledger;
mod lists;
mod results;
mod router;
mod search;
/// Tool search's retrieval model (the `e5` feature): see the README's Tool search.
#[cfg(feature = "e5")]
pub mod retrieval {
    /// Waits until the process's retrieval model has loaded (or was found missing) and every
    /// tool text queued so far is embedded; whether the model is loaded. What a benchmark or
    /// a host that wants a settled ranking calls; a search never needs it.
    pub fn settle() -> bool {
        let Some(semantic) = crate::search::semantic::global() else { return false };
        semantic.settle();
        semantic.model().is_some()
    }

    /// The bytes the loaded model holds (`None`: not loaded).
    pub fn model_bytes() -> Option<usize> {
        crate::search::semantic::global()?.model().map(e5_small::Model::heap_bytes)
    }
}
mod settings;
mod skills;
mod spec;

#[cfg(any(test, feature = "fuzzing"))]
#[cfg_attr(not(test), allow(dead_code))]
#[allow(clippy::expect_used, reason = "test support: a broken fixture fails the test")]
mod fake_capabilities;
#[cfg(any(test, feature = "fuzzing"))]
#[cfg_attr(not(test), allow(dead_code))]
#[allow(clippy::expect_used, reason = "test support: a broken fixture fails the test")]
pub mod fuzz;
#[cfg(test)]
mod fuzz_tests;
#[cfg(any(test, feature = "fuzzing"))]
#[cfg_attr(not(test), allow(dead_code))]
#[allow(clippy::expect_used, reason = "test support: a broken fixture fails the test")]
mod test_support;

pub use handler::ToolHandler;
pub use handlers::CANCELLED;
pub use handlers::completion::COMPLETE_MCP_RESOURCE_ARGUMENT;
pub use handlers::data::{LIST_MCP_DATA_SOURCES, QUERY_MCP_DATA};
pub use handlers::prompt::GET_MCP_PROMPT;
pub use handlers::read::READ_MCP_RESOURCE;
pub use handlers::tasks::AWAIT_MCP_TASK;
pub use host::notices::ResourceNotice;
pub use invocation::{
    CallContext, ContentItem, FunctionCallError, ToolArguments, ToolCall, ToolInvocation,
    ToolOutput,
};
pub use lists::handler::{LIST_MCP_RESOURCE_TEMPLATES, LIST_MCP_RESOURCES};
pub use mcp_backend::{McpBackend, TraceContext};
pub use results::event_bounds::DEFAULT_EVENT_PAYLOAD_BYTES;
pub use results::kept;
pub use results::kept::{KeptLimits, RESULTS_PREFIX, RESULTS_SERVER};
pub use router::{RegistrationError, SetupError, ToolRouter};
pub use router_protocol::{PromptSummary, Prompts, SkillSummary, Skills};
pub use search::handler::SEARCH_MCP_TOOLS;
pub use search::mode::{
    DEFAULT_TOOL_SEARCH_THRESHOLD_BYTES, REVEALED_IN_FULL_BYTES, REVEALED_SHORT_BYTES, SearchVia,
    ToolSearchMode, spec_bytes,
};
pub use settings::{
    DataSettings, EventSettings, LedgerSettings, ListSettings, OptionalTools, ReadSettings,
    ResultSettings, RouterSettings, SearchSettings,
};
pub use skills::handler::{LIST_MCP_SKILLS, LOAD_MCP_SKILL};
pub use spec::{ToolFormat, ToolSpec};
