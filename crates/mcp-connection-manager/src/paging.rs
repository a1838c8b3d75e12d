//! One server's list followed to the end, with every guard: any repeated cursor (a cycle of any
//! length), a page cap, and a timeout per page. A stopped listing keeps what it gathered and
//! says why.

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use mcp_backend::{Items, ListKind, McpError, Page, PageStart, ServerListing};

use crate::client::service_error;

/// Follows one server's pages to the end, with every guard.
pub(crate) struct Paging<'a> {
    pub(crate) kind: ListKind,
    pub(crate) max_pages: usize,
    pub(crate) timeout: Duration,
    pub(crate) server: &'a str,
}

impl Paging<'_> {
    pub(crate) async fn run<F, Fut>(&self, mut fetch: F) -> ServerListing
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = Result<Page, rmcp::ServiceError>>,
    {
        let method = self.kind.method();
        let mut listing = ServerListing {
            server: self.server.to_string(),
            items: Items::empty(self.kind),
            pages: 0,
            error: None,
            page_starts: Vec::new(),
            ttl_ms: None,
        };
        // The shortest hint of all pages; none as soon as one page has none.
        let mut hints: Option<u64> = None;
        let mut every_page_hinted = true;
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            if listing.pages >= self.max_pages {
                listing.error = Some(format!(
                    "{} stopped after {} pages (page cap); the list is incomplete",
                    method, self.max_pages
                ));
                return listing;
            }
            let asked = cursor.clone();
            let page = match tokio::time::timeout(self.timeout, fetch(cursor.take())).await {
                Ok(Ok(page)) => page,
                Ok(Err(e)) => {
                    let e = service_error(self.server, e);
                    listing.error = Some(format!("{} failed: {e}", method));
                    return listing;
                }
                Err(_) => {
                    let e = McpError::Timeout {
                        server: self.server.to_string(),
                        method,
                        timeout: self.timeout,
                    };
                    listing.error = Some(e.to_string());
                    return listing;
                }
            };
            listing.pages += 1;
            match page.ttl_ms {
                Some(ttl) => hints = Some(hints.map_or(ttl, |h| h.min(ttl))),
                None => every_page_hinted = false,
            }
            listing.ttl_ms = hints.filter(|_| every_page_hinted);
            listing.page_starts.push(PageStart { index: listing.items.len(), cursor: asked });
            listing.items.extend(page.items);
            match page.next_cursor {
                None => return listing,
                Some(next) if !seen.insert(next.clone()) => {
                    listing.error = Some(format!(
                        "{} stopped: the server repeated cursor {} (a cursor cycle); the list is incomplete",
                        method,
                        preview(&next)
                    ));
                    return listing;
                }
                Some(next) => cursor = Some(next),
            }
        }
    }
}

/// A cursor shown in a message: quoted, and cut if long (cursors are opaque and may be huge).
fn preview(cursor: &str) -> String {
    const MAX: usize = 64;
    if cursor.chars().count() <= MAX {
        return format!("{cursor:?}");
    }
    let cut: String = cursor.chars().take(MAX).collect();
    format!("{cut:?}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    use rmcp::model::Resource;

    fn paging(max_pages: usize) -> Paging<'static> {
        Paging {
            kind: ListKind::Resources,
            max_pages,
            timeout: Duration::from_secs(5),
            server: "s",
        }
    }

    /// A page holding resource `i` (its URI is the number).
    fn page(i: usize, next: Option<String>) -> Page {
        Page {
            items: Items::Resources(vec![Resource::new(i.to_string(), "r")]),
            next_cursor: next,
            ttl_ms: None,
        }
    }

    /// The numbers of the resources gathered.
    fn numbers(listing: &ServerListing) -> Vec<usize> {
        let Items::Resources(items) = &listing.items else { panic!("{listing:?}") };
        items.iter().map(|r| r.uri.parse().expect("a number")).collect()
    }

    /// A server whose page `i` holds item `i` and points to `next[i]`.
    async fn run(max_pages: usize, next: &[Option<&str>]) -> ServerListing {
        let next: Vec<Option<String>> = next.iter().map(|c| c.map(str::to_string)).collect();
        let mut count = 0usize;
        paging(max_pages)
            .run(|_cursor| {
                let i = count;
                count += 1;
                let next = next.get(i).cloned().flatten();
                async move { Ok(page(i, next)) }
            })
            .await
    }

    #[tokio::test]
    async fn follows_pages_to_the_end() {
        let listing = run(10, &[Some("a"), Some("b"), None]).await;
        assert_eq!(numbers(&listing), vec![0, 1, 2]);
        assert_eq!(listing.pages, 3);
        assert_eq!(listing.error, None);
    }

    #[tokio::test]
    async fn an_empty_cursor_continues_and_a_repeated_one_is_a_cycle() {
        // `""` is a valid cursor (2026-07-28): it is followed, not taken for the end.
        let listing = run(10, &[Some(""), Some("b"), None]).await;
        assert_eq!(numbers(&listing), vec![0, 1, 2]);
        assert_eq!(listing.error, None);
        let listing = run(10, &[Some(""), Some("")]).await;
        assert_eq!(numbers(&listing), vec![0, 1]);
        assert!(
            listing.error.as_deref().is_some_and(|e| e.contains("cursor cycle")),
            "{listing:?}"
        );
    }

    #[tokio::test]
    async fn cycle_of_any_length_stops_and_keeps_items() {
        let listing = run(100, &[Some("a"), Some("b"), Some("c"), Some("a")]).await;
        assert_eq!(numbers(&listing), vec![0, 1, 2, 3]);
        assert_eq!(
            listing.error.as_deref(),
            Some(
                "resources/list stopped: the server repeated cursor \"a\" (a cursor cycle); the list is incomplete"
            )
        );
    }

    #[tokio::test]
    async fn page_cap_stops_and_keeps_items() {
        let cursors: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
        let next: Vec<Option<&str>> = cursors.iter().map(|c| Some(c.as_str())).collect();
        let listing = run(3, &next).await;
        assert_eq!(numbers(&listing), vec![0, 1, 2]);
        assert_eq!(
            listing.error.as_deref(),
            Some("resources/list stopped after 3 pages (page cap); the list is incomplete")
        );
    }

    #[tokio::test]
    async fn a_failing_page_keeps_earlier_items() {
        let mut calls = 0;
        let listing = paging(10)
            .run(|_c| {
                calls += 1;
                let n = calls;
                async move {
                    if n == 1 {
                        Ok(page(1, Some("x".to_string())))
                    } else {
                        Err(rmcp::ServiceError::TransportClosed)
                    }
                }
            })
            .await;
        assert_eq!(numbers(&listing), vec![1]);
        assert_eq!(
            listing.error.as_deref(),
            Some(
                "resources/list failed: connection to MCP server 's' failed: the connection is closed"
            )
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_page_times_out() {
        let listing = paging(10)
            .run(|_c| futures::future::pending::<Result<Page, rmcp::ServiceError>>())
            .await;
        assert_eq!(
            listing.error.as_deref(),
            Some("timed out awaiting resources/list after 5s (MCP server 's')")
        );
    }

    #[test]
    fn long_cursors_are_cut_in_messages() {
        let shown = preview(&"x".repeat(10_000));
        assert!(shown.len() < 80, "{shown}");
    }
}
