//! One readable line per event: the demo's transcript, `watch` when stdout is not a terminal,
//! and the live view's notices.

use router_protocol::EventMsg;

/// The event as a line for a person.
pub(crate) fn describe(event: &EventMsg) -> String {
    match event {
        EventMsg::McpServerStarting(e) => {
            format!("mcp_server_starting  {} ({})", e.server, e.transport)
        }
        EventMsg::McpServerReady(e) => format!(
            "mcp_server_ready     {} in {:.1} ms: {}, protocol {}, {} tools{}",
            e.server,
            e.elapsed.as_secs_f64() * 1000.0,
            e.server_info,
            e.protocol_version,
            e.tools,
            if e.capabilities.resources { ", resources" } else { "" }
        ),
        EventMsg::McpServerFailed(e) => format!("mcp_server_failed    {}: {}", e.server, e.error),
        EventMsg::McpServerRequest(e) => format!("mcp_server_request   {} {}", e.server, e.method),
        EventMsg::McpToolsChanged(e) => format!(
            "mcp_tools_changed    {}: added [{}], removed [{}]",
            e.server,
            e.added.join(", "),
            e.removed.join(", ")
        ),
        EventMsg::McpResourcesChanged(e) => format!("mcp_resources_changed {}", e.server),
        EventMsg::McpToolsRevealed(e) => format!("mcp_tools_revealed   {}", e.tools.join(", ")),
        EventMsg::McpResourceUpdated(e) => format!("mcp_resource_updated {} {}", e.server, e.uri),
        EventMsg::McpServerRestarting(e) => {
            format!("mcp_server_restarting {} (attempt {}): {}", e.server, e.attempt, e.reason)
        }
        EventMsg::McpToolCallBegin(e) => format!(
            "mcp_tool_call_begin  {} server={} tool={}",
            e.call_id,
            e.invocation.server.as_deref().unwrap_or("(all)"),
            e.invocation.tool
        ),
        EventMsg::McpToolCallProgress(e) => format!(
            "mcp_tool_call_progress {} {}{}{}",
            e.call_id,
            e.progress,
            e.total.map(|t| format!("/{t}")).unwrap_or_default(),
            e.message.as_deref().map(|m| format!(" {m}")).unwrap_or_default()
        ),
        EventMsg::McpToolCallEnd(e) => {
            let outcome = match &e.result {
                Ok(r) if r.is_error() => "ok (isError)".to_string(),
                Ok(_) => "ok".to_string(),
                Err(m) => format!("error: {m}"),
            };
            let summary = e
                .summary
                .as_ref()
                .map(|s| {
                    format!(
                        " ({} items shown, {} pages fetched, {} servers)",
                        s.items, s.pages, s.servers
                    )
                })
                .unwrap_or_default();
            format!(
                "mcp_tool_call_end    {} {:.3} ms {outcome}{summary}",
                e.call_id,
                e.duration.as_secs_f64() * 1000.0
            )
        }
        other => describe_more(other),
    }
}

/// The rest of [`describe`]: idle servers, server logs, skill rejections, task statuses.
fn describe_more(event: &EventMsg) -> String {
    match event {
        EventMsg::McpServerIdle(e) => format!(
            "mcp_server_idle      {} ({}): starts on first use{}",
            e.server,
            e.transport,
            e.tools.map(|n| format!(", {n} tools known from its catalog")).unwrap_or_default()
        ),
        EventMsg::McpServerLog(e) => format!(
            "mcp_server_log       {} {}{}: {}",
            e.server,
            e.level,
            e.logger.as_deref().map(|l| format!(" ({l})")).unwrap_or_default(),
            e.data.as_str().map(str::to_string).unwrap_or_else(|| e.data.to_string())
        ),
        EventMsg::McpSkillRejected(e) => {
            format!("mcp_skill_rejected   {} {} {}: {}", e.server, e.skill, e.uri, e.reason)
        }
        EventMsg::McpTaskStatus(e) => {
            let message = e.status_message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
            let background = if e.background { " (goes on in the background)" } else { "" };
            format!(
                "mcp_task_status      {} {} {}{message}{background}",
                e.server, e.task, e.status
            )
        }
        // An event kind added after this transcript was written: its JSON.
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}
