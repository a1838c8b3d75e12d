//! MCP Apps for the host (SEP-1865): what an app rendered by the host may do through it — read
//! its `ui://` resource and call its server's tools whose visibility names `"app"` (the
//! app-only ones included, which the model never sees). Same server only: the host names the
//! server the app came from. No begin/end events: these are the app's calls, not the model's.

use mcp_backend::McpError;
use rmcp::model::{CallToolResult, JsonObject, ReadResourceResult};

use crate::router::ToolRouter;

impl ToolRouter {
    /// `server`'s `ui://` resource (the HTML a host renders).
    pub async fn read_ui_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, McpError> {
        let backend = self.backend_for(server)?;
        if !uri.starts_with("ui://") {
            return Err(refused(server, format!("{uri} is not a ui:// resource")));
        }
        backend.read_resource(server, uri).await
    }

    /// Call `server`'s tool `tool` for its app. Refused (nothing sent) unless the tool's
    /// visibility lets the app call it and the server is ready.
    pub async fn call_app_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        let backend = self.backend_for(server)?;
        if backend.apps().and_then(|apps| apps.app_tool(server, tool)).is_none() {
            let why = format!(
                "tool `{tool}` is not one its app may call (not listed by the ready server, or its _meta.ui.visibility leaves out \"app\")"
            );
            return Err(refused(server, why));
        }
        backend.call_tool(server, tool, arguments).await
    }
}

fn refused(server: &str, error: String) -> McpError {
    McpError::Protocol { server: server.to_string(), error }
}
