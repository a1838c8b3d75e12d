//! One router for every agent of a user: `mcp-router serve` runs it (an MCP server on a Unix
//! socket and, when asked, on loopback HTTP), `mcp-router connect` is the stdio bridge an agent
//! lists as a server (starting the router when none runs), `mcp-router status` asks it what it
//! runs. Servers start once for all sessions; each session has a router of its own.
// A poisoned lock is handled by one rule, [`locked`]; nothing here panics on one.
#![cfg_attr(not(test), deny(clippy::expect_used))]

mod backend;
pub(crate) mod connect;
mod ending;
pub(crate) mod events;
pub(crate) mod handler;
mod host;
mod http;
mod output;
mod own;
pub(crate) use own::as_run_in;
mod place;
mod prompts;
mod resources;
pub(crate) mod serve;
mod session;
mod split;
pub(crate) mod status;

use std::sync::{Mutex, MutexGuard, PoisonError};

/// The one lock rule of the shared router: a lock poisoned by a panic on another thread is
/// taken as it is, never a second panic. Every lock here guards a map or a value that is whole
/// after each statement (no invariant spans two of them), so what a panicking holder left is
/// still a state the router can go on from.
pub(crate) fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
