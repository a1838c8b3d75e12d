//! What a host is told about a server's tool definitions against the ones pinned for it.

use serde::{Deserialize, Serialize};

/// `mcp_tool_definition_changed`: a tool's definition differs from the one pinned for its
/// server, a tool is new to a server whose tools are pinned, or a tool seen for the first time
/// carries suspicious text. The same value is what `HostHandler::tool_definition_changed` is
/// asked about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolDefinitionChangedEvent {
    /// The configured server name.
    pub server: String,
    /// What the definition is of: a tool (left out of the JSON), a prompt, a resource template
    /// or a skill's frontmatter.
    #[serde(default, skip_serializing_if = "DefinitionKind::is_tool")]
    pub kind: DefinitionKind,
    /// The tool's name on its server (a prompt's or a skill's name, a template's URI template).
    pub tool: String,
    /// How it stands against the pins.
    pub change: DefinitionChange,
    /// What became of it.
    pub decision: DefinitionDecision,
    /// The fields that differ from the pinned definition (`description`, `title`,
    /// `inputSchema`, `outputSchema`, `annotations`), each as canonical JSON text, cut to
    /// 2 KiB; empty for a tool seen for the first time.
    pub diff: Vec<FieldDiff>,
    /// Suspicious text in the definition: invisible or bidirectional control characters,
    /// text addressed to the model, a description far over the usual size.
    pub flags: Vec<String>,
    /// SHA-256 of the definition's canonical JSON (RFC 8785), hex.
    pub sha256: String,
}

/// How a tool stands against its server's pins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DefinitionChange {
    /// Not pinned, on a server whose tools are (a new tool, or a renamed one).
    Added,
    /// Pinned, with another definition.
    Changed,
    /// The server's tools were seen for the first time and pinned.
    FirstSeen,
}

/// What a pinned definition is of.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum DefinitionKind {
    /// A tool (`tools/list`).
    #[default]
    Tool,
    /// A prompt (`prompts/list`).
    Prompt,
    /// A resource template (`resources/templates/list`), by its URI template.
    ResourceTemplate,
    /// A skill's frontmatter and URI (`skills/list`), by its name.
    Skill,
}

impl DefinitionKind {
    /// Every kind, tools first.
    pub const ALL: [Self; 4] = [Self::Tool, Self::Prompt, Self::ResourceTemplate, Self::Skill];

    /// Whether this is a tool (the JSON leaves `kind` out then).
    pub fn is_tool(&self) -> bool {
        *self == Self::Tool
    }

    /// The kind as the JSON and the messages name it: `tool`, `prompt`, `resource template`…
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::ResourceTemplate => "resource template",
            Self::Skill => "skill",
        }
    }
}

/// Definitions of one server held from the model, as the payloads that list their kind say
/// (`list_mcp_resource_templates`, `list_mcp_skills`, `search_mcp_tools`): how many, which, and
/// the command that lets them in. Held items are never listed themselves; this says they exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldNote {
    /// The configured server name.
    pub server: String,
    /// How many of its definitions of the kind are held.
    pub count: usize,
    /// Their names (a template's URI template), the first [`HeldNote::NAMES_SHOWN`].
    pub names: Vec<String>,
    /// The command the user runs to allow them (`mcp-router trust approve --config … SERVER
    /// NAME…`; a host that approves another way says so in its own words).
    pub approve: String,
}

impl HeldNote {
    /// At most this many names are given; `count` says how many there are.
    pub const NAMES_SHOWN: usize = 20;
}

/// What became of a tool definition that is not the pinned one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DefinitionDecision {
    /// Kept from the model until approved (`mcp-router trust approve`, or the host).
    Held,
    /// Pinned as it is now, by the server's `tool_changes = "accept"`.
    Accepted,
    /// Approved by the host and pinned.
    Approved,
    /// Refused by the host: kept from the model, not asked again while the router runs.
    Refused,
    /// Pinned on first sight.
    Pinned,
}

/// One field of a definition, before (pinned) and after (now); `None` where it is absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDiff {
    /// The field: `description`, `title`, `inputSchema`, `outputSchema` or `annotations`.
    pub field: String,
    /// The pinned value, as canonical JSON text.
    pub before: Option<String>,
    /// The value now, as canonical JSON text.
    pub after: Option<String>,
}

/// A call to a tool whose approval policy is `ask`: what the host is asked before it runs
/// (`HostHandler::approve_tool_call`; exec writes it as a `tool_approval_request` line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolApprovalQuestion {
    /// The configured server name.
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    /// The model's call that waits for the answer.
    pub call_id: Option<String>,
    /// The call's arguments.
    pub arguments: Option<serde_json::Value>,
    /// The tool's annotations (`destructiveHint`, `readOnlyHint`, …), as the server sent them.
    pub annotations: Option<serde_json::Value>,
    /// The tool's pinned identity (SHA-256 of its canonical definition): "always" is kept for
    /// this definition only, and a changed tool asks again.
    pub sha256: String,
}

/// The host's answer to a [`ToolApprovalQuestion`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolApproval {
    /// Run this call.
    Once,
    /// Run it, and every later call of this tool while its definition stays the same (kept
    /// with the server's pins, so across restarts).
    Always,
    /// Do not run it; the reason is for the model.
    Refuse(String),
}

/// Whether a call to a tool runs: a server's `approval`, a tool's entry in its
/// `tool_approvals`, or `destructive_tools` for tools annotated destructive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// It runs.
    #[default]
    Run,
    /// The host is asked first (`HostHandler::approve_tool_call`).
    Ask,
    /// It never runs.
    Refuse,
}

impl ApprovalPolicy {
    /// The config value: `run`, `ask` or `refuse`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "run" => Some(Self::Run),
            "ask" => Some(Self::Ask),
            "refuse" => Some(Self::Refuse),
            _ => None,
        }
    }
}
