//! What the handlers need from MCP, as one object-safe trait. The connection manager is the
//! real implementation; tests may provide others to reach corners real servers rarely show.

use async_trait::async_trait;
use mcp_connection_manager::{Aggregate, McpConnectionManager, McpError, QualifiedTool};
use rmcp::model::{
    CallToolResult, CompletionInfo, JsonObject, ListResourceTemplatesResult, ListResourcesResult,
    ReadResourceResult, Resource, ResourceTemplate,
};

/// The MCP side of the router.
#[async_trait]
pub trait McpBackend: Send + Sync {
    /// One page of `resources/list` from one server.
    async fn list_resources(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, McpError>;
    /// One page of `resources/templates/list` from one server.
    async fn list_resource_templates(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, McpError>;
    /// Every server's resources, sorted by server name.
    async fn list_all_resources(&self) -> Aggregate<Resource>;
    /// Every server's templates, sorted by server name.
    async fn list_all_resource_templates(&self) -> Aggregate<ResourceTemplate>;
    /// `resources/read`.
    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError>;
    /// `tools/call` by original tool name.
    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError>;
    /// `completion/complete` for a resource template argument.
    async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError>;
    /// Whether any server declares the `completions` capability.
    async fn supports_completions(&self) -> bool;
    /// Every model-visible MCP tool.
    async fn list_tools(&self) -> Vec<QualifiedTool>;
    /// The server and original tool name behind a qualified name.
    async fn resolve_tool(&self, qualified_name: &str) -> Option<(String, String)>;
}

#[async_trait]
impl McpBackend for McpConnectionManager {
    async fn list_resources(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, McpError> {
        McpConnectionManager::list_resources(self, server, cursor).await
    }
    async fn list_resource_templates(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        McpConnectionManager::list_resource_templates(self, server, cursor).await
    }
    async fn list_all_resources(&self) -> Aggregate<Resource> {
        McpConnectionManager::list_all_resources(self).await
    }
    async fn list_all_resource_templates(&self) -> Aggregate<ResourceTemplate> {
        McpConnectionManager::list_all_resource_templates(self).await
    }
    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
        McpConnectionManager::read_resource(self, server, uri).await
    }
    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        McpConnectionManager::call_tool(self, server, tool, arguments).await
    }
    async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        McpConnectionManager::complete_resource_argument(self, server, template, argument, value)
            .await
    }
    async fn supports_completions(&self) -> bool {
        McpConnectionManager::any_supports_completions(self).await
    }
    async fn list_tools(&self) -> Vec<QualifiedTool> {
        McpConnectionManager::list_tools(self).await
    }
    async fn resolve_tool(&self, qualified_name: &str) -> Option<(String, String)> {
        McpConnectionManager::resolve_tool(self, qualified_name).await
    }
}
