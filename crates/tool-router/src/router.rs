//! The router: a private map from tool name to handler, plus the MCP route for qualified names.
//! Dispatch reads as resolve → validate → invoke.

use std::collections::BTreeMap;
use std::sync::Arc;

use data_sources::{DataSources, QueryLimits};
use mcp_connection_manager::{RouterSettings, looks_qualified};

use crate::backend::McpBackend;
use crate::content::ContentPolicy;
use crate::handler::{ToolHandler, ToolKind};
use crate::handlers::data::McpDataHandler;
use crate::handlers::mcp::McpHandler;
use crate::handlers::mcp_completion::McpCompletionHandler;
use crate::handlers::mcp_resource::{McpResourceHandler, ReadOptions};
use crate::invocation::{
    CallContext, FunctionCallError, ToolCall, ToolInvocation, ToolOutput, ToolPayload,
};
use crate::spec::ToolSpec;

/// The router could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot set up the tool router: {0}")]
pub struct SetupError(String);

/// A registration the router refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// Two handlers for one name.
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
    /// Names with the MCP prefix are reserved for qualified MCP tools.
    #[error("`{0}` is reserved: names starting with `mcp__` belong to MCP tools")]
    Reserved(String),
    /// A second MCP route.
    #[error("an MCP tool route is already set")]
    DuplicateMcpRoute,
    /// The handler does not accept the payload its route produces.
    #[error("`{0}`: the handler does not accept this route's payload kind")]
    WrongKind(String),
}

struct Registered {
    spec: ToolSpec,
    handler: Arc<dyn ToolHandler>,
}

struct McpRoute {
    handler: Arc<dyn ToolHandler>,
    backend: Arc<dyn McpBackend>,
}

/// Routes model tool calls to handlers.
#[derive(Default)]
pub struct ToolRouter {
    handlers: BTreeMap<String, Registered>,
    mcp: Option<McpRoute>,
}

impl ToolRouter {
    /// An empty router.
    pub fn new() -> Self {
        Self::default()
    }

    /// The standard router over an MCP backend with default settings and no data sources:
    /// the resource tools, completion, and qualified MCP tools.
    pub fn with_mcp(backend: Arc<dyn McpBackend>) -> Self {
        Self::build(backend, ContentPolicy::default(), None)
    }

    /// The standard router with `settings` (read budget, blobs, data sources). Fails only if the
    /// data-source database cannot be created.
    pub fn with_mcp_settings(
        backend: Arc<dyn McpBackend>,
        settings: &RouterSettings,
    ) -> Result<Self, SetupError> {
        let data = if settings.data_sources {
            let limits =
                QueryLimits { max_rows: settings.query_max_rows, timeout: settings.query_timeout };
            Some(Arc::new(DataSources::new(limits).map_err(|e| SetupError(e.to_string()))?))
        } else {
            None
        };
        Ok(Self::build(backend, ContentPolicy::from(settings), data))
    }

    pub(crate) fn build(
        backend: Arc<dyn McpBackend>,
        policy: ContentPolicy,
        data: Option<Arc<DataSources>>,
    ) -> Self {
        let mut router = Self::new();
        // Fresh router, fixed distinct names: these registrations cannot fail.
        let options = ReadOptions { policy: policy.clone(), data: data.clone() };
        let resources: Arc<dyn ToolHandler> =
            Arc::new(McpResourceHandler::with_options(backend.clone(), options));
        for spec in McpResourceHandler::specs() {
            let _ = router.register(spec, resources.clone());
        }
        let data_tools: Arc<dyn ToolHandler> = Arc::new(McpDataHandler::new(data));
        for spec in McpDataHandler::specs() {
            let _ = router.register(spec, data_tools.clone());
        }
        let completion: Arc<dyn ToolHandler> = Arc::new(McpCompletionHandler::new(backend.clone()));
        let _ = router.register(McpCompletionHandler::spec(), completion);
        let mcp = Arc::new(McpHandler::with_policy(backend.clone(), policy));
        let _ = router.set_mcp_route(mcp, backend);
        router
    }

    /// Register `handler` under `spec.name`. A name already taken is refused.
    pub fn register(
        &mut self,
        spec: ToolSpec,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<(), RegistrationError> {
        if looks_qualified(&spec.name) {
            return Err(RegistrationError::Reserved(spec.name));
        }
        if handler.kind() != ToolKind::Function {
            return Err(RegistrationError::WrongKind(spec.name));
        }
        if self.handlers.contains_key(&spec.name) {
            return Err(RegistrationError::Duplicate(spec.name));
        }
        self.handlers.insert(spec.name.clone(), Registered { spec, handler });
        Ok(())
    }

    /// Route qualified MCP tool names (`mcp__server__tool`) to `handler`, resolving them and
    /// listing their specs through `backend`.
    pub fn set_mcp_route(
        &mut self,
        handler: Arc<dyn ToolHandler>,
        backend: Arc<dyn McpBackend>,
    ) -> Result<(), RegistrationError> {
        if self.mcp.is_some() {
            return Err(RegistrationError::DuplicateMcpRoute);
        }
        if handler.kind() != ToolKind::Mcp {
            return Err(RegistrationError::WrongKind("mcp__*".to_string()));
        }
        self.mcp = Some(McpRoute { handler, backend });
        Ok(())
    }

    /// Every tool spec, sorted by name (stable prompts). MCP tools are listed once every server
    /// has finished starting.
    pub async fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        for registered in self.handlers.values() {
            if registered.handler.offered().await {
                specs.push(registered.spec.clone());
            }
        }
        if let Some(mcp) = &self.mcp {
            for tool in mcp.backend.list_tools().await {
                specs.push(ToolSpec::for_mcp_tool(&tool.qualified_name, &tool.tool));
            }
        }
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs
    }

    /// Run one model tool call.
    pub async fn dispatch(
        &self,
        ctx: &CallContext,
        call: ToolCall,
    ) -> Result<ToolOutput, FunctionCallError> {
        let (handler, invocation) = self.resolve(call).await?;
        validate(handler.as_ref(), &invocation)?;
        handler.handle(ctx, invocation).await
    }

    /// Like [`ToolRouter::dispatch`], with `RespondToModel` turned into the failed output the
    /// model reads; only `Fatal` remains an error.
    pub async fn dispatch_to_output(
        &self,
        ctx: &CallContext,
        call: ToolCall,
    ) -> Result<ToolOutput, FunctionCallError> {
        match self.dispatch(ctx, call).await {
            Err(FunctionCallError::RespondToModel(message)) => Ok(ToolOutput::failure(message)),
            other => other,
        }
    }

    async fn resolve(
        &self,
        call: ToolCall,
    ) -> Result<(Arc<dyn ToolHandler>, ToolInvocation), FunctionCallError> {
        let ToolCall { call_id, name, arguments } = call;
        if let Some(registered) = self.handlers.get(&name)
            && registered.handler.offered().await
        {
            let payload = ToolPayload::Function { arguments };
            let invocation = ToolInvocation { call_id, tool_name: name, payload };
            return Ok((registered.handler.clone(), invocation));
        }
        if let Some(mcp) = &self.mcp
            && looks_qualified(&name)
            && let Some((server, tool)) = mcp.backend.resolve_tool(&name).await
        {
            let payload = ToolPayload::Mcp { server, tool, raw_arguments: arguments };
            let invocation = ToolInvocation { call_id, tool_name: name, payload };
            return Ok((mcp.handler.clone(), invocation));
        }
        Err(FunctionCallError::RespondToModel(format!("unsupported call: {name}")))
    }
}

fn validate(
    handler: &dyn ToolHandler,
    invocation: &ToolInvocation,
) -> Result<(), FunctionCallError> {
    let matches = matches!(
        (handler.kind(), &invocation.payload),
        (ToolKind::Function, ToolPayload::Function { .. })
            | (ToolKind::Mcp, ToolPayload::Mcp { .. })
    );
    if matches {
        Ok(())
    } else {
        Err(FunctionCallError::RespondToModel(format!(
            "tool {} invoked with incompatible payload",
            invocation.tool_name
        )))
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;

    use super::*;
    use crate::test_support::{FakeBackend, FakeServer, context, tool};

    fn router() -> ToolRouter {
        let server = FakeServer { tools: vec![tool("echo"), tool("fail")], ..Default::default() };
        ToolRouter::with_mcp(FakeBackend::with(vec![("figma", server)]))
    }

    struct Noop(ToolKind);

    #[async_trait]
    impl ToolHandler for Noop {
        fn kind(&self) -> ToolKind {
            self.0
        }
        async fn handle(
            &self,
            _: &CallContext,
            _: ToolInvocation,
        ) -> Result<ToolOutput, FunctionCallError> {
            Ok(ToolOutput::failure("noop"))
        }
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_string(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn bad_routes_fail_at_registration() {
        let mut router = router();
        let noop = |k| Arc::new(Noop(k)) as Arc<dyn ToolHandler>;
        assert_eq!(
            router.register(spec("read_mcp_resource"), noop(ToolKind::Function)),
            Err(RegistrationError::Duplicate("read_mcp_resource".into()))
        );
        assert_eq!(
            router.register(spec("mcp__x__y"), noop(ToolKind::Function)),
            Err(RegistrationError::Reserved("mcp__x__y".into()))
        );
        assert_eq!(
            router.register(spec("other"), noop(ToolKind::Mcp)),
            Err(RegistrationError::WrongKind("other".into()))
        );
        assert_eq!(
            router.set_mcp_route(noop(ToolKind::Mcp), FakeBackend::with(vec![])),
            Err(RegistrationError::DuplicateMcpRoute)
        );
        assert_eq!(router.register(spec("other"), noop(ToolKind::Function)), Ok(()));
    }

    #[tokio::test]
    async fn specs_are_sorted_and_include_mcp_tools() {
        let names: Vec<String> = router().specs().await.into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "list_mcp_resource_templates",
                "list_mcp_resources",
                "mcp__figma__echo",
                "mcp__figma__fail",
                "read_mcp_resource"
            ]
        );
    }

    #[tokio::test]
    async fn completion_tool_follows_the_capability() {
        let server = FakeServer { completions: Some(vec!["a".into()]), ..Default::default() };
        let router = ToolRouter::with_mcp(FakeBackend::with(vec![("docs", server)]));
        let names: Vec<String> = router.specs().await.into_iter().map(|s| s.name).collect();
        assert!(names.contains(&"complete_mcp_resource_argument".to_string()), "{names:?}");
        // Without the capability the tool is neither listed nor dispatched.
        let (ctx, _rx) = context();
        let call = ToolCall {
            call_id: "c".into(),
            name: "complete_mcp_resource_argument".into(),
            arguments: "{}".into(),
        };
        let err = super::tests::router().dispatch(&ctx, call).await.expect_err("not offered");
        assert_eq!(
            err,
            FunctionCallError::RespondToModel(
                "unsupported call: complete_mcp_resource_argument".into()
            )
        );
    }

    #[tokio::test]
    async fn dispatch_resolves_qualified_names() {
        let (ctx, _rx) = context();
        let call = ToolCall {
            call_id: "c1".into(),
            name: "mcp__figma__echo".into(),
            arguments: r#"{"text":"x"}"#.into(),
        };
        let output = router().dispatch(&ctx, call).await.expect("ok");
        let ToolOutput::Mcp { result: Ok(result) } = output else { panic!("{output:?}") };
        assert_eq!(serde_json::to_value(&result.content).expect("json")[0]["text"], "Echo: x");
    }

    #[tokio::test]
    async fn unknown_tools_are_unsupported_calls() {
        let (ctx, _rx) = context();
        for name in ["nope", "mcp__figma__nope", "mcp__", ""] {
            let call =
                ToolCall { call_id: "c1".into(), name: name.into(), arguments: String::new() };
            let err = router().dispatch(&ctx, call.clone()).await.expect_err("unsupported");
            assert_eq!(err, FunctionCallError::RespondToModel(format!("unsupported call: {name}")));
            let output = router().dispatch_to_output(&ctx, call).await.expect("output");
            assert_eq!(output, ToolOutput::failure(format!("unsupported call: {name}")));
        }
    }

    #[tokio::test]
    async fn tool_formats() {
        let specs = router().specs().await;
        let echo = specs.iter().find(|s| s.name == "mcp__figma__echo").expect("echo");
        insta::assert_json_snapshot!("mcp_tool_openai", echo.to_format(crate::ToolFormat::OpenAi));
        insta::assert_json_snapshot!(
            "mcp_tool_anthropic",
            echo.to_format(crate::ToolFormat::Anthropic)
        );
    }
}
