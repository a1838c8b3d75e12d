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

#[cfg(feature = "streamable-http")]
pub(crate) mod flow;
pub(crate) mod token_store;

use mcp_backend::SignIn;

#[cfg(feature = "streamable-http")]
pub use crate::auth::flow::{Authorization, Login, authorization};
#[cfg(feature = "streamable-http")]
pub(crate) use crate::auth::flow::{authorizer, sign_in_of};
pub use crate::auth::token_store::{SignInStatus, TokenStore};

/// Why a sign-in, or the credentials behind one, could not be used. The `Display` texts are
/// for a person: they name servers, files and settings, never a token or a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The server needs a (new) sign-in: none is stored, the server refused it, or it grants
    /// too little.
    #[error("{}", .sign_in.advice(.server))]
    SignIn {
        /// The server.
        server: String,
        /// Why.
        sign_in: SignIn,
    },
    /// The credential store could not be read or written.
    #[error("{0}")]
    Store(String),
    /// The configuration cannot sign in (a missing client id or secret).
    #[error("{0}")]
    Config(String),
    /// Discovery, registration, the authorization or the token exchange failed.
    #[error("{0}")]
    Flow(String),
}
/// A server's OAuth settings (`auth`, `scopes`, `oauth_resource`, `client_credentials` and the
/// `oauth` table in the config). The default signs in only when the server asks (a 401).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthConfig {
    /// `auth = "oauth"`: the server needs sign-in. Without stored credentials it fails at start
    /// with the login hint instead of being tried unauthenticated.
    pub required: bool,
    /// Scopes to ask for; empty lets rmcp choose (the `WWW-Authenticate` scope, else the
    /// server's `scopes_supported`, else none).
    pub scopes: Vec<String>,
    /// `oauth_resource`: the resource indicator for the client-credentials grant (the
    /// authorization-code flow takes it from the server's protected-resource metadata).
    pub resource: Option<String>,
    /// A client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Environment variable holding that client's secret (the secret is never logged).
    pub client_secret_env_var: Option<String>,
    /// Port for the login redirect on 127.0.0.1; an ephemeral one when absent.
    pub callback_port: Option<u16>,
    /// HTTPS URL of this client's metadata document (client ID metadata document).
    pub client_metadata_url: Option<String>,
    /// Machine-to-machine: the client-credentials grant with `client_id` and the secret from
    /// `client_secret_env_var`, no browser.
    pub client_credentials: bool,
}
