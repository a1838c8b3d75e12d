//! Serving the demo: on stdio, or streamable HTTP on a loopback address; and [`ServeArgs`], the
//! one option set of `mcp-demo-server` and `mcp-router serve-demo`.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::ServiceExt;

use crate::options::{DemoError, DemoOptions, Fault, ProcessFaults};
use crate::resources::options_registry;
use crate::server::DemoServer;

/// How to serve the demo (clap arguments, shared by every binary that serves it).
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Items per page.
    #[arg(long, default_value_t = 100)]
    pub page_size: usize,
    /// Name reported in serverInfo.
    #[arg(long, default_value = "mcp-demo-server")]
    pub name: String,
    /// Serve streamable HTTP on this loopback address (`127.0.0.1:0` picks a free port)
    /// instead of stdio.
    #[arg(long, value_name = "127.0.0.1:PORT")]
    pub http: Option<String>,
    /// A misbehaviour for fault tests.
    #[arg(long, value_enum)]
    pub fault: Option<Fault>,
    /// Also serve the MCP conformance suite's fixtures.
    #[arg(long)]
    pub conformance_fixtures: bool,
    /// Send this `ttlMs` cache hint (with `cacheScope: "public"`) on list and read results.
    #[arg(long, value_name = "MS")]
    pub ttl_ms: Option<u64>,
    /// Append the method of every request handled to this file, one per line.
    #[arg(long, value_name = "FILE")]
    pub request_log: Option<std::path::PathBuf>,
    /// With `--http`: protect the endpoint with OAuth, served by a small authorization server
    /// on the same address (approves at once; see the `oauth` module for its test controls).
    #[arg(long, requires = "http")]
    pub oauth: bool,
    /// Also serve a generated catalog of this many resources (`demo://gen/{i}`: invoices,
    /// JSON reports and notes, some for the user only, some with priority).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub generated: usize,
    /// With `--oauth`: how long access tokens last.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    pub token_ttl_secs: u64,
    /// Serve the skills below this folder (SEP-2640): each folder with a `SKILL.md`.
    #[arg(long, value_name = "DIR", conflicts_with = "demo_skills")]
    pub skills: Option<std::path::PathBuf>,
    /// Serve the two bundled demo skills (`release-notes`, `csv-report`).
    #[arg(long)]
    pub demo_skills: bool,
}

impl ServeArgs {
    /// The server options these arguments ask for, with `faults` for the fault tools. Fails
    /// only when the skills folder cannot be read (or the bundled one written).
    pub fn options(
        &self,
        faults: Option<Arc<dyn ProcessFaults>>,
    ) -> Result<DemoOptions, DemoError> {
        let skills_dir = match (&self.skills, self.demo_skills) {
            (Some(dir), _) => Some(dir.clone()),
            (None, true) => Some(crate::skills::bundled_skills_dir()?),
            (None, false) => None,
        };
        let skills = skills_dir.map(|dir| crate::skills::load_skills(&dir)).transpose()?;
        Ok(DemoOptions {
            skills: skills.map(Arc::new),
            page_size: self.page_size,
            name: self.name.clone(),
            fault: self.fault,
            conformance_fixtures: self.conformance_fixtures,
            process_faults: faults,
            ttl_ms: self.ttl_ms,
            request_log: self.request_log.clone(),
            generated: self.generated,
            oauth_token_ttl: self
                .oauth
                .then(|| std::time::Duration::from_secs(self.token_ttl_secs)),
        })
    }
}

/// Serve as `args` say until the client goes away (stdio) or forever (HTTP). With `--http`,
/// `on_listening` is told the bound address before the first connection is accepted.
pub async fn serve(
    args: &ServeArgs,
    faults: Option<Arc<dyn ProcessFaults>>,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), DemoError> {
    let options = args.options(faults)?;
    let Some(addr) = &args.http else {
        return run_stdio(options).await;
    };
    let bind_error = |source| DemoError::Bind { addr: addr.clone(), source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(bind_error)?;
    let local = listener.local_addr().map_err(bind_error)?;
    if !local.ip().is_loopback() {
        return Err(DemoError::NotLoopback(addr.clone()));
    }
    on_listening(local);
    run_http(options, listener).await
}

/// Serve MCP on stdin/stdout until the client goes away.
pub async fn run_stdio(options: DemoOptions) -> Result<(), DemoError> {
    let ignore_discover = options.fault == Some(crate::Fault::IgnoreDiscover);
    let server = DemoServer::new(options);
    let service = if ignore_discover {
        server.serve((without_discover(tokio::io::stdin()), tokio::io::stdout())).await
    } else {
        server.serve(rmcp::transport::stdio()).await
    }
    .map_err(|e| DemoError::Initialize(e.to_string()))?;
    service.waiting().await.map_err(|e| DemoError::Session(e.to_string()))?;
    Ok(())
}

/// The lines of `input`, minus the `server/discover` requests (the `ignore-discover` fault).
fn without_discover(
    input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
) -> tokio::io::DuplexStream {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (mut writer, reader) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(input).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let is_discover = serde_json::from_str::<serde_json::Value>(&line)
                .is_ok_and(|m| m["method"] == "server/discover");
            if is_discover {
                continue;
            }
            if writer.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                break;
            }
        }
    });
    reader
}

/// Serve streamable HTTP (any path; clients use `/mcp`) on an already bound listener, until the
/// process ends.
pub async fn run_http(
    options: DemoOptions,
    listener: tokio::net::TcpListener,
) -> Result<(), DemoError> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let registry = options_registry(&options);
    let added_tools = Arc::default();
    let tasks = rmcp::task_manager::TaskManager::new();
    let auth = match options.oauth_token_ttl {
        Some(ttl) => {
            let local = listener.local_addr().map_err(DemoError::Accept)?;
            Some(Arc::new(crate::oauth::AuthServer::new(format!("http://{local}"), ttl)))
        }
        None => None,
    };
    let service = StreamableHttpService::new(
        move || {
            let (options, registry) = (options.clone(), registry.clone());
            Ok(DemoServer::with_shared(options, registry, Arc::clone(&added_tools), tasks.clone()))
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let (stream, _) = listener.accept().await.map_err(DemoError::Accept)?;
        let service = service.clone();
        let auth = auth.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(
                move |request: hyper::Request<hyper::body::Incoming>| {
                    let service = service.clone();
                    let auth = auth.clone();
                    async move {
                        let request = match &auth {
                            Some(auth) => match auth.handle(request).await {
                                Ok(answered) => return Ok(answered),
                                Err(request) => request,
                            },
                            None => request,
                        };
                        Ok::<_, std::convert::Infallible>(service.handle(request).await)
                    }
                },
            );
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) =
                hyper::server::conn::http1::Builder::new().serve_connection(io, handler).await
            {
                tracing::debug!("http connection ended: {e}");
            }
        });
    }
}
