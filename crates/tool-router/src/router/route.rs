//! One call's way through the router: its name resolved to a handler or an MCP server, its
//! arguments parsed as Codex parses them, a tool called by name revealed, a `mcp__` name no
//! server answers given its begin/end pair — and the ledger told what it cost.

use std::sync::Arc;

use mcp_backend::looks_qualified;
use router_protocol::{EventMsg, McpToolsRevealedEvent};
use serde_json::Value;

use super::{McpRoute, ToolRouter};
use crate::handler::ToolHandler;
use crate::handlers::mcp::McpCall;
use crate::invocation::{
    CallContext, FunctionCallError, ToolArguments, ToolCall, ToolInvocation, ToolOutput,
};
use crate::ledger::ROUTER;

/// Where a call goes.
enum Route<'a> {
    Function(&'a Arc<dyn ToolHandler>),
    Mcp { route: &'a McpRoute, server: String, tool: String },
}

impl ToolRouter {
    /// Routes the call with its id as the current call (`mcp_backend::current_call_id`), for
    /// the backend's request spans and progress events.
    pub(super) async fn traced_route(
        &self,
        ctx: &CallContext,
        call: ToolCall,
    ) -> Result<ToolOutput, FunctionCallError> {
        // The backend learns the call id: request spans name it, progress events carry it.
        let call_id = call.call_id.clone();
        let started = std::time::Instant::now();
        let mut cost = None;
        let routed = mcp_backend::with_call_id(&call_id, self.route(ctx, call, &mut cost));
        let routed = mcp_backend::with_trace(ctx.trace.clone(), routed);
        let (outcome, from_server, ended_after) = crate::ledger::measuring(routed).await;
        let (server, tool) = cost.unwrap_or_else(|| (ROUTER.to_string(), "(unknown tool)".into()));
        let failed;
        let output = match &outcome {
            Ok(output) => output,
            Err(FunctionCallError::RespondToModel(why)) => {
                failed = ToolOutput::failure(why.as_str());
                &failed
            }
            Err(FunctionCallError::Fatal(_)) => return outcome,
        };
        let duration = ended_after.unwrap_or_else(|| started.elapsed());
        self.ledger.call(&server, &tool, duration, output, from_server);
        outcome
    }

    /// Routes the call; `cost` learns the server and tool the ledger counts it under (the
    /// server its arguments name for the router's own tools, [`ROUTER`] when none).
    async fn route(
        &self,
        ctx: &CallContext,
        call: ToolCall,
        cost: &mut Option<(String, String)>,
    ) -> Result<ToolOutput, FunctionCallError> {
        let ToolCall { call_id, name, arguments } = call;
        let resolved = match self.resolve(&name).await {
            Ok(resolved) => resolved,
            // One event rule for a server the router cannot reach, whatever the tool: a call
            // to an MCP name it cannot route gets its begin/end pair, as a read naming an
            // unknown server does; the model's output is the same.
            // (Only where no server owns the name: a held, disabled or app-only tool of a
            // known server is refused before any event, as before.)
            Err(FunctionCallError::RespondToModel(why))
                if self.mcp.is_some()
                    && looks_qualified(&name)
                    && why.starts_with("unsupported call: ") =>
            {
                let rest = name.strip_prefix("mcp__").unwrap_or(&name);
                let (server, tool) = rest.split_once("__").unwrap_or((rest, ""));
                *cost = Some((server.to_string(), tool.to_string()));
                return Err(unrouted(ctx, call_id, &name, arguments, why).await);
            }
            Err(error) => return Err(error),
        };
        match resolved {
            Route::Function(handler) => {
                let parsed = function_arguments(arguments);
                // The ledger counts it under the server its arguments name, else the router.
                let named = parsed.as_ref().ok().and_then(|a| a.as_ref()?.get("server")?.as_str());
                *cost = Some((named.unwrap_or(ROUTER).to_string(), name.clone()));
                let arguments = parsed?;
                let invocation = ToolInvocation { call_id, tool_name: name, arguments };
                handler.handle(ctx, invocation).await
            }
            Route::Mcp { route, server, tool } => {
                *cost = Some((server.clone(), tool.clone()));
                self.reveal_called(ctx, route, &server, &name).await;
                let arguments = arguments
                    .into_value()
                    .map_err(|e| FunctionCallError::RespondToModel(format!("err: {e}")))?;
                // Boxed: a tool call's future is large, and a read's future would otherwise be
                // as large as it (every call's task is).
                Box::pin(route.handler.call(ctx, McpCall { call_id, server, tool, arguments }))
                    .await
            }
        }
    }

    /// With tool search on, a tool called by name joins the specs (unless it is there).
    async fn reveal_called(&self, ctx: &CallContext, route: &McpRoute, server: &str, name: &str) {
        if !self.search.router_searches()
            || self.search.is_revealed(name)
            || self.search.always_loads(server)
        {
            return;
        }
        let known = route.backend.known_tools().await;
        let added = self.search.reveal(known.tools.iter().filter(|t| t.qualified_name == name));
        if !added.is_empty() {
            ctx.emit(EventMsg::McpToolsRevealed(McpToolsRevealedEvent { tools: added }));
        }
    }

    async fn resolve(&self, name: &str) -> Result<Route<'_>, FunctionCallError> {
        if let Some(registered) = self.handlers.get(name)
            && registered.handler.offered().await
        {
            return Ok(Route::Function(&registered.handler));
        }
        if let Some(route) = &self.mcp
            && looks_qualified(name)
            && let Some((server, tool)) = route.backend.resolve_tool(name).await
        {
            return Ok(Route::Mcp { route, server, tool });
        }
        if let Some(route) = &self.mcp
            && looks_qualified(name)
            && let Some(why) = route.backend.unavailable_tool(name)
        {
            return Err(FunctionCallError::RespondToModel(why));
        }
        if self.search.is_revealed(name) {
            let message = format!("{name} is no longer offered by its server");
            return Err(FunctionCallError::RespondToModel(message));
        }
        Err(FunctionCallError::RespondToModel(format!("unsupported call: {name}")))
    }
}

/// The begin/end pair of a call to the MCP name `name` that no server answers, ending with
/// `why` (what the model reads); the server and tool are what the name says
/// (`mcp__server__tool`).
async fn unrouted(
    ctx: &CallContext,
    call_id: String,
    name: &str,
    arguments: crate::invocation::ToolArguments,
    why: String,
) -> FunctionCallError {
    let rest = name.strip_prefix("mcp__").unwrap_or(name);
    let (server, tool) = rest.split_once("__").unwrap_or((rest, ""));
    let invocation = router_protocol::McpInvocation {
        server: Some(server.to_string()),
        tool: tool.to_string(),
        arguments: arguments.into_value().ok().flatten().map(Arc::new),
    };
    let failed = async { Err::<std::convert::Infallible, String>(why) };
    let (outcome, _) = crate::handlers::bracket(ctx, call_id, invocation, None, failed, |out| {
        let result = match out {
            Err(why) => Err(why.clone()),
            Ok(never) => match *never {},
        };
        (result, None)
    })
    .await;
    let Err(why) = outcome;
    FunctionCallError::RespondToModel(why)
}

/// Codex's rule for function tools: blank arguments and `null` are none; text that is not JSON
/// is refused with `failed to parse function arguments: …`.
fn function_arguments(arguments: ToolArguments) -> Result<Option<Value>, FunctionCallError> {
    let value = arguments.into_value().map_err(|e| {
        FunctionCallError::RespondToModel(format!("failed to parse function arguments: {e}"))
    })?;
    Ok(value.filter(|v| !v.is_null()))
}
