//! MCP-qualified tool calls, as Codex's MCP handler has them: the server's result (or why there
//! is none) passed through as `ToolOutput::Mcp`, within the result budget (the rest kept and
//! readable, [`crate::results::budget`]), its embedded resources shaped as reads are, its
//! `resource_link` items remembered for reads on their server (and, with
//! `inline_resource_links_bytes`, small linked resources embedded). The router resolves the
//! name and parses the arguments before a call gets here.

use std::sync::Arc;

use mcp_backend::{McpBackend, McpError};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use router_protocol::{CallResult, McpInvocation};
use serde_json::Value;

use crate::handlers::bracket;
use crate::invocation::{CallContext, FunctionCallError, ToolOutput};
use crate::results::budget::{Keeping, Size, shape};
use crate::results::content::ContentPolicy;
use crate::results::kept::KeptResults;
use crate::results::links::LinkedResources;

/// A resolved `mcp__server__tool` call.
pub(crate) struct McpCall {
    pub(crate) call_id: String,
    /// The configured server name.
    pub(crate) server: String,
    /// The tool's original name on that server.
    pub(crate) tool: String,
    /// The arguments as parsed (for the events): `None`, `null` or an object.
    pub(crate) arguments: Option<Value>,
}

/// Runs qualified MCP tool calls: the router's MCP route.
pub(crate) struct McpHandler {
    backend: Arc<dyn McpBackend>,
    policy: ContentPolicy,
    kept: Arc<KeptResults>,
    links: Arc<LinkedResources>,
}

impl McpHandler {
    /// A handler whose results follow `policy`'s result budget (the rest kept in `kept`) and
    /// whose links are recorded in `links`.
    pub(crate) fn new(
        backend: Arc<dyn McpBackend>,
        policy: ContentPolicy,
        kept: Arc<KeptResults>,
        links: Arc<LinkedResources>,
    ) -> Self {
        Self { backend, policy, kept, links }
    }

    /// Arguments other than an object (or none) are refused before any server is contacted,
    /// with Codex's `err: …` wording.
    pub(crate) fn arguments_object(
        arguments: Option<&Value>,
    ) -> Result<Option<JsonObject>, FunctionCallError> {
        match arguments {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map.clone())),
            Some(_) => Err(FunctionCallError::RespondToModel(
                "err: tool arguments must be a JSON object".to_string(),
            )),
        }
    }

    /// Call the tool between begin/end events.
    pub(crate) async fn call(
        &self,
        ctx: &CallContext,
        call: McpCall,
    ) -> Result<ToolOutput, FunctionCallError> {
        let object = Self::arguments_object(call.arguments.as_ref())?;
        let (server, tool) = (call.server.clone(), call.tool.clone());
        let ui = if ctx.has_listener() { self.ui_resource_uri(&server, &tool) } else { None };
        let result = self.backend.call_tool(&server, &tool, object);
        self.answer(ctx, call, ui, result).await
    }

    /// A tool's `result` (a call, or a backgrounded task's collection) between begin/end
    /// events, shaped for the model as every tool result is.
    pub(crate) async fn answer(
        &self,
        ctx: &CallContext,
        call: McpCall,
        ui: Option<String>,
        result: impl std::future::Future<Output = Result<CallToolResult, McpError>>,
    ) -> Result<ToolOutput, FunctionCallError> {
        let McpCall { call_id, server, tool, arguments } = call;
        let invocation = McpInvocation {
            server: Some(server.clone()),
            tool: tool.clone(),
            arguments: arguments.map(Arc::new),
        };
        // The end event shows the server's result as sent (cut to `event_payload_bytes`), the
        // model gets it within the budget: one shared result when that changes nothing (almost
        // always); otherwise the kept copy shares the server's result too.
        let work = async {
            let mut raw = result.await?;
            without_envelope(&mut raw);
            crate::ledger::from_server(|| mcp_backend::json_len(&raw));
            self.follow_links(&server, &mut raw).await;
            Ok(self.budgeted(&call_id, &server, &tool, raw))
        };
        let (outcome, _) = bracket(ctx, call_id.clone(), invocation, ui, work, |r| {
            let result = r.as_ref().map_err(tool_call_error);
            (result.map(|(raw, _)| CallResult::Call(raw.clone())), None)
        })
        .await;
        match outcome {
            Ok((_, shaped)) => Ok(ToolOutput::Mcp { result: Ok(shaped) }),
            Err(McpError::ShutDown) => {
                Err(FunctionCallError::Fatal(McpError::ShutDown.to_string()))
            }
            Err(e) => Ok(ToolOutput::Mcp { result: Err(tool_call_error(&e)) }),
        }
    }
}

/// The protocol's envelope out of a tool's result, so that what the model reads (and the end
/// event shows) does not depend on the server's protocol era: `resultType` (2026-07-28 only)
/// and the `io.modelcontextprotocol/*` keys of `_meta` (e.g. the server's info); the tool's
/// own `_meta` keys stay.
pub(crate) fn without_envelope(result: &mut CallToolResult) {
    result.result_type = None;
    if let Some(meta) = &mut result.meta {
        meta.0.retain(|key, _| !key.starts_with(PROTOCOL_META_PREFIX));
        if meta.0.is_empty() {
            result.meta = None;
        }
    }
}

/// The prefix of the `_meta` keys the protocol itself reserves.
const PROTOCOL_META_PREFIX: &str = "io.modelcontextprotocol/";

impl McpHandler {
    /// The `ui://` resource of `server`'s `tool`, as listed (nothing is asked or started).
    fn ui_resource_uri(&self, server: &str, tool: &str) -> Option<String> {
        let listed = self.backend.listed_tool(server, tool)?;
        mcp_backend::ui_resource_uri(&listed).map(str::to_string)
    }

    /// The server's result for the end event and the kept copy, and the model's result.
    fn budgeted(
        &self,
        call_id: &str,
        server: &str,
        tool: &str,
        raw: CallToolResult,
    ) -> (Arc<CallToolResult>, Arc<CallToolResult>) {
        let raw = Arc::new(raw);
        let size = Size::of(&raw);
        if !size.needs_shaping(&self.policy) {
            return (raw.clone(), raw);
        }
        let bytes = size.kept_bytes(&raw);
        let keeping = match self.kept.refusal(bytes) {
            _ if self.kept.is_off() => Keeping::Not(None),
            None => Keeping::At(self.kept.reserve(call_id)),
            Some(why) => Keeping::Not(Some(why)),
        };
        let budgeted = shape(&raw, &size, &self.policy, &keeping);
        if let Keeping::At(base) = &keeping
            && !budgeted.kept.is_empty()
        {
            let origin = format!("server \"{server}\"'s tool \"{tool}\" (call {call_id})");
            self.kept.keep(base, origin, raw.clone(), budgeted.kept, bytes);
        }
        (raw, Arc::new(budgeted.result))
    }

    /// Remember the result's `resource_link` items as its server's; with
    /// `inline_resource_links_bytes`, read the small ones and embed them after their links.
    async fn follow_links(&self, server: &str, result: &mut CallToolResult) {
        let links: Vec<(usize, String)> = result
            .content
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match b {
                ContentBlock::ResourceLink(link) => Some((i, link.uri.clone())),
                _ => None,
            })
            .collect();
        links.iter().for_each(|(_, uri)| self.links.record(server, uri));
        let limit = self.policy.inline_links_bytes;
        if limit == 0 {
            return;
        }
        for (i, uri) in links.into_iter().rev() {
            let ContentBlock::ResourceLink(link) = &result.content[i] else { continue };
            if link.size.is_some_and(|s| s > limit as u64) {
                continue;
            }
            let Ok(read) = self.backend.read_resource(server, &uri).await else { continue };
            let bytes: usize = read.contents.iter().map(mcp_backend::json_len).sum();
            if bytes <= limit {
                let embedded = read.contents.into_iter().map(ContentBlock::resource);
                result.content.splice(i + 1..i + 1, embedded);
            }
        }
    }
}

fn tool_call_error(error: &McpError) -> String {
    format!("tool call error: {error}")
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
