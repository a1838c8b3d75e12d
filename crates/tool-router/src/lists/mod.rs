//! The list tool pair (`list_mcp_resources`, `list_mcp_resource_templates`): the handler, the
//! shape of a listing (ordering, cursors, continuations, kept listings) and the payload that fits
//! it into the model's budget.

mod all_servers;
pub(crate) mod handler;
#[cfg(test)]
mod handler_tests;
pub(crate) mod payload;
pub(crate) mod shape;
