//! Cache hints (protocol 2026-07-28, SEP-2549): a `resources/list` or
//! `resources/templates/list` page, or a `resources/read` result, that carries `ttlMs > 0` is
//! answered from here for that long instead of reaching the server again.
//!
//! - One cache per connection: a restart starts empty, and since one connection is one
//!   authorization context (one server, one configured credential), a `private` entry is never
//!   shared with another context; `public` ones are not shared further either.
//! - Entries go when their ttl runs out, and on the matching change notification
//!   (`notifications/resources/list_changed` drops both lists, `notifications/resources/updated`
//!   drops that URI's read).
//! - Nothing stale is ever served: an expired entry is removed, and a failed request is the
//!   model's answer (never an old entry).
//! - Only complete answers are cached (a read that needed input rounds is not), only from
//!   servers that negotiated 2026-07-28 (a legacy server's stray `ttlMs` is not a hint), and
//!   not at all when `RequestOptions::response_cache` is off.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use mcp_backend::{ListKind, Page};
use rmcp::model::ReadResourceResult;
use tokio::time::Instant;

/// Longest ttl honoured (a server's "cache for a year" is capped).
const MAX_TTL: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    List(ListKind, Option<String>),
    Read(String),
}

#[derive(Clone)]
enum Value {
    Page(Page),
    Read(ReadResourceResult),
}

struct Entry {
    value: Value,
    expires: Instant,
}

/// One connection's cached answers.
#[derive(Default)]
pub struct ResponseCache {
    enabled: std::sync::atomic::AtomicBool,
    entries: Mutex<HashMap<Key, Entry>>,
}

impl ResponseCache {
    /// Start caching (the connection negotiated 2026-07-28 and caching is on).
    pub fn enable(&self) {
        self.enabled.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn get(&self, key: impl FnOnce() -> Key) -> Option<Value> {
        let mut entries = self.entries.lock().ok()?;
        if entries.is_empty() {
            // Nothing kept (caching off, a legacy connection, or a server that gives no
            // hints, as most do): no key to build.
            return None;
        }
        let key = key();
        match entries.get(&key) {
            Some(entry) if entry.expires > Instant::now() => Some(entry.value.clone()),
            Some(_) => {
                entries.remove(&key);
                None
            }
            None => None,
        }
    }

    fn put(&self, key: Key, value: Value, ttl_ms: Option<u64>) {
        if !self.enabled.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let Some(ttl) = ttl_ms.filter(|ms| *ms > 0).map(Duration::from_millis) else {
            return;
        };
        let expires = Instant::now() + ttl.min(MAX_TTL);
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|_, e| e.expires > Instant::now());
            entries.insert(key, Entry { value, expires });
        }
    }

    /// A cached page of `kind` at `cursor`.
    pub fn page(&self, kind: ListKind, cursor: &Option<String>) -> Option<Page> {
        match self.get(|| Key::List(kind, cursor.clone()))? {
            Value::Page(page) => Some(page),
            Value::Read(_) => None,
        }
    }

    /// Keep a list page under its cache hint (`ttl_ms`), if caching is on and the hint is
    /// positive.
    pub fn put_page(
        &self,
        kind: ListKind,
        cursor: Option<String>,
        page: &Page,
        ttl_ms: Option<u64>,
    ) {
        if !self.keeps(ttl_ms) {
            return;
        }
        self.put(Key::List(kind, cursor), Value::Page(page.clone()), ttl_ms);
    }

    /// A cached read of `uri`.
    pub fn read(&self, uri: &str) -> Option<ReadResourceResult> {
        match self.get(|| Key::Read(uri.to_string()))? {
            Value::Read(result) => Some(result),
            Value::Page(_) => None,
        }
    }

    /// Keep a read result under its cache hint, if caching is on and the hint is positive.
    pub fn put_read(&self, uri: &str, result: &ReadResourceResult) {
        // Copied only when it will be kept: most reads carry no hint.
        if !self.keeps(result.ttl_ms) {
            return;
        }
        let ttl = result.ttl_ms;
        self.put(Key::Read(uri.to_string()), Value::Read(result.clone()), ttl);
    }

    /// Whether an answer with this hint would be kept.
    fn keeps(&self, ttl_ms: Option<u64>) -> bool {
        self.enabled.load(std::sync::atomic::Ordering::SeqCst) && ttl_ms.is_some_and(|ms| ms > 0)
    }

    /// `notifications/resources/list_changed`: both lists are stale.
    pub(crate) fn lists_changed(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|key, _| !matches!(key, Key::List(..)));
        }
    }

    /// `notifications/resources/updated`: that URI's read is stale.
    pub(crate) fn resource_updated(&self, uri: &str) {
        if let Ok(mut entries) = self.entries.lock()
            && !entries.is_empty()
        {
            entries.remove(&Key::Read(uri.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_backend::Items;
    use rmcp::model::Resource;

    fn page(name: &str) -> Page {
        Page {
            items: Items::Resources(vec![Resource::new(name, name)]),
            next_cursor: None,
            ttl_ms: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn entries_live_for_their_ttl_and_go_on_notifications() {
        let cache = ResponseCache::default();
        cache.put_page(ListKind::Resources, None, &page("a"), Some(1_000));
        assert!(cache.page(ListKind::Resources, &None).is_none(), "disabled until enabled");

        cache.enable();
        cache.put_page(ListKind::Resources, None, &page("a"), Some(1_000));
        cache.put_page(ListKind::Templates, Some(String::new()), &page("t"), Some(1_000));
        cache.put_page(ListKind::Resources, Some("c".into()), &page("b"), None);
        cache.put_page(ListKind::Resources, Some("z".into()), &page("z"), Some(0));
        assert_eq!(cache.page(ListKind::Resources, &None), Some(page("a")));
        assert_eq!(cache.page(ListKind::Templates, &Some(String::new())), Some(page("t")));
        assert_eq!(cache.page(ListKind::Templates, &None), None, "the cursor is part of the key");
        assert_eq!(cache.page(ListKind::Resources, &Some("c".into())), None, "no ttl: not cached");
        assert_eq!(cache.page(ListKind::Resources, &Some("z".into())), None, "ttl 0: not cached");

        tokio::time::advance(Duration::from_millis(999)).await;
        assert!(cache.page(ListKind::Resources, &None).is_some());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(cache.page(ListKind::Resources, &None).is_none(), "expired at the ttl");

        let read = ReadResourceResult::new(vec![]).with_ttl_ms(60_000);
        cache.put_read("x://a", &read);
        cache.put_read("x://b", &read);
        cache.put_page(ListKind::Resources, None, &page("a"), Some(60_000));
        cache.resource_updated("x://a");
        assert!(cache.read("x://a").is_none());
        assert!(cache.read("x://b").is_some());
        cache.lists_changed();
        assert!(cache.page(ListKind::Resources, &None).is_none());
        assert!(cache.page(ListKind::Templates, &Some(String::new())).is_none());
        assert!(cache.read("x://b").is_some(), "a list change leaves reads alone");
    }
}
