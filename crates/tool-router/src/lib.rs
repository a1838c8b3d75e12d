//! Takes a model's tool call and sends it to the handler that owns it: the three MCP resource
//! tools (`list_mcp_resources`, `list_mcp_resource_templates`, `read_mcp_resource`) and every
//! MCP-qualified tool (`mcp__server__tool`). Handlers emit begin/end events with durations.
//!
//! This crate does no IO of its own: it reaches servers only through [`McpBackend`].

mod backend;
mod content;
#[cfg(test)]
mod fuzz_tests;
mod handler;
mod handlers;
mod invocation;
mod router;
mod spec;
#[cfg(test)]
mod test_support;

pub use backend::McpBackend;
pub use content::ContentPolicy;
pub use handler::{ToolHandler, ToolKind};
pub use handlers::data::{LIST_MCP_DATA_SOURCES, McpDataHandler, QUERY_MCP_DATA};
pub use handlers::mcp::McpHandler;
pub use handlers::mcp_completion::{COMPLETE_MCP_RESOURCE_ARGUMENT, McpCompletionHandler};
pub use handlers::mcp_resource::{
    LIST_MCP_RESOURCE_TEMPLATES, LIST_MCP_RESOURCES, McpResourceHandler, READ_MCP_RESOURCE,
    ReadOptions,
};
pub use invocation::{
    CallContext, ContentItem, FunctionCallError, ToolCall, ToolInvocation, ToolOutput, ToolPayload,
};
pub use router::{RegistrationError, SetupError, ToolRouter};
pub use spec::{ToolFormat, ToolSpec};
