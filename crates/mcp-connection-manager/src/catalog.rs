//! The tool catalog: the qualified tools of the ready servers, cached against the connections
//! they were computed from and rebuilt only when one of them (or its tool list) changed, so a tool call does not
//! recompute every server's names.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};

use mcp_backend::{QualifiedTool, qualified_tool_name};
use rmcp::model::Tool;

use crate::trust::Shown;
use mcp_connection::{Connection, SharedConnection};

/// The ready connections the cached tools were computed from (weak, so an address cannot be
/// reused by a new connection while the entry exists), each with the version of its tool list,
/// the trust generation then, and those tools.
type Entry = (Vec<(Weak<Connection>, u64)>, u64, Arc<Vec<QualifiedTool>>);

/// The qualified tools of the ready servers, cached.
#[derive(Default)]
pub(crate) struct ToolCatalog {
    cache: Mutex<Option<Entry>>,
}

impl ToolCatalog {
    /// The tools of `ready` (server name order) that `admit` lets the model see, each under its
    /// qualified name; a qualified name already taken is skipped with a warning (servers
    /// visited in name order, so the winner is deterministic). `generation` is the trust
    /// generation `admit` answers for.
    pub(crate) fn tools(
        &self,
        ready: &[(&String, SharedConnection)],
        generation: u64,
        admit: impl Fn(&str, &SharedConnection) -> Shown<Arc<Vec<Tool>>>,
    ) -> Arc<Vec<QualifiedTool>> {
        let same = |cached: &[(Weak<Connection>, u64)]| {
            cached.len() == ready.len()
                && cached.iter().zip(ready).all(|((w, version), (_, c))| {
                    std::ptr::eq(w.as_ptr(), Arc::as_ptr(c)) && *version == c.tools_version()
                })
        };
        if let Ok(cache) = self.cache.lock()
            && let Some((key, at, tools)) = &*cache
            && same(key)
            && *at == generation
        {
            return tools.clone();
        }
        let lists: Vec<_> =
            ready.iter().map(|(server, conn)| (*server, admit(server, conn))).collect();
        let tools = Arc::new(qualify_lists(&lists));
        if let Ok(mut cache) = self.cache.lock() {
            let key = ready.iter().map(|(_, c)| (Arc::downgrade(c), c.tools_version())).collect();
            *cache = Some((key, generation, tools.clone()));
        }
        tools
    }
}

/// The tools of each server's list (server name order) under their qualified names; a name
/// already taken is skipped with a warning.
pub(crate) fn qualify_lists(lists: &[(&String, Shown<Arc<Vec<Tool>>>)]) -> Vec<QualifiedTool> {
    let mut used = HashSet::new();
    let mut out = Vec::new();
    for (server, tools) in lists {
        for tool in tools.iter() {
            let qualified_name = qualified_tool_name(server, &tool.name);
            if !used.insert(qualified_name.clone()) {
                tracing::warn!(%server, tool = %tool.name, %qualified_name, "skipping tool: qualified name already taken");
                continue;
            }
            out.push(QualifiedTool {
                qualified_name,
                server: (*server).clone(),
                tool: tool.clone(),
            });
        }
    }
    out
}
