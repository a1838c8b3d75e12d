//! Prompts for the host (slash commands): every server's `prompts/list` (every page up to
//! `max_list_pages`, a repeated cursor ending it; asked afresh each time, so a changed list is
//! seen at once), `prompts/get` through the input rounds, and completion of a prompt argument.

use mcp_backend::{Follow, McpError, Paged, PromptsBackend, PromptsListing};
use rmcp::model::{
    CompletionInfo, GetPromptRequestParams, GetPromptResult, JsonObject, PaginatedRequestParams,
    Prompt, Reference,
};
use router_protocol::DefinitionKind;
use tracing::Instrument as _;

use crate::declared::Capability;
use crate::manager::McpConnectionManager;
use mcp_connection::{Retry, Round};

/// `prompts`, as a server declares it and its catalog records it.
const PROMPTS: Capability =
    Capability { declared: |c| c.prompts.is_some(), cataloged: |c| c.prompts };

impl McpConnectionManager {
    /// `server`'s prompts, every page (the one cursor loop, `Follow`).
    async fn prompts_of(&self, server: &str) -> Result<Vec<Prompt>, McpError> {
        let follow = Follow { server, max_pages: self.servers.options.lists.max_pages };
        let followed = follow
            .run(Vec::new(), None, |cursor| async move {
                let page = self
                    .servers
                    .request(server, "prompts/list", |conn| {
                        let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
                        async move { conn.service.list_prompts(Some(params)).await }
                    })
                    .await?;
                Ok(Paged { items: page.prompts, next_cursor: page.next_cursor, ttl_ms: None })
            })
            .await;
        let prompts = crate::declared::gathered(server, followed)?.0;
        Ok(self.admitted(server, DefinitionKind::Prompt, prompts, |p| p.name.clone()).into_inner())
    }
}

#[async_trait::async_trait]
impl PromptsBackend for McpConnectionManager {
    /// Every server's prompts, sorted by server name: the servers that declare `prompts` (a
    /// starting one waited for, an idle one started unless its catalog says it has none).
    async fn all_prompts(&self) -> PromptsListing {
        let declared =
            self.each_declaring(PROMPTS, |name| async move { self.prompts_of(&name).await }).await;
        PromptsListing { servers: declared }
    }

    /// Whether any server declares `prompts` (see `any_declaring`). Only looks.
    async fn offers_prompts(&self) -> bool {
        self.any_declaring(PROMPTS).await
    }

    /// `prompts/get`, input rounds answered through the host.
    async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, McpError> {
        self.not_held(server, DefinitionKind::Prompt, name)?;
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = arguments;
        self.servers
            .exchange(server, "prompts/get", |conn, retry: Retry| {
                let mut params = params.clone();
                params.input_responses = retry.input_responses;
                params.request_state = retry.request_state;
                async move {
                    let mut span = conn.telemetry().start("prompts/get", Some(&params.name), None);
                    span.tag(&mut params.meta);
                    let answer = conn.service.get_prompt_once(params).instrument(span.span()).await;
                    span.finish_with(&answer, |_| false);
                    answer.map(Round::try_from)
                }
            })
            .await
    }

    /// `completion/complete` for an argument of a prompt.
    async fn complete_prompt_argument(
        &self,
        server: &str,
        prompt: &str,
        argument: &str,
        value: &str,
    ) -> Result<CompletionInfo, McpError> {
        self.servers.complete(server, Reference::for_prompt(prompt), argument, value).await
    }
}
