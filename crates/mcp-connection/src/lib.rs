//! One MCP server's connection on rmcp, and everything that lives as long as it: the transport
//! (a stdio child in its own process group, or streamable HTTP with OAuth sign-in), the
//! handshake of the era the config chooses, the first tool listing, input-required rounds, the
//! response cache, subscriptions and change notices, request spans. The connection manager
//! runs many of these; nothing here knows about more than one server.
//!
//! Only this crate talks to rmcp transports and spawns server processes.
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod auth;
mod client;
mod config;
mod errors;
mod host;
mod input;
mod meta;
mod progress;
mod sandbox;
#[cfg(test)]
mod scripted;
mod server_log;
mod telemetry;
mod transport;
mod watch;
mod watched;

// What the connection manager, the bench and the binaries use; nothing else is public.
pub use client::direct::{list_resource_templates, list_resources};
pub use client::{ConnectError, Connection, Connector, RouterClient, SharedConnection, Transports};
pub use config::{ProtocolChoice, ServerConfig, Startup, ToolChanges, TransportConfig};
pub use errors::never_sent;
pub use host::{
    APPS_MIME_TYPE, AppsHost, Asking, DefaultHost, HostCapabilities, HostHandler, TrustAnswer,
};
pub use input::{Exchange, ExchangeError, Final, Retry, Round, ToolAnswer, answer_inputs};
pub use sandbox::sandbox_exec;
pub use transport::lines::LineTransport;
pub use watch::{Watched, announce_tools_change, follow, spawn as watch};

/// Sign-in for HTTP servers: OAuth's authorization code flow and the token store.
pub mod oauth {
    #[cfg(feature = "streamable-http")]
    pub use crate::auth::{Authorization, Login, authorization};
    pub use crate::auth::{OAuthConfig, SignInStatus, TokenStore};
}
