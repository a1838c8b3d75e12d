//! The bench MCP server: `serve --resources N --page-size P --page-delay-ms D --payload-bytes B`.
//! Resources `bench://r/{i}`; every read returns `B` bytes of text; every list page waits `D` ms.
//! With `--subscribe 1` it also accepts `resources/subscribe` (2025-11-25) and
//! `subscriptions/listen` (2026-07-28), and offers one tool, `updates {per_sec}`, which starts
//! (or, with 0, stops) a stream of `notifications/resources/updated` going round the URIs
//! subscribed with `resources/subscribe`; it answers `subscribed N sent M`.
//!
//! It reads and writes its standard input and output as non-blocking pipes (tokio's
//! `unix::pipe`), as a server built on an event loop (node's, Python's asyncio) does.
//! `--blocking-stdio 1` serves on rmcp's `stdio()` instead — tokio's `stdin`/`stdout`, which hand
//! every read and every write to a thread of tokio's blocking pool. On this 2-core VM those
//! hand-offs, not either client, set the wall time of reads sent at once: every answer waited
//! for a thread to wake (docs/benchmarks.md, 2026-11-27).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

/// How the server behaves.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) resources: usize,
    pub(crate) page_size: usize,
    pub(crate) page_delay: Duration,
    pub(crate) payload_bytes: usize,
    /// Time the server takes before it answers `initialize` (a real server loads code first).
    pub(crate) startup_delay: Duration,
    /// Accept subscriptions and offer the `updates` tool.
    pub(crate) subscribe: bool,
    /// Also list this many tools, `t0`, `t1`, … (they cannot be called).
    pub(crate) tools: usize,
    /// Serve on tokio's blocking `stdin`/`stdout` (rmcp's `stdio()`), not on non-blocking pipes.
    pub(crate) blocking_stdio: bool,
}

impl Options {
    pub(crate) fn parse(args: &[String]) -> anyhow::Result<Self> {
        let mut options = Self {
            resources: 10,
            page_size: 100,
            page_delay: Duration::ZERO,
            payload_bytes: 100,
            startup_delay: Duration::ZERO,
            subscribe: false,
            tools: 0,
            blocking_stdio: false,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value: u64 =
                it.next().ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))?.parse()?;
            match flag.as_str() {
                "--resources" => options.resources = usize::try_from(value)?,
                "--page-size" => options.page_size = usize::try_from(value)?.max(1),
                "--page-delay-ms" => options.page_delay = Duration::from_millis(value),
                "--payload-bytes" => options.payload_bytes = usize::try_from(value)?,
                "--startup-delay-ms" => options.startup_delay = Duration::from_millis(value),
                "--subscribe" => options.subscribe = value != 0,
                "--tools" => options.tools = usize::try_from(value)?,
                "--blocking-stdio" => options.blocking_stdio = value != 0,
                other => anyhow::bail!("unknown flag {other}"),
            }
        }
        Ok(options)
    }

    pub(crate) fn args(&self) -> Vec<String> {
        vec![
            "serve".into(),
            "--resources".into(),
            self.resources.to_string(),
            "--page-size".into(),
            self.page_size.to_string(),
            "--page-delay-ms".into(),
            self.page_delay.as_millis().to_string(),
            "--payload-bytes".into(),
            self.payload_bytes.to_string(),
            "--startup-delay-ms".into(),
            self.startup_delay.as_millis().to_string(),
            "--subscribe".into(),
            u8::from(self.subscribe).to_string(),
            "--tools".into(),
            self.tools.to_string(),
            "--blocking-stdio".into(),
            u8::from(self.blocking_stdio).to_string(),
        ]
    }
}

#[derive(Clone)]
struct BenchServer {
    options: Arc<Options>,
    payload: Arc<str>,
    updates: Arc<Updates>,
}

/// The subscriptions and the running update stream.
#[derive(Default)]
struct Updates {
    subscribed: Mutex<Vec<String>>,
    sent: Arc<AtomicU64>,
    stream: Mutex<Option<(Arc<AtomicBool>, tokio::task::JoinHandle<()>)>>,
}

impl Updates {
    fn subscribed(&self) -> Vec<String> {
        self.subscribed.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Replace the running stream with one of `per_sec` updates a second (none for 0), sent in
    /// batches every 10 ms round the URIs subscribed now. The old stream is stopped between two
    /// notifications, so `sent` counts exactly what went out.
    async fn start(&self, per_sec: u64, peer: Peer<RoleServer>) {
        let old = self.stream.lock().ok().and_then(|mut s| s.take());
        if let Some((stop, task)) = old {
            stop.store(true, Ordering::Relaxed);
            let _ = task.await;
        }
        let uris = self.subscribed();
        if per_sec == 0 || uris.is_empty() {
            return;
        }
        let sent = self.sent.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            let mut n: u64 = 0;
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            loop {
                tick.tick().await;
                // Catch up to the rate: n updates are due after n / per_sec seconds.
                let due = started.elapsed().as_millis() as u64 * per_sec / 1000;
                while n < due {
                    if stopped.load(Ordering::Relaxed) {
                        return;
                    }
                    let uri = uris[usize::try_from(n).unwrap_or(0) % uris.len()].clone();
                    if peer
                        .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                        .await
                        .is_err()
                    {
                        return;
                    }
                    n += 1;
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
            }
        });
        if let Ok(mut stream) = self.stream.lock() {
            *stream = Some((stop, task));
        }
    }
}

/// The `big` tool (called, never listed): `bytes` bytes of text, lines of 64 (E5).
fn big_result(arguments: Option<&rmcp::model::JsonObject>) -> Result<CallToolResult, ErrorData> {
    let bytes = arguments
        .and_then(|a| a.get("bytes"))
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| ErrorData::invalid_params("bytes: a non-negative integer", None))?;
    let line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXY\n";
    let mut text = line.repeat(bytes as usize / line.len() + 1);
    text.truncate(bytes as usize);
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

fn updates_tool() -> Tool {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"per_sec": {"type": "integer", "minimum": 0}},
        "required": ["per_sec"],
    });
    let serde_json::Value::Object(schema) = schema else { unreachable!("an object literal") };
    Tool::new("updates", "Start (or with 0 stop) resource update notifications.", schema)
}

impl ServerHandler for BenchServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.options.subscribe {
            ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .build()
        } else if self.options.tools > 0 {
            ServerCapabilities::builder().enable_resources().enable_tools().build()
        } else {
            ServerCapabilities::builder().enable_resources().build()
        };
        ServerConfig::new(capabilities).with_server_info(Implementation::new("bench", "1"))
    }

    /// 2026-07-28: with `--subscribe 1` every `subscriptions/listen` is accepted as asked (the
    /// stream stays open until cancelled; the `updates` stream is 2025-11-25's only).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.options.subscribe.then(|| requested.clone())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !self.options.subscribe {
            return Err(ErrorData::method_not_found::<rmcp::model::SubscribeRequestMethod>());
        }
        if let Ok(mut subscribed) = self.updates.subscribed.lock()
            && !subscribed.contains(&request.uri)
        {
            subscribed.push(request.uri);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subscribed) = self.updates.subscribed.lock() {
            subscribed.retain(|u| *u != request.uri);
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = if self.options.subscribe { vec![updates_tool()] } else { Vec::new() };
        tools.extend((0..self.options.tools).map(|i| {
            let schema =
                serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}});
            let schema = schema.as_object().cloned().unwrap_or_default();
            Tool::new(format!("t{i}"), format!("Bench tool {i}: does nothing"), schema)
        }));
        let mut result = ListToolsResult::with_all_items(tools);
        result.result_type = None;
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "big" {
            return Ok(big_result(request.arguments.as_ref())?.into());
        }
        if !self.options.subscribe || request.name != "updates" {
            return Err(ErrorData::invalid_params(format!("no tool {}", request.name), None));
        }
        let per_sec = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("per_sec"))
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| ErrorData::invalid_params("per_sec: a non-negative integer", None))?;
        self.updates.start(per_sec, context.peer).await;
        let text = format!(
            "subscribed {} sent {}",
            self.updates.subscribed().len(),
            self.updates.sent.load(Ordering::Relaxed)
        );
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        tokio::time::sleep(self.options.page_delay).await;
        let start: usize = request.and_then(|r| r.cursor).and_then(|c| c.parse().ok()).unwrap_or(0);
        let end = (start + self.options.page_size).min(self.options.resources);
        let items = (start..end)
            .map(|i| {
                Resource::new(format!("bench://r/{i}"), format!("r{i}"))
                    .with_mime_type("text/plain")
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = (end < self.options.resources).then(|| end.to_string());
        result.result_type = None;
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let mut result = ReadResourceResult::new(vec![ResourceContents::text(
            self.payload.to_string(),
            request.uri,
        )]);
        result.result_type = None;
        Ok(result.into())
    }
}

pub(crate) async fn serve(options: Options) -> anyhow::Result<()> {
    tokio::time::sleep(options.startup_delay).await;
    let payload: Arc<str> = "x".repeat(options.payload_bytes).into();
    let blocking = options.blocking_stdio;
    let server =
        BenchServer { options: Arc::new(options), payload, updates: Arc::new(Updates::default()) };
    // Not even tried when blocking: making them non-blocking changes descriptors 0 and 1 too.
    match if blocking { None } else { pipes() } {
        Some(pipes) => server.serve(pipes).await?.waiting().await?,
        None => server.serve(rmcp::transport::stdio()).await?.waiting().await?,
    };
    Ok(())
}

/// Standard input and output as non-blocking pipes (copies of their descriptors, sharing their
/// flags); `None` when either is not a pipe (a terminal, a file: then tokio's blocking
/// `stdin`/`stdout` serve).
fn pipes() -> Option<(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender)> {
    use std::os::fd::AsFd;
    let input = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let output = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    let input = tokio::net::unix::pipe::Receiver::from_owned_fd(input).ok()?;
    let output = tokio::net::unix::pipe::Sender::from_owned_fd(output).ok()?;
    Some((input, output))
}
