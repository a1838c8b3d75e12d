//! Every server's OAuth credentials in one JSON file under the user's config directory, keyed
//! by server URL (each entry names its issuer; rmcp drops an entry whose issuer no longer
//! matches), created with mode 0600 and replaced atomically (write to a temporary file,
//! `fsync`, rename) under an exclusive lock. A second lock file serialises refreshes across
//! processes, so two routers never refresh the same credentials at once. Errors name files,
//! never values (a damaged file may hold tokens).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

#[cfg(feature = "streamable-http")]
use rmcp::transport::AuthError as RmcpAuthError;
#[cfg(feature = "streamable-http")]
use rmcp::transport::auth::{CredentialRefreshGuard, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// Without the `streamable-http` feature nothing here signs in: entries are kept as the JSON
/// they are (a file written by a full build reads and fingerprints the same).
#[cfg(not(feature = "streamable-http"))]
type StoredCredentials = serde_json::Value;

use crate::auth::error::AuthError;

/// Where [`TokenStore::default_location`] keeps the file: `$MCP_ROUTER_HOME`, else
/// `$XDG_CONFIG_HOME/mcp-router`, else `$HOME/.config/mcp-router`.
pub(crate) fn config_dir() -> Option<PathBuf> {
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
    pub(crate) path: PathBuf,
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

    /// `credentials.json` in `config_dir`; `None` when no directory can be named.
    pub fn default_location() -> Option<Self> {
        config_dir().map(|dir| Self::at(dir.join("credentials.json")))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(suffix);
        self.path.with_file_name(name)
    }

    fn read(&self) -> Result<StoreFile, AuthError> {
        let stamp = match FileStamp::of(&self.path) {
            Ok(stamp) => stamp,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreFile::default()),
            Err(e) => {
                return Err(AuthError::Store(format!("cannot read {}: {e}", self.path.display())));
            }
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
            Err(e) => {
                return Err(AuthError::Store(format!("cannot read {}: {e}", self.path.display())));
            }
        };
        // serde's message may quote the offending value, which can be a token: only say where.
        let file: StoreFile = serde_json::from_str(&text).map_err(|e| {
            AuthError::Store(format!(
                "{} is not a credentials file (line {}, column {})",
                self.path.display(),
                e.line(),
                e.column()
            ))
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
    fn update<R>(&self, change: impl FnOnce(&mut StoreFile) -> R) -> Result<R, AuthError> {
        let fail = |what: &str, e: std::io::Error| {
            AuthError::Store(format!("cannot {what} {}: {e}", self.path.display()))
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|e| fail("create the directory of", e))?;
        }
        let lock = open_private(&self.sibling(".lock"), false).map_err(|e| fail("lock", e))?;
        lock.lock().map_err(|e| fail("lock", e))?;
        let mut file = self.read()?;
        let result = change(&mut file);
        let text = serde_json::to_string_pretty(&file)
            .map_err(|e| AuthError::Store(format!("cannot encode {}: {e}", self.path.display())))?;
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
    pub fn load(&self, url: &str) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.read()?.servers.remove(url))
    }

    /// Store credentials for the server at `url`, replacing any.
    pub fn save(&self, url: &str, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.update(|file| {
            file.servers.insert(url.to_string(), credentials);
        })
    }

    /// Forget the server at `url`; whether anything was stored.
    pub fn remove(&self, url: &str) -> Result<bool, AuthError> {
        if !self.path.exists() {
            return Ok(false);
        }
        self.update(|file| file.servers.remove(url).is_some())
    }

    /// What is stored for `url`, without any token.
    #[cfg(feature = "streamable-http")]
    pub fn status(&self, url: &str) -> Result<Option<SignInStatus>, AuthError> {
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
    #[cfg(feature = "streamable-http")]
    pub fn for_server(&self, url: &str) -> ServerCredentials {
        ServerCredentials { store: self.clone(), url: url.to_string() }
    }
}

#[cfg(feature = "streamable-http")]
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
#[cfg(feature = "streamable-http")]
#[derive(Debug, Clone)]
pub struct ServerCredentials {
    store: TokenStore,
    url: String,
}

#[cfg(feature = "streamable-http")]
fn store_error(message: String) -> RmcpAuthError {
    RmcpAuthError::CredentialStoreError(message)
}

#[cfg(feature = "streamable-http")]
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AuthError> + Send + 'static,
) -> Result<T, RmcpAuthError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| store_error(format!("credential store task failed: {e}")))?
        .map_err(|e| store_error(e.to_string()))
}

#[cfg(feature = "streamable-http")]
#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, RmcpAuthError> {
        let this = self.clone();
        blocking(move || this.store.load(&this.url)).await
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), RmcpAuthError> {
        let this = self.clone();
        blocking(move || this.store.save(&this.url, credentials)).await
    }

    async fn clear(&self) -> Result<(), RmcpAuthError> {
        let this = self.clone();
        blocking(move || this.store.remove(&this.url).map(|_| ())).await
    }

    /// An exclusive lock on `credentials.json.refresh-lock`, held by rmcp from loading the
    /// refresh token to saving the new one: a second refresh, in this process or another,
    /// waits and then starts from the first one's result.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, RmcpAuthError> {
        let path = self.store.sibling(".refresh-lock");
        let dir = self.store.path.parent().map(Path::to_path_buf);
        blocking(move || {
            let fail = |e: std::io::Error| {
                AuthError::Store(format!("cannot lock {}: {e}", path.display()))
            };
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

#[cfg(all(test, feature = "streamable-http"))]
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
        let error = store.load("x").expect_err("damaged").to_string();
        assert!(error.contains("credentials.json is not a credentials file"), "{error}");
        assert!(!error.contains("secret-token-value"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
