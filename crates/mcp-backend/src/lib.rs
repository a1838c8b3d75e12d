//! The interface between the tool router and whatever runs MCP servers: the [`McpBackend`]
//! trait and the types it speaks (listings, qualified tools, [`McpError`]), plus the one rule
//! that turns a model's qualified tool name back into a server and a tool.
//!
//! Both sides depend on this crate and on nothing of each other: the connection manager
//! implements the trait, the router's handlers only call it. It does no IO and knows no
//! transport.
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod apps;
mod backend;
mod call_scope;
mod capabilities;
mod error;
mod kept;
mod layer;
mod listing;
mod paging;
mod prompts;
mod qualify;
mod skills;
mod tasks;
mod trace;

pub use apps::{UI_EXTENSION_ID, app_visible, model_visible, ui_resource_uri};
pub use backend::{KnownTools, McpBackend, no_capability, no_skills};
pub use call_scope::{current_call_id, with_call_id};
pub use capabilities::{AppsBackend, PromptsBackend, SkillsBackend, TasksBackend};
pub use error::{McpError, SignIn};
pub use kept::KeptListings;
pub use layer::{BackendLayer, Layered};
pub use listing::{
    Aggregate, Items, ListKind, ListingStop, Page, PageStart, Paged, Reuse, ServerListing,
    SharedListing,
};
pub use paging::{DEFAULT_MAX_PAGES, Follow, Followed, Gather};
pub use prompts::PromptsListing;
pub use qualify::{
    MAX_TOOL_NAME_LENGTH, QualifiedTool, could_name_a_tool_of, find_listed_tool, looks_qualified,
    qualified_tool_name, resolve_tool_name, unlisted_tool,
};
pub use skills::{MAX_SKILL_BYTES, MAX_SKILL_FILES, ServerSkills, SkillApproval, SkillsListing};
pub use tasks::{NO_SUCH_TASK, TaskHandle, status_name};
pub use trace::{TraceContext, current_trace, with_trace};

/// Bytes of `value` as compact JSON, counted without building the text (what a listing costs
/// to keep, what an item costs in a payload).
pub fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// `time` as RFC 3339 UTC with milliseconds (`2026-11-23T21:40:00.123Z`), the form of every
/// timestamp the router shows a model.
pub fn rfc3339(time: std::time::SystemTime) -> String {
    let since_epoch = time.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = since_epoch.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60,
        since_epoch.subsec_millis()
    )
}
