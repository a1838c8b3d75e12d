//! Resource and template lists: one page as a server has it, one server's list followed to the
//! end (`mcp_backend::Follow`, the one cursor loop), every server's at once, and the complete
//! listings kept beside the connections' response caches (`mcp_backend::KeptListings`).
//!
//! Every page request goes through the manager's `failed()` step, whichever path asked for
//! it: a broken connection found by an all-server list is marked dead (the next request
//! restarts the server), and a sign-in challenge is recorded.

use futures::future::join_all;
use mcp_backend::{
    Aggregate, Follow, Items, ListKind, ListingStop, McpError, Page, Reuse, ServerListing,
    SharedListing,
};
use rmcp::model::PaginatedRequestParams;
use router_protocol::DefinitionKind;
use std::sync::Arc;
use tracing::Instrument as _;

use crate::lifecycle::ServerState;
use crate::manager::McpConnectionManager;
use crate::trust::Judged;
use mcp_connection::SharedConnection;

impl McpConnectionManager {
    /// One page of `resources/list` or `resources/templates/list` from one server.
    pub(crate) async fn page(
        &self,
        server: &str,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page, McpError> {
        let page = self
            .servers
            .request(server, kind.method(), |conn| fetch_page(conn, kind, cursor.clone()))
            .await?;
        Ok(self.admitted_page(server, cursor.is_none(), page))
    }

    /// `page` (the `first` of its list or not) with only the templates `server`'s pins admit
    /// (see `Trust::admit_items`). Resources pass as they are.
    fn admitted_page(&self, server: &str, first: bool, page: Page) -> Page {
        let Page { items: Items::Templates(templates), next_cursor, ttl_ms } = page else {
            return page;
        };
        let kind = DefinitionKind::ResourceTemplate;
        let policy = self.servers.policy(server);
        let judged = Judged { kind, policy, first, last: next_cursor.is_none() };
        let name = |t: &rmcp::model::ResourceTemplate| t.uri_template.clone();
        let key = self.servers.key(server);
        let templates = self.servers.trust.admit_items(&key, judged, templates, name).into_inner();
        Page { items: Items::Templates(templates), next_cursor, ttl_ms }
    }

    /// One server's list from the page `from` names to the end (see
    /// [`mcp_backend::McpBackend::listing`]): a fresh kept listing that has that page answers
    /// at once; a complete listing from the first page is kept.
    pub(crate) async fn listing_from(
        &self,
        server: &str,
        kind: ListKind,
        from: Option<String>,
    ) -> Result<SharedListing, McpError> {
        let generation = self.generation(server)?;
        if let Some(kept) = self.state().kept.get(server, kind, generation)
            && kept.listing.page_starts.iter().any(|p| p.cursor == from)
        {
            return Ok(kept);
        }
        let conn = self.servers.connection(server).await?;
        // The generation a listing is kept under is read before its first page is asked for:
        // a change announced while it is taken makes it stale at once.
        let generation = self.generation(server)?;
        let listing = self.follow(server, &conn, kind, from.clone()).await;
        let listing = Arc::new(listing);
        if from.is_none() {
            self.state().kept.put(&listing, generation);
        }
        Ok(SharedListing { listing, kept_at: None })
    }

    /// `server`'s fresh kept listing of `kind`. Only looks.
    pub(crate) fn kept(&self, server: &str, kind: ListKind) -> Option<SharedListing> {
        self.state().kept.get(server, kind, self.generation(server).ok()?)
    }

    /// Every server's resources or templates, each paged to the end. Every server with the
    /// `resources` capability is asked at once; one that cannot be reached is part of the
    /// answer with its error. With [`Reuse::Kept`], the kept listings answer when every server
    /// of the last complete all-server listing has a fresh one. Fails only once the manager
    /// is shut down.
    pub(crate) async fn every_listing(
        &self,
        kind: ListKind,
        reuse: Reuse,
    ) -> Result<Aggregate, McpError> {
        if reuse == Reuse::Kept
            && let Some(kept) =
                self.state().kept.all_kept(kind, |server| self.generation(server).ok())
        {
            return Ok(kept);
        }
        let all = self.servers.snapshot();
        let listings = all.iter().map(|(name, managed)| async move {
            // A lazy server whose catalog says it offers no resources is not started for this.
            if matches!(&*managed.state.borrow(), ServerState::Lazy)
                && managed.catalog.get().is_some_and(|c| !c.resources)
            {
                return None;
            }
            let conn = match self.servers.connection(name).await {
                Ok(conn) => conn,
                Err(McpError::ShutDown) => return Some(Err(McpError::ShutDown)),
                Err(e) => {
                    let mut listing = ServerListing::empty(name, kind);
                    listing.error = Some(ListingStop::Unreachable(e));
                    return Some(Ok(SharedListing::fresh(listing)));
                }
            };
            // A server that offers no resources is not asked (nor reported as failing).
            conn.capabilities.resources.as_ref()?;
            let generation = self.generation(name).ok()?;
            let listing = Arc::new(self.follow(name, &conn, kind, None).await);
            self.state().kept.put(&listing, generation);
            Some(Ok(SharedListing { listing, kept_at: None }))
        });
        let listings: Aggregate =
            join_all(listings).await.into_iter().flatten().collect::<Result<_, _>>()?;
        let complete = listings.iter().all(|l| l.listing.error.is_none());
        let servers = complete.then(|| listings.iter().map(|l| l.listing.server.clone()).collect());
        self.state().kept.set_last_all(kind, servers);
        Ok(listings)
    }

    /// `server`'s pages from `from` to the end, each request bounded by the tool timeout and
    /// its failure taken through `failed()`.
    async fn follow(
        &self,
        server: &str,
        conn: &SharedConnection,
        kind: ListKind,
        from: Option<String>,
    ) -> ServerListing {
        let max_pages = self.servers.options.lists.max_pages;
        let timeout = match self.servers.get(server) {
            Some(managed) => managed.config.tool_timeout,
            None => return ServerListing::empty(server, kind),
        };
        let follow = Follow { server, max_pages };
        follow
            .listing(kind, from, |cursor| async move {
                let first = cursor.is_none();
                let page = tokio::time::timeout(timeout, fetch_page(conn.clone(), kind, cursor));
                match page.await {
                    Ok(Ok(page)) => Ok(self.admitted_page(server, first, page)),
                    Ok(Err(e)) => Err(self.servers.failed(server, conn, e).await),
                    Err(_) => Err(McpError::Timeout {
                        server: server.to_string(),
                        method: kind.method(),
                        timeout,
                    }),
                }
            })
            .await
    }
}

/// One page of either list from one connection.
/// Answered from the connection's cache while the server's `ttlMs` for it lasts.
pub(crate) async fn fetch_page(
    conn: SharedConnection,
    kind: ListKind,
    cursor: Option<String>,
) -> Result<Page, rmcp::ServiceError> {
    if let Some(page) = conn.cache().page(kind, &cursor) {
        return Ok(page);
    }
    let mut params = cursor.clone().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
    let mut span = conn.telemetry().start(kind.method(), None, None);
    if !span.span().is_disabled() {
        span.tag(&mut params.get_or_insert_with(Default::default).meta);
    }
    let (page, ttl_ms) = match kind {
        ListKind::Resources => {
            let page = mcp_connection::list_resources(conn.service.peer(), params)
                .instrument(span.span())
                .await;
            span.finish_with(&page, |_| false);
            let page = page?;
            let ttl = page.ttl_ms;
            let items = Items::Resources(page.resources);
            (Page { items, next_cursor: page.next_cursor, ttl_ms: ttl }, ttl)
        }
        ListKind::Templates => {
            let page = mcp_connection::list_resource_templates(conn.service.peer(), params)
                .instrument(span.span())
                .await;
            span.finish_with(&page, |_| false);
            let page = page?;
            let ttl = page.ttl_ms;
            let items = Items::Templates(page.resource_templates);
            (Page { items, next_cursor: page.next_cursor, ttl_ms: ttl }, ttl)
        }
    };
    conn.cache().put_page(kind, cursor, &page, ttl_ms);
    Ok(page)
}
