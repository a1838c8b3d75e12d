//! A wrapper of a backend that changes a few of its methods and forwards the rest, as tower's
//! layers do: a [`BackendLayer`] has every [`McpBackend`] method, each given the inner backend
//! and forwarding to it by default, so a layer that changes one method is one method long;
//! [`Layered`] is the layer over its inner backend, a backend itself. The optional capabilities
//! (`skills`, `prompts`, `tasks`, `apps`) are the inner backend's.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{CallToolResult, CompletionInfo, JsonObject, ReadResourceResult, Tool};
use router_protocol::{DefinitionKind, HeldNote, ResourceChange};

use crate::backend::{KnownTools, McpBackend};
use crate::capabilities::{AppsBackend, PromptsBackend, SkillsBackend, TasksBackend};
use crate::error::McpError;
use crate::listing::{Aggregate, ListKind, Page, Reuse, SharedListing};
use crate::qualify::QualifiedTool;

/// What a wrapper changes of the backend under it. Every method has the meaning of the
/// [`McpBackend`] method of its name and gets the inner backend; the default forwards.
#[async_trait]
pub trait BackendLayer: Send + Sync {
    /// [`McpBackend::list`].
    async fn list(
        &self,
        inner: &dyn McpBackend,
        server: &str,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page, McpError> {
        inner.list(server, kind, cursor).await
    }
    /// [`McpBackend::listing`].
    async fn listing(
        &self,
        inner: &dyn McpBackend,
        server: &str,
        kind: ListKind,
        from: Option<String>,
    ) -> Result<SharedListing, McpError> {
        inner.listing(server, kind, from).await
    }
    /// [`McpBackend::kept_listing`].
    fn kept_listing(
        &self,
        inner: &dyn McpBackend,
        server: &str,
        kind: ListKind,
    ) -> Option<SharedListing> {
        inner.kept_listing(server, kind)
    }
    /// [`McpBackend::list_all`].
    async fn list_all(
        &self,
        inner: &dyn McpBackend,
        kind: ListKind,
        reuse: Reuse,
    ) -> Result<Aggregate, McpError> {
        inner.list_all(kind, reuse).await
    }
    /// [`McpBackend::read_resource`].
    async fn read_resource(
        &self,
        inner: &dyn McpBackend,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, McpError> {
        inner.read_resource(server, uri).await
    }
    /// [`McpBackend::call_tool`].
    async fn call_tool(
        &self,
        inner: &dyn McpBackend,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        inner.call_tool(server, tool, arguments).await
    }
    /// [`McpBackend::complete_resource_argument`].
    async fn complete_resource_argument(
        &self,
        inner: &dyn McpBackend,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        inner.complete_resource_argument(server, template, argument, value).await
    }
    /// [`McpBackend::supports_completions`].
    async fn supports_completions(&self, inner: &dyn McpBackend) -> bool {
        inner.supports_completions().await
    }
    /// [`McpBackend::list_tools`].
    async fn list_tools(&self, inner: &dyn McpBackend) -> Vec<QualifiedTool> {
        inner.list_tools().await
    }
    /// [`McpBackend::known_tools`].
    async fn known_tools(&self, inner: &dyn McpBackend) -> KnownTools {
        inner.known_tools().await
    }
    /// [`McpBackend::listed_tool`].
    fn listed_tool(&self, inner: &dyn McpBackend, server: &str, tool: &str) -> Option<Tool> {
        inner.listed_tool(server, tool)
    }
    /// [`McpBackend::resolve_tool`].
    async fn resolve_tool(
        &self,
        inner: &dyn McpBackend,
        qualified_name: &str,
    ) -> Option<(String, String)> {
        inner.resolve_tool(qualified_name).await
    }
    /// [`McpBackend::unavailable_tool`].
    fn unavailable_tool(&self, inner: &dyn McpBackend, qualified_name: &str) -> Option<String> {
        inner.unavailable_tool(qualified_name)
    }
    /// [`McpBackend::take_resource_changes`].
    fn take_resource_changes(&self, inner: &dyn McpBackend) -> Vec<ResourceChange> {
        inner.take_resource_changes()
    }
    /// [`McpBackend::held`].
    fn held(&self, inner: &dyn McpBackend, kind: DefinitionKind) -> Vec<HeldNote> {
        inner.held(kind)
    }
}

/// `layer` over `inner`: a backend whose methods are the layer's (the inner backend's where
/// the layer does not change them).
pub struct Layered<L> {
    inner: Arc<dyn McpBackend>,
    layer: L,
}

impl<L: BackendLayer> Layered<L> {
    /// `layer` over `inner`.
    pub fn new(inner: Arc<dyn McpBackend>, layer: L) -> Self {
        Self { inner, layer }
    }

    /// The layer.
    pub fn layer(&self) -> &L {
        &self.layer
    }

    /// The backend under the layer.
    pub fn inner(&self) -> &Arc<dyn McpBackend> {
        &self.inner
    }
}

/// A layered backend reads as its layer (`backend.field` is the layer's).
impl<L> std::ops::Deref for Layered<L> {
    type Target = L;

    fn deref(&self) -> &L {
        &self.layer
    }
}

#[async_trait]
impl<L: BackendLayer> McpBackend for Layered<L> {
    async fn list(
        &self,
        server: &str,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page, McpError> {
        self.layer.list(&*self.inner, server, kind, cursor).await
    }

    async fn listing(
        &self,
        server: &str,
        kind: ListKind,
        from: Option<String>,
    ) -> Result<SharedListing, McpError> {
        self.layer.listing(&*self.inner, server, kind, from).await
    }

    fn kept_listing(&self, server: &str, kind: ListKind) -> Option<SharedListing> {
        self.layer.kept_listing(&*self.inner, server, kind)
    }

    async fn list_all(&self, kind: ListKind, reuse: Reuse) -> Result<Aggregate, McpError> {
        self.layer.list_all(&*self.inner, kind, reuse).await
    }

    async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
        self.layer.read_resource(&*self.inner, server, uri).await
    }

    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        self.layer.call_tool(&*self.inner, server, tool, arguments).await
    }

    async fn complete_resource_argument(
        &self,
        server: &str,
        template: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        let inner = &*self.inner;
        self.layer.complete_resource_argument(inner, server, template, argument, value).await
    }

    async fn supports_completions(&self) -> bool {
        self.layer.supports_completions(&*self.inner).await
    }

    async fn list_tools(&self) -> Vec<QualifiedTool> {
        self.layer.list_tools(&*self.inner).await
    }

    async fn known_tools(&self) -> KnownTools {
        self.layer.known_tools(&*self.inner).await
    }

    fn listed_tool(&self, server: &str, tool: &str) -> Option<Tool> {
        self.layer.listed_tool(&*self.inner, server, tool)
    }

    async fn resolve_tool(&self, qualified_name: &str) -> Option<(String, String)> {
        self.layer.resolve_tool(&*self.inner, qualified_name).await
    }

    fn unavailable_tool(&self, qualified_name: &str) -> Option<String> {
        self.layer.unavailable_tool(&*self.inner, qualified_name)
    }

    fn skills(&self) -> Option<&dyn SkillsBackend> {
        self.inner.skills()
    }

    fn prompts(&self) -> Option<&dyn PromptsBackend> {
        self.inner.prompts()
    }

    fn tasks(&self) -> Option<&dyn TasksBackend> {
        self.inner.tasks()
    }

    fn apps(&self) -> Option<&dyn AppsBackend> {
        self.inner.apps()
    }

    fn take_resource_changes(&self) -> Vec<ResourceChange> {
        self.layer.take_resource_changes(&*self.inner)
    }

    fn held(&self, kind: DefinitionKind) -> Vec<HeldNote> {
        self.layer.held(&*self.inner, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend of one server, `notes`, that knows only calls: everything else is unknown.
    struct Notes;

    #[async_trait]
    impl McpBackend for Notes {
        async fn list(&self, s: &str, _: ListKind, _: Option<String>) -> Result<Page, McpError> {
            Err(McpError::UnknownServer(s.to_string()))
        }
        async fn listing(
            &self,
            s: &str,
            _: ListKind,
            _: Option<String>,
        ) -> Result<SharedListing, McpError> {
            Err(McpError::UnknownServer(s.to_string()))
        }
        fn kept_listing(&self, _: &str, _: ListKind) -> Option<SharedListing> {
            None
        }
        async fn list_all(&self, _: ListKind, _: Reuse) -> Result<Aggregate, McpError> {
            Ok(Vec::new())
        }
        async fn read_resource(&self, s: &str, _: &str) -> Result<ReadResourceResult, McpError> {
            Err(McpError::UnknownServer(s.to_string()))
        }
        async fn call_tool(
            &self,
            _: &str,
            tool: &str,
            _: Option<JsonObject>,
        ) -> Result<CallToolResult, McpError> {
            let text = rmcp::model::ContentBlock::text(format!("{tool} ran"));
            Ok(CallToolResult::success(vec![text]))
        }
        async fn complete_resource_argument(
            &self,
            s: &str,
            _: &str,
            _: &str,
            _: &str,
        ) -> Result<CompletionInfo, McpError> {
            Err(McpError::UnknownServer(s.to_string()))
        }
        async fn supports_completions(&self) -> bool {
            false
        }
        async fn list_tools(&self) -> Vec<QualifiedTool> {
            Vec::new()
        }
        async fn resolve_tool(&self, _: &str) -> Option<(String, String)> {
            None
        }
    }

    /// A layer that changes one method: calls of `delete` are refused, the rest go on.
    struct NoDelete;

    #[async_trait]
    impl BackendLayer for NoDelete {
        async fn call_tool(
            &self,
            inner: &dyn McpBackend,
            server: &str,
            tool: &str,
            arguments: Option<JsonObject>,
        ) -> Result<CallToolResult, McpError> {
            if tool == "delete" {
                let message = "deleting is not allowed here".to_string();
                return Err(McpError::Refused { server: server.to_string(), message });
            }
            inner.call_tool(server, tool, arguments).await
        }
    }

    #[tokio::test]
    async fn a_layer_changes_what_it_names_and_forwards_the_rest() {
        let backend = Layered::new(Arc::new(Notes), NoDelete);
        let ran = backend.call_tool("notes", "add", None).await.expect("forwarded");
        let text = serde_json::to_value(&ran.content).expect("json")[0]["text"].clone();
        assert_eq!(text, "add ran");
        let refused = backend.call_tool("notes", "delete", None).await;
        assert!(matches!(refused, Err(McpError::Refused { .. })), "{refused:?}");
        // Forwarded as the inner backend answers.
        let read = backend.read_resource("nope", "x://").await;
        assert!(matches!(read, Err(McpError::UnknownServer(s)) if s == "nope"));
        assert!(backend.list_all(ListKind::Resources, Reuse::Never).await.expect("ok").is_empty());
        assert!(backend.skills().is_none() && backend.held(DefinitionKind::Tool).is_empty());
    }
}
