//! One MCP server's connection on rmcp: `RouterClient` (the client side and the state its
//! transports report to), `Connection` (every method a caller uses), opening one (`connect`
//! for stdio, `remote` for streamable HTTP), the client handler (`handler`), and the
//! pieces around rmcp's `Peer` (`direct`, `cache`, `traced`).

pub(crate) mod cache;
mod connect;
mod connection;
pub(crate) mod direct;
mod handler;
mod remote;
mod router_client;
pub(crate) mod startup;
#[cfg(feature = "streamable-http")]
mod trace_headers;
pub(crate) mod traced;

pub use connect::{Connector, Transports};
pub(crate) use connection::Opened;
pub use connection::{Connection, SharedConnection};
pub use router_client::RouterClient;

pub use crate::errors::ConnectError;
