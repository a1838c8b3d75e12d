//! One router for every agent of a user: `mcp-router serve` runs it (an MCP server on a Unix
//! socket and, when asked, on loopback HTTP), `mcp-router connect` is the stdio bridge an agent
//! lists as a server (starting the router when none runs), `mcp-router status` asks it what it
//! runs. Servers start once for all sessions; each session has a router of its own.
// A poisoned lock is handled by one rule, `lock::locked`; nothing here panics on one.
#![cfg_attr(not(test), deny(clippy::expect_used))]

mod backend;
pub(crate) mod connect;
mod ending;
pub(crate) mod events;
pub(crate) mod handler;
mod host;
mod http;
mod lock;
mod output;
pub(crate) mod own;
mod place;
mod prompts;
mod resources;
pub(crate) mod serve;
mod session;
mod split;
pub(crate) mod status;
