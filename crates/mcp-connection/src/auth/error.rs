//! Why a sign-in, or the credentials behind one, could not be used.

use mcp_backend::SignIn;

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
