//! OAuth sign-in for streamable HTTP servers, on rmcp's `auth` feature: rmcp does discovery
//! (RFC 9728, RFC 8414 / OpenID), PKCE, registration (pre-registered → client ID metadata
//! document → dynamic), the token exchange, refresh and the client-credentials grant. This
//! module adds what an agent needs around it:
//!
//! - [`TokenStore`] (`token_store.rs`): every server's credentials in one private JSON file,
//!   replaced atomically, refreshes serialised across processes.
//! - [`Login`]: the authorization-code flow as two steps a host can drive (the URL to open,
//!   then the redirect URL it received), used by `mcp-router login`.
//! - [`authorizer`]: the `AuthorizationManager` a connection sends its requests through.
//!
//! Tokens and client secrets never appear in logs, errors or events: rmcp's
//! `StoredCredentials` redacts them in `Debug`, and every error here names files, servers and
//! keys, never values.

pub(crate) mod error;
#[cfg(feature = "streamable-http")]
pub(crate) mod flow;
pub(crate) mod token_store;

#[cfg(feature = "streamable-http")]
pub use crate::auth::flow::{Authorization, Login, authorization};
#[cfg(feature = "streamable-http")]
pub(crate) use crate::auth::flow::{authorizer, sign_in_of};
pub use crate::auth::token_store::{SignInStatus, TokenStore};
pub use crate::config::OAuthConfig;
