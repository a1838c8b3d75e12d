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
use std::sync::atomic::Ordering;
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
/// -32022 retries with a version the server listed). A stdio server gets one process and the
/// whole budget: one that has not read the probe after half the startup timeout is still
/// starting and is waited for (a slow `npx` or `uvx` start), never started again. Any other
/// failure of the probe (an HTTP error without a JSON-RPC body, a closed pipe, no version in
/// common, a probe read and left unanswered, an HTTP server silent for half the startup
/// timeout) connects again from scratch with `initialize`.
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
            let reason = match probe(config, &client, tokens).await {
                Ok(opened) => return finish_opened(config, opened).await,
                Err(Probe::Final(e)) => return Err(e.into()),
                Err(Probe::Again(reason)) => reason,
            };
            tracing::info!(server = %config.name, %reason, "server/discover probe failed; connecting again with initialize (2025-11-25)");
            client.startup.restart();
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

/// Why a `server/discover` probe did not open a connection.
enum Probe {
    /// A failure that a second attempt would meet too (a missing program, a sign-in).
    Final(HandshakeError),
    /// Worth a second attempt with `initialize`, for this reason.
    Again(String),
}

/// The `auto` probe. A stdio server gets [`probe_stdio`]; an HTTP server that has not answered
/// after half the startup timeout is tried again with `initialize`.
async fn probe(
    config: &ServerConfig,
    client: &RouterClient,
    tokens: Option<&TokenStore>,
) -> Result<Opened, Probe> {
    let half = config.startup_timeout / 2;
    let result = match &config.transport {
        TransportConfig::Stdio { command, args, env, cwd } => {
            let sandbox = &config.sandbox.clone().unwrap_or_default();
            let launch =
                Launch { server: &config.name, command, args, env, cwd: cwd.as_ref(), sandbox };
            let span = client.telemetry.start("server/discover", None, None);
            let result = probe_stdio(launch, client, half).instrument(span.span()).await;
            if let Ok((service, ..)) = &result
                && let Some(info) = service.peer_info()
            {
                span.record_protocol_version(&info.protocol_version.to_string());
            }
            span.finish(match &result {
                Ok(_) => Ok(()),
                Err(Probe::Final(HandshakeError::Launch(m) | HandshakeError::Handshake(m))) => {
                    Err(("launch_failed".to_string(), m.clone()))
                }
                Err(Probe::Final(HandshakeError::SignIn(s))) => {
                    Err(("sign_in_required".to_string(), s.advice(&client.server)))
                }
                Err(Probe::Again(m)) => Err(("handshake_failed".to_string(), m.clone())),
            });
            return result;
        }
        TransportConfig::StreamableHttp { .. } => {
            let attempt = handshake(config, client.clone(), auto_lifecycle(), tokens);
            match tokio::time::timeout(half, attempt).await {
                Ok(result) => result,
                Err(_) => {
                    return Err(Probe::Again(format!(
                        "no answer to server/discover within {half:?}"
                    )));
                }
            }
        }
    };
    match result {
        Ok(opened) => Ok(opened),
        Err(e @ (HandshakeError::Launch(_) | HandshakeError::SignIn(_))) => Err(Probe::Final(e)),
        Err(HandshakeError::Handshake(message)) => Err(Probe::Again(message)),
    }
}

/// The `auto` probe of a stdio server: one process for both eras. A legacy server's error
/// answer to `server/discover` (method not found, …) is followed by `initialize` on the same
/// pipes. After half the startup timeout without an answer, a server that has not read everything sent to it is still
/// starting and is waited for until the caller's budget runs out; one that has read
/// `server/discover` and said nothing ignores it. That one, and one that answered with no
/// version in common, gets `initialize` on the same pipes. Only a server that exited (or
/// closed its output) is started again, by the caller (`Probe::Again`).
async fn probe_stdio(
    launch: Launch<'_>,
    client: &RouterClient,
    half: std::time::Duration,
) -> Result<Opened, Probe> {
    let command = launch.command;
    let spawned = stdio::spawn(launch).map_err(|e| {
        Probe::Final(HandshakeError::Launch(format!("failed to spawn `{command}`: {e}")))
    })?;
    let stdio::Spawned { stdout, stdin, group } = spawned;
    let (transport, straight) = pipes(stdout, stdin, &group, client);
    let (lent, slot) = crate::transport::lent::Lent::new(client.traced(transport));
    // rmcp's `Discover`, not its `Auto`: the fallback is ours, on the same pipes, with our
    // budget (`Auto` would send `initialize` after its own fixed 10 s, while a slow server may
    // still answer the probe, and the answers would cross).
    let mut attempt = Box::pin(client.clone().serve_with_lifecycle(lent, modern_lifecycle()));
    let outcome = match tokio::time::timeout(half, &mut attempt).await {
        Ok(result) => result.map_err(Some),
        Err(_) => after_half(&mut attempt, client, half).await,
    };
    let failed = match outcome {
        Ok(service) => return Ok((service, Some((group, straight)))),
        Err(failed) => failed,
    };
    // Dropping the attempt gives the pipes back.
    drop(attempt);
    let ended = client.closed.load(Ordering::SeqCst) || group.exit_status().is_some();
    let why = if ended { group.why_ended(EXIT_GRACE).await } else { None };
    let reason = match (failed, &why) {
        (Some(e), Some(why)) => crate::errors::initialize_failed_after_exit(&e, why),
        (Some(e), None) => initialize_failed(&e, None),
        (None, Some(why)) => format!("server/discover was read and not answered; {why}"),
        (None, None) => "server/discover was read and not answered".to_string(),
    };
    let reclaimed = slot.lock().ok().and_then(|mut s| s.take());
    let Some(transport) = reclaimed.filter(|_| !ended) else {
        return Err(Probe::Again(reason));
    };
    tracing::info!(server = %client.server, %reason, "server/discover probe failed; initialize (2025-11-25) on the same connection");
    match client.clone().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize).await {
        Ok(service) => Ok((service, Some((group, straight)))),
        Err(e) => {
            let message = match group.why_ended(EXIT_GRACE).await {
                Some(why) => crate::errors::initialize_failed_after_exit(&e, &why),
                None => initialize_failed(&e, None),
            };
            Err(Probe::Again(format!("{message} (server/discover was tried first: {reason})")))
        }
    }
}

/// How often a probe past half the startup timeout looks whether the server has read it.
const READ_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// The probe past half the startup timeout: waited for while the server has not read it (it is
/// still starting); given up (`Err(None)`) once the server has read it and not answered for
/// a quarter of the startup timeout (at most a second). Runs until the caller's budget ends.
async fn after_half<F>(
    attempt: &mut F,
    client: &RouterClient,
    half: std::time::Duration,
) -> Result<
    rmcp::service::RunningService<rmcp::RoleClient, RouterClient>,
    Option<rmcp::service::ClientInitializeError>,
>
where
    F: Future<
            Output = Result<
                rmcp::service::RunningService<rmcp::RoleClient, RouterClient>,
                rmcp::service::ClientInitializeError,
            >,
        > + Unpin,
{
    let patience = (half / 2).min(std::time::Duration::from_secs(1));
    let mut read_at: Option<tokio::time::Instant> = None;
    let mut told = false;
    loop {
        match client.startup.read_all_sent() {
            Some(true) => {
                let at = *read_at.get_or_insert_with(tokio::time::Instant::now);
                if at.elapsed() >= patience {
                    return Err(None);
                }
            }
            _ => {
                if !told {
                    tracing::info!(server = %client.server, waited = ?half, "server/discover not read yet: the server is still starting; waiting for it");
                    told = true;
                }
                read_at = None;
            }
        }
        if let Ok(result) = tokio::time::timeout(READ_POLL, &mut *attempt).await {
            return result.map_err(Some);
        }
    }
}

/// A spawned server's pipes as the line transport, its stderr and input noted for the start.
fn pipes(
    stdout: tokio::process::ChildStdout,
    stdin: tokio::process::ChildStdin,
    group: &stdio::ChildGroup,
    client: &RouterClient,
) -> (
    crate::transport::lines::LineTransport<tokio::process::ChildStdout, tokio::process::ChildStdin>,
    crate::client::connection::Straight,
) {
    use std::os::fd::AsRawFd as _;
    client.startup.spawned(group.stderr_tail(), Some(stdin.as_raw_fd()));
    crate::transport::lines::LineTransport::with_straight(
        stdout,
        stdin,
        MAX_MESSAGE_BYTES,
        client.telemetry.clone(),
        client.progress.clone(),
    )
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
            let sandbox = &config.sandbox.clone().unwrap_or_default();
            let launch =
                Launch { server: &config.name, command, args, env, cwd: cwd.as_ref(), sandbox };
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
    let stdio::Spawned { stdout, stdin, group } = stdio::spawn(launch)
        .map_err(|e| HandshakeError::Launch(format!("failed to spawn `{command}`: {e}")))?;
    let (transport, straight) = pipes(stdout, stdin, &group, &client);
    let transport = client.traced(transport);
    let service = match client.serve_with_lifecycle(transport, lifecycle).await {
        Ok(service) => service,
        Err(e) => {
            let message = match group.why_ended(EXIT_GRACE).await {
                Some(why) => crate::errors::initialize_failed_after_exit(&e, &why),
                None => initialize_failed(&e, None),
            };
            return Err(HandshakeError::Handshake(message));
        }
    };
    Ok((service, Some((group, straight))))
}
