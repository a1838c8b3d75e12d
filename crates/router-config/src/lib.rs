//! Config files: Codex `config.toml` (`[mcp_servers.NAME]`, `[mcp_router]`) and Claude Desktop /
//! Cursor `mcp.json` (`{"mcpServers": {…}, "mcpRouter": {…}}`), split into the connection
//! manager's [`ServerConfig`]s and the tool router's [`RouterSettings`]: the one config loader.
//!
//! Both formats go through one walker over `serde_json::Value`, so every error names the file,
//! the server and the key in the same words. Unknown keys are tolerated with a warning: configs
//! are shared with other agents that know keys we do not. For the same reason a server entry
//! that cannot be used (a wrong type, a transport we do not speak, an invalid name) is left out
//! and named in [`ConfigFile::unusable`] while the rest run; the router's own section and the
//! file's syntax still fail the whole file. [`Strictness::Strict`] fails the file for a bad
//! entry too.
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

use std::path::Path;

use mcp_connection_manager::{ManagerOptions, ServerConfig};
use serde_json::Value;
use tool_router::RouterSettings;

mod errors;
mod oauth;
mod sandbox;
mod secrets;
mod servers;
mod settings;

pub use errors::{ConfigError, ConfigFormat};
pub use secrets::SecretStore;

use crate::servers::ServerWalker;
use crate::settings::parse_settings;

/// A whole configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// The servers, sorted by name.
    pub servers: Vec<ServerConfig>,
    /// Router-wide settings.
    pub settings: RouterSettings,
    /// Connection-manager settings from the same section (`max_input_rounds`, `response_cache`).
    pub manager: ManagerOptions,
    /// `tool_cache` (default true): keep each server's tool list in the user's cache directory
    /// so tools are listed at once while servers start (see `mcp_connection_manager::ToolCache`).
    pub tool_cache: bool,
    /// `apps_ui` (default false): the host renders MCP Apps, so `io.modelcontextprotocol/ui` is
    /// declared to servers (`mcp_connection_manager::AppsHost`).
    pub apps_ui: bool,
    /// `pin_tools` (default true): pin every server's tool definitions on first sight, beside
    /// the tool catalog, and hold a definition that changes until it is approved (see
    /// `mcp_connection_manager::PinStore` and each server's `tool_changes`).
    pub pin_tools: bool,
    /// Server entries that could not be used, left out (never with [`Strictness::Strict`]):
    /// each server's name and why, naming the file and the key.
    pub unusable: Vec<UnusableServer>,
    /// The entries' `shared` key, where it is not `true`: how the shared router
    /// (`mcp-router serve`) runs that server. An embedded router runs every server once.
    pub sharing: std::collections::BTreeMap<String, Sharing>,
}

/// A server entry's `shared` key: whether the shared router runs one instance of the server
/// for every session (`true`, the default), one per session (`false`), or one per working
/// directory of the sessions' agents (`"cwd"`), started there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sharing {
    /// One instance for every session.
    #[default]
    All,
    /// One instance per session: its behaviour depends on the session (its roots, its state).
    Session,
    /// One instance per distinct working directory of the sessions' agents, run there (an
    /// entry with its own `cwd` keeps it).
    WorkingDirectory,
}

impl ConfigFile {
    /// A config of `servers` (sorted by name here) with every setting at its default, as a file
    /// naming only them would give: for a host that builds its config in code.
    pub fn from_servers(mut servers: Vec<ServerConfig>) -> Self {
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        Self {
            servers,
            settings: RouterSettings::default(),
            manager: ManagerOptions::default(),
            tool_cache: true,
            apps_ui: false,
            pin_tools: true,
            unusable: Vec::new(),
            sharing: Default::default(),
        }
    }
}

/// A server entry left out of the config, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct UnusableServer {
    /// The entry's name, as written.
    pub name: String,
    /// Why, naming the file, the server and the key (a [`ConfigError`]'s message).
    pub error: String,
}

/// What a server entry that cannot be used does to the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Strictness {
    /// It is left out (and named in [`ConfigFile::unusable`]); the other servers run.
    #[default]
    Lenient,
    /// The whole file is refused.
    Strict,
}

/// Read and validate a config file: servers and router settings; a server entry that cannot
/// be used is left out (see [`Strictness`]).
pub fn load_config_file(path: &Path) -> Result<ConfigFile, ConfigError> {
    load_config_file_with(path, Strictness::Lenient)
}

/// [`load_config_file`], with a choice of what a bad server entry does.
pub fn load_config_file_with(
    path: &Path,
    strictness: Strictness,
) -> Result<ConfigFile, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(path, format!("cannot read file: {e}")))?;
    parse_config_file_with(&text, ConfigFormat::from_path(path), path, strictness)
}

/// Validate config text strictly (a bad server entry fails it); `path` is only used in error
/// messages.
pub fn parse_config(
    text: &str,
    format: ConfigFormat,
    path: &Path,
) -> Result<Vec<ServerConfig>, ConfigError> {
    parse_config_file_with(text, format, path, Strictness::Strict).map(|c| c.servers)
}

/// Validate config text (servers and settings), strictly; `path` is only used in error
/// messages.
pub fn parse_config_file(
    text: &str,
    format: ConfigFormat,
    path: &Path,
) -> Result<ConfigFile, ConfigError> {
    parse_config_file_with(text, format, path, Strictness::Strict)
}

/// Validate config text (servers and settings) with a choice of what a bad server entry does.
pub fn parse_config_file_with(
    text: &str,
    format: ConfigFormat,
    path: &Path,
    strictness: Strictness,
) -> Result<ConfigFile, ConfigError> {
    let root: Value = match format {
        ConfigFormat::CodexToml => {
            let table: toml::Table = toml::from_str(text)
                .map_err(|e| ConfigError::new(path, format!("invalid TOML: {e}")))?;
            serde_json::to_value(table)
                .map_err(|e| ConfigError::new(path, format!("invalid TOML: {e}")))?
        }
        ConfigFormat::McpJson => serde_json::from_str(text)
            .map_err(|e| ConfigError::new(path, format!("invalid JSON: {e}")))?,
    };
    let section = match format {
        ConfigFormat::CodexToml => "mcp_servers",
        ConfigFormat::McpJson => "mcpServers",
    };
    let Some(servers) = root.get(section) else {
        let hint = match format {
            // VS Code's `mcp.json` (and Zed's settings) name the section differently.
            ConfigFormat::McpJson if root.get("servers").is_some_and(Value::is_object) => {
                " (this looks like a VS Code `mcp.json`, whose servers are under `servers`: rename that key to `mcpServers`)"
            }
            ConfigFormat::McpJson if root.get("context_servers").is_some_and(Value::is_object) => {
                " (this looks like Zed's settings, whose servers are under `context_servers`: copy them under `mcpServers`)"
            }
            _ => "",
        };
        return Err(ConfigError::new(path, format!("no `{section}` section{hint}")));
    };
    let Value::Object(servers) = servers else {
        return Err(ConfigError::new(path, format!("`{section}` must be a table of servers")));
    };
    let entries = server_entries(servers, path, format, strictness)?;
    let settings_key = match format {
        ConfigFormat::CodexToml => "mcp_router",
        ConfigFormat::McpJson => "mcpRouter",
    };
    let (mut settings, mut manager, (tool_cache, apps_ui, pin_tools)) = match root.get(settings_key)
    {
        None => (RouterSettings::default(), ManagerOptions::default(), (true, false, true)),
        Some(value) => parse_settings(path, settings_key, value)?,
    };
    settings.search.always_load_servers = entries.always_load;
    startup_by_tool_search(&settings, &mut manager, entries.startup_unsaid);
    let (unusable, servers, sharing) = (entries.unusable, entries.servers, entries.sharing);
    Ok(ConfigFile { servers, settings, manager, tool_cache, apps_ui, pin_tools, unusable, sharing })
}

/// A file's server entries, read.
struct ServerEntries {
    /// The usable ones, sorted by name.
    servers: Vec<ServerConfig>,
    /// The ones left out, and why.
    unusable: Vec<UnusableServer>,
    /// `always_load_tools = true`.
    always_load: std::collections::BTreeSet<String>,
    /// Entries that do not say when to start: lazy when tool search is on and a catalog exists.
    startup_unsaid: std::collections::BTreeSet<String>,
    /// `shared` other than `true`.
    sharing: std::collections::BTreeMap<String, Sharing>,
}

/// Every server entry of `servers`: used, or left out with why (a strict file fails instead).
fn server_entries(
    servers: &serde_json::Map<String, Value>,
    path: &Path,
    format: ConfigFormat,
    strictness: Strictness,
) -> Result<ServerEntries, ConfigError> {
    let mut entries = ServerEntries {
        servers: Vec::with_capacity(servers.len()),
        unusable: Vec::new(),
        always_load: Default::default(),
        startup_unsaid: Default::default(),
        sharing: Default::default(),
    };
    for (name, value) in servers {
        let server = ServerWalker { path, name, format };
        let parsed = server.parse(value).and_then(|config| {
            let always = match value.get("always_load_tools") {
                None | Some(Value::Bool(false)) => false,
                Some(Value::Bool(true)) => true,
                Some(other) => {
                    let found = format!("expected true or false, found {other}");
                    return Err(server.err("always_load_tools", found));
                }
            };
            Ok((config, always, sharing(&server, value)?))
        });
        match parsed {
            Ok((config, always, sharing)) => {
                if always {
                    entries.always_load.insert(config.name.clone());
                }
                if sharing != Sharing::All {
                    entries.sharing.insert(config.name.clone(), sharing);
                }
                if value.get("startup").is_none() {
                    entries.startup_unsaid.insert(config.name.clone());
                }
                entries.servers.push(config);
            }
            Err(e) if strictness == Strictness::Lenient => {
                // Said once by whoever uses the file (the CLI on stderr, the manager in an event).
                tracing::debug!(server = %name, error = %e, "server entry left out");
                entries.unusable.push(UnusableServer { name: name.clone(), error: e.to_string() });
            }
            Err(e) => return Err(e),
        }
    }
    entries.servers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// An entry's `shared` key: `true` (or absent), `false` or `"cwd"`.
fn sharing(server: &ServerWalker<'_>, value: &Value) -> Result<Sharing, ConfigError> {
    match value.get("shared") {
        None | Some(Value::Bool(true)) => Ok(Sharing::All),
        Some(Value::Bool(false)) => Ok(Sharing::Session),
        Some(Value::String(s)) if s == "cwd" => Ok(Sharing::WorkingDirectory),
        Some(other) => {
            Err(server.err("shared", format!("expected true, false or \"cwd\", found {other}")))
        }
    }
}

/// With tool search, a server whose entry says nothing of `startup` and whose tools a catalog
/// knows waits for its first use (under `auto`, once those specs pass the threshold).
fn startup_by_tool_search(
    settings: &RouterSettings,
    manager: &mut ManagerOptions,
    startup_unsaid: std::collections::BTreeSet<String>,
) {
    match settings.search.mode {
        tool_router::ToolSearchMode::On => manager.startup.lazy_when_cataloged = startup_unsaid,
        tool_router::ToolSearchMode::Auto => {
            manager.startup.lazy_when_cataloged = startup_unsaid;
            manager.startup.lazy_over = Some(mcp_connection_manager::LazyOver {
                threshold: settings.search.threshold_bytes,
                measure: tool_router::spec_bytes,
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_connection_manager::DEFAULT_TOOL_TIMEOUT;
    use mcp_connection_manager::TransportConfig;
    use std::time::Duration;

    fn toml(text: &str) -> Result<Vec<ServerConfig>, String> {
        parse_config(text, ConfigFormat::CodexToml, Path::new("config.toml"))
            .map_err(|e| e.to_string())
    }

    fn json(text: &str) -> Result<Vec<ServerConfig>, String> {
        parse_config(text, ConfigFormat::McpJson, Path::new("mcp.json")).map_err(|e| e.to_string())
    }

    #[test]
    fn codex_toml_full() {
        let servers = toml(
            r#"
            model = "ignored"
            [mcp_servers.zeta]
            url = "https://127.0.0.1:9/mcp"
            bearer_token_env_var = "TOKEN"
            http_headers = { "X-Team" = "a" }
            [mcp_servers.alpha]
            command = "demo"
            args = ["--page-size", "2"]
            env = { KEY = "secret-value" }
            cwd = "/tmp"
            enabled = false
            startup_timeout_sec = 2.5
            tool_timeout_sec = 30
            enabled_tools = ["echo", "add"]
            disabled_tools = ["add"]
            "#,
        )
        .expect("valid");
        assert_eq!(servers.len(), 2);
        let alpha = &servers[0];
        assert_eq!(alpha.name, "alpha");
        assert!(!alpha.enabled);
        assert_eq!(alpha.startup_timeout, Duration::from_millis(2500));
        assert_eq!(alpha.tool_timeout, Duration::from_secs(30));
        assert!(alpha.tool_allowed("echo"));
        assert!(!alpha.tool_allowed("add"));
        assert!(!alpha.tool_allowed("other"));
        assert!(!format!("{alpha:?}").contains("secret-value"));
        let TransportConfig::StreamableHttp { bearer_token_env_var, http_headers, .. } =
            &servers[1].transport
        else {
            panic!("expected http");
        };
        assert_eq!(bearer_token_env_var.as_deref(), Some("TOKEN"));
        assert_eq!(http_headers.get("X-Team").map(String::as_str), Some("a"));
        assert_eq!(servers[1].tool_timeout, DEFAULT_TOOL_TIMEOUT);
    }

    #[test]
    fn mcp_json_both_kinds() {
        let servers = json(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "b"}},
                "web": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer t"}, "disabled": true}
            }, "globalShortcut": "x"}"#,
        )
        .expect("valid");
        assert_eq!(servers[0].name, "fs");
        assert!(matches!(servers[0].transport, TransportConfig::Stdio { .. }));
        assert!(!servers[1].enabled);
    }

    #[test]
    fn tool_result_settings_and_the_reserved_server_name() {
        let file = parse_config_file(
            "[mcp_router]\ntool_result_budget_bytes = 4096\nkept_results_max = 3\nkept_results_bytes = 5000\nkept_results_memory_bytes = 0\ninline_resource_links_bytes = 2048\n[mcp_servers]\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        )
        .expect("valid");
        let s = &file.settings;
        assert_eq!((s.results.budget_bytes, s.results.inline_links_bytes), (4096, 2048));
        let kept = tool_router::KeptLimits { max_results: 3, max_bytes: 5000, memory_bytes: 0 };
        assert_eq!(s.results.kept, kept);
        let search = parse_config_file(
            "[mcp_router]\ntool_search = \"on\"\ntool_search_via = \"both\"\ntool_search_threshold_bytes = 100\n[mcp_servers.a]\ncommand = \"x\"\nalways_load_tools = true\n[mcp_servers.b]\ncommand = \"y\"\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        )
        .expect("valid");
        assert_eq!(search.settings.search.mode, tool_router::ToolSearchMode::On);
        assert_eq!(search.settings.search.threshold_bytes, 100);
        assert_eq!(search.settings.search.via, tool_router::SearchVia::Both);
        assert_eq!(search.settings.search.always_load_servers, ["a".to_string()].into());
        let bad = parse_config_file(
            "[mcp_router]\ntool_search = true\n[mcp_servers]\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        )
        .expect_err("not a mode");
        assert_eq!(
            bad.to_string(),
            "c.toml: `mcp_router`: key `tool_search`: expected \"auto\", \"on\" or \"off\", found true"
        );
        let text = "[mcp_servers.mcp-router]\ncommand = \"x\"\n[mcp_servers.ok]\ncommand = \"y\"\n";
        let why = "c.toml: server `mcp-router`: the name is reserved for the tool results the router keeps; choose another";
        let path = Path::new("c.toml");
        let strict = parse_config_file(text, ConfigFormat::CodexToml, path).expect_err("strict");
        assert_eq!(strict.to_string(), why);
        let lenient =
            parse_config_file_with(text, ConfigFormat::CodexToml, path, Strictness::Lenient)
                .expect("the other server runs");
        assert_eq!(lenient.servers.len(), 1);
        assert_eq!(lenient.unusable[0].error, why);
    }

    #[test]
    fn sandbox_profiles_per_server_and_for_all() {
        use mcp_connection_manager::Sandbox;
        let servers = toml(
            "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.b]\ncommand = \"x\"\nsandbox = \"strict\"\n[mcp_servers.c]\ncommand = \"x\"\nsandbox = { network = [443, 8080], allow_write = [\"/srv/out\"], deny = [\"/srv/keys\"] }\n[mcp_servers.d]\ncommand = \"x\"\nsandbox = \"off\"\n",
        )
        .expect("valid");
        let sandbox = |i: usize| servers[i].sandbox.clone();
        assert_eq!(sandbox(0), None, "the router's default");
        assert_eq!(sandbox(1), Sandbox::named("strict"));
        assert_eq!(sandbox(1).map(|s| (s.write, s.network)), Some((false, false)));
        let c = sandbox(2).expect("a table");
        assert_eq!((c.network, c.ports, c.write), (true, vec![443, 8080], true));
        assert_eq!(c.allow_write, [std::path::PathBuf::from("/srv/out")]);
        assert_eq!(c.deny, [std::path::PathBuf::from("/srv/keys")]);
        assert_eq!(sandbox(3), Some(Sandbox::off()));
        let file = parse_config_file(
            "[mcp_router]\nsandbox = \"read-only\"\n[mcp_servers]\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        )
        .expect("valid");
        assert_eq!(file.manager.sandbox, Sandbox::named("read-only").expect("a profile"));
        for (text, error) in [
            (
                "sandbox = \"tight\"",
                "expected one of \"default\", \"off\", \"read-only\", \"offline\", \"strict\" or a table, found \"tight\"",
            ),
            ("sandbox = { network = [0] }", "`network`: expected TCP ports from 1 to 65535"),
            ("sandbox = { write = \"all\" }", "`write`: expected \"workspace\" or \"none\""),
            ("sandbox = { read = false }", "unknown key `read`"),
            ("sandbox = 3", "or a table, found a number"),
        ] {
            let err = toml(&format!("[mcp_servers.a]\ncommand = \"x\"\n{text}\n")).expect_err(text);
            assert!(err.starts_with("config.toml: server `a`: key `sandbox`: "), "{err}");
            assert!(err.contains(error), "{text}: {err}");
        }
    }

    #[test]
    fn router_settings() {
        let file = parse_config_file(
            "[mcp_router]\nread_budget_bytes = 1024\nraw_blobs = true\ndata_sources = false\nquery_timeout_sec = 0.5\n[mcp_servers]\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        )
        .expect("valid");
        assert_eq!(file.settings.reads.budget_bytes, 1024);
        assert!(file.settings.reads.raw_blobs && !file.settings.data.enabled);
        assert_eq!(file.settings.data.timeout, Duration::from_millis(500));
        let json = parse_config_file(
            r#"{"mcpServers": {}, "mcpRouter": {"image_max_bytes": 10}}"#,
            ConfigFormat::McpJson,
            Path::new("m.json"),
        )
        .expect("valid");
        assert_eq!(json.settings.reads.image_max_bytes, 10);
        let err = parse_config_file(
            "[mcp_router]\nread_budget_bytes = 3\n[mcp_servers]\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        )
        .expect_err("too small");
        assert_eq!(
            err.to_string(),
            "c.toml: `mcp_router`: key `read_budget_bytes`: expected a whole number of at least 256, found 3"
        );
    }

    #[test]
    fn task_settings() {
        let parse = |text: &str| {
            parse_config_file(
                &format!("[mcp_router]\n{text}\n[mcp_servers]\n"),
                ConfigFormat::CodexToml,
                Path::new("c.toml"),
            )
        };
        let default = parse("").expect("valid");
        assert_eq!(default.manager.tasks.background_after, None);
        assert_eq!(default.manager.tasks.timeout, Duration::from_secs(3600));
        let set = parse("task_timeout_sec = 90\nbackground_tasks_after_sec = 2.5").expect("valid");
        assert_eq!(set.manager.tasks.timeout, Duration::from_secs(90));
        assert_eq!(set.manager.tasks.background_after, Some(Duration::from_millis(2500)));
        assert!(!set.apps_ui && parse("apps_ui = true").expect("valid").apps_ui);
        let errors = [
            (
                "task_timeout_sec = 0",
                "c.toml: `mcp_router`: key `task_timeout_sec`: expected a positive number of seconds, found 0",
            ),
            (
                "background_tasks_after_sec = \"soon\"",
                "c.toml: `mcp_router`: key `background_tasks_after_sec`: expected a number of seconds from 0 to 86400, found \"soon\"",
            ),
        ];
        for (text, expected) in errors {
            assert_eq!(parse(text).expect_err(text).to_string(), expected);
        }
    }

    #[test]
    fn oauth_keys_in_both_formats() {
        let oauth = |servers: Vec<ServerConfig>| match &servers[0].transport {
            TransportConfig::StreamableHttp { oauth, .. } => oauth.clone(),
            other => panic!("{other:?}"),
        };
        let from_toml = oauth(
            toml(
                "[mcp_servers.r]\nurl = \"https://example.test/mcp\"\nauth = \"oauth\"\nscopes = [\"read\", \"write\"]\noauth_resource = \"https://example.test\"\n[mcp_servers.r.oauth]\nclient_id = \"abc\"\nclient_secret_env_var = \"R_SECRET\"\ncallback_port = 8765\nclient_metadata_url = \"https://client.test/meta.json\"",
            )
            .expect("valid"),
        );
        let expected = mcp_connection_manager::oauth::OAuthConfig {
            required: true,
            scopes: vec!["read".into(), "write".into()],
            resource: Some("https://example.test".into()),
            client_id: Some("abc".into()),
            client_secret_env_var: Some("R_SECRET".into()),
            callback_port: Some(8765),
            client_metadata_url: Some("https://client.test/meta.json".into()),
            client_credentials: false,
        };
        assert_eq!(from_toml, expected);
        let from_json = oauth(
            json(r#"{"mcpServers": {"r": {"url": "https://example.test/mcp", "auth": "oauth", "scopes": ["read", "write"], "oauth_resource": "https://example.test", "oauth": {"client_id": "abc", "client_secret_env_var": "R_SECRET", "callback_port": 8765, "client_metadata_url": "https://client.test/meta.json"}}}}"#)
                .expect("valid"),
        );
        assert_eq!(from_json, expected);
        let m2m = oauth(
            toml("[mcp_servers.m]\nurl = \"http://127.0.0.1:1/mcp\"\nclient_credentials = true\n[mcp_servers.m.oauth]\nclient_id = \"svc\"\nclient_secret_env_var = \"M_SECRET\"")
                .expect("valid"),
        );
        assert!(m2m.client_credentials && !m2m.required);
        let plain =
            oauth(toml("[mcp_servers.p]\nurl = \"http://127.0.0.1:1/mcp\"").expect("valid"));
        assert_eq!(plain, mcp_connection_manager::oauth::OAuthConfig::default());
    }

    #[test]
    fn bad_oauth_combinations_name_file_server_and_key() {
        let cases = [
            (
                "[mcp_servers.s]\ncommand = \"x\"\nauth = \"oauth\"",
                "config.toml: server `s`: key `auth`: only applies to `url` servers",
            ),
            (
                "[mcp_servers.s]\ncommand = \"x\"\n[mcp_servers.s.oauth]\nclient_id = \"a\"",
                "config.toml: server `s`: key `oauth`: only applies to `url` servers",
            ),
            (
                "[mcp_servers.h]\nurl = \"http://127.0.0.1:1/mcp\"\nbearer_token_env_var = \"T\"\nauth = \"oauth\"",
                "config.toml: server `h`: key `auth`: cannot be combined with `bearer_token_env_var`: use a static token or OAuth, not both",
            ),
            (
                "[mcp_servers.h]\nurl = \"http://127.0.0.1:1/mcp\"\nauth = \"basic\"",
                "config.toml: server `h`: key `auth`: expected \"oauth\", found \"basic\"",
            ),
            (
                "[mcp_servers.h]\nurl = \"http://127.0.0.1:1/mcp\"\nclient_credentials = true",
                "config.toml: server `h`: key `client_credentials`: needs `oauth.client_id` and `oauth.client_secret_env_var`",
            ),
            (
                "[mcp_servers.h]\nurl = \"http://127.0.0.1:1/mcp\"\n[mcp_servers.h.oauth]\ncallback_port = 70000",
                "config.toml: server `h`: key `oauth.callback_port`: expected a port number (1-65535)",
            ),
            (
                "[mcp_servers.h]\nurl = \"http://127.0.0.1:1/mcp\"\n[mcp_servers.h.oauth]\nclient_secret_env_var = \"S\"",
                "config.toml: server `h`: key `oauth.client_secret_env_var`: needs `oauth.client_id` (the secret belongs to a pre-registered client)",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(toml(text).expect_err(text), expected);
        }
        assert_eq!(
            json(r#"{"mcpServers": {"s": {"command": "x", "scopes": ["a"]}}}"#).expect_err("stdio"),
            "mcp.json: server `s`: key `scopes`: only applies to `url` servers"
        );
    }

    #[test]
    fn protocol_key_in_both_formats_and_manager_settings() {
        use mcp_connection_manager::ProtocolChoice;
        let servers = toml(
            "[mcp_servers.a]\ncommand = \"x\"\nprotocol = \"2025-11-25\"\n[mcp_servers.b]\ncommand = \"x\"\n[mcp_servers.c]\nurl = \"http://127.0.0.1:1/mcp\"\nprotocol = \"2026-07-28\"",
        )
        .expect("valid");
        let protocols: Vec<ProtocolChoice> = servers.iter().map(|s| s.protocol).collect();
        assert_eq!(
            protocols,
            [ProtocolChoice::Legacy, ProtocolChoice::Auto, ProtocolChoice::Modern]
        );
        let servers =
            json(r#"{"mcpServers": {"a": {"command": "x", "protocol": "auto"}}}"#).expect("valid");
        assert_eq!(servers[0].protocol, ProtocolChoice::Auto);
        assert_eq!(
            json(r#"{"mcpServers": {"a": {"command": "x", "protocol": "2024-11-05"}}}"#)
                .expect_err("unknown"),
            "mcp.json: server `a`: key `protocol`: expected \"auto\", \"2026-07-28\" or \"2025-11-25\", found \"2024-11-05\""
        );
        let file = parse_config_file(
            "[mcp_router]\nmax_input_rounds = 3\nresponse_cache = false\n[mcp_servers]\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        )
        .expect("valid");
        assert_eq!(file.manager.requests.max_input_rounds, 3);
        assert!(!file.manager.requests.response_cache);
        let file = parse_config_file(
            "[mcp_router]\nlist_budget_bytes = 8192\nshow_user_audience = true\nevent_result_text = false\n[mcp_servers]\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        )
        .expect("valid");
        assert_eq!(file.settings.lists.budget_bytes, 8192);
        assert!(file.settings.lists.show_user_audience);
        assert!(!file.settings.events.result_text);
        let tiny = parse_config_file(
            "[mcp_router]\nlist_budget_bytes = 100\n[mcp_servers]\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        );
        assert!(tiny.is_err(), "a budget below 1 KiB is refused");
        let defaults =
            parse_config_file("[mcp_servers]\n", ConfigFormat::CodexToml, Path::new("c"))
                .expect("valid");
        // `tool_search = "auto"` by default: cataloged servers wait once their specs pass 16 KiB.
        let auto = mcp_connection_manager::LazyOver {
            threshold: tool_router::DEFAULT_TOOL_SEARCH_THRESHOLD_BYTES,
            measure: tool_router::spec_bytes,
        };
        let lazy_when_cataloged = std::collections::BTreeSet::new();
        let expected = ManagerOptions::default().with(|o| {
            o.startup.lazy_over = Some(auto);
            o.startup.lazy_when_cataloged = lazy_when_cataloged;
        });
        assert_eq!(defaults.manager, expected);
        let err = parse_config_file(
            "[mcp_router]\nmax_input_rounds = 0\n[mcp_servers]\n",
            ConfigFormat::CodexToml,
            Path::new("c.toml"),
        )
        .expect_err("zero rounds");
        assert_eq!(
            err.to_string(),
            "c.toml: `mcp_router`: key `max_input_rounds`: expected a whole number of at least 1, found 0"
        );
    }

    #[test]
    fn errors_name_file_server_and_key() {
        let cases = [
            (
                toml("[mcp_servers.a]\ncommand = 3"),
                "config.toml: server `a`: key `command`: expected a string, found a number",
            ),
            (
                toml("[mcp_servers.a]\ncommand = \"x\"\nargs = \"--flag\""),
                "config.toml: server `a`: key `args`: expected an array of strings, found a string",
            ),
            (
                toml("[mcp_servers.a]\ncommand = \"x\"\nargs = [1]"),
                "config.toml: server `a`: key `args`: expected an array of strings, found an item that is a number",
            ),
            (
                toml("[mcp_servers.a]\ncommand = \"x\"\nenv = { K = 1 }"),
                "config.toml: server `a`: key `env`: entry `K`: expected a string, found a number",
            ),
            (
                toml("[mcp_servers.a]\nargs = []"),
                "config.toml: server `a`: key `command`: missing: set `command` (stdio) or `url` (HTTP)",
            ),
            (
                toml("[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h\""),
                "config.toml: server `a`: key `url`: set either `command` or `url`, not both",
            ),
            (
                toml("[mcp_servers.a]\nurl = \"ftp://h\""),
                "config.toml: server `a`: key `url`: must start with http:// or https://",
            ),
            (
                toml("[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = -1"),
                "config.toml: server `a`: key `tool_timeout_sec`: must be a positive number of at most one day, found -1",
            ),
            (
                toml("[mcp_servers.a]\ncommand = \"x\"\nenabled = \"yes\""),
                "config.toml: server `a`: key `enabled`: expected true or false, found a string",
            ),
            (
                toml("[mcp_servers.\"a b\"]\ncommand = \"x\""),
                "config.toml: server `a b`: invalid name: use only letters, digits, `_` and `-`",
            ),
            (toml("[mcp_servers]\na = 1"), "config.toml: server `a`: must be a table"),
            (toml("x = ["), "config.toml: invalid TOML"),
            (toml("x = 1"), "config.toml: no `mcp_servers` section"),
            (
                json("{\"mcpServers\": {\"a\": {\"url\": \"http://h\", \"type\": \"sse\"}}}"),
                "mcp.json: server `a`: key `type`: the legacy SSE transport is not supported; use streamable HTTP",
            ),
            (json("{"), "mcp.json: invalid JSON"),
            (
                json("{\"servers\": {\"a\": {\"command\": \"x\"}}}"),
                "mcp.json: no `mcpServers` section (this looks like a VS Code `mcp.json`, whose servers are under `servers`: rename that key to `mcpServers`)",
            ),
            (json("{\"servers\": 1}"), "mcp.json: no `mcpServers` section"),
        ];
        for (result, expected) in cases {
            let message = result.expect_err(expected);
            assert!(message.starts_with(expected), "{message:?} should start with {expected:?}");
        }
    }

    #[test]
    fn a_bad_server_entry_is_left_out_unless_strict() {
        let text = "[mcp_servers.good]\ncommand = \"x\"\n[mcp_servers.bad]\ncommand = \"x\"\nargs = \"-v\"\n[mcp_servers.\"no good\"]\ncommand = \"x\"\n";
        let path = Path::new("c.toml");
        let lenient =
            parse_config_file_with(text, ConfigFormat::CodexToml, path, Strictness::Lenient)
                .expect("lenient");
        assert_eq!(lenient.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["good"]);
        let unusable: Vec<(&str, &str)> =
            lenient.unusable.iter().map(|u| (u.name.as_str(), u.error.as_str())).collect();
        assert_eq!(
            unusable,
            [
                (
                    "bad",
                    "c.toml: server `bad`: key `args`: expected an array of strings, found a string"
                ),
                (
                    "no good",
                    "c.toml: server `no good`: invalid name: use only letters, digits, `_` and `-`"
                ),
            ]
        );
        let strict =
            parse_config_file_with(text, ConfigFormat::CodexToml, path, Strictness::Strict);
        assert!(strict.is_err());
        // The router's own section and the syntax still fail the file.
        let settings =
            "[mcp_servers.good]\ncommand = \"x\"\n[mcp_router]\nread_budget_bytes = \"big\"\n";
        assert!(
            parse_config_file_with(settings, ConfigFormat::CodexToml, path, Strictness::Lenient)
                .is_err()
        );
        assert!(
            parse_config_file_with(
                "[mcp_servers",
                ConfigFormat::CodexToml,
                path,
                Strictness::Lenient
            )
            .is_err()
        );
    }

    #[test]
    fn the_shared_key_says_how_the_shared_router_runs_a_server() {
        let text = "[mcp_servers.a]\ncommand = \"x\"\nshared = false\n\
                    [mcp_servers.b]\ncommand = \"y\"\nshared = \"cwd\"\n\
                    [mcp_servers.c]\ncommand = \"z\"\nshared = true\n\
                    [mcp_servers.d]\ncommand = \"w\"\n";
        let file =
            parse_config_file(text, ConfigFormat::CodexToml, Path::new("c.toml")).expect("valid");
        let expected =
            [("a".to_string(), Sharing::Session), ("b".into(), Sharing::WorkingDirectory)];
        assert_eq!(file.sharing, expected.into_iter().collect());
        assert_eq!(file.servers.len(), 4, "every entry is a server all the same");
        let json = r#"{"mcpServers": {"a": {"command": "x", "shared": false}}}"#;
        let file = parse_config_file(json, ConfigFormat::McpJson, Path::new("m.json")).expect("ok");
        assert_eq!(file.sharing.get("a"), Some(&Sharing::Session));
        let bad = "[mcp_servers.a]\ncommand = \"x\"\nshared = \"session\"\n";
        let error = parse_config_file(bad, ConfigFormat::CodexToml, Path::new("c.toml"))
            .expect_err("not a choice");
        assert_eq!(
            error.to_string(),
            "c.toml: server `a`: key `shared`: expected true, false or \"cwd\", found \"session\""
        );
    }

    #[test]
    fn an_installed_servers_integrity_is_read_and_checked_for_shape() {
        let digest = "AB".repeat(32);
        let text = format!(
            "[mcp_servers.a]\ncommand = \"node\"\nintegrity = {{ path = \"/p/a\", sha256 = \"{digest}\" }}\n"
        );
        let file =
            parse_config_file(&text, ConfigFormat::CodexToml, Path::new("c.toml")).expect("valid");
        let integrity = file.servers[0].integrity.clone().expect("read");
        assert_eq!(integrity.path, Path::new("/p/a"));
        assert_eq!(integrity.sha256, "ab".repeat(32));
        for (bad, why) in [
            ("{ path = \"p/a\", sha256 = \"ab\" }", "is relative"),
            ("{ path = \"/p/a\", sha256 = \"xyz\" }", "is not 64 hex digits"),
            ("\"/p/a\"", "expected a table"),
        ] {
            let text = format!("[mcp_servers.a]\ncommand = \"node\"\nintegrity = {bad}\n");
            let error = parse_config_file(&text, ConfigFormat::CodexToml, Path::new("c.toml"))
                .expect_err("refused");
            assert!(error.to_string().contains(why), "{error}");
        }
    }
}
