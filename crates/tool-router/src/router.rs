//! The router: a private map from tool name to handler, plus the MCP route for qualified names.
//! Dispatch reads as resolve → parse → invoke: the name picks the route, the route parses the
//! arguments once (with its own error wording), the handler gets them typed by kind.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_backend::{ListKind, McpBackend, McpError, looks_qualified};
use serde_json::Value;

use crate::handler::ToolHandler;
use crate::handlers::completion::McpCompletionHandler;
use crate::handlers::data::{DataSources, data_tools};
use crate::handlers::mcp::McpHandler;
use crate::handlers::prompt::PromptHandler;
use crate::handlers::read::{McpReadHandler, ReadOptions};
use crate::handlers::tasks::AwaitTaskHandler;
use crate::invocation::{CallContext, FunctionCallError, ToolCall, ToolOutput};
use crate::ledger::{Ledger, ROUTER, SpecSeen};
use crate::lists::handler::McpListHandler;
use crate::results::content::ContentPolicy;
use crate::results::kept::{KeptLimits, KeptResults};
use crate::results::links::LinkedResources;
use crate::search::handler::SearchToolsHandler;
use crate::search::mode::{McpTools, SearchVia, ToolSearch};
use crate::settings::RouterSettings;
use crate::skills::handler::{ListSkillsHandler, LoadSkillHandler};
use crate::spec::{ToolFormat, ToolSpec, api_search_tool, openai_namespace};

/// The router could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot set up the tool router: {0}")]
pub struct SetupError(String);

/// A registration the router refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// Two handlers for one name.
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
    /// Names with the MCP prefix are reserved for qualified MCP tools.
    #[error("`{0}` is reserved: names starting with `mcp__` belong to MCP tools")]
    Reserved(String),
}

struct Registered {
    spec: ToolSpec,
    handler: Arc<dyn ToolHandler>,
}

/// The route for qualified names: the backend resolves and lists them, the handler calls them.
struct McpRoute {
    handler: Arc<McpHandler>,
    backend: Arc<dyn McpBackend>,
}

mod route;

/// Routes model tool calls to handlers.
#[derive(Default)]
pub struct ToolRouter {
    handlers: BTreeMap<String, Registered>,
    mcp: Option<McpRoute>,
    /// `false` when the `event_result_text` setting leaves results out of end events.
    omit_result_text: bool,
    /// The `event_payload_bytes` setting, when it is not the default.
    event_payload_bytes: Option<usize>,
    /// Tool search: which MCP tools the specs show, and the revealed ones.
    search: Arc<ToolSearch>,
    /// What MCP costs: every call dispatched and every tool list made, added up.
    ledger: Arc<Ledger>,
}

impl ToolRouter {
    /// An empty router: no MCP route, no tools until registered.
    pub fn new() -> Self {
        Self::default()
    }

    /// The standard router over an MCP backend with default settings and no data sources:
    /// the resource tools, completion, and qualified MCP tools.
    pub fn with_mcp(backend: Arc<dyn McpBackend>) -> Self {
        Self::build(
            backend,
            ContentPolicy::default(),
            None,
            KeptLimits::default(),
            ToolSearch::default(),
        )
    }

    /// The standard router with `settings` (read budget, blobs, data sources). Fails only if the
    /// data-source database cannot be created.
    pub fn with_mcp_settings(
        backend: Arc<dyn McpBackend>,
        settings: &RouterSettings,
    ) -> Result<Self, SetupError> {
        let data = data_sources(settings)?;
        let mut router = Self::build(
            backend,
            ContentPolicy::from(settings),
            data,
            settings.results.kept,
            ToolSearch::new(
                settings.search.mode,
                settings.search.threshold_bytes,
                settings.search.always_load_servers.clone(),
            )
            .via(settings.search.via)
            .model(settings.search.model, settings.search.embeddings_dir.clone()),
        );
        if let Some(mcp) = &router.mcp {
            let backend = mcp.backend.clone();
            let mut optional: Vec<(ToolSpec, Arc<dyn ToolHandler>)> = Vec::new();
            if settings.tools.list_skills {
                optional.push((
                    ListSkillsHandler::spec(),
                    Arc::new(ListSkillsHandler::new(backend.clone())),
                ));
            }
            if settings.tools.get_prompt {
                let prompts = Arc::new(PromptHandler::new(backend.clone()));
                optional.push((PromptHandler::spec(), prompts));
            }
            // Offered only while the backend hands calls to the background (its `tasks`).
            let awaiting = AwaitTaskHandler::new(backend, mcp.handler.clone());
            optional.push((AwaitTaskHandler::spec(), Arc::new(awaiting)));
            for (spec, handler) in optional {
                router.handlers.insert(spec.name.clone(), Registered { spec, handler });
            }
        }
        router.ledger = Arc::new(Ledger::with_settings(&settings.ledger));
        router.omit_result_text = !settings.events.result_text;
        router.event_payload_bytes = (settings.events.payload_bytes
            != crate::results::event_bounds::DEFAULT_EVENT_PAYLOAD_BYTES)
            .then_some(settings.events.payload_bytes);
        Ok(router)
    }

    pub(crate) fn build(
        backend: Arc<dyn McpBackend>,
        policy: ContentPolicy,
        data: Option<Arc<DataSources>>,
        kept: KeptLimits,
        search: ToolSearch,
    ) -> Self {
        let search = Arc::new(search);
        let mut tools: Vec<(ToolSpec, Arc<dyn ToolHandler>)> = Vec::new();
        for kind in [ListKind::Resources, ListKind::Templates] {
            let handler = Arc::new(McpListHandler::new(backend.clone(), kind, &policy));
            tools.push((McpListHandler::spec(kind), handler));
        }
        let kept = Arc::new(KeptResults::new(kept));
        let links = Arc::new(LinkedResources::default());
        let skills = Arc::new(crate::skills::LoadedSkills::default());
        let options = ReadOptions {
            policy: policy.clone(),
            data: data.clone(),
            kept: kept.clone(),
            links: links.clone(),
            skills: skills.clone(),
        };
        tools.push((
            McpReadHandler::spec(),
            Arc::new(McpReadHandler::new(backend.clone(), options)),
        ));
        tools.extend(data_tools(data));
        let completion = Arc::new(McpCompletionHandler::new(backend.clone()));
        tools.push((McpCompletionHandler::spec(), completion));
        let searching = Arc::new(SearchToolsHandler::new(backend.clone(), search.clone()));
        tools.push((SearchToolsHandler::spec(), searching));
        let loading = Arc::new(LoadSkillHandler::new(backend.clone(), skills));
        tools.push((LoadSkillHandler::spec(), loading));
        let handlers = tools
            .into_iter()
            .map(|(spec, handler)| (spec.name.clone(), Registered { spec, handler }))
            .collect();
        let handler = Arc::new(McpHandler::new(backend.clone(), policy, kept, links));
        let mcp = McpRoute { handler, backend };
        Self {
            handlers,
            mcp: Some(mcp),
            omit_result_text: false,
            event_payload_bytes: None,
            search,
            ledger: Arc::default(),
        }
    }

    /// The ledger: what each server and tool cost so far (see [`crate::ledger`]).
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// The MCP backend, when the router has one (for the host-side APIs beside dispatch).
    pub(crate) fn backend(&self) -> Option<&Arc<dyn McpBackend>> {
        self.mcp.as_ref().map(|m| &m.backend)
    }

    /// The MCP backend for a host-side request to `server`; without one, `server` is unknown.
    pub(crate) fn backend_for(&self, server: &str) -> Result<&Arc<dyn McpBackend>, McpError> {
        self.backend().ok_or_else(|| McpError::UnknownServer(server.to_string()))
    }

    /// Register `handler` under `spec.name`. A name already taken, or one with the `mcp__`
    /// prefix of qualified MCP tools, is refused.
    pub fn register(
        &mut self,
        spec: ToolSpec,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<(), RegistrationError> {
        if looks_qualified(&spec.name) {
            return Err(RegistrationError::Reserved(spec.name));
        }
        if self.handlers.contains_key(&spec.name) {
            return Err(RegistrationError::Duplicate(spec.name));
        }
        self.handlers.insert(spec.name.clone(), Registered { spec, handler });
        Ok(())
    }

    /// Every tool spec: the base set sorted by name (stable prompts), then, with tool search on,
    /// the revealed MCP tools in the order they were revealed. MCP tools come from the backend:
    /// with search off (or `auto` under its threshold) `list_tools` — servers with a tool
    /// catalog are listed from it at once, a starting server without one is waited for, and a
    /// lazy server without one is started to learn its tools; with search on only the
    /// always-loaded servers' tools, from what is known, starting nothing. No server is
    /// restarted.
    pub async fn specs(&self) -> Vec<ToolSpec> {
        let mcp_tools = match &self.mcp {
            Some(mcp) => self.search.mcp_tools(mcp.backend.as_ref()).await,
            None => McpTools::All(Vec::new()),
        };
        let mut specs = Vec::new();
        for registered in self.handlers.values() {
            if registered.handler.offered().await {
                specs.push(registered.spec.clone());
            }
        }
        let (McpTools::All(tools) | McpTools::Deferred(tools)) = &mcp_tools;
        specs.extend(tools.iter().map(|t| ToolSpec::for_mcp_tool(&t.qualified_name, &t.tool)));
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        if matches!(mcp_tools, McpTools::Deferred(_)) {
            specs.extend(self.search.revealed_specs());
        }
        specs
    }

    /// The tool list in `format`, as a host sends it to the model API: [`ToolRouter::specs`]
    /// in that format; and, with tool search on and `tool_search_via` = `api` or `both`, every
    /// MCP tool not already in it marked `defer_loading: true` (OpenAI: one namespace per
    /// server) after the API's own tool-search tool.
    pub async fn tool_list(&self, format: ToolFormat) -> Vec<Value> {
        let specs = self.specs().await;
        let mut out: Vec<Value> = specs.iter().map(|s| s.to_format(format)).collect();
        self.count_tool_list(&specs, &out, format).await;
        let Some(mcp) = &self.mcp else { return out };
        if !self.search.active() || self.search.via == SearchVia::Router {
            return out;
        }
        out.push(api_search_tool(format));
        let shown: std::collections::HashSet<&str> =
            specs.iter().map(|s| s.name.as_str()).collect();
        let known = mcp.backend.known_tools().await;
        let mut by_server: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
        for tool in known.tools.iter().filter(|t| !shown.contains(t.qualified_name.as_str())) {
            let spec = ToolSpec::for_mcp_tool(&tool.qualified_name, &tool.tool);
            by_server.entry(&tool.server).or_default().push(spec.to_format_deferred(format));
        }
        for (server, tools) in by_server {
            match format {
                ToolFormat::OpenAi => out.push(openai_namespace(server, tools)),
                ToolFormat::Anthropic => out.extend(tools),
            }
        }
        out
    }

    /// The ledger learns the tool list the model is given: `specs` as `shown` (each spec as the
    /// host sent it: in a provider's format, or as an MCP `Tool`), by server, and what the specs
    /// of the tools behind search would take in `format`. [`ToolRouter::tool_list`] tells it
    /// itself; a host that gives the model [`ToolRouter::specs`] in a shape of its own calls this.
    pub async fn count_tool_list(&self, specs: &[ToolSpec], shown: &[Value], format: ToolFormat) {
        let known = match &self.mcp {
            Some(mcp) => mcp.backend.known_tools().await.tools,
            None => Arc::default(),
        };
        let server_of: std::collections::HashMap<&str, &str> =
            known.iter().map(|t| (t.qualified_name.as_str(), t.server.as_str())).collect();
        let mut seen: Vec<SpecSeen> = specs
            .iter()
            .zip(shown)
            .map(|(spec, value)| SpecSeen {
                server: server_of.get(spec.name.as_str()).copied().unwrap_or(ROUTER).to_string(),
                loaded: true,
                text: value.to_string(),
            })
            .collect();
        let loaded: std::collections::HashSet<&str> =
            specs.iter().map(|s| s.name.as_str()).collect();
        for tool in known.iter().filter(|t| !loaded.contains(t.qualified_name.as_str())) {
            let spec = ToolSpec::for_mcp_tool(&tool.qualified_name, &tool.tool);
            let text = spec.to_format(format).to_string();
            seen.push(SpecSeen { server: tool.server.clone(), loaded: false, text });
        }
        self.ledger.specs(seen);
    }

    /// With tool search on: the MCP tools revealed so far, in the order they were appended to
    /// the specs; `None` while search is off.
    pub fn revealed_tools(&self) -> Option<Vec<String>> {
        self.search.revealed_names()
    }

    /// How many tools search has revealed (`None` while tool search is off): what
    /// [`ToolRouter::revealed_tools`] would count, without copying them.
    pub fn revealed_count(&self) -> Option<usize> {
        self.search.revealed_count()
    }

    /// A new conversation: forget the revealed tools (the specs go back to the base set).
    /// Returns how many were forgotten.
    pub fn reset_revealed_tools(&self) -> usize {
        self.search.reset()
    }

    /// Run one model tool call. `Err(RespondToModel)` is for the model to read (see
    /// [`ToolRouter::dispatch_to_output`]); `Err(Fatal)` means the turn cannot go on.
    pub async fn dispatch(
        &self,
        ctx: &CallContext,
        call: ToolCall,
    ) -> Result<ToolOutput, FunctionCallError> {
        let omit = self.omit_result_text && ctx.result_text();
        let bound = self.event_payload_bytes.filter(|_| !ctx.has_event_payload_bytes());
        let own;
        let ctx = if (omit || bound.is_some()) && ctx.has_listener() {
            let mut with = ctx.clone().with_result_text(ctx.result_text() && !omit);
            if let Some(bytes) = bound {
                with = with.with_event_payload_bytes(bytes);
            }
            own = with;
            &own
        } else {
            ctx
        };
        // Boxed: an agent spawns a task per call, and a spawned future is moved by value
        // several times on its way into the task (and its stage once more when it ends): with
        // the route inline that was a kilobyte copied four to six times a call.
        Box::pin(self.traced_route(ctx, call)).await
    }

    /// Like [`ToolRouter::dispatch`], with `RespondToModel` turned into the failed output the
    /// model reads (the one place that happens); only `Fatal` remains an error.
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
}

/// The data-source database `settings` ask for (`data_sources`, on by default).
#[cfg(feature = "data-sources")]
fn data_sources(settings: &RouterSettings) -> Result<Option<Arc<DataSources>>, SetupError> {
    if !settings.data.enabled {
        return Ok(None);
    }
    let limits = data_sources::QueryLimits {
        max_rows: settings.data.max_rows,
        timeout: settings.data.timeout,
    };
    Ok(Some(Arc::new(DataSources::new(limits).map_err(|e| SetupError(e.to_string()))?)))
}

/// None: this build has no data sources (the `data-sources` feature), whatever `settings` say.
#[cfg(not(feature = "data-sources"))]
fn data_sources(_: &RouterSettings) -> Result<Option<Arc<DataSources>>, SetupError> {
    Ok(None)
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;

    use super::*;
    use crate::invocation::ToolInvocation;
    use crate::test_support::{FakeBackend, FakeServer, context, tool};
    use router_protocol::EventMsg;

    fn router() -> ToolRouter {
        let server = FakeServer { tools: vec![tool("echo"), tool("fail")], ..Default::default() };
        ToolRouter::with_mcp(FakeBackend::with(vec![("figma", server)]))
    }

    struct Noop;

    #[async_trait]
    impl ToolHandler for Noop {
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
        let noop = || Arc::new(Noop) as Arc<dyn ToolHandler>;
        assert_eq!(
            router.register(spec("read_mcp_resource"), noop()),
            Err(RegistrationError::Duplicate("read_mcp_resource".into()))
        );
        assert_eq!(
            router.register(spec("mcp__x__y"), noop()),
            Err(RegistrationError::Reserved("mcp__x__y".into()))
        );
        assert_eq!(router.register(spec("other"), noop()), Ok(()));
        assert_eq!(
            router.register(spec("other"), noop()),
            Err(RegistrationError::Duplicate("other".into()))
        );
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
        let (ctx, mut rx) = context();
        for name in ["nope", "mcp__other__echo", "mcp__figma__", "mcp__", ""] {
            let call = ToolCall { call_id: "c1".into(), name: name.into(), arguments: "".into() };
            let err = router().dispatch(&ctx, call.clone()).await.expect_err("unsupported");
            assert_eq!(err, FunctionCallError::RespondToModel(format!("unsupported call: {name}")));
            let output = router().dispatch_to_output(&ctx, call).await.expect("output");
            assert_eq!(output, ToolOutput::failure(format!("unsupported call: {name}")));
            // An MCP name no server answers gets its begin/end pair (a read naming an unknown
            // server does too); a name that is not an MCP name gets none.
            let events = crate::test_support::drain(&mut rx);
            if !name.starts_with("mcp__") {
                assert!(events.is_empty(), "{name}: {events:?}");
                continue;
            }
            assert_eq!(events.len(), 4, "two calls, a pair each: {events:?}");
            let [EventMsg::McpToolCallBegin(begin), EventMsg::McpToolCallEnd(end), ..] =
                events.as_slice()
            else {
                panic!("{name}: {events:?}")
            };
            let (server, tool) = name["mcp__".len()..].split_once("__").unwrap_or(("", ""));
            let server = if name == "mcp__" { "" } else { server };
            assert_eq!(begin.invocation.server.as_deref(), Some(server), "{name}");
            assert_eq!((begin.invocation.tool.as_str(), end.call_id.as_str()), (tool, "c1"));
            assert_eq!(end.result, Err(format!("unsupported call: {name}")));
        }
    }

    #[tokio::test]
    async fn unlisted_tools_of_a_configured_server_go_to_that_server() {
        // The same rule as the connection manager's: the server answers for its own tools.
        let (ctx, _rx) = context();
        let call = ToolCall {
            call_id: "c1".into(),
            name: "mcp__figma__nope".into(),
            arguments: "".into(),
        };
        let output = router().dispatch(&ctx, call).await.expect("the server's answer");
        let ToolOutput::Mcp { result: Ok(result) } = output else { panic!("{output:?}") };
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            serde_json::to_value(&result.content).expect("json")[0]["text"],
            "unknown tool: nope"
        );
    }

    #[tokio::test]
    async fn a_shut_down_backend_is_fatal_for_every_route() {
        let server = FakeServer { tools: vec![tool("echo")], ..Default::default() };
        let backend = FakeBackend::with(vec![("figma", server)]);
        let router = ToolRouter::with_mcp(backend.clone());
        backend.shut_down();
        let (ctx, _rx) = context();
        for (name, arguments) in [
            ("mcp__figma__echo", r#"{"text":"x"}"#),
            ("list_mcp_resources", ""),
            ("list_mcp_resources", r#"{"server":"figma"}"#),
            ("list_mcp_resource_templates", ""),
            ("read_mcp_resource", r#"{"server":"figma","uri":"memo://1"}"#),
        ] {
            let call =
                ToolCall { call_id: "c".into(), name: name.into(), arguments: arguments.into() };
            let err = router.dispatch_to_output(&ctx, call).await.expect_err(name);
            assert_eq!(
                err,
                FunctionCallError::Fatal("the MCP servers have been shut down".into()),
                "{name}"
            );
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
