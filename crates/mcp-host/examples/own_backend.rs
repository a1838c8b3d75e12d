//! A backend of the host's own: the router over something that is not an MCP connection (here
//! a notebook in memory), with the core of `McpBackend` and none of the optional capabilities —
//! so the model is offered the resource tools and the notebook's one tool, and no skill, prompt
//! or task tool. `cargo run -p mcp-host --example own_backend` prints the specs, then a list, a
//! read and a call as the model gets them.
use std::sync::Arc;

use mcp_host::backend::{
    Aggregate, Items, KnownTools, ListKind, Page, QualifiedTool, Reuse, ServerListing,
    SharedListing, qualified_tool_name, resolve_tool_name,
};
use mcp_host::prelude::*;
use mcp_host::rmcp::model::{
    CallToolResult, CompletionInfo, ContentBlock, JsonObject, ReadResourceResult, Resource,
    ResourceContents, Tool,
};
use mcp_host::{McpBackend, McpError, ToolRouter, event_channel};

const SERVER: &str = "notebook";

/// Pages in memory; `shout` answers its `text` in capitals.
struct Notebook {
    pages: Vec<(&'static str, &'static str)>,
}

impl Notebook {
    fn resources(&self) -> Items {
        let listed =
            self.pages.iter().map(|(name, _)| Resource::new(format!("note://{name}"), *name));
        Items::Resources(listed.collect())
    }

    fn listing(&self, kind: ListKind) -> SharedListing {
        let mut listing = ServerListing::empty(SERVER, kind);
        if kind == ListKind::Resources {
            listing.items = self.resources();
        }
        listing.pages = 1;
        SharedListing::fresh(listing)
    }

    fn known(&self, server: &str) -> Result<(), McpError> {
        match server == SERVER {
            true => Ok(()),
            false => Err(McpError::UnknownServer(server.to_string())),
        }
    }
}

#[async_trait]
impl McpBackend for Notebook {
    async fn list(
        &self,
        server: &str,
        kind: ListKind,
        _: Option<String>,
    ) -> Result<Page, McpError> {
        self.known(server)?;
        Ok(Page {
            items: self.listing(kind).listing.items.clone(),
            next_cursor: None,
            ttl_ms: None,
        })
    }

    async fn listing(
        &self,
        server: &str,
        kind: ListKind,
        _: Option<String>,
    ) -> Result<SharedListing, McpError> {
        self.known(server).map(|()| self.listing(kind))
    }

    fn kept_listing(&self, _: &str, _: ListKind) -> Option<SharedListing> {
        None
    }

    async fn list_all(&self, kind: ListKind, _: Reuse) -> Result<Aggregate, McpError> {
        Ok(vec![self.listing(kind)])
    }

    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
        self.known(server)?;
        let page = self.pages.iter().find(|(name, _)| uri == format!("note://{name}"));
        let (_, text) = page.ok_or_else(|| McpError::Server {
            code: -32002,
            message: format!("Resource not found: {uri}"),
            data: None,
        })?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(*text, uri)]))
    }

    async fn call_tool(
        &self,
        server: &str,
        _: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        self.known(server)?;
        let text = arguments.as_ref().and_then(|a| a.get("text")?.as_str().map(str::to_uppercase));
        Ok(CallToolResult::success(vec![ContentBlock::text(text.unwrap_or_default())]))
    }

    async fn complete_resource_argument(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: &str,
    ) -> Result<CompletionInfo, McpError> {
        Ok(CompletionInfo::default())
    }

    async fn supports_completions(&self) -> bool {
        false
    }

    async fn list_tools(&self) -> Vec<QualifiedTool> {
        let schema = mcp_host::serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let schema = schema.as_object().cloned().unwrap_or_default();
        let tool = Tool::new("shout", "Say it louder.", schema);
        vec![QualifiedTool {
            qualified_name: qualified_tool_name(SERVER, "shout"),
            server: SERVER.into(),
            tool,
        }]
    }

    async fn known_tools(&self) -> KnownTools {
        KnownTools { tools: Arc::new(self.list_tools().await), unknown: Vec::new() }
    }

    async fn resolve_tool(&self, qualified_name: &str) -> Option<(String, String)> {
        resolve_tool_name(qualified_name, &self.list_tools().await, [SERVER], |_, _| true)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let notebook = Notebook { pages: vec![("groceries", "eggs, flour"), ("ideas", "a router")] };
    let router = ToolRouter::with_mcp_settings(Arc::new(notebook), &Default::default())?;
    let names: Vec<String> = router.specs().await.into_iter().map(|spec| spec.name).collect();
    println!("specs: {}", names.join(" "));
    let (events, mut rx) = event_channel();
    let ctx = CallContext::new(events);
    let turn = [
        ("list_mcp_resources", r#"{}"#),
        ("read_mcp_resource", r#"{"server": "notebook", "uri": "note://ideas"}"#),
        ("mcp__notebook__shout", r#"{"text": "hello"}"#),
    ];
    for (i, (name, arguments)) in turn.into_iter().enumerate() {
        let call =
            ToolCall { call_id: format!("c{i}"), name: name.into(), arguments: arguments.into() };
        let output = router.dispatch_to_output(&ctx, call).await?;
        println!("{}", output.to_format(OutputFormat::OpenAiResponses, &format!("c{i}")));
    }
    drop(ctx);
    while let Ok(event) = rx.try_recv() {
        println!("event {}", mcp_host::render::describe(&event));
    }
    Ok(())
}
