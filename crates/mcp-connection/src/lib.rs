//! One MCP server's connection on rmcp, and everything that lives as long as it: the transport
//! (a stdio child in its own process group, or streamable HTTP with OAuth sign-in), the
//! handshake of the era the config chooses, the first tool listing, input-required rounds, the
//! response cache, subscriptions and change notices, request spans. The connection manager
//! runs many of these; nothing here knows about more than one server.
//!
//! Only this crate talks to rmcp transports and spawns server processes.

pub mod cache;
pub mod client;
mod client_handler;
pub mod config;
pub mod direct;
pub mod errors;
pub mod host;
pub mod input;
pub mod lines;
pub mod oauth;
#[cfg(feature = "streamable-http")]
mod oauth_flow;
mod procs;
pub mod progress;
mod remote;
#[cfg(test)]
mod scripted;
pub mod server_log;
pub mod stdio;
mod straight;
pub mod telemetry;
mod token_store;
pub mod watch;
mod watched;
mod wire;
