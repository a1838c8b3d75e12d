//! One readable line per event, for a host's UI or log: what `mcp-router demo` prints, what
//! `mcp-router watch` shows when stdout is not a terminal, and the live view's notices.

use router_protocol::EventMsg;

/// The event as a line for a person.
pub fn describe(event: &EventMsg) -> String {
    match event {
        EventMsg::McpToolCallBegin(_)
        | EventMsg::McpToolCallProgress(_)
        | EventMsg::McpToolCallEnd(_) => describe_call(event),
        EventMsg::McpServerStarting(_)
        | EventMsg::McpServerReady(_)
        | EventMsg::McpServerFailed(_)
        | EventMsg::McpServerStopped(_)
        | EventMsg::McpServerRestarting(_) => describe_server(event),
        other => describe_more(other),
    }
}

/// A stdio server's sandbox, in brief: `, sandboxed (namespaces + landlock ABI 7)` (or `(landlock
/// ABI 7)` where user namespaces are refused), `, sandbox off`, or
/// `, NOT sandboxed` when the system cannot.
fn sandbox_in_brief(tier: &str) -> String {
    match tier.split(':').next().unwrap_or_default() {
        "none" => ", NOT sandboxed".to_string(),
        kind if kind.starts_with("off") => ", sandbox off".to_string(),
        kind => format!(", sandboxed ({kind})"),
    }
}

/// A server's lifecycle event.
fn describe_server(event: &EventMsg) -> String {
    match event {
        EventMsg::McpServerStarting(e) => {
            format!("mcp_server_starting  {} ({})", e.server, e.transport)
        }
        EventMsg::McpServerReady(e) => format!(
            "mcp_server_ready     {} in {:.1} ms: {}, protocol {}, {} tools{}{}",
            e.server,
            e.elapsed.as_secs_f64() * 1000.0,
            e.server_info,
            e.protocol_version,
            e.tools,
            if e.capabilities.resources { ", resources" } else { "" },
            e.sandbox.as_deref().map(sandbox_in_brief).unwrap_or_default()
        ),
        EventMsg::McpServerFailed(e) => format!("mcp_server_failed    {}: {}", e.server, e.error),
        EventMsg::McpServerStopped(e) => format!(
            "mcp_server_stopped   {}{}",
            e.server,
            if e.was_running { "" } else { " (was not running)" }
        ),
        EventMsg::McpServerRestarting(e) => {
            format!("mcp_server_restarting {} (attempt {}): {}", e.server, e.attempt, e.reason)
        }
        other => describe_more(other),
    }
}

/// A call's begin, progress or end.
fn describe_call(event: &EventMsg) -> String {
    match event {
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
            // A failed call's error says it already; a list that answered names who failed.
            let summary = e
                .summary
                .as_ref()
                .map(|s| summary(&e.invocation.tool, s, e.result.is_ok()))
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

/// An end event's summary in words: hits of a search, skills of a skill tool, items, pages and
/// servers of a list or read; then, for a call that answered, each server that failed, with why.
fn summary(tool: &str, s: &router_protocol::ResourceCallSummary, answered: bool) -> String {
    let counted = match tool {
        tool_router::SEARCH_MCP_TOOLS => format!("{} hits", s.items),
        tool_router::LOAD_MCP_SKILL | tool_router::LIST_MCP_SKILLS => {
            format!("{} skills", s.items)
        }
        _ => format!("{} items shown, {} pages fetched, {} servers", s.items, s.pages, s.servers),
    };
    let failed: String = s
        .failed_servers
        .iter()
        .filter(|_| answered)
        .map(|f| format!("; {} failed: {}", f.server, f.error))
        .collect();
    format!(" ({counted}{failed})")
}

/// The rest of [`describe`]: list changes, idle servers, requests handed to the host, server
/// logs, skill rejections, task statuses.
fn describe_more(event: &EventMsg) -> String {
    match event {
        EventMsg::McpServerRequest(e) => format!(
            "mcp_server_request   {} {}{}",
            e.server,
            e.method,
            e.call_id.as_deref().map(|c| format!(" (call {c})")).unwrap_or_default()
        ),
        EventMsg::McpToolsChanged(e) => format!(
            "mcp_tools_changed    {}: added [{}], removed [{}]",
            e.server,
            e.added.join(", "),
            e.removed.join(", ")
        ),
        EventMsg::McpResourcesChanged(e) => format!("mcp_resources_changed {}", e.server),
        EventMsg::McpToolsRevealed(e) => format!("mcp_tools_revealed   {}", e.tools.join(", ")),
        EventMsg::McpResourceUpdated(e) => format!("mcp_resource_updated {} {}", e.server, e.uri),
        EventMsg::McpServerRequestBegin(e) => format!(
            "mcp_server_request_begin {} {}{}",
            e.server,
            e.method,
            e.call_id
                .as_deref()
                .map(|c| format!(" (call {c} waits on the host)"))
                .unwrap_or_default()
        ),
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
        EventMsg::McpToolDefinitionChanged(e) => describe_definition(e),
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
        EventMsg::McpTurnCost(report) => describe_turn(report),
        // An event kind added after this transcript was written: its JSON.
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// `mcp_turn_cost`: the turn's calls and tokens, and the specs' tokens.
fn describe_turn(report: &router_protocol::LedgerReport) -> String {
    let calls: u64 = report.tools.iter().map(|t| t.calls).sum();
    let tokens: u64 = report.tools.iter().map(|t| t.tokens_to_model).sum();
    let specs: u64 = report.servers.iter().map(|s| s.spec_tokens_loaded).sum();
    format!(
        "mcp_turn_cost        {calls} calls, {tokens} tokens of outputs, {specs} spec tokens ({})",
        report.tokenizer
    )
}

/// `mcp_tool_definition_changed`: the tool, how it stands against its pin, what became of it,
/// the fields that differ and its flags.
fn describe_definition(e: &router_protocol::McpToolDefinitionChangedEvent) -> String {
    let fields: Vec<&str> = e.diff.iter().map(|d| d.field.as_str()).collect();
    let fields =
        if fields.is_empty() { String::new() } else { format!(" ({})", fields.join(", ")) };
    let flags = if e.flags.is_empty() {
        String::new()
    } else {
        format!("; flagged: {}", e.flags.join("; "))
    };
    let change = serde_json::to_value(e.change).unwrap_or_default();
    let decision = serde_json::to_value(e.decision).unwrap_or_default();
    format!(
        "mcp_tool_definition_changed {} {}: {}{fields}, {}{flags}",
        e.server,
        e.tool,
        change.as_str().unwrap_or("?"),
        decision.as_str().unwrap_or("?")
    )
}

#[cfg(test)]
mod tests {
    use router_protocol::{ResourceCallSummary, ServerFailure};

    use super::summary;

    #[test]
    fn a_summary_says_what_the_call_counted_and_names_failed_servers() {
        let counted =
            |items| ResourceCallSummary { items, pages: 1, servers: 1, failed_servers: Vec::new() };
        assert_eq!(summary("search_mcp_tools", &counted(3), true), " (3 hits)");
        assert_eq!(summary("load_mcp_skill", &counted(1), true), " (1 skills)");
        let mut list = counted(4);
        list.servers = 2;
        list.failed_servers =
            vec![ServerFailure { server: "web".into(), error: "connection refused".into() }];
        assert_eq!(
            summary("list_mcp_resources", &list, true),
            " (4 items shown, 1 pages fetched, 2 servers; web failed: connection refused)"
        );
        // A call that failed says why in its error already.
        assert_eq!(
            summary("read_mcp_resource", &list, false),
            " (4 items shown, 1 pages fetched, 2 servers)"
        );
    }
}
