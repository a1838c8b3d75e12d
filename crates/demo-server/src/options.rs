//! How the demo server behaves: its options, the faults it can be told to show, and its errors.

use std::fmt;
use std::sync::Arc;

/// How the demo server behaves.
#[derive(Clone)]
pub struct DemoOptions {
    /// Items per page of `resources/list`, `resources/templates/list` and `tools/list`.
    pub page_size: usize,
    /// The name reported in `serverInfo`.
    pub name: String,
    /// A misbehaviour for fault tests.
    pub fault: Option<Fault>,
    /// Also serve the fixtures that the MCP conformance suite's server scenarios read
    /// (`test://static-text`, `test://static-binary`, `test://template/{id}/data`,
    /// `test://watched-resource`).
    pub conformance_fixtures: bool,
    /// What the `crash` and `garbage` tools do to the process; `None` (the default, for a
    /// server inside another program) makes them answer with an error result.
    pub process_faults: Option<Arc<dyn ProcessFaults>>,
    /// The cache hint `ttlMs` on list and read results (`cacheScope: "public"`); `None` sends
    /// none.
    pub ttl_ms: Option<u64>,
    /// Append the method of every request this server handles to this file, one per line (so
    /// tests can count what reached the server).
    pub request_log: Option<std::path::PathBuf>,
    /// Over HTTP: protect `/mcp` with OAuth, served by a small authorization server in the
    /// same process, whose access tokens live this long (see `oauth`).
    pub oauth_token_ttl: Option<std::time::Duration>,
    /// A generated catalog of this many more resources (see `register_generated`).
    pub generated: usize,
    /// Skills to serve (SEP-2640, with `resources/directory/read`): `skills/list`, `skills/get`
    /// and their files by `resources/read`; the folder is read again on each skill request,
    /// and a change announced with `notifications/resources/list_changed`.
    pub skills: Option<Arc<rmcp::handler::server::skill_catalog::SkillCatalog>>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            page_size: 100,
            name: "mcp-demo-server".to_string(),
            fault: None,
            conformance_fixtures: false,
            process_faults: None,
            ttl_ms: None,
            request_log: None,
            oauth_token_ttl: None,
            generated: 0,
            skills: None,
        }
    }
}

impl fmt::Debug for DemoOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DemoOptions")
            .field("page_size", &self.page_size)
            .field("name", &self.name)
            .field("fault", &self.fault)
            .field("conformance_fixtures", &self.conformance_fixtures)
            .field("process_faults", &self.process_faults.is_some())
            .field("ttl_ms", &self.ttl_ms)
            .field("request_log", &self.request_log)
            .field("oauth_token_ttl", &self.oauth_token_ttl)
            .field("generated", &self.generated)
            .finish()
    }
}

/// A misbehaviour for fault tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Fault {
    /// `resources/list` pages point at each other: `a` → `b` → `a` → …
    CursorCycle,
    /// `resources/list` answers its first page with a cursor and never answers the next one.
    HangingPages,
    /// stdio: `server/discover` requests are swallowed, never answered (a server that ignores
    /// methods it does not know instead of answering -32601).
    IgnoreDiscover,
    /// `server/discover` offers only 2025-11-25 and older (no version a 2026-07-28 client
    /// speaks), while `initialize` still works.
    LegacyVersions,
}

/// What the fault tools do to the process they run in. Only a binary implements this.
pub trait ProcessFaults: Send + Sync {
    /// `crash`: end the process at once, without answering.
    fn crash(&self) -> !;
    /// `garbage`: write a line that is not JSON-RPC where the client reads (stdout on stdio).
    fn write_garbage(&self);
}

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The MCP session could not start (e.g. the client sent no `initialize`).
    #[error("cannot start the MCP session: {0}")]
    Initialize(String),
    /// The session ended with an error.
    #[error("the MCP session failed: {0}")]
    Session(String),
    /// The HTTP address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// Only loopback addresses are served.
    #[error("refusing to listen on a non-loopback address: {0}")]
    NotLoopback(String),
    /// Accepting a connection failed.
    #[error("cannot accept a connection: {0}")]
    Accept(std::io::Error),
    /// The skills folder could not be read or written.
    #[error("skills: {0}")]
    Skills(String),
}
