//! OAuth sign-in for streamable HTTP servers, on rmcp's `auth` feature: rmcp does discovery
//! (RFC 9728, RFC 8414 / OpenID), PKCE, registration (pre-registered → client ID metadata
//! document → dynamic), the token exchange, refresh and the client-credentials grant. This
//! module adds what an agent needs around it:
//!
//! - [`TokenStore`]: every server's credentials in one JSON file under the user's config
//!   directory, keyed by server URL (each entry names its issuer; rmcp drops an entry whose
//!   issuer no longer matches), created with mode 0600 and replaced atomically (write to a
//!   temporary file, `fsync`, rename) under an exclusive lock. A second lock file serialises
//!   refreshes across processes, so two routers never refresh the same credentials at once.
//! - [`Login`]: the authorization-code flow as two steps a host can drive (the URL to open,
//!   then the redirect URL it received), used by `mcp-router login`.
//! - [`authorizer`]: the `AuthorizationManager` a connection sends its requests through.
//!
//! Tokens and client secrets never appear in logs, errors or events: rmcp's
//! `StoredCredentials` redacts them in `Debug`, and every error here names files, servers and
//! keys, never values.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use rmcp::transport::AuthError;
use rmcp::transport::auth::{
    AuthorizationCallback, AuthorizationManager, AuthorizationRequest, ClientCredentialsConfig,
    CredentialRefreshGuard, CredentialStore, OAuthState, StoredCredentials,
};
use serde::{Deserialize, Serialize};

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

/// The client name registered dynamically.
const CLIENT_NAME: &str = "mcp-router";

/// The login hint every sign-in failure carries.
pub fn login_hint(server: &str) -> String {
    format!("needs sign-in: run `mcp-router login {server}`")
}

/// Where [`TokenStore::default_location`] keeps the file: `$MCP_ROUTER_HOME`, else
/// `$XDG_CONFIG_HOME/mcp-router`, else `$HOME/.config/mcp-router`.
pub fn config_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("MCP_ROUTER_HOME")
        .or_else(|| var("XDG_CONFIG_HOME").map(|d| d.join("mcp-router")))
        .or_else(|| var("HOME").map(|d| d.join(".config").join("mcp-router")))
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct StoreFile {
    /// Server URL → its credentials.
    #[serde(default)]
    servers: BTreeMap<String, StoredCredentials>,
}

/// What `auth status` shows of one server's credentials: never a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignInStatus {
    /// The server URL the credentials are for.
    pub url: String,
    /// The authorization server that issued them.
    pub issuer: Option<String>,
    /// The OAuth client they were issued to.
    pub client_id: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When the access token expires (seconds since the epoch), if the server said.
    pub expires_at: Option<u64>,
    /// Whether it can be refreshed without a new sign-in.
    pub refreshable: bool,
}

/// Every server's OAuth credentials, in one file. Cheap to clone (clones share what was read).
#[derive(Clone)]
pub struct TokenStore {
    path: PathBuf,
    /// The file as last read, with what identified it then (every HTTP request asks for its
    /// token: the file is read again only when it changed).
    memo: std::sync::Arc<std::sync::Mutex<Option<(FileStamp, StoreFile)>>>,
}

/// What tells one version of the file from another: inode (a rename replaces it), length and
/// modification time.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileStamp {
    fn of(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path)?;
        Ok(Self { inode: meta.ino(), len: meta.len(), modified: meta.modified().ok() })
    }
}

impl PartialEq for TokenStore {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Eq for TokenStore {}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenStore").field("path", &self.path).finish_non_exhaustive()
    }
}

impl TokenStore {
    /// The store in `file`.
    pub fn at(file: impl Into<PathBuf>) -> Self {
        Self { path: file.into(), memo: Default::default() }
    }

    /// `credentials.json` in [`config_dir`]; `None` when no directory can be named.
    pub fn default_location() -> Option<Self> {
        config_dir().map(|dir| Self::at(dir.join("credentials.json")))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(suffix);
        self.path.with_file_name(name)
    }

    fn read(&self) -> Result<StoreFile, String> {
        let stamp = match FileStamp::of(&self.path) {
            Ok(stamp) => stamp,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreFile::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        if let Ok(memo) = self.memo.lock()
            && let Some((seen, file)) = memo.as_ref()
            && *seen == stamp
        {
            return Ok(file.clone());
        }
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreFile::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        // serde's message may quote the offending value, which can be a token: only say where.
        let file: StoreFile = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is not a credentials file (line {}, column {})",
                self.path.display(),
                e.line(),
                e.column()
            )
        })?;
        // Remembered only if the file did not change while it was read.
        if FileStamp::of(&self.path).is_ok_and(|now| now == stamp)
            && let Ok(mut memo) = self.memo.lock()
        {
            *memo = Some((stamp, file.clone()));
        }
        Ok(file)
    }

    /// Read, change and write back the file under its lock. The new file is written beside
    /// it with mode 0600, synced, then renamed over it, so a reader sees the old or the new
    /// file, never a part.
    fn update<R>(&self, change: impl FnOnce(&mut StoreFile) -> R) -> Result<R, String> {
        let fail =
            |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", self.path.display());
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|e| fail("create the directory of", e))?;
        }
        let lock = open_private(&self.sibling(".lock"), false).map_err(|e| fail("lock", e))?;
        lock.lock().map_err(|e| fail("lock", e))?;
        let mut file = self.read()?;
        let result = change(&mut file);
        let text = serde_json::to_string_pretty(&file)
            .map_err(|e| format!("cannot encode {}: {e}", self.path.display()))?;
        let temporary = self.sibling(&format!(".tmp-{}", std::process::id()));
        let written = (|| {
            let mut out = open_private(&temporary, true)?;
            out.write_all(text.as_bytes())?;
            out.sync_all()?;
            std::fs::rename(&temporary, &self.path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(fail("write", e));
        }
        Ok(result)
    }

    /// The credentials stored for the server at `url`.
    pub fn load(&self, url: &str) -> Result<Option<StoredCredentials>, String> {
        Ok(self.read()?.servers.remove(url))
    }

    /// Store credentials for the server at `url`, replacing any.
    pub fn save(&self, url: &str, credentials: StoredCredentials) -> Result<(), String> {
        self.update(|file| {
            file.servers.insert(url.to_string(), credentials);
        })
    }

    /// Forget the server at `url`; whether anything was stored.
    pub fn remove(&self, url: &str) -> Result<bool, String> {
        if !self.path.exists() {
            return Ok(false);
        }
        self.update(|file| file.servers.remove(url).is_some())
    }

    /// What is stored for `url`, without any token.
    pub fn status(&self, url: &str) -> Result<Option<SignInStatus>, String> {
        Ok(self.load(url)?.filter(|c| c.token_response.is_some()).map(|c| status(url, &c)))
    }

    /// A number that changes whenever the credentials stored for `url` change (0: none).
    /// The manager compares it to retry a server that failed for want of sign-in as soon as
    /// someone signed in.
    pub fn fingerprint(&self, url: &str) -> u64 {
        let Ok(Some(credentials)) = self.load(url) else { return 0 };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        serde_json::to_string(&credentials).unwrap_or_default().hash(&mut hasher);
        hasher.finish().max(1)
    }

    /// rmcp's view of one server's entry.
    pub fn for_server(&self, url: &str) -> ServerCredentials {
        ServerCredentials { store: self.clone(), url: url.to_string() }
    }
}

fn status(url: &str, credentials: &StoredCredentials) -> SignInStatus {
    // The token response is read as JSON for its non-secret fields only.
    let token = serde_json::to_value(&credentials.token_response).unwrap_or_default();
    let expires_at = token["expires_in"]
        .as_u64()
        .zip(credentials.token_received_at)
        .map(|(expires_in, received)| received + expires_in);
    let mut scopes = credentials.granted_scopes.clone();
    if scopes.is_empty()
        && let Some(scope) = token["scope"].as_str()
    {
        scopes = scope.split_whitespace().map(str::to_string).collect();
    }
    SignInStatus {
        url: url.to_string(),
        issuer: credentials.issuer.clone(),
        client_id: credentials.client_id.clone(),
        scopes,
        expires_at,
        refreshable: token["refresh_token"].is_string(),
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

fn open_private(path: &Path, truncate: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().create(true).write(true).truncate(truncate).mode(0o600).open(path)
}

/// One server's entry of a [`TokenStore`], as rmcp's `CredentialStore`.
#[derive(Debug, Clone)]
pub struct ServerCredentials {
    store: TokenStore,
    url: String,
}

fn store_error(message: String) -> AuthError {
    AuthError::CredentialStoreError(message)
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| store_error(format!("credential store task failed: {e}")))?
        .map_err(store_error)
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let this = self.clone();
        blocking(move || this.store.load(&this.url)).await
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let this = self.clone();
        blocking(move || this.store.save(&this.url, credentials)).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let this = self.clone();
        blocking(move || this.store.remove(&this.url).map(|_| ())).await
    }

    /// An exclusive lock on `credentials.json.refresh-lock`, held by rmcp from loading the
    /// refresh token to saving the new one: a second refresh, in this process or another,
    /// waits and then starts from the first one's result.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let path = self.store.sibling(".refresh-lock");
        let dir = self.store.path.parent().map(Path::to_path_buf);
        blocking(move || {
            let fail = |e: std::io::Error| format!("cannot lock {}: {e}", path.display());
            if let Some(dir) = dir.filter(|d| !d.as_os_str().is_empty()) {
                create_private_dir(&dir).map_err(fail)?;
            }
            let file = open_private(&path, false).map_err(fail)?;
            file.lock().map_err(fail)?;
            Ok(Some(CredentialRefreshGuard::new(file)))
        })
        .await
    }
}

/// An `AuthorizationManager` for the server at `url` whose credentials live in `store`.
async fn manager(url: &str, store: &TokenStore) -> Result<AuthorizationManager, AuthError> {
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
) -> Result<AuthorizationManager, String> {
    let describe = |e: AuthError| describe_auth_error(server, &e);
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
        return state
            .into_authorization_manager()
            .ok_or_else(|| format!("client-credentials sign-in to `{server}` did not complete"));
    }
    if config.required {
        return Err(login_hint(server));
    }
    Ok(auth)
}

/// The client-credentials grant; the resource indicator is `oauth_resource`, else the server's
/// URL (its canonical URI).
fn client_credentials(
    server: &str,
    url: &str,
    config: &OAuthConfig,
) -> Result<ClientCredentialsConfig, String> {
    let client_id = config
        .client_id
        .clone()
        .ok_or_else(|| format!("server `{server}`: client_credentials needs `oauth.client_id`"))?;
    let secret = client_secret(server, config)?.ok_or_else(|| {
        format!("server `{server}`: client_credentials needs `oauth.client_secret_env_var`")
    })?;
    Ok(ClientCredentialsConfig::ClientSecret {
        client_id,
        client_secret: secret,
        scopes: config.scopes.clone(),
        resource: Some(config.resource.clone().unwrap_or_else(|| url.to_string())),
    })
}

fn client_secret(server: &str, config: &OAuthConfig) -> Result<Option<String>, String> {
    let Some(var) = &config.client_secret_env_var else { return Ok(None) };
    std::env::var(var).map(Some).map_err(|_| {
        format!("server `{server}`: environment variable `{var}` (oauth.client_secret_env_var) is not set")
    })
}

/// rmcp's auth errors for a model or a user: what failed and what to do, never a value.
pub(crate) fn describe_auth_error(server: &str, error: &AuthError) -> String {
    match error {
        AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_) => login_hint(server),
        AuthError::TokenRefreshFailed(_) => format!(
            "could not refresh its sign-in (the authorization server did not answer); try again, or run `mcp-router login {server}`"
        ),
        other => format!("sign-in failed: {other}"),
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
    ) -> Result<Self, String> {
        let describe = |e: AuthError| describe_login_error(server, &e);
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
    pub async fn finish(mut self, redirected_to: &str) -> Result<(), String> {
        let server = self.server.clone();
        let callback = AuthorizationCallback::from_redirect_url(redirected_to.trim())
            .map_err(|e| describe_login_error(&server, &e))?;
        self.state
            .handle_callback_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|e| describe_login_error(&server, &e))
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

/// The `WWW-Authenticate` value of the server's 401 to an unauthenticated `initialize`, if it
/// answers so.
async fn probe_challenge(url: &str) -> Option<String> {
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
        reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build().ok()?;
    let response = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    response.headers().get("www-authenticate")?.to_str().ok().map(str::to_string)
}

fn describe_login_error(server: &str, error: &AuthError) -> String {
    format!("sign-in to `{server}` failed: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(client: &str) -> StoredCredentials {
        StoredCredentials::new(client.to_string(), None, vec!["mcp".into()], Some(1))
    }

    #[test]
    fn the_store_is_private_atomic_and_sees_changes_made_elsewhere() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("mcp-router-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = TokenStore::at(dir.join("nested").join("credentials.json"));
        assert!(store.load("https://a").expect("empty").is_none());
        store.save("https://a", credentials("one")).expect("save");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(store.path()), 0o600);
        assert_eq!(mode(&dir.join("nested")), 0o700);
        assert_eq!(store.load("https://a").expect("load").map(|c| c.client_id), Some("one".into()));
        // Another store on the same file (another router) writes: this one sees it.
        let other = TokenStore::at(store.path());
        other.save("https://a", credentials("two")).expect("save");
        assert_eq!(store.load("https://a").expect("load").map(|c| c.client_id), Some("two".into()));
        assert_ne!(store.fingerprint("https://a"), 0);
        assert!(store.remove("https://a").expect("remove"));
        assert_eq!(other.fingerprint("https://a"), 0);
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.join("nested"))
            .expect("dir")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.contains(".tmp-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // A damaged file is an error that names the file and the place, never its content.
        std::fs::write(store.path(), "{\"servers\": {\"x\": \"secret-token-value\"}}")
            .expect("write");
        let error = store.load("x").expect_err("damaged");
        assert!(error.contains("credentials.json is not a credentials file"), "{error}");
        assert!(!error.contains("secret-token-value"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
