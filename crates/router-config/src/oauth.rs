//! The OAuth keys of a server entry, in both formats (HTTP servers only): `auth`, `scopes`,
//! `oauth_resource`, `client_credentials` and the `oauth` table.

use mcp_connection_manager::oauth::OAuthConfig;
use serde_json::{Map, Value};

use crate::errors::{ConfigError, kind};
use crate::servers::ServerWalker;

/// The OAuth keys of a server entry (both formats); HTTP servers only.
pub(crate) const OAUTH_KEYS: &[&str] =
    &["auth", "scopes", "oauth_resource", "client_credentials", "oauth"];
/// The keys of its `oauth` table.
const OAUTH_TABLE_KEYS: &[&str] =
    &["client_id", "client_secret_env_var", "callback_port", "client_metadata_url"];

impl ServerWalker<'_> {
    /// `auth`, `scopes`, `oauth_resource`, `client_credentials` and the `oauth` table.
    pub(super) fn oauth(&self, table: &Map<String, Value>) -> Result<OAuthConfig, ConfigError> {
        let mut oauth = OAuthConfig::default();
        if let Some(auth) = self.string(table, "auth")? {
            if auth != "oauth" {
                return Err(self.err("auth", format!("expected \"oauth\", found \"{auth}\"")));
            }
            oauth.required = true;
        }
        oauth.scopes = self.strings(table, "scopes")?.unwrap_or_default();
        oauth.resource = self.string(table, "oauth_resource")?;
        oauth.client_credentials = self.bool(table, "client_credentials")?.unwrap_or(false);
        match table.get("oauth") {
            None => {}
            Some(Value::Object(inner)) => {
                for key in inner.keys().filter(|k| !OAUTH_TABLE_KEYS.contains(&k.as_str())) {
                    tracing::warn!(file = %self.path.display(), server = self.name, key, "unknown oauth key ignored");
                }
                let nested = |key: &str| format!("oauth.{key}");
                let string = |key: &str| match inner.get(key) {
                    None => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(other) => {
                        Err(self
                            .err(&nested(key), format!("expected a string, found {}", kind(other))))
                    }
                };
                oauth.client_id = string("client_id")?;
                oauth.client_secret_env_var = string("client_secret_env_var")?;
                oauth.client_metadata_url = string("client_metadata_url")?;
                if let Some(document) = &oauth.client_metadata_url
                    && !document.starts_with("https://")
                {
                    return Err(self.err(
                        &nested("client_metadata_url"),
                        "must be an https:// URL (a client ID metadata document)",
                    ));
                }
                if let Some(port) = inner.get("callback_port") {
                    let port = port.as_u64().and_then(|p| u16::try_from(p).ok()).filter(|p| *p > 0);
                    oauth.callback_port = Some(port.ok_or_else(|| {
                        self.err(&nested("callback_port"), "expected a port number (1-65535)")
                    })?);
                }
            }
            Some(other) => {
                return Err(self.err("oauth", format!("expected a table, found {}", kind(other))));
            }
        }
        if oauth.client_secret_env_var.is_some() && oauth.client_id.is_none() {
            return Err(self.err(
                "oauth.client_secret_env_var",
                "needs `oauth.client_id` (the secret belongs to a pre-registered client)",
            ));
        }
        if oauth.client_credentials
            && (oauth.client_id.is_none() || oauth.client_secret_env_var.is_none())
        {
            return Err(self.err(
                "client_credentials",
                "needs `oauth.client_id` and `oauth.client_secret_env_var`",
            ));
        }
        Ok(oauth)
    }
}
