//! Lists that fit a model's context: what the list tools show of big catalogs. A byte budget
//! for the payload (whole items only, always valid JSON), shared fairly between servers;
//! continuations the model follows with `{server, cursor}`; the `query`, `mimeType`, `limit`
//! and `sort` filters; and the items' annotations honoured (audience, priority) with icons cut
//! to what a model can use.
//!
//! Pure functions over what the backend hands out (`&ServerListing`, pages); the backend
//! fetches and keeps listings, this module only shapes them.
//!
//! A continuation is a cursor of our own, `mcp-router:` + base64url(JSON): the server's cursor
//! of the page to ask for, how many items of that page were passed, and the filters. The router
//! keeps no state for it: following it asks the backend for the listing from that page — its
//! kept listing when it has one with that page, else the server again from that page — so
//! every item comes exactly once, in the server's order (with `sort: "priority"`, the offset
//! counts items of the sorted list, which is listed again from the start). A server's own
//! cursor is passed on untouched.

use std::sync::{Arc, Mutex, Weak};

use base64::Engine as _;
use mcp_backend::{PageStart, ServerListing};
use rmcp::model::{Annotations, Icon, Resource, ResourceTemplate, Role};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::handlers::args::{normalize_optional_string, respond};
use crate::invocation::FunctionCallError;

/// How continuations of ours start.
pub(crate) const CURSOR_PREFIX: &str = "mcp-router:";

/// What the list tools need of an item (a resource or a template).
pub(crate) trait Listed: Serialize + Clone {
    /// `uri`, or `uriTemplate` for a template.
    fn address(&self) -> &str;
    fn name(&self) -> &str;
    fn title(&self) -> Option<&str>;
    fn description(&self) -> Option<&str>;
    fn mime_type(&self) -> Option<&str>;
    fn annotations(&self) -> Option<&Annotations>;
    fn icons(&self) -> Option<&Vec<Icon>>;
    fn set_icons(&mut self, icons: Option<Vec<Icon>>);
}

macro_rules! listed {
    ($type:ty, $address:ident) => {
        impl Listed for $type {
            fn address(&self) -> &str {
                &self.$address
            }
            fn name(&self) -> &str {
                &self.name
            }
            fn title(&self) -> Option<&str> {
                self.title.as_deref()
            }
            fn description(&self) -> Option<&str> {
                self.description.as_deref()
            }
            fn mime_type(&self) -> Option<&str> {
                self.mime_type.as_deref()
            }
            fn annotations(&self) -> Option<&Annotations> {
                self.annotations.as_ref()
            }
            fn icons(&self) -> Option<&Vec<Icon>> {
                self.icons.as_ref()
            }
            fn set_icons(&mut self, icons: Option<Vec<Icon>>) {
                self.icons = icons;
            }
        }
    };
}

listed!(Resource, uri);
listed!(ResourceTemplate, uri_template);

/// Whether the model may see `item`: its `annotations.audience`, when given, includes
/// `"assistant"` (or the setting shows every audience).
pub(crate) fn for_assistant<T: Listed>(item: &T, every_audience: bool) -> bool {
    every_audience
        || item
            .annotations()
            .and_then(|a| a.audience.as_ref())
            .is_none_or(|audience| audience.contains(&Role::Assistant))
}

/// The filters of a list call; they travel inside continuations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Filter {
    /// Case-insensitive text to find in the uri, name, title or description.
    #[serde(rename = "q", default, skip_serializing_if = "Option::is_none")]
    pub(crate) query: Option<String>,
    /// An exact MIME type, or a prefix ending in `/`.
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    pub(crate) mime_type: Option<String>,
    /// `sort: "priority"`: each server's items by `annotations.priority`, highest first.
    #[serde(rename = "p", default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) by_priority: bool,
}

impl Filter {
    /// No query, no type, no sort.
    pub(crate) fn is_empty(&self) -> bool {
        self.query.is_none() && self.mime_type.is_none() && !self.by_priority
    }

    /// Whether a query or type was given (the payload then says how many matched).
    pub(crate) fn selects(&self) -> bool {
        self.query.is_some() || self.mime_type.is_some()
    }

    /// The filter ready to test many items (the query and type folded to lower case once).
    pub(crate) fn matcher(&self) -> Matcher {
        Matcher {
            query: self.query.as_ref().map(|q| q.to_lowercase()),
            mime_type: self.mime_type.as_ref().map(|m| m.to_ascii_lowercase()),
        }
    }

    #[cfg(test)]
    pub(crate) fn matches<T: Listed>(&self, item: &T) -> bool {
        self.matcher().matches(item)
    }
}

/// A [`Filter`] prepared for testing items.
pub(crate) struct Matcher {
    query: Option<String>,
    mime_type: Option<String>,
}

/// Whether `haystack` contains `needle` (already lower case), ignoring case. ASCII needles are
/// compared byte by byte without allocating; others fold the haystack to lower case.
fn contains_folded(haystack: &str, needle: &str) -> bool {
    if needle.is_ascii() {
        let (h, n) = (haystack.as_bytes(), needle.as_bytes());
        let Some((&first, rest)) = n.split_first() else { return true };
        // Jump (SIMD) to each place the first byte occurs in either case, compare the rest.
        return memchr::memchr2_iter(first.to_ascii_lowercase(), first.to_ascii_uppercase(), h)
            .any(|at| h.get(at + 1..at + n.len()).is_some_and(|w| w.eq_ignore_ascii_case(rest)));
    }
    haystack.to_lowercase().contains(needle)
}

impl Matcher {
    /// The query, folded to lower case.
    pub(crate) fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    pub(crate) fn matches<T: Listed>(&self, item: &T) -> bool {
        if let Some(query) = &self.query {
            let found = |text: Option<&str>| text.is_some_and(|t| contains_folded(t, query));
            let any = found(Some(item.address()))
                || found(Some(item.name()))
                || found(item.title())
                || found(item.description());
            if !any {
                return false;
            }
        }
        if let Some(wanted) = &self.mime_type {
            let Some(mime) = item.mime_type() else { return false };
            let ok = if wanted.ends_with('/') {
                mime.get(..wanted.len()).is_some_and(|p| p.eq_ignore_ascii_case(wanted))
            } else {
                mime.eq_ignore_ascii_case(wanted)
            };
            if !ok {
                return false;
            }
        }
        true
    }
}

/// `annotations.priority` for sorting; items without one count as 0.5, the middle of the
/// spec's range.
pub(crate) fn priority<T: Listed>(item: &T) -> f32 {
    item.annotations().and_then(|a| a.priority).filter(|p| p.is_finite()).unwrap_or(0.5)
}

/// Indices of `candidates` (into some item list) sorted by priority, highest first, ties in
/// the server's order.
pub(crate) fn sort_by_priority<T: Listed>(items: &[T], candidates: &mut [usize]) {
    candidates.sort_by(|a, b| priority(&items[*b]).total_cmp(&priority(&items[*a])));
}

/// A continuation of ours.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Continuation {
    /// The server's cursor of the page to ask for; `None`: the first page.
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub(crate) page: Option<String>,
    /// Items of that page already passed (with `sort: "priority"`: of the sorted list).
    #[serde(rename = "o", default)]
    pub(crate) offset: usize,
    #[serde(flatten)]
    pub(crate) filter: Filter,
    /// The `limit` of the call that got it, travelling with it (a continuation's own `limit`
    /// replaces it).
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub(crate) limit: Option<usize>,
}

/// A request's limit as a continuation carries it: `None` when there was none.
pub(crate) fn carried(limit: usize) -> Option<usize> {
    (limit != usize::MAX).then_some(limit)
}

impl Continuation {
    pub(crate) fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        format!("{CURSOR_PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json))
    }

    /// `None`: not one of ours (a server's cursor); `Some(Err)`: ours but unreadable.
    pub(crate) fn decode(cursor: &str) -> Option<Result<Self, String>> {
        let body = cursor.strip_prefix(CURSOR_PREFIX)?;
        let invalid = || {
            "invalid cursor: it is not one this router handed out; list again without a cursor"
                .to_string()
        };
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(body.trim())
            .map_err(|_| invalid());
        Some(bytes.and_then(|b| serde_json::from_slice(&b).map_err(|_| invalid())))
    }
}

pub(crate) use mcp_backend::json_len;

/// The sizes (as JSON) of `items` in order, up to the first that takes them past `room` bytes
/// (each with its separator, as [`fit`] and [`share`] count) or past `limit` items; the items
/// after it cannot be shown, so they are not measured. `fit` and `share` decide the same on the
/// shorter list: its last item already fails their test.
pub(crate) fn sizes_within<I: Serialize>(
    items: impl Iterator<Item = I>,
    room: usize,
    limit: usize,
) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut total = 0usize;
    for item in items {
        let size = json_len(&item);
        sizes.push(size);
        total = total.saturating_add(size + 1);
        if total > room || sizes.len() > limit {
            break;
        }
    }
    sizes
}

/// How many items of one sequence to show: as many as fit in `budget` bytes (each item costs
/// its size plus a separator) and at most `limit`.
pub(crate) fn fit(sizes: &[usize], budget: usize, limit: usize) -> usize {
    let mut used = 0;
    for (shown, size) in sizes.iter().enumerate() {
        if shown == limit || used + size >= budget {
            return shown;
        }
        used += size + 1;
    }
    sizes.len().min(limit)
}

/// How many items of each server's sequence to show, sharing `budget` bytes and `limit` items
/// fairly: every server gets the same number of items (or all it has) — the largest number
/// that fits — and what is left goes one item at a time to servers in order.
pub(crate) fn share(sizes: &[Vec<usize>], budget: usize, limit: usize) -> Vec<usize> {
    let prefix: Vec<Vec<usize>> = sizes
        .iter()
        .map(|s| {
            let mut sum = vec![0];
            for size in s {
                sum.push(sum[sum.len() - 1] + size + 1);
            }
            sum
        })
        .collect();
    let cost = |k: usize| -> (usize, usize) {
        prefix.iter().fold((0, 0), |(bytes, count), p| {
            let n = k.min(p.len() - 1);
            (bytes + p[n], count + n)
        })
    };
    let longest = sizes.iter().map(Vec::len).max().unwrap_or(0);
    let (mut low, mut high) = (0, longest);
    while low < high {
        let mid = (low + high).div_ceil(2);
        let (bytes, count) = cost(mid);
        if bytes <= budget && count <= limit {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    let mut shown: Vec<usize> = sizes.iter().map(|s| low.min(s.len())).collect();
    let (mut bytes, mut count) = cost(low);
    for (s, server) in sizes.iter().enumerate() {
        if let Some(size) = server.get(shown[s])
            && bytes + size < budget
            && count < limit
        {
            bytes += size + 1;
            count += 1;
            shown[s] += 1;
        }
    }
    shown
}

/// The index in a listing of "page `cursor`, `offset` items in"; `None` when the listing has no
/// such page or the page has fewer items (the position came from another listing).
pub(crate) fn locate(
    page_starts: &[PageStart],
    len: usize,
    cursor: Option<&String>,
    offset: usize,
) -> Option<usize> {
    if cursor.is_none() && page_starts.is_empty() {
        return (offset <= len).then_some(offset);
    }
    let at = page_starts.iter().position(|p| p.cursor.as_ref() == cursor)?;
    let start = page_starts[at].index;
    let end = page_starts.get(at + 1).map_or(len, |next| next.index);
    (offset <= end - start).then_some(start + offset)
}

/// Where item `index` of a listing sits: the cursor of its page and its place in that page,
/// from the listing's page starts (from the first page when they are unknown).
pub(crate) fn position(page_starts: &[PageStart], index: usize) -> (Option<String>, usize) {
    match page_starts.iter().rev().find(|p| p.index <= index) {
        Some(start) => (start.cursor.clone(), index - start.index),
        None => (None, index),
    }
}

/// Every item's uri, name, title and description folded to lower case, end to end (fields
/// separated by NUL), searched at once: a query over 100,000 kept items is one SIMD pass.
struct SearchIndex {
    text: Vec<u8>,
    /// Where each item's text starts.
    starts: Vec<usize>,
}

impl SearchIndex {
    fn build<T: Listed>(items: &[T]) -> Self {
        let mut text = Vec::new();
        let mut starts = Vec::with_capacity(items.len());
        for item in items {
            starts.push(text.len());
            for field in [Some(item.address()), Some(item.name()), item.title(), item.description()]
                .into_iter()
                .flatten()
            {
                text.extend_from_slice(field.to_lowercase().as_bytes());
                text.push(0);
            }
        }
        Self { text, starts }
    }
}

/// Search indexes of the kept listings the backend shares, each built by the first query over
/// it and dropped with the listing (an entry holds the listing only weakly).
#[derive(Default)]
pub(crate) struct SearchMemo {
    entries: Mutex<Vec<(Weak<ServerListing>, Arc<SearchIndex>)>>,
}

impl SearchMemo {
    /// The indices (ascending) of `items` (the listing's items) a query (lower case) matches in
    /// any of its text fields; `None` when the index cannot answer (a NUL in the query).
    pub(crate) fn search<T: Listed>(
        &self,
        listing: &Arc<ServerListing>,
        items: &[T],
        query: &str,
    ) -> Option<Vec<usize>> {
        if query.contains('\0') {
            return None;
        }
        let index = self.index(listing, items)?;
        let mut found: Vec<usize> = Vec::new();
        for at in memchr::memmem::find_iter(&index.text, query.as_bytes()) {
            let item = index.starts.partition_point(|s| *s <= at).saturating_sub(1);
            if found.last() != Some(&item) {
                found.push(item);
            }
        }
        Some(found)
    }

    fn index<T: Listed>(
        &self,
        listing: &Arc<ServerListing>,
        items: &[T],
    ) -> Option<Arc<SearchIndex>> {
        let mut entries = self.entries.lock().ok()?;
        // A weak entry keeps its allocation, so a live address is never another listing's.
        entries.retain(|(weak, _)| weak.strong_count() > 0);
        if let Some((_, index)) =
            entries.iter().find(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(listing)))
        {
            return Some(index.clone());
        }
        let index = Arc::new(SearchIndex::build(items));
        entries.push((Arc::downgrade(listing), index.clone()));
        Some(index)
    }
}

/// The list tools' arguments, as the model sends them.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListArgs {
    #[serde(default)]
    pub(crate) server: Option<String>,
    #[serde(default)]
    pub(crate) cursor: Option<String>,
    #[serde(default)]
    pub(crate) query: Option<String>,
    #[serde(default, rename = "mimeType")]
    pub(crate) mime_type: Option<String>,
    #[serde(default)]
    pub(crate) limit: Option<Value>,
    #[serde(default)]
    pub(crate) sort: Option<String>,
}

/// The filters and limit of a call, checked.
pub(crate) struct Request {
    pub(crate) filter: Filter,
    pub(crate) limit: usize,
}

pub(crate) fn request(args: &mut ListArgs) -> Result<Request, FunctionCallError> {
    let limit = match args.limit.take() {
        None | Some(Value::Null) => usize::MAX,
        Some(value) => value
            .as_u64()
            .filter(|n| *n >= 1)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| respond(format!("limit must be a positive integer, got {value}")))?,
    };
    let by_priority = match normalize_optional_string(args.sort.take()).as_deref() {
        None => false,
        Some("priority") => true,
        Some(other) => {
            return Err(respond(format!("sort must be \"priority\" (or absent), got \"{other}\"")));
        }
    };
    let filter = Filter {
        query: normalize_optional_string(args.query.take()),
        mime_type: normalize_optional_string(args.mime_type.take()),
        by_priority,
    };
    Ok(Request { filter, limit })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lists::payload::{ModelView, model_view};

    fn audience(roles: Vec<Role>) -> Annotations {
        let mut a = Annotations::default();
        a.audience = Some(roles);
        a
    }

    fn resource(uri: &str) -> Resource {
        Resource::new(uri, uri.rsplit('/').next().unwrap_or(uri))
    }

    #[test]
    fn fair_share_gives_every_server_items_and_spends_the_rest_in_order() {
        let sizes = vec![vec![10; 100], vec![10; 2], vec![10; 100]];
        // 11 bytes an item: 99 bytes hold 9 items → 3 each (the middle one has 2, so 4+2+3).
        assert_eq!(share(&sizes, 99, usize::MAX), [4, 2, 3]);
        assert_eq!(share(&sizes, 10_000, usize::MAX), [100, 2, 100]);
        assert_eq!(share(&sizes, 10_000, 5), [2, 2, 1]);
        assert_eq!(share(&sizes, 5, usize::MAX), [0, 0, 0]);
        assert_eq!(share(&[], 100, 10), Vec::<usize>::new());
    }

    #[test]
    fn measuring_stops_where_nothing_more_can_be_shown_and_decides_the_same() {
        // A small generator, so the cases are the same in every run.
        let mut seed = 0x2545_f491_u64;
        let mut next = |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below) as usize
        };
        for _ in 0..2000 {
            let servers = 1 + next(5);
            let texts: Vec<Vec<String>> = (0..servers)
                .map(|_| (0..next(12)).map(|_| "x".repeat(next(40))).collect())
                .collect();
            let (room, limit) = (next(400), 1 + next(30));
            let full: Vec<Vec<usize>> =
                texts.iter().map(|t| t.iter().map(json_len).collect()).collect();
            let cut: Vec<Vec<usize>> =
                texts.iter().map(|t| sizes_within(t.iter(), room, limit)).collect();
            assert!(cut.iter().zip(&full).all(|(c, f)| f.starts_with(c)));
            assert_eq!(
                share(&cut, room, limit),
                share(&full, room, limit),
                "{full:?} {room} {limit}"
            );
            for (c, f) in cut.iter().zip(&full) {
                assert_eq!(fit(c, room, limit), fit(f, room, limit), "{f:?} {room} {limit}");
            }
        }
    }

    #[test]
    fn fit_counts_whole_items() {
        assert_eq!(fit(&[10, 10, 10], 22, usize::MAX), 2);
        assert_eq!(fit(&[10, 10, 10], 33, usize::MAX), 3);
        assert_eq!(fit(&[10, 10, 10], 1_000, 1), 1);
        assert_eq!(fit(&[50], 10, usize::MAX), 0);
    }

    #[test]
    fn the_search_index_finds_what_the_matcher_finds() {
        let mut items: Vec<Resource> = (0..500)
            .map(|i| {
                resource(&format!("file:///dir/File{i}.txt"))
                    .with_description(format!("Ünïcode {i}"))
            })
            .collect();
        items[7].title = Some("The Invoice".into());
        let mut listing = ServerListing::empty("s", mcp_backend::ListKind::Resources);
        listing.items = mcp_backend::Items::Resources(items.clone());
        let listing = Arc::new(listing);
        let memo = SearchMemo::default();
        for query in ["file1", "invoice", "ünïcode 49", "txt", "nothing", "e"] {
            let matcher = Filter { query: Some(query.into()), ..Filter::default() }.matcher();
            let expected: Vec<usize> =
                (0..items.len()).filter(|i| matcher.matches(&items[*i])).collect();
            let query = matcher.query().expect("query");
            assert_eq!(memo.search(&listing, &items, query), Some(expected), "{query}");
        }
        assert_eq!(memo.search(&listing, &items, "a\0b"), None);
        // One index per live listing; a dropped listing's goes with the next lookup.
        assert_eq!(memo.entries.lock().expect("memo").len(), 1);
        let other = Arc::new(ServerListing::empty("t", mcp_backend::ListKind::Resources));
        drop(listing);
        assert_eq!(memo.search(&other, &[] as &[Resource], "x"), Some(Vec::new()));
        assert_eq!(memo.entries.lock().expect("memo").len(), 1);
    }

    #[test]
    fn case_folding_handles_ascii_and_beyond() {
        assert!(contains_folded("Quarterly INVOICE", "invoice"));
        assert!(!contains_folded("Quarterly", "invoice"));
        assert!(contains_folded("ÜBERSICHT der Rechnungen", "übersicht"));
        assert!(contains_folded("anything", ""));
    }

    #[test]
    fn filters_match_text_and_types() {
        let mut item = resource("file:///srv/Invoices/2024.pdf").with_mime_type("application/pdf");
        item.description = Some("Quarterly INVOICE".into());
        let query = |q: &str| Filter { query: Some(q.into()), ..Filter::default() };
        let mime = |m: &str| Filter { mime_type: Some(m.into()), ..Filter::default() };
        assert!(query("invoice").matches(&item));
        assert!(query("2024.PDF").matches(&item));
        assert!(!query("receipt").matches(&item));
        assert!(mime("application/pdf").matches(&item));
        assert!(mime("application/").matches(&item));
        assert!(!mime("text/").matches(&item));
        assert!(!mime("application/pd").matches(&item), "exact unless it ends in /");
        assert!(!mime("text/").matches(&resource("x://no-type")));
    }

    #[test]
    fn audience_and_icons() {
        let mut user_only = resource("x://a");
        user_only.annotations = Some(audience(vec![Role::User]));
        assert!(!for_assistant(&user_only, false));
        assert!(for_assistant(&user_only, true));
        assert!(for_assistant(&resource("x://b"), false));
        let mut both = user_only.clone();
        both.annotations = Some(audience(vec![Role::User, Role::Assistant]));
        assert!(for_assistant(&both, false));

        let icon = |src: &str| {
            serde_json::from_value::<Icon>(serde_json::json!({"src": src})).expect("icon")
        };
        let item = resource("x://i")
            .with_icons(vec![icon("data:image/png;base64,AAAA"), icon("https://x/i.png")]);
        let view = model_view(&item);
        assert_eq!(view.icons.as_ref().map(Vec::len), Some(1));
        let only_inline = resource("x://j").with_icons(vec![icon("DATA:image/png;base64,AAAA")]);
        assert_eq!(model_view(&only_inline).icons, None);
        assert!(matches!(model_view(&resource("x://k")), ModelView::Shown(_)));
    }

    #[test]
    fn continuations_round_trip_and_foreign_cursors_pass() {
        let c = Continuation {
            page: Some("server-cursor/with+odd=chars".into()),
            offset: 17,
            filter: Filter { query: Some("inv".into()), mime_type: None, by_priority: true },
            limit: Some(3),
        };
        let encoded = c.encode();
        assert!(encoded.starts_with(CURSOR_PREFIX));
        assert_eq!(Continuation::decode(&encoded), Some(Ok(c)));
        assert_eq!(Continuation::decode("2"), None);
        assert!(matches!(Continuation::decode("mcp-router:!!"), Some(Err(_))));
    }

    #[test]
    fn positions_come_from_page_starts() {
        let starts = vec![
            mcp_backend::PageStart { index: 0, cursor: None },
            mcp_backend::PageStart { index: 5, cursor: Some("p2".into()) },
        ];
        assert_eq!(position(&starts, 3), (None, 3));
        assert_eq!(position(&starts, 7), (Some("p2".into()), 2));
        assert_eq!(position(&[], 7), (None, 7));
    }

    #[test]
    fn positions_are_located_within_their_page() {
        let starts = vec![
            mcp_backend::PageStart { index: 0, cursor: None },
            mcp_backend::PageStart { index: 5, cursor: Some("p2".into()) },
        ];
        let p2 = Some("p2".to_string());
        type Case<'a> = (&'a [mcp_backend::PageStart], Option<&'a String>, usize, Option<usize>);
        let cases: [Case<'_>; 7] = [
            (&starts, None, 0, Some(0)),
            (&starts, None, 5, Some(5)),
            (&starts, None, 6, None),
            (&starts, p2.as_ref(), 3, Some(8)),
            (&starts, p2.as_ref(), 5, None),
            (&starts, Some(&"gone".to_string()), 0, None),
            (&[], None, 10, None),
        ];
        for (starts, cursor, offset, expected) in cases {
            assert_eq!(locate(starts, 9, cursor, offset), expected, "{cursor:?} {offset}");
        }
        assert_eq!(locate(&[], 9, None, 9), Some(9));
    }

    #[test]
    fn priority_sort_is_stable_and_highest_first() {
        let with = |uri: &str, p: Option<f32>| {
            let mut r = resource(uri);
            r.annotations = p.map(|p| {
                let mut a = Annotations::default();
                a.priority = Some(p);
                a
            });
            r
        };
        let items =
            vec![with("a", Some(0.1)), with("b", None), with("c", Some(0.9)), with("d", None)];
        let mut order: Vec<usize> = (0..items.len()).collect();
        sort_by_priority(&items, &mut order);
        assert_eq!(order, [2, 1, 3, 0]);
    }
}
