//! One server entry of either format, walked key by key: its transport, its timeouts and tool
//! filters, `startup` and `protocol`; every error names the file, the server and the key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_connection_manager::{
    ProtocolChoice, ServerConfig, Startup, TransportConfig, is_valid_server_name,
};
use serde_json::{Map, Value};

use crate::errors::{ConfigError, ConfigFormat, kind};
use crate::oauth::OAUTH_KEYS;

/// Validates one server entry; carries what every error message names.
pub(crate) struct ServerWalker<'a> {
    pub(crate) path: &'a Path,
    pub(crate) name: &'a str,
    pub(crate) format: ConfigFormat,
}

const CODEX_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "env_secrets",
    "cwd",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "enabled",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "protocol",
    "startup",
    "log_level",
    "tool_changes",
    "approval",
    "tool_approvals",
    "auth",
    "scopes",
    "oauth_resource",
    "client_credentials",
    "oauth",
    "always_load_tools",
    "shared",
    "sandbox",
    "registry",
    "integrity",
];
const MCP_JSON_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "env_secrets",
    "cwd",
    "url",
    "headers",
    "type",
    "disabled",
    "protocol",
    "startup",
    "log_level",
    "tool_changes",
    "approval",
    "tool_approvals",
    "auth",
    "scopes",
    "oauth_resource",
    "client_credentials",
    "oauth",
    "always_load_tools",
    "shared",
    "sandbox",
];

impl ServerWalker<'_> {
    pub(crate) fn err(&self, key: &str, message: impl fmt::Display) -> ConfigError {
        ConfigError::new(self.path, format!("server `{}`: key `{key}`: {message}", self.name))
    }

    /// A stdio server's environment beyond the router's allow-list: its `env`, and the
    /// variables `env_vars` names passed through from the router's environment by name (as
    /// Codex does: one that is not set is left out; `env` wins over the same name). Values are
    /// secrets: never logged, never in an error.
    fn environment(
        &self,
        table: &serde_json::Map<String, Value>,
    ) -> Result<std::collections::BTreeMap<String, String>, ConfigError> {
        let mut env = self.string_map(table, "env")?;
        for name in self.strings(table, "env_vars")?.unwrap_or_default() {
            let valid = !name.is_empty()
                && !name.contains(['=', '\0'])
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                return Err(self.err("env_vars", format!("`{name}` is not a variable name")));
            }
            if env.contains_key(&name) {
                continue;
            }
            match std::env::var(&name) {
                Ok(value) => drop(env.insert(name, value)),
                Err(std::env::VarError::NotPresent) => {}
                Err(std::env::VarError::NotUnicode(_)) => {
                    tracing::warn!(server = self.name, variable = %name, "env_vars: the value is not UTF-8; not passed");
                }
            }
        }
        for name in self.strings(table, "env_secrets")?.unwrap_or_default() {
            if env.contains_key(&name) {
                continue;
            }
            let store = crate::SecretStore::default_location();
            let store = store.ok_or_else(|| {
                self.err(
                    "env_secrets",
                    "no folder for the secret store (set HOME or MCP_ROUTER_HOME)",
                )
            })?;
            match store.get(self.name, &name) {
                Ok(Some(value)) => drop(env.insert(name, value)),
                Ok(None) => {
                    return Err(self.err(
                        "env_secrets",
                        format!(
                            "the secret `{name}` is not in the secret store {}: store it with `mcp-router secret set {} {name}`",
                            store.path().display(),
                            self.name
                        ),
                    ));
                }
                Err(why) => return Err(self.err("env_secrets", why)),
            }
        }
        Ok(env)
    }

    pub(crate) fn parse(&self, value: &Value) -> Result<ServerConfig, ConfigError> {
        if !is_valid_server_name(self.name) {
            return Err(ConfigError::new(
                self.path,
                format!(
                    "server `{}`: invalid name: use only letters, digits, `_` and `-`",
                    self.name
                ),
            ));
        }
        if self.name == tool_router::RESULTS_SERVER {
            return Err(ConfigError::new(
                self.path,
                format!(
                    "server `{}`: the name is reserved for the tool results the router keeps; choose another",
                    self.name
                ),
            ));
        }
        let Value::Object(table) = value else {
            return Err(ConfigError::new(
                self.path,
                format!("server `{}`: must be a table", self.name),
            ));
        };
        let known = match self.format {
            ConfigFormat::CodexToml => CODEX_KEYS,
            ConfigFormat::McpJson => MCP_JSON_KEYS,
        };
        for key in table.keys().filter(|k| !known.contains(&k.as_str())) {
            tracing::warn!(file = %self.path.display(), server = self.name, key, "unknown config key ignored");
        }
        let transport = self.transport(table)?;
        let mut config = ServerConfig::with_transport(self.name, transport);
        self.common_keys(table, &mut config)?;
        Ok(config)
    }

    /// The keys beside the transport: enabling, timeouts, tool filters, log level, startup and
    /// protocol.
    fn common_keys(
        &self,
        table: &serde_json::Map<String, Value>,
        config: &mut ServerConfig,
    ) -> Result<(), ConfigError> {
        match self.format {
            ConfigFormat::CodexToml => {
                config.enabled = self.bool(table, "enabled")?.unwrap_or(true);
                if let Some(t) = self.seconds(table, "startup_timeout_sec", 1.0)? {
                    config.startup_timeout = t;
                } else if let Some(t) = self.seconds(table, "startup_timeout_ms", 0.001)? {
                    config.startup_timeout = t;
                }
                if let Some(t) = self.seconds(table, "tool_timeout_sec", 1.0)? {
                    config.tool_timeout = t;
                }
                config.enabled_tools = self.strings(table, "enabled_tools")?;
                config.disabled_tools = self.strings(table, "disabled_tools")?.unwrap_or_default();
            }
            ConfigFormat::McpJson => {
                config.enabled = !self.bool(table, "disabled")?.unwrap_or(false);
            }
        }
        if let Some(value) = self.string(table, "log_level")? {
            if !mcp_connection_manager::LOG_LEVELS.contains(&value.as_str()) {
                let levels = mcp_connection_manager::LOG_LEVELS.join(", ");
                return Err(
                    self.err("log_level", format!("expected one of {levels}, found \"{value}\""))
                );
            }
            config.log_level = Some(value);
        }
        self.approvals(table, config)?;
        if let Some(value) = self.string(table, "tool_changes")? {
            use mcp_connection_manager::ToolChanges;
            let choices = [ToolChanges::Hold, ToolChanges::Accept, ToolChanges::Refuse];
            config.tool_changes =
                choices.into_iter().find(|c| c.as_str() == value).ok_or_else(|| {
                    let found =
                        format!("expected \"hold\", \"accept\" or \"refuse\", found \"{value}\"");
                    self.err("tool_changes", found)
                })?;
        }
        if let Some(value) = self.string(table, "startup")? {
            config.startup = Startup::parse(&value).ok_or_else(|| {
                self.err("startup", format!("expected \"eager\" or \"lazy\", found \"{value}\""))
            })?;
        }
        if let Some(value) = self.string(table, "protocol")? {
            config.protocol = ProtocolChoice::parse(&value).ok_or_else(|| {
                self.err(
                    "protocol",
                    format!(
                        "expected \"auto\", \"2026-07-28\" or \"2025-11-25\", found \"{value}\""
                    ),
                )
            })?;
        }
        Ok(())
    }

    pub(crate) fn transport(
        &self,
        table: &Map<String, Value>,
    ) -> Result<TransportConfig, ConfigError> {
        let command = self.string(table, "command")?;
        let url = self.string(table, "url")?;
        let headers_key = match self.format {
            ConfigFormat::CodexToml => "http_headers",
            ConfigFormat::McpJson => "headers",
        };
        match (command, url) {
            (Some(_), Some(_)) => Err(self.err("url", "set either `command` or `url`, not both")),
            (None, None) => {
                Err(self.err("command", "missing: set `command` (stdio) or `url` (HTTP)"))
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(self.err("command", "must not be empty"));
                }
                for key in ["url", "bearer_token_env_var", headers_key].iter().chain(OAUTH_KEYS) {
                    if table.contains_key(*key) {
                        return Err(self.err(key, "only applies to `url` servers"));
                    }
                }
                Ok(TransportConfig::Stdio {
                    command,
                    args: self.strings(table, "args")?.unwrap_or_default(),
                    env: self.environment(table)?,
                    cwd: self.string(table, "cwd")?.map(PathBuf::from),
                })
            }
            (None, Some(url)) => self.http(table, url, headers_key),
        }
    }

    /// A `url` server's transport: streamable HTTP with its token, headers and OAuth keys.
    fn http(
        &self,
        table: &Map<String, Value>,
        url: String,
        headers_key: &str,
    ) -> Result<TransportConfig, ConfigError> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(self.err("url", "must start with http:// or https://"));
        }
        for key in ["args", "env", "env_vars", "env_secrets", "cwd"] {
            if table.contains_key(key) {
                return Err(self.err(key, "only applies to `command` servers"));
            }
        }
        if self.format == ConfigFormat::McpJson
            && let Some(kind) = self.string(table, "type")?
            && kind == "sse"
        {
            return Err(
                self.err("type", "the legacy SSE transport is not supported; use streamable HTTP")
            );
        }
        let bearer_token_env_var = self.string(table, "bearer_token_env_var")?;
        let oauth = self.oauth(table)?;
        if bearer_token_env_var.is_some()
            && let Some(key) = OAUTH_KEYS.iter().find(|k| table.contains_key(**k))
        {
            return Err(self.err(
                key,
                "cannot be combined with `bearer_token_env_var`: use a static token or OAuth, not both",
            ));
        }
        Ok(TransportConfig::StreamableHttp {
            url,
            bearer_token_env_var,
            http_headers: self.string_map(table, headers_key)?,
            oauth,
        })
    }

    pub(crate) fn string(
        &self,
        table: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<String>, ConfigError> {
        match table.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.err(key, format!("expected a string, found {}", kind(other)))),
        }
    }

    pub(crate) fn bool(
        &self,
        table: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<bool>, ConfigError> {
        match table.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => {
                Err(self.err(key, format!("expected true or false, found {}", kind(other))))
            }
        }
    }

    pub(crate) fn seconds(
        &self,
        table: &Map<String, Value>,
        key: &str,
        unit_secs: f64,
    ) -> Result<Option<Duration>, ConfigError> {
        let Some(value) = table.get(key) else {
            return Ok(None);
        };
        let Some(n) = value.as_f64() else {
            return Err(self.err(key, format!("expected a number, found {}", kind(value))));
        };
        let secs = n * unit_secs;
        if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
            return Err(
                self.err(key, format!("must be a positive number of at most one day, found {n}"))
            );
        }
        Ok(Some(Duration::from_secs_f64(secs)))
    }

    pub(crate) fn strings(
        &self,
        table: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(value) = table.get(key) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(
                self.err(key, format!("expected an array of strings, found {}", kind(value)))
            );
        };
        items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(self.err(
                    key,
                    format!("expected an array of strings, found an item that is {}", kind(other)),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// `approval` and `tool_approvals`: `run`, `ask` or `refuse`, for the server and per tool;
    /// and its `sandbox`.
    fn approvals(
        &self,
        table: &Map<String, Value>,
        config: &mut ServerConfig,
    ) -> Result<(), ConfigError> {
        use mcp_connection_manager::ApprovalPolicy;
        let policy = |key: &str, value: &str| {
            ApprovalPolicy::parse(value).ok_or_else(|| {
                self.err(key, format!("expected \"run\", \"ask\" or \"refuse\", found \"{value}\""))
            })
        };
        if let Some(value) = self.string(table, "approval")? {
            config.approval = Some(policy("approval", &value)?);
        }
        for (tool, value) in self.string_map(table, "tool_approvals")? {
            config.tool_approvals.insert(tool, policy("tool_approvals", &value)?);
        }
        if let Some(value) = table.get("sandbox") {
            config.sandbox =
                Some(crate::sandbox::sandbox(value).map_err(|e| self.err("sandbox", e))?);
        }
        if let Some(value) = table.get("integrity") {
            config.integrity = Some(integrity(value).map_err(|e| self.err("integrity", e))?);
        }
        // Where `mcp-router add` took the entry from (`outdated` reads it; nothing runs by it).
        if let Some(value) = table.get("registry") {
            let entry = |key: &str| value.get(key).and_then(Value::as_str).is_some();
            if !(value.is_object() && entry("name") && entry("version")) {
                let what = "expected a table with `name` and `version` (and `url`)";
                return Err(self.err("registry", what.to_string()));
            }
        }
        Ok(())
    }

    pub(crate) fn string_map(
        &self,
        table: &Map<String, Value>,
        key: &str,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let Some(value) = table.get(key) else {
            return Ok(BTreeMap::new());
        };
        let Value::Object(map) = value else {
            return Err(
                self.err(key, format!("expected a table of strings, found {}", kind(value)))
            );
        };
        map.iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                // Never echo the value: it may be a secret.
                other => {
                    Err(self
                        .err(key, format!("entry `{k}`: expected a string, found {}", kind(other))))
                }
            })
            .collect()
    }
}

/// An entry's `integrity`: `{ path = "…", sha256 = "<64 hex digits>" }`, the package `mcp-router
/// add` installed and its digest then (checked before every start). A path must be absolute.
fn integrity(value: &Value) -> Result<mcp_connection_manager::PackageIntegrity, String> {
    let expected = "expected a table with an absolute `path` and a hex `sha256`";
    let path = value.get("path").and_then(Value::as_str).ok_or(expected)?;
    let sha256 = value.get("sha256").and_then(Value::as_str).ok_or(expected)?;
    let path = PathBuf::from(path);
    if !path.is_absolute() {
        return Err(format!("{expected} (`{}` is relative)", path.display()));
    }
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{expected} (`{sha256}` is not 64 hex digits)"));
    }
    Ok(mcp_connection_manager::PackageIntegrity { path, sha256: sha256.to_ascii_lowercase() })
}
