//! The interface between the tool router and whatever runs MCP servers: the [`McpBackend`]
//! trait and the types it speaks (listings, qualified tools, [`McpError`]), plus the one rule
//! that turns a model's qualified tool name back into a server and a tool.
//!
//! Both sides depend on this crate and on nothing of each other: the connection manager
//! implements the trait, the router's handlers only call it. It does no IO and knows no
//! transport.

mod backend;
mod error;
mod listing;
mod qualify;

pub use backend::{McpBackend, ResourceChange};
pub use error::McpError;
pub use listing::{Aggregate, Items, ListKind, Page, PageStart, ServerListing};
pub use qualify::{
    MAX_TOOL_NAME_LENGTH, QualifiedTool, find_listed_tool, looks_qualified, qualified_tool_name,
    resolve_tool_name, unlisted_tool,
};
