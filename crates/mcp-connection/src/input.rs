//! Input-required round trips (protocol 2026-07-28, SEP-2322 "MRTR"). A `tools/call` or
//! `resources/read` may answer `resultType: "input_required"` with `inputRequests` (elicitation,
//! sampling, roots) and a `requestState`. Every input request is answered through the same
//! [`HostHandler`] that answers the 2025-11-25 era's server-to-client requests, announced with
//! the same `mcp_server_request` event, and the request is sent again under a new id with the
//! answers and the exact `requestState`, at most `max_rounds` times.
//!
//! The exchange is bounded by the server's tool timeout, except that the time the host spends
//! answering an elicitation does not count (a person may be typing). A sampling request the host
//! refuses is left out of `inputResponses` (the server decides what that means); its final
//! answer reaches the model.

use std::future::Future;
use std::time::Duration;

use rmcp::model::{
    CallToolResponse, CallToolResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ReadResourceResponse, ReadResourceResult, ResultType,
};
use serde_json::Value;
use tokio::time::Instant;

use crate::client::RouterClient;
use crate::host::Asking;

/// One answer of a request that may ask for input.
pub enum Round<T> {
    /// The final result.
    Complete(T),
    /// The server asks for input before it answers.
    InputRequired(InputRequiredResult),
}

/// What a final result says about its kind (`resultType`, absent = complete).
pub trait Final {
    /// The result's `resultType`, if it has one.
    fn result_type(&self) -> Option<&ResultType>;
}

impl Final for CallToolResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

impl Final for ReadResourceResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

impl Final for rmcp::model::GetPromptResult {
    fn result_type(&self) -> Option<&ResultType> {
        self.result_type.as_ref()
    }
}

impl TryFrom<rmcp::model::GetPromptResponse> for Round<rmcp::model::GetPromptResult> {
    type Error = String;
    fn try_from(response: rmcp::model::GetPromptResponse) -> Result<Self, String> {
        match response {
            rmcp::model::GetPromptResponse::Complete(result) => Ok(Round::Complete(result)),
            rmcp::model::GetPromptResponse::InputRequired(required) => {
                Ok(Round::InputRequired(required))
            }
            _ => {
                Err("answered prompts/get with a result of a kind this client does not know".into())
            }
        }
    }
}

/// A `tools/call`'s final answer: the result, or a task (SEP-2663) that will produce it.
pub enum ToolAnswer {
    /// The tool's result.
    Result(CallToolResult),
    /// The server runs the call as a task; `tasks/get` tells how it goes.
    Task(rmcp::model::CreateTaskResult),
}

impl Final for ToolAnswer {
    fn result_type(&self) -> Option<&ResultType> {
        match self {
            ToolAnswer::Result(result) => result.result_type(),
            ToolAnswer::Task(_) => None,
        }
    }
}

impl TryFrom<CallToolResponse> for Round<ToolAnswer> {
    type Error = String;
    fn try_from(response: CallToolResponse) -> Result<Self, String> {
        match response {
            CallToolResponse::Complete(result) => Ok(Round::Complete(ToolAnswer::Result(result))),
            CallToolResponse::InputRequired(required) => Ok(Round::InputRequired(required)),
            CallToolResponse::Task(task) => Ok(Round::Complete(ToolAnswer::Task(task))),
            _ => {
                Err("answered tools/call with a result of a kind this client does not know".into())
            }
        }
    }
}

impl TryFrom<ReadResourceResponse> for Round<ReadResourceResult> {
    type Error = String;
    fn try_from(response: ReadResourceResponse) -> Result<Self, String> {
        match response {
            ReadResourceResponse::Complete(result) => Ok(Round::Complete(result)),
            ReadResourceResponse::InputRequired(required) => Ok(Round::InputRequired(required)),
            _ => {
                Err("answered resources/read with a result of a kind this client does not know"
                    .into())
            }
        }
    }
}

/// Where a request's retries come from: the inputs of the previous round.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Retry {
    /// The answers to the previous round's input requests.
    pub input_responses: Option<InputResponses>,
    /// The previous round's `requestState`, sent back as it was.
    pub request_state: Option<String>,
}

/// Why an exchange ended without a result.
pub enum ExchangeError {
    /// The server (or the transport) failed a round.
    Service(rmcp::ServiceError),
    /// The budget ran out.
    TimedOut,
    /// The server's answers cannot be completed (model-visible, names no server: the caller does).
    Protocol(String),
}

/// One request's input-required exchange with one server.
pub struct Exchange<'a> {
    /// The connection's client side, which answers input requests through the host.
    pub client: &'a RouterClient,
    /// The request's method, for errors and events.
    pub method: &'static str,
    /// Most `input_required` answers before the request is abandoned.
    pub max_rounds: usize,
    /// The whole exchange's time, elicitation excluded.
    pub timeout: Duration,
    /// `reset_timeout_on_progress`: each progress report of the call restarts the time.
    pub reset_on_progress: bool,
}

impl Exchange<'_> {
    /// With `reset_on_progress`: when the server last reported progress for this call.
    fn heard(&self) -> Option<std::time::Instant> {
        if !self.reset_on_progress {
            return None;
        }
        let call_id = mcp_backend::current_call_id()?;
        self.client.progress.last_heard(&call_id)
    }

    /// Sends the request (`send` builds it from the previous round's inputs) until it
    /// completes.
    pub async fn run<T, F, Fut>(&self, mut send: F) -> Result<T, ExchangeError>
    where
        T: Final,
        F: FnMut(Retry) -> Fut,
        Fut: Future<Output = Result<Result<Round<T>, String>, rmcp::ServiceError>>,
    {
        let mut budget = self.timeout;
        let mut retry = Retry::default();
        for round in 0..=self.max_rounds {
            let started = Instant::now();
            // Pinned here and lent to `within`: moved into it, the request's future would be
            // stored twice in this one (rmcp's read is 5 KiB).
            let sent = std::pin::pin!(send(std::mem::take(&mut retry)));
            let answer = match crate::progress::within(budget, sent, || self.heard()).await {
                None => return Err(ExchangeError::TimedOut),
                Some(Err(error)) => return Err(ExchangeError::Service(error)),
                Some(Ok(Err(unusable))) => return Err(ExchangeError::Protocol(unusable)),
                Some(Ok(Ok(answer))) => answer,
            };
            budget = match self.heard() {
                // Reported progress restarted the clock: the time left counts from the report.
                Some(at) => self.timeout.saturating_sub(at.elapsed()),
                None => budget.saturating_sub(started.elapsed()),
            };
            let required = match answer {
                Round::Complete(result) => return self.check_final(result),
                Round::InputRequired(required) => required,
            };
            if round == self.max_rounds {
                break;
            }
            let requests = required.input_requests.unwrap_or_default();
            if requests.is_empty() && required.request_state.is_none() {
                return Err(ExchangeError::Protocol(format!(
                    "answered {} with resultType \"input_required\" but neither inputRequests nor requestState",
                    self.method
                )));
            }
            // Boxed: answering inputs is rare, and its future would enlarge every request's.
            let (responses, counted) = Box::pin(self.answer(requests)).await;
            budget = budget.saturating_sub(counted);
            if budget.is_zero() {
                return Err(ExchangeError::TimedOut);
            }
            retry = Retry {
                input_responses: (!responses.is_empty()).then_some(responses),
                request_state: required.request_state,
            };
        }
        Err(ExchangeError::Protocol(format!(
            "still asked for input after {} rounds of {} (the limit, `max_input_rounds`); the request was abandoned",
            self.max_rounds, self.method
        )))
    }

    fn check_final<T: Final>(&self, result: T) -> Result<T, ExchangeError> {
        match result.result_type() {
            Some(kind) if *kind != ResultType::COMPLETE => Err(ExchangeError::Protocol(format!(
                "answered {} with an unknown resultType \"{kind}\"",
                self.method
            ))),
            _ => Ok(result),
        }
    }

    async fn answer(&self, requests: InputRequests) -> (InputResponses, Duration) {
        answer_inputs(self.client, requests).await
    }
}

/// Answers every input request through the host, in key order, each announced with an
/// `mcp_server_request` event (an exchange's rounds, a task's `input_required`). Returns the
/// answers and the time that counts against a budget (everything but elicitation).
pub async fn answer_inputs(
    client: &RouterClient,
    requests: InputRequests,
) -> (InputResponses, Duration) {
    {
        let mut responses = InputResponses::new();
        let mut counted = Duration::ZERO;
        let host = &client.host;
        // The call whose answer these requests are part of.
        let asking = Asking::new(
            client.server.clone(),
            mcp_backend::current_call_id().map(|id| id.to_string()),
        );
        for (key, request) in requests {
            let started = Instant::now();
            let answer: Option<Value> = match request {
                InputRequest::Elicitation(request) => {
                    client.announce_begin(&asking, "elicitation/create", &request.params);
                    let result = host.elicit(&asking, request.params.clone()).await;
                    let shown = result.as_ref().map_err(|e| e.message.to_string());
                    client.announce(&asking, "elicitation/create", &request.params, shown);
                    // The host's time with a person is not the server's time: not counted. A
                    // host that cannot ask leaves it unanswered (never a user's answer).
                    result.ok().and_then(|r| serde_json::to_value(r).ok())
                }
                #[allow(deprecated)]
                InputRequest::CreateMessage(request) => {
                    client.announce_begin(&asking, "sampling/createMessage", &request.params);
                    let result = host.create_message(&asking, request.params.clone()).await;
                    client.announce(
                        &asking,
                        "sampling/createMessage",
                        &request.params,
                        result.as_ref().map_err(|e| e.message.to_string()),
                    );
                    counted += started.elapsed();
                    result.ok().and_then(|r| serde_json::to_value(r).ok())
                }
                #[allow(deprecated)]
                InputRequest::ListRoots(_) => {
                    client.announce_begin(&asking, "roots/list", &Value::Null);
                    let result = host.list_roots(&asking).await;
                    let shown = result.as_ref().map_err(|e| e.message.to_string());
                    client.announce(&asking, "roots/list", &Value::Null, shown);
                    counted += started.elapsed();
                    result.ok().and_then(|r| serde_json::to_value(r).ok())
                }
                // A kind of input this client does not know: left unanswered.
                _ => None,
            };
            if let Some(answer) = answer {
                responses.insert(key, answer);
            }
        }
        (responses, counted)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;
    use rmcp::model::{
        ContentBlock, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationSchema,
    };

    use super::*;
    use crate::host::{DefaultHost, HostHandler};

    /// A person who takes 5 s to type their answer.
    struct SlowPerson;

    #[async_trait]
    impl HostHandler for SlowPerson {
        async fn elicit(
            &self,
            _asking: &Asking,
            _request: ElicitRequestParams,
        ) -> Result<ElicitResult, rmcp::ErrorData> {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let content = serde_json::json!({"n": 1});
            Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
        }
    }

    use crate::scripted::router_client as client;

    fn exchange(client: &RouterClient, max_rounds: usize) -> Exchange<'_> {
        Exchange {
            client,
            method: "tools/call",
            max_rounds,
            timeout: Duration::from_secs(1),
            reset_on_progress: false,
        }
    }

    fn asking() -> InputRequiredResult {
        let schema = ElicitationSchema::builder().required_string("name").build().expect("schema");
        let request = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "name?".into(),
            requested_schema: schema,
        });
        let requests = [("q".to_string(), InputRequest::Elicitation(request))].into();
        InputRequiredResult::new(Some(requests), Some("state-1".into()))
    }

    fn done(text: &str) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(text)])
    }

    type Answer = Result<Result<Round<CallToolResult>, String>, rmcp::ServiceError>;

    #[tokio::test(start_paused = true)]
    async fn elicitation_time_does_not_count_and_the_retry_carries_answers_and_state() {
        let client = client(Arc::new(SlowPerson));
        let seen = std::sync::Mutex::new(Vec::new());
        let result = exchange(&client, 10)
            .run(|retry| {
                seen.lock().expect("lock").push(retry.clone());
                let answer: Answer = Ok(Ok(if retry.request_state.is_none() {
                    Round::InputRequired(asking())
                } else {
                    Round::Complete(done("ok"))
                }));
                std::future::ready(answer)
            })
            .await;
        assert!(matches!(result, Ok(ref r) if r.content == done("ok").content));
        let seen = seen.into_inner().expect("lock");
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0], Retry::default());
        assert_eq!(seen[1].request_state.as_deref(), Some("state-1"));
        let answer = &seen[1].input_responses.as_ref().expect("answers")["q"];
        assert_eq!(answer["action"], "accept");
    }

    #[tokio::test(start_paused = true)]
    async fn server_time_counts_across_rounds() {
        let client = client(Arc::new(DefaultHost));
        let rounds = AtomicUsize::new(0);
        let result = exchange(&client, 10)
            .run(|_| {
                rounds.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(Duration::from_millis(400)).await;
                    let answer: Answer = Ok(Ok(Round::InputRequired(asking())));
                    answer
                }
            })
            .await;
        assert!(matches!(result, Err(ExchangeError::TimedOut)));
        assert_eq!(rounds.load(Ordering::SeqCst), 3, "400 ms rounds within a 1 s budget");
    }

    #[tokio::test]
    async fn unusable_answers_are_named() {
        let client = client(Arc::new(DefaultHost));
        let protocol = |result: Result<CallToolResult, ExchangeError>| match result {
            Err(ExchangeError::Protocol(message)) => message,
            Ok(_) => panic!("unexpected result"),
            Err(_) => panic!("unexpected error kind"),
        };
        let mut odd = done("x");
        odd.result_type = serde_json::from_value(serde_json::json!("mystery")).ok();
        assert!(odd.result_type.is_some());
        let message = protocol(
            exchange(&client, 10)
                .run(|_| std::future::ready(Ok(Ok(Round::Complete(odd.clone())))))
                .await,
        );
        assert_eq!(message, "answered tools/call with an unknown resultType \"mystery\"");

        let empty = InputRequiredResult::new(None, None);
        let message = protocol(
            exchange(&client, 10)
                .run(|_| std::future::ready(Ok(Ok(Round::InputRequired(empty.clone())))))
                .await,
        );
        assert_eq!(
            message,
            "answered tools/call with resultType \"input_required\" but neither inputRequests nor requestState"
        );

        let message = protocol(
            exchange(&client, 2)
                .run(|_| std::future::ready(Ok(Ok(Round::InputRequired(asking())))))
                .await,
        );
        assert_eq!(
            message,
            "still asked for input after 2 rounds of tools/call (the limit, `max_input_rounds`); the request was abandoned"
        );
    }
}
