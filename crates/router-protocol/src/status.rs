//! What the shared router says of itself when asked (`mcp-router status --json`, one JSON line
//! on its status socket): the router, its sessions and every server it runs, with the scope each
//! runs for.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The shared router's status answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterStatus {
    /// The router's process id.
    pub pid: u32,
    /// Its resident memory in KiB, when `/proc` tells.
    pub rss_kib: Option<u64>,
    /// When it started, in seconds since the Unix epoch.
    pub started: u64,
    /// The Unix socket sessions connect to.
    pub socket: PathBuf,
    /// The socket its events are watched on.
    pub events: PathBuf,
    /// Its streamable HTTP URL, when it listens on one.
    pub http: Option<String>,
    /// The open sessions, by id.
    pub sessions: Vec<SessionStatus>,
    /// The servers: the shared ones, then those run per session or per working directory.
    pub servers: Vec<ServerEntry>,
    /// The tasks alive on its runtime now (tokio's count): back where it was once sessions
    /// have opened and closed, or something was left running.
    #[serde(default)]
    pub alive_tasks: usize,
}

/// One open session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionStatus {
    /// Its id (call ids of its model are `s<id>-<n>`).
    pub id: u64,
    /// `unix` or `http`.
    pub transport: String,
    /// When it opened, in seconds since the Unix epoch.
    pub since: u64,
    /// Its client, `name version`, from its handshake.
    pub client: Option<String>,
    /// Its calls in flight now.
    pub calls_in_flight: usize,
    /// Its calls so far (a call refused for the per-session cap is not counted).
    pub calls: u64,
    /// Tokens of the tool specs it was last given (its `tools/list`), as the ledger counts them.
    #[serde(default)]
    pub spec_tokens: u64,
    /// Tokens its calls' outputs gave its model.
    #[serde(default)]
    pub tokens_to_model: u64,
    /// Its part of every session's tokens (specs and outputs), 0 to 1.
    #[serde(default)]
    pub share: f64,
}

/// One server the router runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerEntry {
    /// The configured name.
    pub name: String,
    /// `ready`, `starting`, `idle`, `sign-in required`, `failed: <why>` or `unknown`.
    pub state: String,
    /// Its process, for a stdio server that runs.
    pub pid: Option<u32>,
    /// That process's resident memory in KiB.
    pub rss_kib: Option<u64>,
    /// Its sandbox in words (`mcp_server_ready`'s `sandbox`), for a stdio server that runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// How many of its definitions (tools, prompts, templates, skills) are held from the model
    /// (`mcp-router trust approve` lets them in).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held: usize,
    /// Whom it runs for.
    #[serde(flatten)]
    pub scope: Scope,
}

/// Whom a server runs for, as its entry's `shared` key says: `"shared": true` (every session),
/// `"shared": false, "session": N` (one session) or `"shared": "cwd", "cwd": DIR` (the sessions
/// whose agents work in DIR; `null` for sessions that have none, run in the router's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scope {
    /// One session's.
    Session {
        /// Always `false`.
        shared: Shared<false>,
        /// The session.
        session: u64,
    },
    /// One working directory's.
    WorkingDirectory {
        /// Always `"cwd"`.
        shared: Cwd,
        /// The directory.
        cwd: Option<PathBuf>,
    },
    /// Every session's.
    Everyone {
        /// Always `true`.
        shared: Shared<true>,
    },
}

impl Scope {
    /// A server every session shares.
    pub fn everyone() -> Self {
        Self::Everyone { shared: Shared }
    }

    /// A server of session `session`.
    pub fn session(session: u64) -> Self {
        Self::Session { shared: Shared, session }
    }

    /// A server of the sessions working in `cwd`.
    pub fn working_directory(cwd: Option<PathBuf>) -> Self {
        Self::WorkingDirectory { shared: Cwd, cwd }
    }
}

/// The boolean `B`, and only it, in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shared<const B: bool>;

impl<const B: bool> Serialize for Shared<B> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(B)
    }
}

impl<'de, const B: bool> Deserialize<'de> for Shared<B> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match bool::deserialize(deserializer)? {
            value if value == B => Ok(Self),
            value => Err(serde::de::Error::custom(format!("expected {B}, not {value}"))),
        }
    }
}

/// The string `"cwd"`, and only it, in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cwd;

impl Serialize for Cwd {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("cwd")
    }
}

impl<'de> Deserialize<'de> for Cwd {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match String::deserialize(deserializer)?.as_str() {
            "cwd" => Ok(Self),
            other => Err(serde::de::Error::custom(format!("expected \"cwd\", not {other:?}"))),
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RouterStatus {
        let server = |name: &str, scope| {
            ServerEntry {
            name: name.to_string(),
            state: "ready".to_string(),
            pid: Some(4242),
            rss_kib: Some(5120),
            held: 1,
            sandbox: Some("landlock ABI 7: credentials and router state unreadable, writes to its workspace, temp and package caches; network on".to_string()),
            scope,
        }
        };
        RouterStatus {
            pid: 4000,
            rss_kib: Some(20480),
            started: 1_796_000_000,
            socket: "/run/user/1000/mcp-router/config-4be475de8c3597b6.sock".into(),
            events: "/run/user/1000/mcp-router/config-4be475de8c3597b6.events".into(),
            http: Some("http://127.0.0.1:8123/mcp".to_string()),
            sessions: vec![SessionStatus {
                id: 1,
                transport: "unix".to_string(),
                since: 1_796_000_010,
                client: Some("claude-code 2.1.0".to_string()),
                calls_in_flight: 1,
                calls: 7,
                spec_tokens: 3100,
                tokens_to_model: 900,
                share: 1.0,
            }],
            servers: vec![
                server("docs", Scope::everyone()),
                server("mine", Scope::session(1)),
                server("calc", Scope::working_directory(Some("/home/ada/project".into()))),
            ],
            alive_tasks: 42,
        }
    }

    #[test]
    fn the_status_answer_is_this_json_and_reads_back() {
        let status = sample();
        insta::assert_json_snapshot!(status);
        let text = serde_json::to_string(&status).expect("serialize");
        let back: RouterStatus = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back, status);
    }

    #[test]
    fn a_scope_is_told_by_its_shared_key() {
        let read = |json: serde_json::Value| serde_json::from_value::<Scope>(json).ok();
        assert_eq!(read(serde_json::json!({"shared": true})), Some(Scope::everyone()));
        assert_eq!(
            read(serde_json::json!({"shared": false, "session": 3})),
            Some(Scope::session(3))
        );
        assert_eq!(
            read(serde_json::json!({"shared": "cwd", "cwd": null})),
            Some(Scope::working_directory(None))
        );
        assert_eq!(read(serde_json::json!({"shared": false})), None, "a session's needs its id");
        assert_eq!(read(serde_json::json!({"shared": "all"})), None);
    }
}
