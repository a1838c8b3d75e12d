//! The bench MCP server: `serve --resources N --page-size P --page-delay-ms D --payload-bytes B`.
//! Resources `bench://r/{i}`; every read returns `B` bytes of text; every list page waits `D` ms.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    Implementation, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
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
}

impl Options {
    pub(crate) fn parse(args: &[String]) -> anyhow::Result<Self> {
        let mut options = Self {
            resources: 10,
            page_size: 100,
            page_delay: Duration::ZERO,
            payload_bytes: 100,
            startup_delay: Duration::ZERO,
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
        ]
    }
}

#[derive(Clone)]
struct BenchServer {
    options: Arc<Options>,
    payload: Arc<str>,
}

impl ServerHandler for BenchServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
            .with_server_info(Implementation::new("bench", "1"))
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
    let server = BenchServer { options: Arc::new(options), payload };
    server.serve(rmcp::transport::stdio()).await?.waiting().await?;
    Ok(())
}
