//! The front door for a host (a coding agent, a chat app) that lets a model reach MCP servers.
//!
//! One crate to depend on, one call from a config to a running router:
//!
//! 1. [`Assembly`] takes a config — a Codex `config.toml` or an `mcp.json`, as a file or text, or
//!    a [`ConfigFile`] built in code — and, optionally, the host's [`HostHandler`] (elicitation,
//!    sampling, roots, skill approval) and event sink.
//! 2. [`Assembly::start`] starts the servers and gives a [`Running`] router: its
//!    [`ToolRouter`], the events ([`Running::take_events`]) and the shutdown.
//! 3. Each model turn: [`Running::tools`] in the model's API's format, then
//!    [`Running::dispatch`] for each call, and the output back to the model with
//!    [`ToolOutput::to_format`].
//! 4. [`Running::shutdown`]: every server ends, one `mcp_server_stopped` event per server is
//!    sent, and the event stream ends.
//!
//! The `mcp-router` binary starts its router through this very assembly, so a host gets what
//! the binary does for the same config.
//!
//! ```
//! use mcp_host::prelude::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let runtime = tokio::runtime::Runtime::new()?;
//! # runtime.block_on(async {
//! // No servers here; a real config names them (`[mcp_servers.NAME]`).
//! let config = ConfigFile::from_servers(Vec::new());
//! let mut running = Assembly::new(config).start()?;
//! let mut events = running.take_events().expect("the assembly's own channel");
//! let tools = running.tools(ToolFormat::Anthropic).await;
//! assert!(tools.iter().any(|t| t["name"] == "list_mcp_resources"));
//! assert_eq!(tools[0]["input_schema"]["type"], "object");
//!
//! let call = ToolCall {
//!     call_id: "call_1".into(),
//!     name: "list_mcp_resources".into(),
//!     arguments: "{}".into(),
//! };
//! let output = running.dispatch(call).await?;
//! let back = output.to_format(OutputFormat::OpenAiResponses, "call_1");
//! assert_eq!(back["output"], r#"{"server":null,"resources":[]}"#);
//!
//! running.shutdown().await;
//! while let Some(event) = events.recv().await {
//!     println!("{}", mcp_host::render::describe(&event));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```
//!
//! The crates under this one stay the layering inside: `tool-router` (the model's tools),
//! `mcp-connection-manager` (the servers), `mcp-backend` (the trait between them), and
//! `router-protocol` (events and outputs). A host that brings a backend of its own implements
//! [`McpBackend`] and builds a [`ToolRouter`] over it (see the `own_backend` example).
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod assembly;
pub mod render;

pub use assembly::{Assembly, Running, ShutdownHandle, StartError};
pub use mcp_backend::{McpBackend, McpError, SkillApproval, TraceContext};
/// The router's state folder when a host names none (catalogs, pins, the ledger).
pub use mcp_connection_manager::default_state_dir;
/// Sign-in to servers behind OAuth (`oauth::Login`, `oauth::TokenStore`).
pub use mcp_connection_manager::oauth;
/// A binary that serves as the sandbox's helper (`Sandbox::helper`) calls this for
/// `__sandbox-exec` (the `mcp-router` binary does, first thing in `main`).
pub use mcp_connection_manager::sandbox_exec;
/// The manager's settings groups (`ManagerOptions::default().with(|o| …)`), and where its
/// state lives: the tool catalog and the pins.
pub use mcp_connection_manager::{
    ApprovalPolicy, LifecycleOptions, ListOptions, PinKey, PinStore, ProtocolChoice,
    RequestOptions, StartupOptions, TaskOptions, ToolCache, ToolChanges, TrustOptions,
    WatchOptions,
};
pub use mcp_connection_manager::{
    AppsHost, Asking, DefaultHost, HostCapabilities, HostHandler, ManagerOptions,
    McpConnectionManager, ServerConfig, ServerStatus, Startup, TransportConfig, TrustAnswer,
};
/// Servers run once per session or per working directory in the one manager, and a session's
/// view of them (`McpConnectionManager::set_scoped`, `McpConnectionManager::view`).
pub use mcp_connection_manager::{Scope, ScopedInstances, ScopedView};
pub use router_config::{ConfigError, ConfigFile, ConfigFormat, Strictness};
pub use router_protocol::{
    ContentItem, EventMsg, EventReceiver, EventSender, OutputFormat, event_channel,
};
/// What MCP costs: the router's ledger, its report's shapes and the file that keeps runs.
pub use tool_router::ledger;
pub use tool_router::{
    CallContext, FunctionCallError, RouterSettings, ToolCall, ToolFormat, ToolHandler, ToolOutput,
    ToolRouter, ToolSpec,
};
/// The router's settings groups (`RouterSettings::default().with(|s| …)`).
pub use tool_router::{
    DataSettings, EventSettings, LedgerSettings, ListSettings, OptionalTools, ReadSettings,
    ResultSettings, SearchSettings, SearchVia, ToolSearchMode,
};

/// `#[async_trait]`, for implementing [`HostHandler`], [`McpBackend`] or [`ToolHandler`].
pub use async_trait::async_trait;
/// The types of the backend interface (listings, qualified tools, the capability traits), for
/// a host that implements [`McpBackend`] over something of its own.
pub use mcp_backend as backend;
/// The rmcp version the router speaks: the types [`HostHandler`]'s methods take and give
/// (`rmcp::model::ElicitRequestParams`, …), so a host needs no rmcp dependency of its own.
pub use rmcp;
/// The event types (`McpToolCallEndEvent`, …) for a host that matches on them.
pub use router_protocol as events;
/// The JSON crate of the router's shapes (tool arguments, specs, outputs).
pub use serde_json;

/// The answer to a server's `roots/list` (rmcp's `ListRootsResult`, which rmcp's 2026 API marks
/// deprecated while protocol 2025-11-25 uses it): a host's `HostHandler::list_roots` returns
/// `Result<RootsAnswer, ErrorData>` without `#[allow(deprecated)]`; [`roots_answer`] makes one.
#[allow(deprecated)]
pub type RootsAnswer = rmcp::model::ListRootsResult;

/// A `roots/list` answer of the folders `dirs`, each a `file://` root named by its last
/// component: `Ok(mcp_host::roots_answer(["/home/ada/project"]))`.
pub fn roots_answer<P: AsRef<std::path::Path>>(dirs: impl IntoIterator<Item = P>) -> RootsAnswer {
    #[allow(deprecated)]
    let roots = dirs
        .into_iter()
        .map(|dir| {
            let dir = dir.as_ref();
            let root = rmcp::model::Root::new(format!("file://{}", dir.display()));
            match dir.file_name() {
                Some(name) => root.with_name(name.to_string_lossy()),
                None => root,
            }
        })
        .collect();
    #[allow(deprecated)]
    rmcp::model::ListRootsResult::new(roots)
}

/// The README's Rust blocks, compiled as this crate's doctests: what it shows a host compiles
/// against `mcp-host` alone.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// What a host's code needs in scope.
pub mod prelude {
    pub use crate::{
        Assembly, CallContext, ConfigFile, ConfigFormat, EventMsg, HostHandler, OutputFormat,
        Running, ToolCall, ToolFormat, ToolOutput, async_trait,
    };
}

#[cfg(test)]
#[deny(deprecated)]
mod tests {
    use super::*;

    /// A host that answers roots, written without `#[allow(deprecated)]` (the module denies it).
    struct Project;

    #[async_trait]
    impl HostHandler for Project {
        async fn list_roots(&self, _asking: &Asking) -> Result<RootsAnswer, rmcp::ErrorData> {
            Ok(roots_answer(["/home/ada/project", "/"]))
        }
    }

    #[tokio::test]
    async fn a_host_answers_roots_without_deprecated_names() {
        let answer = Project.list_roots(&Asking::new("docs", None)).await.expect("roots");
        let json = serde_json::to_value(&answer).expect("json");
        assert_eq!(
            json,
            serde_json::json!({"roots": [
                {"uri": "file:///home/ada/project", "name": "project"},
                {"uri": "file:///"}
            ]})
        );
    }
}
