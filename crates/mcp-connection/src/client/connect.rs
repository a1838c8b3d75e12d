//! Opening one MCP connection on rmcp: the transport (stdio child or streamable HTTP), the
//! handshake of the era the `protocol` key chooses (`server/discover` for 2026-07-28, with
//! fallback to `initialize` for 2025-11-25 under `auto`), rmcp's response cache turned off, and
//! the first tool listing. Everything here is bounded by the caller's startup timeout. Errors are
//! translated in `errors`.

use crate::auth::TokenStore;
use crate::client::connection::{Opened, finish_opened};
use crate::client::{Connection, RouterClient};
use crate::config::{ProtocolChoice, ServerConfig, TransportConfig};
use crate::errors::ConnectError;
use crate::errors::HandshakeError;
use crate::errors::initialize_failed;
use crate::transport::stdio::EXIT_GRACE;
use crate::transport::stdio::{self, Launch};
use crate::transport::wire::MAX_MESSAGE_BYTES;
use async_trait::async_trait;
use rmcp::model::ProtocolVersion;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use tracing::Instrument as _;

/// Opens connections. The manager uses [`Transports`]; tests connect in memory.
#[async_trait]
pub trait Connector: Send + Sync {
    /// Connect, initialize and list tools. A failure becomes a lifecycle event and the reason
    /// every later call to this server fails with.
    async fn connect(
        &self,
        config: &ServerConfig,
        client: RouterClient,
    ) -> Result<Connection, ConnectError>;
}

/// The real transports: a stdio child process or streamable HTTP, as configured; HTTP servers
/// sign in with the credentials in `tokens`.
pub struct Transports {
    /// Where HTTP servers' sign-in credentials are kept; `None` reaches them without sign-in.
    pub tokens: Option<TokenStore>,
}

#[async_trait]
impl Connector for Transports {
    async fn connect(
        &self,
        config: &ServerConfig,
        client: RouterClient,
    ) -> Result<Connection, ConnectError> {
        connect(config, client, self.tokens.as_ref()).await
    }
}

/// Connects in the era the config asks for. `auto` probes `server/discover` (rmcp's `Auto`
/// mode: a correlated JSON-RPC error falls back to `initialize` on the same connection, and
/// -32022 retries with a version the server listed); any other failure of the probe (an HTTP
/// error without a JSON-RPC body, a closed pipe, no version in common, no answer within half
/// the startup timeout) connects again from scratch with `initialize`.
async fn connect(
    config: &ServerConfig,
    client: RouterClient,
    tokens: Option<&TokenStore>,
) -> Result<Connection, ConnectError> {
    let opened = match config.protocol {
        ProtocolChoice::Legacy => {
            handshake(config, client, ClientLifecycleMode::Initialize, tokens).await?
        }
        ProtocolChoice::Modern => handshake(config, client, modern_lifecycle(), tokens).await?,
        ProtocolChoice::Auto => {
            let probe_budget = config.startup_timeout / 2;
            let probe = handshake(config, client.clone(), auto_lifecycle(), tokens);
            let reason = match tokio::time::timeout(probe_budget, probe).await {
                Ok(Ok(opened)) => return finish_opened(config, opened).await,
                Ok(Err(e @ (HandshakeError::Launch(_) | HandshakeError::SignIn(_)))) => {
                    return Err(e.into());
                }
                Ok(Err(HandshakeError::Handshake(message))) => message,
                Err(_) => format!("no answer to server/discover within {probe_budget:?}"),
            };
            tracing::info!(server = %config.name, %reason, "server/discover probe failed; connecting again with initialize (2025-11-25)");
            handshake(config, client, ClientLifecycleMode::Initialize, tokens).await.map_err(
                |e| match ConnectError::from(e) {
                    // The same cause twice (a closed port) is said once.
                    ConnectError::Failed(message) if same_cause(&message, &reason) => {
                        ConnectError::Failed(message)
                    }
                    ConnectError::Failed(message) => ConnectError::Failed(format!(
                        "{message} (server/discover was tried first: {reason})"
                    )),
                    sign_in => sign_in,
                },
            )?
        }
    };
    finish_opened(config, opened).await
}

/// Whether two handshake failures have the same cause (what follows their `(context): `).
fn same_cause(a: &str, b: &str) -> bool {
    let cause = |m: &str| m.rsplit_once("): ").map_or(m, |(_, c)| c).to_string();
    cause(a) == cause(b)
}

fn modern_lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
}

fn auto_lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// Opens the transport and runs one lifecycle's handshake on it, in a request span named after
/// the lifecycle's first request.
async fn handshake(
    config: &ServerConfig,
    client: RouterClient,
    lifecycle: ClientLifecycleMode,
    tokens: Option<&TokenStore>,
) -> Result<Opened, HandshakeError> {
    let method = match lifecycle {
        ClientLifecycleMode::Initialize => "initialize",
        _ => "server/discover",
    };
    let span = client.telemetry.start(method, None, None);
    let result = open(config, client, lifecycle, tokens).instrument(span.span()).await;
    if let Ok((service, ..)) = &result
        && let Some(info) = service.peer_info()
    {
        span.record_protocol_version(&info.protocol_version.to_string());
    }
    span.finish(match &result {
        Ok(_) => Ok(()),
        Err(HandshakeError::Launch(m)) => Err(("launch_failed".to_string(), m.clone())),
        Err(HandshakeError::Handshake(m)) => Err(("handshake_failed".to_string(), m.clone())),
        Err(HandshakeError::SignIn(s)) => {
            Err(("sign_in_required".to_string(), s.advice(&config.name)))
        }
    });
    result
}

async fn open(
    config: &ServerConfig,
    client: RouterClient,
    lifecycle: ClientLifecycleMode,
    tokens: Option<&TokenStore>,
) -> Result<Opened, HandshakeError> {
    match &config.transport {
        TransportConfig::Stdio { command, args, env, cwd } => {
            let launch = Launch { server: &config.name, command, args, env, cwd: cwd.as_ref() };
            open_stdio(launch, client, lifecycle).await
        }
        TransportConfig::StreamableHttp { .. } => {
            crate::client::remote::open_http(config, client, lifecycle, tokens).await
        }
    }
}

/// Starts a stdio server and runs the handshake on its pipes. A server that exits meanwhile is
/// named with its status and its last stderr lines; on failure the process group is killed.
async fn open_stdio(
    launch: Launch<'_>,
    client: RouterClient,
    lifecycle: ClientLifecycleMode,
) -> Result<Opened, HandshakeError> {
    let command = launch.command;
    let spawned = stdio::spawn(launch)
        .map_err(|e| HandshakeError::Launch(format!("failed to spawn `{command}`: {e}")))?;
    let (transport, straight) = crate::transport::lines::LineTransport::with_straight(
        spawned.stdout,
        spawned.stdin,
        MAX_MESSAGE_BYTES,
        client.telemetry.clone(),
        client.progress.clone(),
    );
    let transport = client.traced(transport);
    let service = match client.serve_with_lifecycle(transport, lifecycle).await {
        Ok(service) => service,
        Err(e) => {
            let message = match spawned.group.why_ended(EXIT_GRACE).await {
                Some(why) => crate::errors::initialize_failed_after_exit(&e, &why),
                None => initialize_failed(&e, None),
            };
            return Err(HandshakeError::Handshake(message));
        }
    };
    Ok((service, Some((spawned.group, straight))))
}
