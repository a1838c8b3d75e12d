//! Tool search: when the specs are too big to list (the mode), the index that ranks tools for a
//! query, and the `search_mcp_tools` handler that reveals what it finds.

mod commands;
#[cfg(test)]
mod eval_tests;
#[cfg(feature = "e5")]
mod fusion;
pub(crate) mod handler;
#[cfg(test)]
mod handler_tests;
pub(crate) mod index;
pub(crate) mod mode;
#[cfg(test)]
mod quality_tests;
#[cfg(feature = "e5")]
pub(crate) mod semantic;
mod vectors;
