//! A tool call's checks before it is sent: a held tool refused, then its approval policy —
//! run, refuse, or ask the host (an "always" kept for the tool's pinned identity).

use router_protocol::{ApprovalPolicy, DefinitionKind, ToolApproval, ToolApprovalQuestion};

use mcp_backend::McpError;

use crate::manager::McpConnectionManager;

impl McpConnectionManager {
    /// Before a tool call is sent: a tool held from the model is refused (its server's live
    /// list is admitted first, so a call by name meets the same pins a listing does); then its
    /// approval policy — the tool's `tool_approvals` entry, else its server's `approval`, else
    /// `destructive_tools` for a tool annotated destructive (and not read-only), else run —
    /// runs it, refuses it, or asks the host (`ask_approval`).
    pub(crate) async fn check_call(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<&rmcp::model::JsonObject>,
    ) -> Result<(), McpError> {
        let conn = self.servers.connection(server).await?;
        let tools = conn.tools();
        let policy = self.servers.policy(server);
        let unshown = conn.filtered_tools();
        let trust = &self.servers.trust;
        let key = self.servers.key(server);
        let mut admitted = trust.admit(&key, policy, tools.clone(), &tools, &unshown);
        let refused = |message: String| McpError::Refused { server: server.to_string(), message };
        let held = |admitted: &crate::trust::Admitted| admitted.held.iter().any(|h| h.tool == tool);
        // Approved since (by `mcp-router trust approve`, another process): the files say so.
        if held(&admitted) && trust.refresh() {
            admitted = trust.admit(&key, policy, tools.clone(), &tools, &unshown);
        }
        if held(&admitted) {
            self.not_held(server, DefinitionKind::Tool, tool)?;
        }
        let found = tools.iter().find(|t| t.name == tool);
        // Not in the list the server sent (a tool it added a moment ago, a guessed name): its
        // definition cannot be checked, so with pins on the call is not sent.
        let app_only = conn.app_only_tools();
        if trust.pins_on() && found.is_none() && !app_only.iter().any(|t| t.name == tool) {
            return Err(refused(format!(
                "tool `{tool}` of MCP server '{server}' is not in the tool list it sent, so its definition cannot be checked against its pin (a tool it added a moment ago is listed, and can be approved, once the router has read its new list)"
            )));
        }
        let destructive = found
            .and_then(|t| t.annotations.as_ref())
            .is_some_and(|a| a.destructive_hint == Some(true) && a.read_only_hint != Some(true));
        let managed = self.servers.get(server);
        let config = managed.ok_or_else(|| McpError::UnknownServer(server.to_string()))?;
        let config = &config.config;
        let default =
            if destructive { self.servers.options.trust.destructive } else { ApprovalPolicy::Run };
        match config.tool_approvals.get(tool).copied().or(config.approval).unwrap_or(default) {
            ApprovalPolicy::Run => Ok(()),
            ApprovalPolicy::Refuse => Err(refused(format!(
                "tool `{tool}` of MCP server '{server}' is refused by configuration (approval)"
            ))),
            ApprovalPolicy::Ask => self.ask_approval(server, tool, found, arguments).await,
        }
    }

    /// Ask the host about a call of `tool` ("always" is kept for the tool's pinned identity).
    async fn ask_approval(
        &self,
        server: &str,
        tool: &str,
        found: Option<&rmcp::model::Tool>,
        arguments: Option<&rmcp::model::JsonObject>,
    ) -> Result<(), McpError> {
        let sha256 = found.map(|t| crate::trust::pins::Seen::of(t).sha256).unwrap_or_default();
        let key = self.servers.key(server);
        if self.servers.trust.always(&key, tool, &sha256) {
            return Ok(());
        }
        let question = ToolApprovalQuestion {
            server: server.to_string(),
            tool: tool.to_string(),
            call_id: mcp_backend::current_call_id().map(|c| c.to_string()),
            arguments: arguments.map(|a| serde_json::Value::Object(a.clone())),
            annotations: found.and_then(|t| serde_json::to_value(&t.annotations).ok()),
            sha256,
        };
        let asking = mcp_connection::Asking::new(server, question.call_id.clone());
        let refused = |message: String| McpError::Refused { server: server.to_string(), message };
        let params = serde_json::to_value(&question).unwrap_or_default();
        let ask = self.servers.host.approve_tool_call(&asking, &question);
        let told = |answer: &ToolApproval| match answer {
            ToolApproval::Once => serde_json::json!({"approval": "once"}),
            ToolApproval::Always => serde_json::json!({"approval": "always"}),
            ToolApproval::Refuse(reason) => {
                serde_json::json!({"approval": "refuse", "reason": reason})
            }
            _ => serde_json::json!({"approval": "none"}),
        };
        let events = &self.servers.events;
        match crate::waiting::waiting(events, &asking, "approval/tool_call", params, ask, told)
            .await
        {
            ToolApproval::Once => Ok(()),
            ToolApproval::Always => {
                self.servers.trust.remember_always(&key, tool, &question.sha256);
                Ok(())
            }
            ToolApproval::Refuse(reason) => Err(refused(format!(
                "the user did not approve this call of tool `{tool}` of MCP server '{server}': {reason}"
            ))),
            _ => Err(refused(format!("tool `{tool}` of MCP server '{server}' was not approved"))),
        }
    }
}
