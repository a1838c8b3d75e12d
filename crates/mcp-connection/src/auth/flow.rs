//! The OAuth flows on rmcp's `auth` feature (only with the `streamable-http` feature): the
//! `AuthorizationManager` a connection sends its requests through ([`authorizer`]), the
//! authorization-code flow as two steps a host can drive ([`Login`]), the client-credentials
//! grant, and the probe of what a server asks for ([`authorization`]).

use mcp_backend::SignIn;
use rmcp::transport::AuthError as RmcpAuthError;
use rmcp::transport::auth::{
    AuthorizationCallback, AuthorizationManager, AuthorizationRequest, ClientCredentialsConfig,
    OAuthState,
};

use crate::auth::error::AuthError;
use crate::auth::token_store::TokenStore;
use crate::config::OAuthConfig;

/// The client name registered dynamically.
const CLIENT_NAME: &str = "mcp-router";

/// An `AuthorizationManager` for the server at `url` whose credentials live in `store`.
async fn manager(url: &str, store: &TokenStore) -> Result<AuthorizationManager, RmcpAuthError> {
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(store.for_server(url));
    Ok(manager)
}

/// The `AuthorizationManager` a connection to `server` at `url` sends its requests through:
/// with the stored credentials (refreshed as needed), with a client-credentials grant, or with
/// none — then requests go out unauthenticated and a 401 fails the connection with the login
/// hint. A server that requires sign-in and has no credentials fails here, before any request.
pub(crate) async fn authorizer(
    server: &str,
    url: &str,
    config: &OAuthConfig,
    store: &TokenStore,
) -> Result<AuthorizationManager, AuthError> {
    let describe = |e: RmcpAuthError| AuthError::SignIn {
        server: server.to_string(),
        sign_in: sign_in_of(&e),
    };
    let mut auth = manager(url, store).await.map_err(describe)?;
    let stored = store.load(url)?.is_some_and(|c| c.token_response.is_some());
    // `false` after a change of issuer: rmcp dropped the tokens bound to the old one.
    if stored && auth.initialize_from_store().await.map_err(describe)? {
        return Ok(auth);
    }
    if config.client_credentials {
        let grant = client_credentials(server, url, config)?;
        let mut state = OAuthState::Unauthorized(auth);
        state.authenticate_client_credentials(grant).await.map_err(describe)?;
        return state.into_authorization_manager().ok_or_else(|| {
            AuthError::Flow(format!("client-credentials sign-in to `{server}` did not complete"))
        });
    }
    if config.required {
        return Err(AuthError::SignIn { server: server.to_string(), sign_in: SignIn::Required });
    }
    Ok(auth)
}

/// The client-credentials grant; the resource indicator is `oauth_resource`, else the server's
/// URL (its canonical URI).
fn client_credentials(
    server: &str,
    url: &str,
    config: &OAuthConfig,
) -> Result<ClientCredentialsConfig, AuthError> {
    let client_id = config.client_id.clone().ok_or_else(|| {
        AuthError::Config(format!("server `{server}`: client_credentials needs `oauth.client_id`"))
    })?;
    let secret = client_secret(server, config)?.ok_or_else(|| {
        AuthError::Config(format!(
            "server `{server}`: client_credentials needs `oauth.client_secret_env_var`"
        ))
    })?;
    Ok(ClientCredentialsConfig::ClientSecret {
        client_id,
        client_secret: secret,
        scopes: config.scopes.clone(),
        resource: Some(config.resource.clone().unwrap_or_else(|| url.to_string())),
    })
}

fn client_secret(server: &str, config: &OAuthConfig) -> Result<Option<String>, AuthError> {
    let Some(var) = &config.client_secret_env_var else { return Ok(None) };
    std::env::var(var).map(Some).map_err(|_| {
        AuthError::Config(format!(
            "server `{server}`: environment variable `{var}` (oauth.client_secret_env_var) is not set"
        ))
    })
}

/// What rmcp's auth error means for the server's sign-in: never a value.
pub(crate) fn sign_in_of(error: &RmcpAuthError) -> SignIn {
    match error {
        RmcpAuthError::AuthorizationRequired | RmcpAuthError::TokenRefreshRejected(_) => {
            SignIn::Required
        }
        RmcpAuthError::TokenRefreshFailed(_) => SignIn::RefreshFailed,
        other => SignIn::Failed { detail: other.to_string() },
    }
}

/// The authorization-code flow, in two steps a host can drive: [`Login::start`] gives the URL
/// to open; [`Login::finish`] takes the URL the browser was redirected to and stores the
/// credentials.
pub struct Login {
    server: String,
    state: OAuthState,
    url: String,
    redirect_uri: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("server", &self.server)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl Login {
    /// Discover the server's authorization server, register (a configured client first, then
    /// the client ID metadata document, then dynamic registration) and build the
    /// authorization URL for `redirect_uri` (PKCE S256, the resource indicator, the scopes).
    /// `challenge` is a `WWW-Authenticate` value the server sent, if one is known.
    pub async fn start(
        server: &str,
        url: &str,
        config: &OAuthConfig,
        store: &TokenStore,
        redirect_uri: &str,
        challenge: Option<&str>,
    ) -> Result<Self, AuthError> {
        let describe = |e: RmcpAuthError| login_error(server, &e);
        let auth = manager(url, store).await.map_err(describe)?;
        // Without a challenge in hand, ask the server for one: its 401 names the metadata and
        // may ask for scopes.
        let challenge = match challenge {
            Some(challenge) => Some(challenge.to_string()),
            None => probe_challenge(url).await,
        };
        let mut request = AuthorizationRequest::new(redirect_uri).with_client_name(CLIENT_NAME);
        // Signing in again for more (a step-up): ask for what was granted and what the
        // challenge asks for, so nothing granted before is dropped.
        let granted = store.load(url)?.map(|c| c.granted_scopes).unwrap_or_default();
        let challenged = challenge.as_deref().map(challenge_scopes).unwrap_or_default();
        request = if !config.scopes.is_empty() {
            request.with_scopes(config.scopes.iter().cloned())
        } else if !granted.is_empty() && !challenged.is_empty() {
            let mut union = granted;
            for scope in challenged {
                if !union.contains(&scope) {
                    union.push(scope);
                }
            }
            request.with_scopes(union)
        } else {
            request.with_initial_scope_selection()
        };
        if let Some(client_id) = &config.client_id {
            request = request.with_preregistered_client(client_id);
            if let Some(secret) = client_secret(server, config)? {
                request = request.with_client_secret(secret);
            }
        }
        if let Some(document) = &config.client_metadata_url {
            request = request.with_client_metadata_url(document);
        }
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        let mut state = OAuthState::Unauthorized(auth);
        state.start_authorization(request).await.map_err(describe)?;
        let url = state.get_authorization_url().await.map_err(describe)?;
        Ok(Self { server: server.to_string(), state, url, redirect_uri: redirect_uri.to_string() })
    }

    /// The URL to open in a browser.
    pub fn authorization_url(&self) -> &str {
        &self.url
    }

    /// The redirect URI the authorization server sends the browser back to.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Complete the sign-in with the URL the browser was sent back to (its `code`, `state`
    /// and `iss` are checked and the code exchanged); the credentials are stored.
    pub async fn finish(mut self, redirected_to: &str) -> Result<(), AuthError> {
        let server = self.server.clone();
        let callback = AuthorizationCallback::from_redirect_url(redirected_to.trim())
            .map_err(|e| login_error(&server, &e))?;
        self.state
            .handle_callback_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|e| login_error(&server, &e))
    }
}

/// The scopes a `WWW-Authenticate` challenge asks for (its `scope="a b"` parameter).
fn challenge_scopes(challenge: &str) -> Vec<String> {
    challenge
        .split("scope=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|scopes| scopes.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Whether a server asks for authorization, as an unauthenticated `initialize` finds out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Authorization {
    /// It answered 401 (with this `WWW-Authenticate` challenge, if it sent one), or it
    /// publishes protected-resource metadata (RFC 9728) and did not answer.
    Required {
        /// The challenge, for a sign-in that asks for what the server wants.
        challenge: Option<String>,
    },
    /// It answered without authorization: there is nothing to sign in to.
    NotRequired,
    /// It could not be told (why, in words): the server did not answer as MCP servers do.
    Unknown(String),
}

/// Ask the server at `url` whether it wants authorization: one unauthenticated `initialize`
/// (its session, if it opened one, is ended again), then its protected-resource metadata.
pub async fn authorization(url: &str) -> Authorization {
    let address = crate::errors::address_of(url);
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let client =
        match reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build() {
            Ok(client) => client,
            Err(e) => return Authorization::Unknown(e.to_string()),
        };
    let sent = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await;
    let response = match sent {
        Ok(response) => response,
        Err(e) => return Authorization::Unknown(crate::errors::describe(&e, address.as_deref())),
    };
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED {
        let challenge = response.headers().get("www-authenticate");
        let challenge = challenge.and_then(|c| c.to_str().ok()).map(str::to_string);
        return Authorization::Required { challenge };
    }
    if status.is_success() {
        if let Some(session) = response.headers().get("mcp-session-id").cloned() {
            let _ = client.delete(url).header("mcp-session-id", session).send().await;
        }
        return Authorization::NotRequired;
    }
    if publishes_resource_metadata(&client, url).await {
        return Authorization::Required { challenge: None };
    }
    let from = address.map(|a| format!(" from {a}")).unwrap_or_default();
    Authorization::Unknown(format!("it answered `initialize` with HTTP {status}{from}"))
}

/// Whether protected-resource metadata (RFC 9728) is published for `url`: at the well-known
/// path with the URL's path appended, or at the origin's.
async fn publishes_resource_metadata(client: &reqwest::Client, url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else { return false };
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    let candidates = [
        format!("{origin}/.well-known/oauth-protected-resource{path}"),
        format!("{origin}/.well-known/oauth-protected-resource"),
    ];
    for candidate in candidates {
        let Ok(response) = client.get(&candidate).send().await else { continue };
        if !response.status().is_success() {
            continue;
        }
        let Ok(body) = response.bytes().await else { continue };
        let metadata = serde_json::from_slice::<serde_json::Value>(&body);
        if metadata.is_ok_and(|m| m.get("authorization_servers").is_some()) {
            return true;
        }
    }
    false
}

/// The `WWW-Authenticate` value of the server's 401 to an unauthenticated `initialize`, if it
/// answers so.
async fn probe_challenge(url: &str) -> Option<String> {
    match authorization(url).await {
        Authorization::Required { challenge } => challenge,
        _ => None,
    }
}

fn login_error(server: &str, error: &RmcpAuthError) -> AuthError {
    AuthError::Flow(format!("sign-in to `{server}` failed: {error}"))
}
