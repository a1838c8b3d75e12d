//! What the manager needs to know about one server ([`ServerConfig`]). Reading config files
//! into these is the `router-config` crate's job.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Default `startup_timeout_sec` (Codex's).
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `tool_timeout_sec` (Codex's), also used for resource requests.
pub(crate) const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One configured MCP server.
#[derive(Clone, PartialEq)]
pub struct ServerConfig {
    /// The configured name; matches `^[a-zA-Z0-9_-]+$`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// `false` keeps it configured but never started.
    pub enabled: bool,
    /// Bounds `initialize` plus the first tool listing, at start and at any restart.
    pub startup_timeout: Duration,
    /// Bounds every request (tools/call, resources/list, resources/templates/list, resources/read).
    pub tool_timeout: Duration,
    /// Allow-list of tool names; `None` allows all.
    pub enabled_tools: Option<Vec<String>>,
    /// Deny-list of tool names, applied after the allow-list.
    pub disabled_tools: Vec<String>,
    /// Which protocol revision (and so which lifecycle) to speak with the server.
    pub protocol: ProtocolChoice,
    /// When to start it: with the manager (`eager`, the default) or on first use (`lazy`).
    pub startup: Startup,
    /// `log_level`: the least severe `notifications/message` the server should send
    /// (`debug` … `emergency`), asked with `logging/setLevel` of a 2025-11-25 server that
    /// declares `logging`; `None` asks nothing.
    pub log_level: Option<String>,
    /// `tool_changes`: what a tool definition that is not the pinned one does — held until
    /// approved (the default), accepted and pinned with a notice, or the server refused.
    pub tool_changes: ToolChanges,
    /// `approval`: whether a call to one of its tools runs, is asked of the host, or is
    /// refused; `None` leaves it to `tool_approvals` and the router-wide default.
    pub approval: Option<router_protocol::ApprovalPolicy>,
    /// `tool_approvals`: the same per tool (by its name on the server), over `approval`.
    pub tool_approvals: BTreeMap<String, router_protocol::ApprovalPolicy>,
    /// `sandbox`: what a stdio server may reach; `None` takes the manager's default
    /// (`ManagerOptions::sandbox`, `[mcp_router] sandbox`, else the default profile). Not used
    /// for HTTP servers.
    pub sandbox: Option<router_protocol::Sandbox>,
    /// `integrity`: the installed package the server runs from (what `mcp-router add` installed
    /// and recorded), checked before every start; `None` checks nothing.
    pub integrity: Option<router_protocol::PackageIntegrity>,
}

/// The `tool_changes` config key: what becomes of a tool whose definition is not the one
/// pinned for its server (changed, or new to a pinned server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChanges {
    /// Kept from the model until approved (`mcp-router trust approve`, or the host).
    #[default]
    Hold,
    /// Pinned as it is now, with an `mcp_tool_definition_changed` event.
    Accept,
    /// The server fails to start while one of its tools differs from its pins.
    Refuse,
}

impl ToolChanges {
    /// The config value: `hold`, `accept` or `refuse`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hold => "hold",
            Self::Accept => "accept",
            Self::Refuse => "refuse",
        }
    }
}

/// The logging levels, least severe first (`log_level`'s values).
pub(crate) const LOG_LEVELS: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// The `startup` config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Startup {
    /// Started with the manager, concurrently with the others.
    #[default]
    Eager,
    /// Started by the first request that needs it (a call to one of its tools, a read, a
    /// list). Its tools are listed from the tool catalog cache until then; with no catalog
    /// yet, the first tool listing starts it to learn them.
    Lazy,
}

impl Startup {
    /// The config value: `eager` or `lazy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Eager => "eager",
            Self::Lazy => "lazy",
        }
    }

    /// Parses a config value.
    pub fn parse(value: &str) -> Option<Self> {
        [Self::Eager, Self::Lazy].into_iter().find(|s| s.as_str() == value)
    }
}

/// The `protocol` config key: which MCP revision a server is spoken to in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// Probe `server/discover` and speak 2026-07-28 if the server offers it; otherwise (a
    /// JSON-RPC error, an HTTP error, no answer within half the startup timeout, or no version
    /// in common) connect again with `initialize` and speak 2025-11-25.
    #[default]
    Auto,
    /// 2026-07-28 only: `server/discover`, per-request metadata, no fallback.
    Modern,
    /// 2025-11-25 only: `initialize`, never a probe.
    Legacy,
}

impl ProtocolChoice {
    /// The config value: `auto`, `2026-07-28` or `2025-11-25`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Modern => "2026-07-28",
            Self::Legacy => "2025-11-25",
        }
    }

    /// Parses a config value (`auto`, `2026-07-28`, `2025-11-25`).
    pub fn parse(value: &str) -> Option<Self> {
        [Self::Auto, Self::Modern, Self::Legacy].into_iter().find(|c| c.as_str() == value)
    }
}

/// How a server is reached.
#[derive(Clone, PartialEq)]
pub enum TransportConfig {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment (values are secrets: never logged).
        env: BTreeMap<String, String>,
        /// Working directory; the router's when absent.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    StreamableHttp {
        /// `http://` or `https://` endpoint.
        url: String,
        /// Environment variable holding a bearer token (the token itself is never logged).
        bearer_token_env_var: Option<String>,
        /// Extra headers sent with every request (values never logged).
        http_headers: BTreeMap<String, String>,
        /// OAuth sign-in (see `oauth`); the default signs in only when the server asks.
        oauth: OAuthConfig,
    },
}

impl ServerConfig {
    /// How long a server may take to start, when its entry does not say.
    pub const DEFAULT_STARTUP_TIMEOUT: Duration = DEFAULT_STARTUP_TIMEOUT;
    /// How long a tool call may take, when the server's entry does not say.
    pub const DEFAULT_TOOL_TIMEOUT: Duration = DEFAULT_TOOL_TIMEOUT;
    /// The `log_level` values a server entry may have (RFC 5424's, as MCP names them).
    pub const LOG_LEVELS: [&str; 8] = LOG_LEVELS;

    /// Whether `name` may name a server (see the free function of the same rule).
    pub fn is_valid_name(name: &str) -> bool {
        is_valid_server_name(name)
    }

    /// A stdio server with default settings.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        Self::with_transport(
            name,
            TransportConfig::Stdio {
                command: command.into(),
                args,
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A streamable HTTP server with default settings.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            TransportConfig::StreamableHttp {
                url: url.into(),
                bearer_token_env_var: None,
                http_headers: BTreeMap::new(),
                oauth: Default::default(),
            },
        )
    }

    /// A server reached by `transport`, with default settings.
    pub fn with_transport(name: impl Into<String>, transport: TransportConfig) -> Self {
        Self {
            name: name.into(),
            transport,
            enabled: true,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            protocol: ProtocolChoice::Auto,
            startup: Startup::Eager,
            log_level: None,
            tool_changes: ToolChanges::Hold,
            approval: None,
            tool_approvals: BTreeMap::new(),
            sandbox: None,
            integrity: None,
        }
    }

    /// Whether the enabled/disabled filters let the model see `tool`.
    pub fn tool_allowed(&self, tool: &str) -> bool {
        let allowed = self.enabled_tools.as_ref().is_none_or(|list| list.iter().any(|t| t == tool));
        allowed && !self.disabled_tools.iter().any(|t| t == tool)
    }

    /// A listed tool set split in three: the tools the model may see, the ones for an MCP App
    /// alone (`_meta.ui.visibility` without `"model"`), which never reach the model — both
    /// after the enabled/disabled filters — and the ones those filters leave out.
    pub fn split_tools(
        &self,
        tools: Vec<rmcp::model::Tool>,
    ) -> (Vec<rmcp::model::Tool>, Vec<rmcp::model::Tool>, Vec<rmcp::model::Tool>) {
        let (allowed, filtered): (Vec<_>, Vec<_>) =
            tools.into_iter().partition(|t| self.tool_allowed(&t.name));
        let (shown, app_only) = allowed.into_iter().partition(mcp_backend::model_visible);
        (shown, app_only, filtered)
    }

    /// `enabled_tools` / `disabled_tools` entries that name no tool of the server (a typo, or
    /// a tool the server dropped) are worth a warning: they filter nothing.
    pub(crate) fn warn_filters_naming_no_tool(&self, tools: &[rmcp::model::Tool]) {
        let has = |name: &str| tools.iter().any(|t| t.name == name);
        let enabled = self.enabled_tools.as_deref().unwrap_or_default();
        for (key, names) in
            [("enabled_tools", enabled), ("disabled_tools", &self.disabled_tools[..])]
        {
            for name in names.iter().filter(|n| !has(n)) {
                tracing::warn!(server = %self.name, key, tool = %name, "the server has no tool of that name");
            }
        }
    }
}

// Hand-written so that env values, header values and bearer tokens never reach a log.
impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("enabled", &self.enabled)
            .field("startup_timeout", &self.startup_timeout)
            .field("tool_timeout", &self.tool_timeout)
            .field("enabled_tools", &self.enabled_tools)
            .field("disabled_tools", &self.disabled_tools)
            .field("protocol", &self.protocol)
            .field("startup", &self.startup)
            .field("integrity", &self.integrity)
            .finish()
    }
}

impl fmt::Debug for TransportConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio { command, args, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env_keys", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::StreamableHttp { url, bearer_token_env_var, http_headers, oauth } => f
                .debug_struct("StreamableHttp")
                .field("url", url)
                .field("bearer_token_env_var", bearer_token_env_var)
                .field("http_header_names", &http_headers.keys().collect::<Vec<_>>())
                .field("oauth", oauth)
                .finish(),
        }
    }
}

/// Server names must match `^[a-zA-Z0-9_-]+$` (Codex's rule).
pub(crate) fn is_valid_server_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The configured `http_headers` as HTTP headers; an invalid one is named, never its value.
#[cfg(feature = "streamable-http")]
pub(crate) fn http_headers(
    configured: &std::collections::BTreeMap<String, String>,
) -> Result<std::collections::HashMap<http::HeaderName, http::HeaderValue>, String> {
    configured
        .iter()
        .map(|(name, value)| {
            let name = http::HeaderName::try_from(name.as_str())
                .map_err(|_| format!("invalid HTTP header name `{name}`"))?;
            // The value may be a secret: name the header, never the value.
            let value = http::HeaderValue::try_from(value.as_str())
                .map_err(|_| format!("invalid value for HTTP header `{name}`"))?;
            Ok((name, value))
        })
        .collect()
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
