//! Requests to one server, as every part of the manager (and a followed task) sends them:
//! bounded by the server's tool timeout, a failure classified (a broken connection marked dead,
//! a refused sign-in remembered: `Servers::signed_out`), and sent once more on a new connection when that cannot repeat
//! an effect.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use router_protocol::{EventMsg, McpServerFailedEvent};
use tokio::time::Instant;

use mcp_backend::{McpError, SignIn};
use mcp_connection::{Exchange, ExchangeError, Final, Retry, Round};
use mcp_connection::{ServerConfig, SharedConnection};

use crate::lifecycle::{ServerState, Servers, SignedOut};
use crate::start::fingerprint;

impl Servers {
    /// The fingerprint of the credentials stored for an HTTP server (0 for none, or for a
    /// stdio server).
    pub(crate) fn fingerprint(&self, config: &ServerConfig) -> u64 {
        fingerprint(self.options.token_store.as_ref(), config)
    }

    /// A ready server's requests are refused for want of sign-in (its token expired and could
    /// not be refreshed, or was revoked): it is marked failed with the login hint, and
    /// `mcp_server_failed` says so, once per connection.
    pub(crate) fn signed_out(&self, server: &str, conn: &SharedConnection, sign_in: &SignIn) {
        let Some(managed) = self.get(server) else { return };
        let credentials = self.fingerprint(&managed.config);
        let error = sign_in.advice(server);
        let replaced = managed.state.send_if_modified(|state| {
            let current =
                matches!(state, ServerState::Ready { conn: c, .. } if Arc::ptr_eq(c, conn));
            if current {
                *state = ServerState::Failed {
                    error: error.as_str().into(),
                    retry_at: Instant::now(),
                    signed_out: Some(SignedOut { sign_in: sign_in.clone(), credentials }),
                };
            }
            current
        });
        if replaced {
            tracing::warn!(%server, "MCP server needs sign-in again");
            self.events.send(EventMsg::McpServerFailed(McpServerFailedEvent {
                server: server.to_string(),
                elapsed: Duration::ZERO,
                error,
            }));
        }
    }

    /// `completion/complete` on one server for `argument` of `reference` (a resource template
    /// or a prompt), with its request span.
    pub(crate) async fn complete(
        &self,
        server: &str,
        reference: rmcp::model::Reference,
        argument: &str,
        value: &str,
    ) -> Result<rmcp::model::CompletionInfo, McpError> {
        use tracing::Instrument as _;
        let argument = rmcp::model::ArgumentInfo::new(argument, value);
        let params = rmcp::model::CompleteRequestParams::new(reference, argument);
        self.request(server, "completion/complete", |conn| {
            let mut params = params.clone();
            async move {
                let mut span = conn.telemetry().start("completion/complete", None, None);
                span.tag(&mut params.meta);
                let answer = conn.service.complete(params).instrument(span.span()).await;
                span.finish_with(&answer, |_| false);
                answer.map(|r| r.completion)
            }
        })
        .await
    }
}

impl Servers {
    /// A request failed in rmcp. A broken connection is marked dead (not retried here: a
    /// tools/call may have had effects; the next use restarts it); one refused for want of
    /// sign-in marks the server signed out.
    pub(crate) async fn failed(
        &self,
        server: &str,
        conn: &SharedConnection,
        e: rmcp::ServiceError,
    ) -> McpError {
        #[cfg(feature = "streamable-http")]
        if let Some(challenge) = e.auth_challenge()
            && let Some(managed) = self.get(server)
            && let Ok(mut last) = managed.challenge.lock()
        {
            *last = Some(challenge.to_string());
        }
        let error = conn.failure(e).await;
        match &error {
            // Refused: signed out until someone signs in again.
            McpError::SignInRequired { sign_in: sign_in @ SignIn::Required, .. } => {
                self.signed_out(server, conn, sign_in);
                conn.mark_dead();
            }
            // Signed in with too little: the connection is fine, a step-up sign-in helps.
            McpError::SignInRequired { sign_in: SignIn::MoreScope { .. }, .. } => {}
            // A refresh that could not be made, a broken connection: the next use restarts.
            McpError::SignInRequired { .. } | McpError::Transport { .. } => conn.mark_dead(),
            _ => {}
        }
        error
    }

    /// One request, bounded by the tool timeout. A request that failed because the connection
    /// broke is sent once more on a new connection (the server restarted by the restart rules)
    /// when that cannot repeat an effect: it never reached the server, or it is not a
    /// `tools/call` (see [`resend`]).
    pub(crate) async fn request<T, F, Fut>(
        &self,
        server: &str,
        method: &'static str,
        f: F,
    ) -> Result<T, McpError>
    where
        F: Fn(SharedConnection) -> Fut,
        Fut: Future<Output = Result<T, rmcp::ServiceError>>,
    {
        let timeout = self.managed_timeout(server)?;
        let mut resent = false;
        loop {
            let conn = self.connection(server).await?;
            // Dropping the request future on timeout makes rmcp send notifications/cancelled.
            let e = match tokio::time::timeout(timeout, f(conn.clone())).await {
                Ok(Ok(result)) => return Ok(result),
                Ok(Err(e)) => e,
                Err(_) => {
                    return Err(McpError::Timeout { server: server.to_string(), method, timeout });
                }
            };
            self.send_again(server, method, &conn, e, &mut resent).await?;
        }
    }

    /// A request failed: `Ok` when it is to be sent once more on a new connection (see
    /// [`resend`]; at most once, `resent` remembers), otherwise the error for the caller.
    async fn send_again(
        &self,
        server: &str,
        method: &'static str,
        conn: &SharedConnection,
        e: rmcp::ServiceError,
        resent: &mut bool,
    ) -> Result<(), McpError> {
        let again = !*resent && resend(method, &e);
        let error = self.failed(server, conn, e).await;
        if !(again && matches!(error, McpError::Transport { .. })) {
            return Err(error);
        }
        tracing::info!(%server, method, %error, "connection broke; sending again on a new one");
        *resent = true;
        Ok(())
    }

    fn managed_timeout(&self, server: &str) -> Result<std::time::Duration, McpError> {
        let managed = self.managed(server)?;
        Ok(managed.config.tool_timeout)
    }

    /// A request that may answer `input_required`: the whole exchange with its retries, bounded
    /// by the tool timeout (elicitation time excluded). Sent again on a broken connection as
    /// [`Self::request`] is.
    pub(crate) async fn exchange<T, F, Fut>(
        &self,
        server: &str,
        method: &'static str,
        mut send: F,
    ) -> Result<T, McpError>
    where
        T: Final,
        F: FnMut(SharedConnection, Retry) -> Fut,
        Fut: Future<Output = Result<Result<Round<T>, String>, rmcp::ServiceError>>,
    {
        let timeout = self.managed_timeout(server)?;
        let mut resent = false;
        loop {
            let conn = self.connection(server).await?;
            let exchange = Exchange {
                client: conn.service.service(),
                method,
                max_rounds: self.options.requests.max_input_rounds,
                timeout,
                reset_on_progress: self.options.requests.reset_timeout_on_progress,
            };
            let e = match exchange.run(|retry| send(conn.clone(), retry)).await {
                Ok(result) => return Ok(result),
                Err(ExchangeError::TimedOut) => {
                    return Err(McpError::Timeout { server: server.to_string(), method, timeout });
                }
                Err(ExchangeError::Protocol(error)) => {
                    return Err(McpError::Protocol { server: server.to_string(), error });
                }
                Err(ExchangeError::Service(e)) => e,
            };
            self.send_again(server, method, &conn, e, &mut resent).await?;
        }
    }
}

/// Whether a request that failed in the transport may be sent once more on a new connection:
/// always when it never reached the server; otherwise only when it is not a `tools/call` (a
/// tool may have had effects; reads, lists and completions have none).
fn resend(method: &str, error: &rmcp::ServiceError) -> bool {
    method != "tools/call" || mcp_connection::never_sent(error)
}
