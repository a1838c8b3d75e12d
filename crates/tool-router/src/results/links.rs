//! Which server's tool results linked which resource URIs (`resource_link` items). A linked
//! resource need not be in its server's list (MCP 2025-06-18: links are "not guaranteed to
//! appear in resources/list"); reads pass it to that server as any URI. What this adds: a read
//! of a URI on another server than the one that linked it is refused, unless that server
//! linked it too or lists it, so one server's links never send the model to another.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Most URIs remembered; the oldest are forgotten first.
const MAX_LINKS: usize = 4096;

#[derive(Default)]
pub(crate) struct LinkedResources {
    state: Mutex<Links>,
}

#[derive(Default)]
struct Links {
    /// URI → the servers whose tool results linked it.
    by_uri: HashMap<String, Vec<String>>,
    /// URIs, oldest first.
    order: VecDeque<String>,
}

impl LinkedResources {
    /// Remember that `server`'s tool result linked `uri`.
    pub(crate) fn record(&self, server: &str, uri: &str) {
        let mut links = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(servers) = links.by_uri.get_mut(uri) {
            if !servers.iter().any(|s| s == server) {
                servers.push(server.to_string());
            }
            return;
        }
        links.by_uri.insert(uri.to_string(), vec![server.to_string()]);
        links.order.push_back(uri.to_string());
        while links.order.len() > MAX_LINKS {
            if let Some(old) = links.order.pop_front() {
                links.by_uri.remove(&old);
            }
        }
    }

    /// The servers that linked `uri`, when `server` is not among them.
    pub(crate) fn linked_elsewhere(&self, server: &str, uri: &str) -> Option<Vec<String>> {
        let links = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let servers = links.by_uri.get(uri)?;
        (!servers.iter().any(|s| s == server)).then(|| servers.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_belongs_to_the_servers_that_sent_it() {
        let links = LinkedResources::default();
        links.record("a", "file:///x");
        assert_eq!(links.linked_elsewhere("a", "file:///x"), None);
        assert_eq!(links.linked_elsewhere("b", "file:///x"), Some(vec!["a".to_string()]));
        assert_eq!(links.linked_elsewhere("b", "file:///unlinked"), None);
        links.record("b", "file:///x");
        assert_eq!(links.linked_elsewhere("b", "file:///x"), None);
        assert_eq!(links.linked_elsewhere("c", "file:///x").map(|s| s.len()), Some(2));
    }

    #[test]
    fn the_oldest_links_are_forgotten_past_the_cap() {
        let links = LinkedResources::default();
        for i in 0..=MAX_LINKS {
            links.record("a", &format!("u://{i}"));
        }
        assert_eq!(links.linked_elsewhere("b", "u://0"), None);
        assert!(links.linked_elsewhere("b", &format!("u://{MAX_LINKS}")).is_some());
    }
}
