//! The one cursor loop, for every paginated list (`tools/list`, `resources/list`,
//! `resources/templates/list`): a server's list followed from a page to the end, with every
//! guard — any repeated cursor (a cycle of any length) and one page cap
//! ([`DEFAULT_MAX_PAGES`] unless configured). A stopped list keeps what it gathered and says
//! why ([`ListingStop`]). The fetch closure bounds each page's time and maps its failures;
//! this loop only follows cursors.

use std::collections::HashSet;
use std::future::Future;

use crate::error::McpError;
use crate::listing::{Items, ListKind, ListingStop, PageStart, Paged, ServerListing};

/// Most pages one list is followed for, unless configured otherwise.
pub const DEFAULT_MAX_PAGES: usize = 1_000;

/// What pages of a list are gathered into.
pub trait Gather {
    /// How many items so far.
    fn count(&self) -> usize;
    /// Append a page's items.
    fn gather(&mut self, more: Self);
}

impl Gather for Items {
    fn count(&self) -> usize {
        self.len()
    }
    fn gather(&mut self, more: Self) {
        self.extend(more);
    }
}

impl<T> Gather for Vec<T> {
    fn count(&self) -> usize {
        self.len()
    }
    fn gather(&mut self, more: Self) {
        self.extend(more);
    }
}

/// Where a listing starts and how far it may go.
#[derive(Debug, Clone, Copy)]
pub struct Follow<'a> {
    /// The configured server name.
    pub server: &'a str,
    /// Most pages fetched; reaching it stops the listing with [`ListingStop::PageCap`].
    pub max_pages: usize,
}

/// A list followed as far as it went.
#[derive(Debug, Clone, PartialEq)]
pub struct Followed<C> {
    /// Every item gathered, in the server's order.
    pub items: C,
    /// Pages fetched.
    pub pages: usize,
    /// Why it stopped before the last page, if it did.
    pub stop: Option<ListingStop>,
    /// Where each fetched page starts in `items`, with the cursor that asked for it.
    pub page_starts: Vec<PageStart>,
    /// The shortest cache hint (`ttlMs`) of its pages, if every page sent one.
    pub ttl_ms: Option<u64>,
}

impl Follow<'_> {
    /// One server's resources or templates from the page `from` names (`None`: the first) to
    /// the end, as a [`ServerListing`]. `fetch` asks for one page by cursor.
    pub async fn listing<F, Fut>(
        &self,
        kind: ListKind,
        from: Option<String>,
        fetch: F,
    ) -> ServerListing
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = Result<Paged<Items>, McpError>>,
    {
        let followed = self.run(Items::empty(kind), from, fetch).await;
        ServerListing {
            server: self.server.to_string(),
            items: followed.items,
            pages: followed.pages,
            error: followed.stop,
            page_starts: followed.page_starts,
            ttl_ms: followed.ttl_ms,
        }
    }

    /// Follow the pages from the one `from` names (`None`: the first) to the end, gathering
    /// them into `items`. `fetch` asks for one page by cursor.
    pub async fn run<C, F, Fut>(&self, items: C, from: Option<String>, mut fetch: F) -> Followed<C>
    where
        C: Gather,
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = Result<Paged<C>, McpError>>,
    {
        let mut listing =
            Followed { items, pages: 0, stop: None, page_starts: Vec::new(), ttl_ms: None };
        // The shortest hint of all pages; none as soon as one page has none.
        let mut hints: Option<u64> = None;
        let mut every_page_hinted = true;
        let mut seen = HashSet::new();
        let mut cursor = from;
        if let Some(first) = &cursor {
            seen.insert(first.clone());
        }
        loop {
            if listing.pages >= self.max_pages {
                listing.stop = Some(ListingStop::PageCap { pages: listing.pages });
                return listing;
            }
            let asked = cursor.clone();
            let page = match fetch(cursor.take()).await {
                Ok(page) => page,
                Err(e) => {
                    listing.stop = Some(ListingStop::Failed(e));
                    return listing;
                }
            };
            listing.pages += 1;
            match page.ttl_ms {
                Some(ttl) => hints = Some(hints.map_or(ttl, |h| h.min(ttl))),
                None => every_page_hinted = false,
            }
            listing.ttl_ms = hints.filter(|_| every_page_hinted);
            listing.page_starts.push(PageStart { index: listing.items.count(), cursor: asked });
            listing.items.gather(page.items);
            match page.next_cursor {
                None => return listing,
                Some(next) if !seen.insert(next.clone()) => {
                    listing.stop = Some(ListingStop::Cycle { cursor: next });
                    return listing;
                }
                Some(next) => cursor = Some(next),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::listing::Items;
    use rmcp::model::Resource;

    fn follow(max_pages: usize) -> Follow<'static> {
        Follow { server: "s", max_pages }
    }

    /// A page holding resource `i` (its URI is the number).
    fn page(i: usize, next: Option<String>) -> Paged<Items> {
        Paged {
            items: Items::Resources(vec![Resource::new(i.to_string(), "r")]),
            next_cursor: next,
            ttl_ms: None,
        }
    }

    /// A server whose page `i` holds item `i` and points to `next[i]`.
    async fn run(max_pages: usize, next: &[Option<&str>]) -> ServerListing {
        let next: Vec<Option<String>> = next.iter().map(|c| c.map(str::to_string)).collect();
        let mut count = 0usize;
        follow(max_pages)
            .listing(ListKind::Resources, None, |_cursor| {
                let i = count;
                count += 1;
                let next = next.get(i).cloned().flatten();
                async move { Ok(page(i, next)) }
            })
            .await
    }

    /// The numbers of the resources gathered.
    fn numbers(listing: &ServerListing) -> Vec<usize> {
        let Items::Resources(items) = &listing.items else { panic!("{listing:?}") };
        items.iter().map(|r| r.uri.parse().expect("a number")).collect()
    }

    fn message(listing: &ServerListing) -> Option<String> {
        listing.error_message()
    }

    #[tokio::test]
    async fn follows_pages_to_the_end() {
        let listing = run(10, &[Some("a"), Some("b"), None]).await;
        assert_eq!(numbers(&listing), vec![0, 1, 2]);
        assert_eq!(listing.pages, 3);
        assert_eq!(listing.error, None);
        let starts: Vec<_> = listing.page_starts.iter().map(|p| p.cursor.as_deref()).collect();
        assert_eq!(starts, [None, Some("a"), Some("b")]);
    }

    #[tokio::test]
    async fn an_empty_cursor_continues_and_a_repeated_one_is_a_cycle() {
        // `""` is a valid cursor (2026-07-28): it is followed, not taken for the end.
        let listing = run(10, &[Some(""), Some("b"), None]).await;
        assert_eq!(numbers(&listing), vec![0, 1, 2]);
        assert_eq!(listing.error, None);
        let listing = run(10, &[Some(""), Some("")]).await;
        assert_eq!(numbers(&listing), vec![0, 1]);
        assert!(message(&listing).is_some_and(|e| e.contains("cursor cycle")), "{listing:?}");
    }

    #[tokio::test]
    async fn cycle_of_any_length_stops_and_keeps_items() {
        let listing = run(100, &[Some("a"), Some("b"), Some("c"), Some("a")]).await;
        assert_eq!(numbers(&listing), vec![0, 1, 2, 3]);
        assert_eq!(
            message(&listing).as_deref(),
            Some(
                "resources/list stopped: the server repeated cursor \"a\" (a cursor cycle); the list is incomplete"
            )
        );
    }

    #[tokio::test]
    async fn a_listing_from_a_cursor_starts_there_and_counts_it_seen() {
        let mut asked = Vec::new();
        let listing = follow(10)
            .listing(ListKind::Resources, Some("m".to_string()), |cursor| {
                asked.push(cursor.clone());
                let next = match cursor.as_deref() {
                    Some("m") => Some("n".to_string()),
                    _ => Some("m".to_string()),
                };
                async move { Ok(page(7, next)) }
            })
            .await;
        assert_eq!(asked, [Some("m".to_string()), Some("n".to_string())]);
        assert_eq!(listing.page_starts[0].cursor.as_deref(), Some("m"));
        assert_eq!(listing.error, Some(ListingStop::Cycle { cursor: "m".into() }));
    }

    #[tokio::test]
    async fn page_cap_stops_and_keeps_items() {
        let cursors: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
        let next: Vec<Option<&str>> = cursors.iter().map(|c| Some(c.as_str())).collect();
        let listing = run(3, &next).await;
        assert_eq!(numbers(&listing), vec![0, 1, 2]);
        assert_eq!(
            message(&listing).as_deref(),
            Some("resources/list stopped after 3 pages (page cap); the list is incomplete")
        );
    }

    #[tokio::test]
    async fn a_failing_page_keeps_earlier_items() {
        let mut calls = 0;
        let listing = follow(10)
            .listing(ListKind::Resources, None, |_c| {
                calls += 1;
                let n = calls;
                async move {
                    if n == 1 {
                        Ok(page(1, Some("x".to_string())))
                    } else {
                        Err(McpError::Transport {
                            server: "s".into(),
                            error: "the connection is closed".into(),
                        })
                    }
                }
            })
            .await;
        assert_eq!(numbers(&listing), vec![1]);
        assert_eq!(listing.pages, 1);
        assert_eq!(
            message(&listing).as_deref(),
            Some(
                "resources/list failed: connection to MCP server 's' failed: the connection is closed"
            )
        );
    }

    #[tokio::test]
    async fn any_list_gathers_the_same_way() {
        let mut pages = vec![(vec!["b"], None), (vec!["a"], Some("1".to_string()))];
        let followed = follow(10)
            .run(Vec::new(), None, |_| {
                let (items, next_cursor) = pages.pop().expect("a page");
                async move { Ok(Paged { items, next_cursor, ttl_ms: None }) }
            })
            .await;
        assert_eq!((followed.items, followed.pages, followed.stop), (vec!["a", "b"], 2, None));
    }

    #[tokio::test]
    async fn hints_are_the_shortest_and_only_when_every_page_has_one() {
        let ttls = [Some(500), Some(200), None];
        for (pages, expected) in [(2, Some(200)), (3, None)] {
            let mut i = 0;
            let listing = follow(10)
                .listing(ListKind::Resources, None, |_c| {
                    let mut p = page(i, (i + 1 < pages).then(|| format!("c{i}")));
                    p.ttl_ms = ttls[i];
                    i += 1;
                    async move { Ok(p) }
                })
                .await;
            assert_eq!(listing.ttl_ms, expected, "{pages} pages");
        }
    }
}
