//! Complete listings kept behind continuations and filtered lists (`list_cache_sec`,
//! `list_cache_bytes`), for a backend to hold beside its other caches.
//!
//! A server's complete listing is kept for the server's `ttlMs` if it sent a positive one, else
//! for the window; never across a change of the server's listing generation (its
//! `resources/list_changed`, a reconnect — the backend counts them); the oldest go first when a
//! kind's memory cap is reached. Only complete listings (no [`ListingStop`]) are kept.
//!
//! [`ListingStop`]: crate::ListingStop

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::listing::{Items, ListKind, ServerListing, SharedListing};

/// About the bytes `items` take as JSON, without serializing them (the list tools serialize
/// what they show; keeping a listing must not cost a pass of its own): exact for text without
/// escapes — each field's key, quotes and separators counted — plus the JSON of the rarer parts
/// (icons, annotations, `_meta`). Text with escapes counts as it is held in memory.
pub(crate) fn about_json_bytes(items: &Items) -> usize {
    // `"key":"text"` and its comma (the braces take the place of the first comma).
    fn text(key: &str, text: Option<&String>) -> usize {
        text.map_or(0, |text| key.len() + text.len() + 6)
    }
    // `"key":<json>` and its comma.
    fn rare<T: serde::Serialize>(key: &str, part: &Option<T>) -> usize {
        part.as_ref().map_or(0, |part| key.len() + 4 + crate::json_len(part))
    }
    fn size(size: Option<u64>) -> usize {
        size.map_or(0, |n| "size".len() + 4 + n.checked_ilog10().unwrap_or(0) as usize + 1)
    }
    match items {
        Items::Resources(items) => items
            .iter()
            .map(|r| {
                1 + text("uri", Some(&r.uri))
                    + text("name", Some(&r.name))
                    + text("title", r.title.as_ref())
                    + text("description", r.description.as_ref())
                    + text("mimeType", r.mime_type.as_ref())
                    + size(r.size)
                    + rare("icons", &r.icons)
                    + rare("annotations", &r.annotations)
                    + rare("_meta", &r.meta)
            })
            .sum(),
        Items::Templates(items) => items
            .iter()
            .map(|t| {
                1 + text("uriTemplate", Some(&t.uri_template))
                    + text("name", Some(&t.name))
                    + text("title", t.title.as_ref())
                    + text("description", t.description.as_ref())
                    + text("mimeType", t.mime_type.as_ref())
                    + rare("icons", &t.icons)
                    + rare("annotations", &t.annotations)
                    + rare("_meta", &t.meta)
            })
            .sum(),
    }
}

/// The kept listings of both kinds.
#[derive(Debug)]
pub struct KeptListings {
    window: Duration,
    cap_bytes: usize,
    entries: Mutex<BTreeMap<(ListKind, String), Entry>>,
    /// Per kind, the servers of the last all-server listing that had no errors.
    last_all: Mutex<BTreeMap<ListKind, Vec<String>>>,
}

#[derive(Debug)]
struct Entry {
    listing: Arc<ServerListing>,
    generation: u64,
    listed_at: SystemTime,
    fresh_until: Instant,
    bytes: usize,
}

impl KeptListings {
    /// Keep listings for `window` (when the server sends no positive `ttlMs`), at most
    /// `cap_bytes` (as JSON, counted by `about_json_bytes`) per kind.
    pub fn new(window: Duration, cap_bytes: usize) -> Self {
        Self { window, cap_bytes, entries: Mutex::default(), last_all: Mutex::default() }
    }

    /// `server`'s kept listing of `kind` if it is still fresh and its generation is still
    /// `generation`; a stale one is dropped.
    pub fn get(&self, server: &str, kind: ListKind, generation: u64) -> Option<SharedListing> {
        let mut entries = self.entries.lock().ok()?;
        let key = (kind, server.to_string());
        let entry = entries.get(&key)?;
        if entry.generation == generation && Instant::now() < entry.fresh_until {
            return Some(SharedListing {
                listing: entry.listing.clone(),
                kept_at: Some(entry.listed_at),
            });
        }
        entries.remove(&key);
        None
    }

    /// Keep `listing` (complete ones only), taken at `generation`, if the server's hint or the
    /// window allows and it fits the cap.
    pub fn put(&self, listing: &Arc<ServerListing>, generation: u64) {
        if listing.error.is_some() {
            return;
        }
        // A positive `ttlMs` is the server's window. Without one — and with `ttlMs: 0`, which
        // rmcp servers send by default and which only forbids keeping the plain list — the
        // default window serves continuations and filtered lists.
        let keep = match listing.ttl_ms {
            Some(ttl) if ttl > 0 => Duration::from_millis(ttl),
            _ => self.window,
        };
        if keep.is_zero() {
            return;
        }
        let bytes = about_json_bytes(&listing.items);
        if bytes > self.cap_bytes {
            return;
        }
        let kind = listing.items.kind();
        let Ok(mut entries) = self.entries.lock() else { return };
        entries.remove(&(kind, listing.server.clone()));
        let of_kind = |entries: &BTreeMap<(ListKind, String), Entry>| -> usize {
            entries.iter().filter(|((k, _), _)| *k == kind).map(|(_, e)| e.bytes).sum()
        };
        while of_kind(&entries) + bytes > self.cap_bytes {
            let oldest = entries
                .iter()
                .filter(|((k, _), _)| *k == kind)
                .min_by_key(|(_, e)| e.listed_at)
                .map(|(key, _)| key.clone());
            let Some(oldest) = oldest else { break };
            entries.remove(&oldest);
        }
        entries.insert(
            (kind, listing.server.clone()),
            Entry {
                listing: listing.clone(),
                generation,
                listed_at: SystemTime::now(),
                fresh_until: Instant::now() + keep,
                bytes,
            },
        );
    }

    /// Remember which servers an all-server listing of `kind` covered (`None` when one failed).
    pub fn set_last_all(&self, kind: ListKind, servers: Option<Vec<String>>) {
        if let Ok(mut last) = self.last_all.lock() {
            match servers {
                Some(servers) => last.insert(kind, servers),
                None => last.remove(&kind),
            };
        }
    }

    /// The servers of the last complete all-server listing of `kind`.
    pub fn last_all(&self, kind: ListKind) -> Option<Vec<String>> {
        self.last_all.lock().ok()?.get(&kind).cloned()
    }

    /// Every server of the last complete all-server listing of `kind`, each from its fresh
    /// kept listing (`generation` gives a server's current listing generation); `None` when
    /// there was none or one of them is no longer kept.
    pub fn all_kept(
        &self,
        kind: ListKind,
        generation: impl Fn(&str) -> Option<u64>,
    ) -> Option<Vec<SharedListing>> {
        let servers = self.last_all(kind)?;
        servers.iter().map(|server| self.get(server, kind, generation(server)?)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Resource;

    fn listing(server: &str, n: usize, ttl: Option<u64>) -> Arc<ServerListing> {
        let mut listing = ServerListing::empty(server, ListKind::Resources);
        listing.items = Items::Resources(
            (0..n).map(|i| Resource::new(format!("demo://{i}"), format!("r{i}"))).collect(),
        );
        listing.ttl_ms = ttl;
        Arc::new(listing)
    }

    #[test]
    fn keeps_fresh_complete_listings_within_its_cap() {
        let kept = KeptListings::new(Duration::from_secs(60), 10_000);
        let a = listing("a", 10, None);
        kept.put(&a, 1);
        let got = kept.get("a", ListKind::Resources, 1).expect("kept");
        assert!(Arc::ptr_eq(&got.listing, &a), "shared, not copied");
        assert!(got.kept_at.is_some());
        // Another kind, another generation: not this listing.
        assert!(kept.get("a", ListKind::Templates, 1).is_none());
        assert!(kept.get("a", ListKind::Resources, 2).is_none());
        // Dropped for good once stale.
        assert!(kept.get("a", ListKind::Resources, 1).is_none());

        // An incomplete listing is never kept.
        let mut broken = ServerListing::empty("b", ListKind::Resources);
        broken.error = Some(crate::ListingStop::PageCap { pages: 1 });
        kept.put(&Arc::new(broken), 0);
        assert!(kept.get("b", ListKind::Resources, 0).is_none());

        // Past the cap the oldest goes; one larger than the cap is not kept at all.
        let (c, d) = (listing("c", 200, None), listing("d", 200, None));
        kept.put(&c, 0);
        std::thread::sleep(Duration::from_millis(2));
        kept.put(&d, 0);
        assert!(kept.get("c", ListKind::Resources, 0).is_none(), "evicted");
        assert!(kept.get("d", ListKind::Resources, 0).is_some());
        kept.put(&listing("e", 1_000, None), 0);
        assert!(kept.get("e", ListKind::Resources, 0).is_none(), "over the cap");
    }

    #[test]
    fn the_size_kept_is_about_the_json_size() {
        let plain: Vec<Resource> = (0..500)
            .map(|i| {
                let mut r = Resource::new(
                    format!("file:///work/src/module_{i}.rs"),
                    format!("module_{i}.rs"),
                );
                r.description = Some(format!("Source file number {i} of the project"));
                r.mime_type = Some("text/x-rust".into());
                r.size = Some(1000 + i);
                if i % 3 == 0 {
                    let json = serde_json::json!({"audience": ["user"], "priority": 0.5});
                    r.annotations = serde_json::from_value(json).ok();
                }
                r
            })
            .collect();
        let exact = crate::json_len(&plain);
        let about = about_json_bytes(&Items::Resources(plain));
        // The array's brackets and commas are the only difference for plain text.
        assert_eq!(about, exact - 1 - 500, "about {about} for {exact} bytes");
    }

    #[test]
    fn the_server_hint_and_the_window_decide_how_long() {
        let none = KeptListings::new(Duration::ZERO, 1 << 20);
        none.put(&listing("a", 1, None), 0);
        none.put(&listing("b", 1, Some(0)), 0);
        none.put(&listing("c", 1, Some(60_000)), 0);
        assert!(none.get("a", ListKind::Resources, 0).is_none(), "window 0 keeps nothing");
        assert!(none.get("b", ListKind::Resources, 0).is_none(), "ttlMs 0 adds nothing");
        assert!(none.get("c", ListKind::Resources, 0).is_some(), "a positive ttlMs keeps");
        let short = KeptListings::new(Duration::from_secs(60), 1 << 20);
        short.put(&listing("d", 1, Some(1)), 0);
        std::thread::sleep(Duration::from_millis(5));
        assert!(short.get("d", ListKind::Resources, 0).is_none(), "the server's ttl wins");
        short.put(&listing("e", 1, Some(0)), 0);
        assert!(short.get("e", ListKind::Resources, 0).is_some(), "ttlMs 0: the window");
    }

    #[test]
    fn the_last_all_server_listing_is_remembered_per_kind() {
        let kept = KeptListings::new(Duration::from_secs(1), 1);
        kept.set_last_all(ListKind::Resources, Some(vec!["a".into()]));
        assert_eq!(kept.last_all(ListKind::Resources), Some(vec!["a".to_string()]));
        assert_eq!(kept.last_all(ListKind::Templates), None);
        kept.set_last_all(ListKind::Resources, None);
        assert_eq!(kept.last_all(ListKind::Resources), None);

        // Answered from the kept listings only while every one of them is still fresh.
        let kept = KeptListings::new(Duration::from_secs(60), 1 << 20);
        kept.put(&listing("a", 1, None), 0);
        kept.put(&listing("b", 1, None), 0);
        kept.set_last_all(ListKind::Resources, Some(vec!["a".into(), "b".into()]));
        let all = kept.all_kept(ListKind::Resources, |_| Some(0)).expect("both kept");
        assert_eq!(all.len(), 2);
        assert!(kept.all_kept(ListKind::Resources, |s| Some(u64::from(s == "b"))).is_none());
        assert!(kept.all_kept(ListKind::Templates, |_| Some(0)).is_none());
    }
}
