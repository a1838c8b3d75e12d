//! A scripted [`McpBackend`] for unit tests of exact strings and shapes. Real servers are
//! exercised by the integration tests of the `mcp-router` crate.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_connection_manager::{
    Aggregate, McpError, QualifiedTool, ServerListing, qualified_tool_name,
};
use rmcp::model::{
    CallToolResult, CompletionInfo, ContentBlock, JsonObject, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool,
};
use router_protocol::{EventMsg, EventReceiver, event_channel};

use crate::backend::McpBackend;
use crate::invocation::CallContext;

#[derive(Default, Clone)]
pub(crate) struct FakeServer {
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) page_size: usize,
    pub(crate) fail: Option<McpError>,
    pub(crate) tools: Vec<Tool>,
    /// Completion candidates; `Some` declares the completions capability.
    pub(crate) completions: Option<Vec<String>>,
    /// Exact read answers by URI (checked before the generated text).
    pub(crate) reads: Vec<(String, Vec<ResourceContents>)>,
}

#[derive(Default)]
pub(crate) struct FakeBackend {
    pub(crate) servers: BTreeMap<String, FakeServer>,
}

impl FakeBackend {
    pub(crate) fn with(servers: Vec<(&str, FakeServer)>) -> Arc<Self> {
        Arc::new(Self { servers: servers.into_iter().map(|(n, s)| (n.to_string(), s)).collect() })
    }

    fn server(&self, name: &str) -> Result<&FakeServer, McpError> {
        let server =
            self.servers.get(name).ok_or_else(|| McpError::UnknownServer(name.to_string()))?;
        match &server.fail {
            Some(e) => Err(e.clone()),
            None => Ok(server),
        }
    }
}

fn page<T: Clone>(items: &[T], size: usize, cursor: Option<String>) -> (Vec<T>, Option<String>) {
    let size = if size == 0 { items.len().max(1) } else { size };
    let start: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0).min(items.len());
    let end = (start + size).min(items.len());
    (items[start..end].to_vec(), (end < items.len()).then(|| end.to_string()))
}

fn listing<T: Clone>(name: &str, server: &FakeServer, items: &[T]) -> ServerListing<T> {
    match &server.fail {
        Some(e) => ServerListing {
            server: name.to_string(),
            items: vec![],
            pages: 0,
            error: Some(e.to_string()),
        },
        None => {
            let size = if server.page_size == 0 { items.len().max(1) } else { server.page_size };
            ServerListing {
                server: name.to_string(),
                items: items.to_vec(),
                pages: items.len().div_ceil(size).max(1),
                error: None,
            }
        }
    }
}

#[async_trait]
impl McpBackend for FakeBackend {
    async fn list_resources(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, McpError> {
        let s = self.server(server)?;
        let (items, next) = page(&s.resources, s.page_size, cursor);
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }
    async fn list_resource_templates(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let s = self.server(server)?;
        let (items, next) = page(&s.templates, s.page_size, cursor);
        let mut result = ListResourceTemplatesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }
    async fn list_all_resources(&self) -> Aggregate<Resource> {
        self.servers.iter().map(|(n, s)| listing(n, s, &s.resources)).collect()
    }
    async fn list_all_resource_templates(&self) -> Aggregate<ResourceTemplate> {
        self.servers.iter().map(|(n, s)| listing(n, s, &s.templates)).collect()
    }
    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
        let s = self.server(server)?;
        if let Some((_, contents)) = s.reads.iter().find(|(u, _)| u == uri) {
            return Ok(ReadResourceResult::new(contents.clone()));
        }
        let by_template = s.templates.iter().any(|t| {
            uri_template::UriTemplate::parse(&t.uri_template)
                .is_ok_and(|p| p.match_uri(uri).is_some())
        });
        if by_template || s.resources.iter().any(|r| r.uri == uri) {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(format!("text of {uri}"), uri)]))
        } else {
            Err(McpError::Server {
                code: -32002,
                message: format!("Resource not found: {uri}"),
                data: None,
            })
        }
    }
    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        let _ = self.server(server)?;
        match tool {
            "echo" => {
                let text = arguments
                    .as_ref()
                    .and_then(|a| a.get("text"))
                    .and_then(|t| t.as_str())
                    .unwrap_or("");
                Ok(CallToolResult::success(vec![ContentBlock::text(format!("Echo: {text}"))]))
            }
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("this tool always fails")])),
            "slow" => Err(McpError::Timeout {
                server: "figma".into(),
                method: "tools/call",
                timeout: std::time::Duration::from_secs(60),
            }),
            other => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "unknown tool: {other}"
            ))])),
        }
    }
    async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        let s = self.server(server)?;
        let Some(all) = &s.completions else {
            return Err(McpError::Server {
                code: -32601,
                message: "Method not found".into(),
                data: None,
            });
        };
        if !s.templates.iter().any(|t| t.uri_template == template) || argument.is_empty() {
            return Err(McpError::Server {
                code: -32602,
                message: format!("Unknown resource template: {template}"),
                data: None,
            });
        }
        let mut info = CompletionInfo::default();
        info.values = all.iter().filter(|v| v.starts_with(value)).cloned().collect();
        info.total = u32::try_from(info.values.len()).ok();
        info.has_more = Some(false);
        Ok(info)
    }
    async fn supports_completions(&self) -> bool {
        self.servers.values().any(|s| s.completions.is_some())
    }
    async fn list_tools(&self) -> Vec<QualifiedTool> {
        self.servers
            .iter()
            .flat_map(|(name, s)| {
                s.tools.iter().map(move |t| QualifiedTool {
                    qualified_name: qualified_tool_name(name, &t.name),
                    server: name.clone(),
                    tool: t.clone(),
                })
            })
            .collect()
    }
    async fn resolve_tool(&self, qualified_name: &str) -> Option<(String, String)> {
        self.list_tools()
            .await
            .into_iter()
            .find(|t| t.qualified_name == qualified_name)
            .map(|t| (t.server, t.tool.name.to_string()))
    }
}

pub(crate) fn resource(uri: &str, name: &str) -> Resource {
    Resource::new(uri, name).with_mime_type("text/plain")
}

pub(crate) fn tool(name: &str) -> Tool {
    let schema: JsonObject = serde_json::from_value(
        serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    )
    .unwrap_or_default();
    Tool::new(name.to_string(), format!("The {name} tool."), schema)
}

/// A context and the events it received.
pub(crate) fn context() -> (CallContext, EventReceiver) {
    let (tx, rx) = event_channel();
    (CallContext::new(tx), rx)
}

pub(crate) fn drain(rx: &mut EventReceiver) -> Vec<EventMsg> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}
