//! The serialized contract between the router and whoever embeds it: the event stream a UI
//! consumes ([`EventMsg`]) and the sink the router writes it to ([`EventSender`]).
//!
//! Only this crate defines event shapes; every other crate builds them through these types, so a
//! change to what a UI sees is a change here (and to its snapshot tests).
// Library code handles a poisoned lock and a missing value (one rule per crate, where it locks);
// `expect` is for tests, and for an invariant marked where it holds.
#![cfg_attr(not(test), warn(clippy::expect_used))]

pub mod dirs;
mod events;
mod exec;
mod ledger;
mod output;
mod prompts;
mod provider;
mod sandbox;
mod shared;
mod sink;
mod skills;
mod status;
mod trust;

pub use events::{
    EventMsg, McpInvocation, McpResourceUpdatedEvent, McpResourcesChangedEvent,
    McpServerFailedEvent, McpServerIdleEvent, McpServerLogEvent, McpServerReadyEvent,
    McpServerRequestBeginEvent, McpServerRequestEvent, McpServerRestartingEvent,
    McpServerStartingEvent, McpServerStoppedEvent, McpSkillRejectedEvent, McpTaskStatusEvent,
    McpToolCallBeginEvent, McpToolCallEndEvent, McpToolCallProgressEvent, McpToolsChangedEvent,
    McpToolsRevealedEvent, ResourceCallSummary, SERVER_LOG_DATA_BYTES, ServerCapabilitySummary,
    ServerFailure, duration_ms,
};
pub use exec::{
    ExecCall, ExecInput, ExecLine, ExecOutput, Rejected, call_id_is_number, call_id_of,
};
pub use ledger::{
    LedgerReport, LedgerRun, ServerCost, ServerSpecs, TOKENS_ESTIMATED, ToolCalls, ToolCost,
};
pub use output::{ContentItem, ResourceChange, ToolOutput};
pub use prompts::{PromptSummary, Prompts};
pub use provider::OutputFormat;
pub use sandbox::{PackageIntegrity, Sandbox};
pub use shared::{CallResult, SharedText};
pub use sink::{EventReceiver, EventSender, TryRecvError, event_channel};
pub use skills::{SkillSummary, Skills};
pub use status::{Cwd, RouterStatus, Scope, ServerEntry, SessionStatus, Shared};
pub use trust::{
    ApprovalPolicy, DefinitionChange, DefinitionDecision, DefinitionKind, FieldDiff, HeldNote,
    McpToolDefinitionChangedEvent, ToolApproval, ToolApprovalQuestion,
};
