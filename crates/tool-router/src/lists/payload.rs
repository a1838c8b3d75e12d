//! What a list tool's payload is made of: items of either kind with their server, Codex's
//! envelope (`server`, `resources`|`resourceTemplates`, `nextCursor`, `errors`) and the additive
//! `incomplete`, `matched`, `listed_at` and `held` keys. Serialized from structs so key order is fixed.

use mcp_backend::{Items, SharedListing};
use rmcp::model::{Icon, Resource, ResourceTemplate};
use router_protocol::{HeldNote, ResourceCallSummary, ResourceChange, ServerFailure};
use serde::Serialize;

use crate::handlers::{fitted, write_payload};
use crate::lists::shape::{Listed, fit, json_len, share, sizes_within};

/// An item as the model sees it: the server's own (almost always), or a trimmed copy. Two words,
/// not an item's size (as a `Cow` of an item would be): an all-server payload holds one per item
/// of every server.
pub(crate) enum ModelView<'a, T> {
    /// The item as the server sent it.
    Shown(&'a T),
    /// A copy with something left out.
    Trimmed(Box<T>),
}

impl<T> std::ops::Deref for ModelView<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            ModelView::Shown(item) => item,
            ModelView::Trimmed(item) => item,
        }
    }
}

impl<T: Serialize> Serialize for ModelView<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

/// The item as the model sees it: icons given inline as `data:` URLs are dropped (a model cannot
/// use them and they can be large); everything else as the server sent it.
pub(crate) fn model_view<T: Listed>(item: &T) -> ModelView<'_, T> {
    let inline = |icon: &Icon| {
        icon.src.trim_start().get(..5).is_some_and(|s| s.eq_ignore_ascii_case("data:"))
    };
    match item.icons() {
        Some(icons) if icons.iter().any(inline) => {
            let kept: Vec<Icon> = icons.iter().filter(|i| !inline(i)).cloned().collect();
            let mut item = item.clone();
            item.set_icons(if kept.is_empty() { None } else { Some(kept) });
            ModelView::Trimmed(Box::new(item))
        }
        _ => ModelView::Shown(item),
    }
}

/// An item with the server it came from, next to the item's own MCP fields.
#[derive(Serialize)]
pub(crate) struct WithServer<'a, T: Listed> {
    pub(crate) server: &'a str,
    #[serde(flatten)]
    pub(crate) item: ModelView<'a, T>,
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
/// `incomplete` (servers not shown in full), `matched` (how many items a query or type
/// matched) and `held` (definitions kept from the model, with the command that allows them).
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
    /// The definitions of this kind held from the model, per server (templates only: resources
    /// are not pinned).
    pub(crate) held: Vec<HeldNote>,
    /// Written with an empty items array, for [`write_whole`] to write the items into.
    pub(crate) hole: bool,
}

impl<T: Kind> Serialize for Payload<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("server", &self.server)?;
        if self.hole {
            map.serialize_entry(T::KEY, &[(); 0])?;
        } else {
            map.serialize_entry(T::KEY, &self.items)?;
        }
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
        if !self.held.is_empty() {
            map.serialize_entry("held", &self.held)?;
        }
        map.end()
    }
}

impl<'a, T: Kind> Payload<'a, T> {
    /// The one fitting step of a one-server list: the items of `window` (indices into `all`)
    /// that fit in what `budget` leaves beside `envelope` (what the rest of the payload costs
    /// at most) and within `limit`, as a payload for `server`, with how many that is.
    pub(crate) fn fitted(
        envelope: &Payload<'_, T>,
        budget: usize,
        server: &'a str,
        all: &'a [T],
        window: &[usize],
        limit: usize,
    ) -> (Self, usize) {
        let room = budget.saturating_sub(json_len(envelope));
        let each = window.iter().map(|i| WithServer { server, item: model_view(&all[*i]) });
        let shown = fit(&sizes_within(each, room, limit), room, limit);
        let mut payload = Self::new(Some(server));
        payload.held = envelope.held.clone();
        payload.items = window[..shown]
            .iter()
            .map(|i| WithServer { server, item: model_view(&all[*i]) })
            .collect();
        (payload, shown)
    }

    pub(crate) fn new(server: Option<&'a str>) -> Self {
        Self {
            server,
            items: Vec::new(),
            next_cursor: None,
            errors: Vec::new(),
            incomplete: Vec::new(),
            matched: None,
            listed_at: None,
            held: Vec::new(),
            hole: false,
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

/// The all-server payload's JSON, and how many items it shows, sharing `room` bytes and `limit`
/// items fairly between servers (`every[s]` items each could show). When all of them may fit
/// (`limit` allows), the payload showing everything is serialized at once, each item measured
/// as it is written, and given up (at most `room` bytes in) when the items pass the room: a
/// list that fits costs one serialization. Otherwise `measure` sizes the items (as far as they
/// could be shown), [`share`] decides, and `payload_of(shown)` is serialized.
pub(crate) fn shared_out<'a, T: Kind + 'a>(
    every: &[usize],
    room: usize,
    limit: usize,
    changes: &[ResourceChange],
    payload_of: impl Fn(&[usize]) -> Payload<'a, T>,
    measure: impl FnOnce() -> Vec<Vec<usize>>,
) -> (serde_json::Result<Vec<u8>>, usize) {
    if every.iter().sum::<usize>() <= limit {
        let mut payload = payload_of(every);
        let items = std::mem::take(&mut payload.items);
        let mut text = buffer_for(&items, room);
        match write_whole(&mut text, &mut payload, items, changes, room) {
            Ok(Some(shown)) => return (Ok(fitted(text)), shown),
            Ok(None) => {}
            Err(e) => return (Err(e), 0),
        }
    }
    let payload = payload_of(&share(&measure(), room, limit));
    let mut text = buffer_for(&payload.items, room);
    let result = write_payload(&mut text, &payload, changes);
    (result.map(|()| fitted(text)), payload.items.len())
}

/// `envelope` (a payload without its items) with `items` as its items, as JSON into `out` —
/// what [`write_payload`] writes for the whole payload — written in one pass: the envelope is
/// serialized with an empty items array, and the items go straight between its brackets, each
/// `{"server":…` (escaped once per server) followed by the item's own object with its `{` made
/// a `,` (what `#[serde(flatten)]` writes, without its map of entries per field). How many
/// items were written; `None` once their bytes reach `room` (given up).
pub(crate) fn write_whole<'a, T: Kind + 'a>(
    out: &mut Vec<u8>,
    envelope: &mut Payload<'_, T>,
    items: impl IntoIterator<Item = WithServer<'a, T>>,
    changes: &[ResourceChange],
    room: usize,
) -> serde_json::Result<Option<usize>> {
    envelope.hole = true;
    let mut text = Vec::new();
    let written = write_payload(&mut text, &*envelope, changes);
    envelope.hole = false;
    written?;
    let key = format!("\"{}\":[]", T::KEY);
    // The items' key comes right after `server` at the top level; a string cannot hold it
    // unescaped, so its first place is the one.
    let Some(at) = text.windows(key.len()).position(|w| w == key.as_bytes()) else {
        return Err(serde::ser::Error::custom("the payload has no items array"));
    };
    let split = at + key.len() - 1;
    out.extend_from_slice(&text[..split]);
    let start = out.len();
    let mut head: (Option<&str>, Vec<u8>) = (None, Vec::new());
    let mut count = 0;
    for with in items {
        if count > 0 {
            out.push(b',');
        }
        count += 1;
        if head.0 != Some(with.server) {
            let mut bytes = serde_json::to_vec(&ServerOnly { server: with.server })?;
            bytes.pop();
            head = (Some(with.server), bytes);
        }
        let before = out.len();
        out.extend_from_slice(&head.1);
        let item = out.len();
        serde_json::to_writer(&mut *out, &*with.item)?;
        match &out[item..] {
            b"{}" => {
                out.truncate(item);
                out.push(b'}');
            }
            [b'{', ..] => out[item] = b',',
            // Not an object: written as serde writes it.
            _ => {
                out.truncate(before);
                serde_json::to_writer(&mut *out, &with)?;
            }
        }
        if out.len() - start >= room {
            return Ok(None);
        }
    }
    out.extend_from_slice(&text[split..]);
    Ok(Some(count))
}

/// The head of an item with its server: `{"server":"…"}`.
#[derive(Serialize)]
struct ServerOnly<'a> {
    server: &'a str,
}

/// An empty buffer for the payload of `items`, sized once: as long as they will likely take,
/// never more than `room` bytes of items can.
fn buffer_for<T: Listed>(items: &[WithServer<'_, T>], room: usize) -> Vec<u8> {
    let len = |i: usize| mcp_backend::json_len(&items[i]);
    Vec::with_capacity(expected_len(items.len(), len).min(room.saturating_add(ENVELOPE)))
}

/// Room for a payload's fields other than its items (server, cursors, errors, `incomplete`).
const ENVELOPE: usize = 1024;

/// About how long the payload of `count` items will be (`len(i)`: the JSON length of the
/// `i`th), to size its buffer once: a payload of 128,000 resources (18.8 MB) grown by doubling
/// from 1 MiB was copied five times and touched 63 MB of fresh pages. Past 64 items, 32 of them
/// spread over the list are measured and the rest taken to be like them; fewer are guessed at
/// 256 bytes each.
pub(crate) fn expected_len(count: usize, len: impl Fn(usize) -> usize) -> usize {
    const SAMPLE: usize = 32;
    if count < 2 * SAMPLE {
        return count * 256 + ENVELOPE;
    }
    // One item from each of 32 equal stretches, at a spread-out place in each (not always the
    // first: a list whose items repeat a pattern would be sampled in step with it).
    let step = count / SAMPLE;
    let sampled: usize = (0..SAMPLE).map(|i| len(i * step + (i * 40_503) % step) + 1).sum();
    // A sixteenth over the sample's average: a list a little longer than guessed does not
    // double its buffer for the last few items.
    let each = sampled.div_ceil(SAMPLE);
    (each + each / 16) * count + ENVELOPE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lists::shape::{json_len, sizes_within};

    /// `shared_out` gives what measuring every item and sharing gives, at every room: the one
    /// pass when all fits, the other way when not.
    #[test]
    fn one_pass_or_two_the_payload_is_the_same() {
        let servers: Vec<(String, Vec<Resource>)> = (0..3)
            .map(|s| {
                let items = (0..4 + s)
                    .map(|i| {
                        Resource::new(format!("demo://{s}/{}", "x".repeat(i)), format!("r{i}"))
                    })
                    .collect();
                (format!("s{s}"), items)
            })
            .collect();
        let payload_of = |shown: &[usize]| {
            let mut payload = Payload::<Resource>::new(None);
            for ((server, items), n) in servers.iter().zip(shown) {
                let each =
                    items[..*n].iter().map(|r| WithServer { server, item: ModelView::Shown(r) });
                payload.items.extend(each);
            }
            payload
        };
        let every: Vec<usize> = servers.iter().map(|(_, items)| items.len()).collect();
        let whole = json_len(&payload_of(&every));
        for room in 0..whole + 10 {
            for limit in [3, 100] {
                let measure = || {
                    let each = servers.iter().map(|(server, items)| {
                        items.iter().map(move |r| WithServer { server, item: ModelView::Shown(r) })
                    });
                    each.map(|items| sizes_within(items, room, limit)).collect::<Vec<_>>()
                };
                let (text, shown) = shared_out(&every, room, limit, &[], payload_of, measure);
                let expected = payload_of(&share(&measure(), room, limit));
                assert_eq!(shown, expected.items.len(), "room {room}, limit {limit}");
                let expected = serde_json::to_vec(&expected).expect("json");
                assert_eq!(text.expect("json"), expected, "room {room}, limit {limit}");
            }
        }
    }

    /// The items written straight into the envelope's array are byte for byte what serde
    /// writes for the whole payload: with errors, `incomplete`, `matched`, `listed_at`, changes,
    /// servers whose names need escaping, annotated and trimmed items, templates too.
    #[test]
    fn items_written_straight_are_what_serde_writes() {
        let from =
            |v: serde_json::Value| -> Resource { serde_json::from_value(v).expect("a resource") };
        let annotated = from(serde_json::json!({"uri": "demo://a\"b\u{2028}", "name": "a\\b",
            "description": "d", "annotations": {"audience": ["user"], "priority": 0.5}, "size": 3}));
        let iconic = from(serde_json::json!({"uri": "demo://icon", "name": "icon",
            "icons": [{"src": "data:image/png;base64,AAAA"}, {"src": "https://x/i.png"}]}));
        let resources = [annotated, iconic, Resource::new("demo://plain", "plain")];
        let changes = [ResourceChange {
            server: "s".into(),
            uri: "demo://plain".into(),
            detected_at: "2026-11-29T00:00:00Z".into(),
        }];
        for server in ["s", "se\"rv\u{7f}er"] {
            let mut payload = Payload::<Resource>::new(None);
            payload
                .items
                .extend(resources.iter().map(|r| WithServer { server, item: model_view(r) }));
            payload.items.push(WithServer { server: "other", item: model_view(&resources[2]) });
            payload.errors =
                vec![ServerFailure { server: "down".into(), error: "\"resources\":[]".into() }];
            payload.incomplete.push(Incomplete {
                server: "s".into(),
                shown: 1,
                total: 2,
                next_cursor: "c".into(),
            });
            payload.matched = Some(3);
            payload.listed_at = Some("2026-11-29T00:00:00Z".into());
            for changes in [&changes[..], &[]] {
                let mut expected = Vec::new();
                write_payload(&mut expected, &payload, changes).expect("json");
                let mut envelope = Payload::<Resource>::new(None);
                envelope.errors = payload.errors.clone();
                envelope.incomplete = std::mem::take(&mut payload.incomplete);
                envelope.matched = payload.matched;
                envelope.listed_at = payload.listed_at.clone();
                let items = payload
                    .items
                    .iter()
                    .map(|w| WithServer { server: w.server, item: model_view(&*w.item) });
                let mut out = Vec::new();
                let written = write_whole(&mut out, &mut envelope, items, changes, usize::MAX);
                assert_eq!(written.expect("json"), Some(4));
                payload.incomplete = envelope.incomplete;
                assert_eq!(
                    String::from_utf8(out).expect("utf-8"),
                    String::from_utf8(expected).expect("utf-8")
                );
            }
        }
        let template: ResourceTemplate =
            serde_json::from_value(serde_json::json!({"uriTemplate": "demo://{x}", "name": "t"}))
                .expect("a template");
        let mut payload = Payload::<ResourceTemplate>::new(None);
        payload.items.push(WithServer { server: "s", item: model_view(&template) });
        let mut expected = Vec::new();
        write_payload(&mut expected, &payload, &[]).expect("json");
        let items = || [WithServer { server: "s", item: model_view(&template) }];
        let mut out = Vec::new();
        let mut envelope = Payload::<ResourceTemplate>::new(None);
        let written = write_whole(&mut out, &mut envelope, items(), &[], usize::MAX);
        assert_eq!(written.expect("json"), Some(1));
        assert_eq!(out, expected);
        // Past the room: given up.
        let mut out = Vec::new();
        assert_eq!(write_whole(&mut out, &mut envelope, items(), &[], 10).expect("json"), None);
    }

    /// The buffer of a long list is sized from a sample of its items: at least the payload's
    /// length and within a tenth over it when the items are alike (written into that one
    /// buffer), within a quarter when they vary in a repeating pattern; the text handed back
    /// leaves at most an eighth of its buffer empty.
    #[test]
    fn a_long_payload_is_sized_once_from_a_sample() {
        for (count, vary) in [(100, 1), (128_000, 1), (10_000, 40)] {
            let items: Vec<Resource> = (0..count)
                .map(|i| Resource::new(format!("file:///{}{i}", "d/".repeat(i % vary)), "f"))
                .collect();
            let mut payload = Payload::<Resource>::new(None);
            payload.items.extend(
                items.iter().map(|r| WithServer { server: "s", item: ModelView::Shown(r) }),
            );
            let actual = json_len(&payload);
            let expected = expected_len(payload.items.len(), |i| json_len(&payload.items[i]));
            if vary == 1 {
                assert!(expected >= actual, "{count} items: {expected} < {actual}");
                assert!(expected <= actual + actual / 10 + ENVELOPE, "{count}: {expected}");
            } else {
                assert!(expected.abs_diff(actual) <= actual / 4, "{expected} vs {actual}");
            }
            let (text, _) = shared_out(
                &[count],
                usize::MAX / 2,
                usize::MAX,
                &[],
                |_: &[usize]| {
                    let mut again = Payload::<Resource>::new(None);
                    again.items.extend(
                        items.iter().map(|r| WithServer { server: "s", item: ModelView::Shown(r) }),
                    );
                    again
                },
                Vec::new,
            );
            let text = text.expect("json");
            // Written into the one buffer (never doubled past the guess), and no more than an
            // eighth of it left empty.
            assert_eq!(text.len(), actual);
            if vary == 1 {
                assert!(text.capacity() <= expected, "{count} items: grown past the guess");
            }
            assert!(text.capacity() <= actual + actual / 8, "{count} items: fitted");
        }
        assert_eq!(expected_len(0, |_| 0), ENVELOPE);
    }
}
