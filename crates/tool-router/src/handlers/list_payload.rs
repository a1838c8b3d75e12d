//! What a list tool's payload is made of: items of either kind with their server, Codex's
//! envelope (`server`, `resources`|`resourceTemplates`, `nextCursor`, `errors`) and the additive
//! `incomplete`, `matched` and `listed_at` keys. Serialized from structs so key order is fixed.

use std::borrow::Cow;

use mcp_backend::{Items, SharedListing};
use rmcp::model::{Resource, ResourceTemplate};
use router_protocol::{ResourceCallSummary, ServerFailure};
use serde::Serialize;

use crate::handlers::list_shape::Listed;

/// An item with the server it came from, next to the item's own MCP fields.
#[derive(Serialize)]
pub(crate) struct WithServer<'a, T: Listed> {
    pub(crate) server: &'a str,
    #[serde(flatten)]
    pub(crate) item: Cow<'a, T>,
}

/// Items of one kind, as the list tools see them.
pub(crate) trait Kind: Listed + Sized {
    /// Codex's key for them in a payload.
    const KEY: &'static str;
    fn slice(items: &Items) -> &[Self];
    fn take(items: Items) -> Vec<Self>;
}

/// `Kind` for the item type held by `Items::$variant`.
macro_rules! kind {
    ($type:ty, $variant:ident, $key:literal) => {
        impl Kind for $type {
            const KEY: &'static str = $key;
            fn slice(items: &Items) -> &[Self] {
                match items {
                    Items::$variant(items) => items,
                    _ => &[],
                }
            }
            fn take(items: Items) -> Vec<Self> {
                match items {
                    Items::$variant(items) => items,
                    _ => Vec::new(),
                }
            }
        }
    };
}

kind!(Resource, Resources, "resources");
kind!(ResourceTemplate, Templates, "resourceTemplates");

/// A server not shown in full in an all-server list, and how to go on.
#[derive(Serialize)]
pub(crate) struct Incomplete {
    pub(crate) server: String,
    pub(crate) shown: usize,
    pub(crate) total: usize,
    #[serde(rename = "nextCursor")]
    pub(crate) next_cursor: String,
}

/// A list payload in Codex's shape — `{"server", "resources"|"resourceTemplates", "nextCursor"}`
/// for one server, `{"server": null, …, "errors"?}` for all — plus, only when they apply,
/// `incomplete` (servers not shown in full) and `matched` (how many items a query or type
/// matched).
pub(crate) struct Payload<'a, T: Kind> {
    pub(crate) server: Option<&'a str>,
    pub(crate) items: Vec<WithServer<'a, T>>,
    /// `Some` for a single-server payload (the key is always there, `null` at the end).
    pub(crate) next_cursor: Option<Option<String>>,
    pub(crate) errors: Vec<ServerFailure>,
    pub(crate) incomplete: Vec<Incomplete>,
    pub(crate) matched: Option<usize>,
    /// When the listing was taken, if the backend kept it from an earlier request.
    pub(crate) listed_at: Option<String>,
}

impl<T: Kind> Serialize for Payload<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("server", &self.server)?;
        map.serialize_entry(T::KEY, &self.items)?;
        if let Some(next) = &self.next_cursor {
            map.serialize_entry("nextCursor", next)?;
        }
        if !self.errors.is_empty() {
            map.serialize_entry("errors", &self.errors)?;
        }
        if !self.incomplete.is_empty() {
            map.serialize_entry("incomplete", &self.incomplete)?;
        }
        if let Some(matched) = self.matched {
            map.serialize_entry("matched", &matched)?;
        }
        if let Some(listed_at) = &self.listed_at {
            map.serialize_entry("listed_at", listed_at)?;
        }
        map.end()
    }
}

impl<'a, T: Kind> Payload<'a, T> {
    pub(crate) fn new(server: Option<&'a str>) -> Self {
        Self {
            server,
            items: Vec::new(),
            next_cursor: None,
            errors: Vec::new(),
            incomplete: Vec::new(),
            matched: None,
            listed_at: None,
        }
    }
}

/// The servers whose listing failed or stopped, with why.
pub(crate) fn failures(listings: &[SharedListing]) -> Vec<ServerFailure> {
    listings
        .iter()
        .filter_map(|l| {
            let error = l.listing.error_message()?;
            Some(ServerFailure { server: l.listing.server.clone(), error })
        })
        .collect()
}

/// The end event's summary of an all-server list: pages counts the pages fetched for it (a
/// kept listing cost none).
/// `shown`: the items the payload gives the model (what `items` counts, whatever was listed).
pub(crate) fn aggregate_summary(listings: &[SharedListing], shown: usize) -> ResourceCallSummary {
    ResourceCallSummary {
        items: shown,
        pages: listings.iter().filter(|l| l.kept_at.is_none()).map(|l| l.listing.pages).sum(),
        servers: listings.len(),
        failed_servers: failures(listings),
    }
}
