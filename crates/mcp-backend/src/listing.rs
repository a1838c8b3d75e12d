//! Resource and template listings: one kind argument instead of two copies of every operation.

use rmcp::model::{Resource, ResourceTemplate};

/// Which list: `resources/list` or `resources/templates/list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// One page of one server's list.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The page's items, in the server's order.
    pub items: Items,
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
    pub error: Option<String>,
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

/// The answer of every server that offers resources, sorted by server name.
pub type Aggregate = Vec<ServerListing>;

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
}
