//! Resource and template listings: one kind argument instead of two copies of every operation.

use std::sync::Arc;
use std::time::SystemTime;

use rmcp::model::{Resource, ResourceTemplate};

use crate::error::McpError;

/// Which list: `resources/list` or `resources/templates/list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListKind {
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
}

impl ListKind {
    /// The MCP method, as error messages name it.
    pub fn method(self) -> &'static str {
        match self {
            Self::Resources => "resources/list",
            Self::Templates => "resources/templates/list",
        }
    }
}

/// The items of a list, typed by kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Items {
    /// Resources.
    Resources(Vec<Resource>),
    /// Resource templates.
    Templates(Vec<ResourceTemplate>),
}

impl Items {
    /// No items of `kind`.
    pub fn empty(kind: ListKind) -> Self {
        match kind {
            ListKind::Resources => Self::Resources(Vec::new()),
            ListKind::Templates => Self::Templates(Vec::new()),
        }
    }

    /// Which kind these are.
    pub fn kind(&self) -> ListKind {
        match self {
            Self::Resources(_) => ListKind::Resources,
            Self::Templates(_) => ListKind::Templates,
        }
    }

    /// How many.
    pub fn len(&self) -> usize {
        match self {
            Self::Resources(items) => items.len(),
            Self::Templates(items) => items.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append `more` (a page of the same kind; items of another kind are dropped).
    pub fn extend(&mut self, more: Items) {
        match (self, more) {
            (Self::Resources(items), Self::Resources(more)) => items.extend(more),
            (Self::Templates(items), Self::Templates(more)) => items.extend(more),
            _ => {}
        }
    }
}

/// One page of one server's resources or templates.
pub type Page = Paged<Items>;

/// One page of one server's list of anything.
#[derive(Debug, Clone, PartialEq)]
pub struct Paged<C> {
    /// The page's items, in the server's order.
    pub items: C,
    /// The server's cursor for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
    /// The server's cache hint for this page (`ttlMs`, protocol 2026-07-28), if it sent one.
    pub ttl_ms: Option<u64>,
}

/// One server's part of an all-server list.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerListing {
    /// The configured server name.
    pub server: String,
    /// What it returned, in its own order (possibly partial when `error` is set).
    pub items: Items,
    /// Pages fetched.
    pub pages: usize,
    /// Why the listing is missing or incomplete.
    pub error: Option<ListingStop>,
    /// Where each fetched page starts in `items`, with the cursor that asked for it (`None` for
    /// the first page), so a position in the listing can be named as "this page, this many
    /// items in". Empty when unknown.
    pub page_starts: Vec<PageStart>,
    /// The shortest cache hint (`ttlMs`) of its pages, if every page sent one.
    pub ttl_ms: Option<u64>,
}

/// The first item of one fetched page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageStart {
    /// Its index in the listing's items.
    pub index: usize,
    /// The cursor that asked for the page (`None`: the first page).
    pub cursor: Option<String>,
}

impl ServerListing {
    /// No items yet: the start of a listing of `kind` from `server`.
    pub fn empty(server: &str, kind: ListKind) -> Self {
        Self {
            server: server.to_string(),
            items: Items::empty(kind),
            pages: 0,
            error: None,
            page_starts: Vec::new(),
            ttl_ms: None,
        }
    }

    /// Why the listing is missing or incomplete, as the model and the end event show it.
    pub fn error_message(&self) -> Option<String> {
        self.error.as_ref().map(|stop| stop.message(self.items.kind().method()))
    }
}

/// Why a listing stopped before the server's last page.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ListingStop {
    /// The server could not be asked at all (unknown, failed to start, shut down).
    Unreachable(McpError),
    /// A page request failed; the pages before it are kept.
    Failed(McpError),
    /// The page cap was reached.
    PageCap {
        /// Pages fetched.
        pages: usize,
    },
    /// The server handed out a cursor it had handed out before (a cycle of any length).
    Cycle {
        /// The repeated cursor.
        cursor: String,
    },
}

impl ListingStop {
    /// The model-visible text, naming the list's `method` (e.g. `resources/list`).
    pub fn message(&self, method: &str) -> String {
        match self {
            Self::Unreachable(e) => e.to_string(),
            Self::Failed(e) => format!("{method} failed: {e}"),
            Self::PageCap { pages } => {
                format!("{method} stopped after {pages} pages (page cap); the list is incomplete")
            }
            Self::Cycle { cursor } => format!(
                "{method} stopped: the server repeated cursor {} (a cursor cycle); the list is incomplete",
                preview(cursor)
            ),
        }
    }

    /// The request error behind the stop, if a request failed.
    pub fn request_error(&self) -> Option<&McpError> {
        match self {
            Self::Unreachable(e) | Self::Failed(e) => Some(e),
            _ => None,
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

/// A listing as a backend hands it out: shared, never copied, and whether it was kept from an
/// earlier listing (then when it was taken).
#[derive(Debug, Clone, PartialEq)]
pub struct SharedListing {
    /// The listing.
    pub listing: Arc<ServerListing>,
    /// When the listing was taken, if it was kept from an earlier request rather than fetched
    /// for this one (shown to the model as `listed_at`).
    pub kept_at: Option<SystemTime>,
}

impl SharedListing {
    /// A listing fetched for this request.
    pub fn fresh(listing: ServerListing) -> Self {
        Self { listing: Arc::new(listing), kept_at: None }
    }
}

/// Whether an all-server list may be answered from kept listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reuse {
    /// Ask every server (a plain list: the model sees the lists as they are now).
    Never,
    /// Answer from kept listings when every server of the last complete all-server listing
    /// still has a fresh one (filtered lists); otherwise ask every server.
    Kept,
}

/// The answer of every server that offers resources, sorted by server name.
pub type Aggregate = Vec<SharedListing>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extend_keeps_order_and_kind() {
        let mut items = Items::empty(ListKind::Resources);
        items.extend(Items::Resources(vec![Resource::new("a://1", "1")]));
        items.extend(Items::Templates(vec![ResourceTemplate::new("a://{x}", "x")]));
        items.extend(Items::Resources(vec![Resource::new("a://2", "2")]));
        let Items::Resources(list) = &items else { panic!("{items:?}") };
        assert_eq!(list.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(), ["a://1", "a://2"]);
        assert_eq!(items.kind(), ListKind::Resources);
        assert_eq!(ListKind::Templates.method(), "resources/templates/list");
    }

    #[test]
    fn stops_read_as_the_model_sees_them() {
        let cases = [
            (
                ListingStop::PageCap { pages: 3 },
                "resources/list stopped after 3 pages (page cap); the list is incomplete",
            ),
            (
                ListingStop::Cycle { cursor: "a".into() },
                "resources/list stopped: the server repeated cursor \"a\" (a cursor cycle); the list is incomplete",
            ),
            (
                ListingStop::Unreachable(McpError::UnknownServer("x".into())),
                "unknown MCP server 'x'",
            ),
            (
                ListingStop::Failed(McpError::UnknownServer("x".into())),
                "resources/list failed: unknown MCP server 'x'",
            ),
        ];
        for (stop, expected) in cases {
            assert_eq!(stop.message("resources/list"), expected);
        }
        let long = ListingStop::Cycle { cursor: "x".repeat(10_000) }.message("tools/list");
        assert!(long.len() < 200, "{long}");
    }
}
