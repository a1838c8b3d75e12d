//! Server-side MCP resources (registration of resources and templates, pagination, error
//! codes), plugged into rmcp's `ServerHandler`.
//!
//! - Register direct resources (a URI and a handler with no arguments) and RFC 6570 templates
//!   (a handler that receives the variables matched from the URI, and an optional completer).
//! - `resources/list` and `resources/templates/list`: full objects in registration order,
//!   opaque cursors, configurable page size (default 100).
//! - `resources/read`: an exact direct URI first, then the templates in registration order;
//!   the first template that matches the URI answers.
//! - Subscriptions, `notifications/resources/updated` on demand and
//!   `notifications/resources/list_changed` whenever the set changes after start.
//!
//! # Error codes
//!
//! | case | code | message |
//! |---|---|---|
//! | unknown URI | -32002 | `Resource not found: {uri}`, `data: {"uri": …}` |
//! | handler denies access ([`ResourceError::AccessDenied`]) | -32025 | `Resource access denied: {reason}`, `data: {"uri": …}` |
//! | missing/empty uri, invalid parameters ([`ResourceError::InvalidParams`]) | -32602 | the reason |
//! | invalid or stale cursor | -32602 | `Invalid cursor …` |
//! | handler error or panic | -32603 | `Internal error …` (the server keeps serving) |
//!
//! -32025 is not defined by MCP; it is taken from the JSON-RPC server-error range as erlmcp
//! (an Erlang MCP server) does.
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod connection;
mod content;
mod cursor;
mod registry;

pub use connection::RegistryConnection;
pub use content::ResourceBody;
pub use registry::{
    ACCESS_DENIED, Completer, RegistrationError, RegistryOptions, ResourceError, ResourceRegistry,
};
