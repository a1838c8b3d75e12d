//! The servers by name: one snapshot, replaced as a whole when the config changes, so a
//! reader keeps a consistent view (the snapshot, or the one server it took) without a lock.

use std::collections::BTreeMap;
use std::sync::Arc;

/// The servers by name, as one snapshot: a config change replaces the map; a reader holds the
/// snapshot (or the one server) it took.
pub(crate) type Snapshot<T> = Arc<BTreeMap<String, Arc<T>>>;

/// The servers by name, replaced as a whole when the config changes.
pub(crate) struct ServerMap<T>(std::sync::RwLock<Snapshot<T>>);

impl<T> Default for ServerMap<T> {
    fn default() -> Self {
        Self(std::sync::RwLock::new(Arc::default()))
    }
}

impl<T> ServerMap<T> {
    /// Every server now.
    pub(crate) fn snapshot(&self) -> Snapshot<T> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// One server.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<T>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    /// Every server's name, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        self.snapshot().keys().cloned().collect()
    }

    /// Change the map (a new snapshot; readers keep the one they took).
    pub(crate) fn update(&self, change: impl FnOnce(&mut BTreeMap<String, Arc<T>>)) {
        let mut current = self.0.write().unwrap_or_else(|e| e.into_inner());
        let mut map = (**current).clone();
        change(&mut map);
        *current = Arc::new(map);
    }
}
