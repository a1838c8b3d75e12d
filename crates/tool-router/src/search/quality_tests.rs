//! Search quality over the real catalogs of six packaged servers (server-everything,
//! filesystem, git, memory, time, fetch; their `tools/list`, dumped into
//! `tests/data/packaged_tools.json`) with natural-language queries written before the ranking
//! was tuned (`tests/data/search_queries.json`). Recall@5 must stay at 0.9 or more.

use mcp_backend::{QualifiedTool, qualified_tool_name};
use serde_json::Value;

use crate::search::index::SearchIndex;

fn catalog() -> Vec<QualifiedTool> {
    let tools: Vec<Value> =
        serde_json::from_str(include_str!("../../tests/data/packaged_tools.json")).expect("json");
    tools
        .iter()
        .map(|t| {
            let server = t["server"].as_str().expect("server");
            let name = t["name"].as_str().expect("name");
            let schema = t["inputSchema"].as_object().cloned().unwrap_or_default();
            let description = t["description"].as_str().unwrap_or_default().to_string();
            QualifiedTool {
                qualified_name: qualified_tool_name(server, name),
                server: server.to_string(),
                tool: rmcp::model::Tool::new(name.to_string(), description, schema),
            }
        })
        .collect()
}

#[test]
fn recall_at_5_over_packaged_catalogs_is_at_least_0_9() {
    let tools = catalog();
    assert_eq!(tools.len(), 53);
    let index = SearchIndex::build(&tools);
    let queries: Vec<Value> =
        serde_json::from_str(include_str!("../../tests/data/search_queries.json")).expect("json");
    assert!(queries.len() >= 40);
    let (mut at1, mut at5, mut misses) = (0, 0, Vec::new());
    for q in &queries {
        let (query, expected) =
            (q["query"].as_str().expect("query"), q["expected"].as_str().expect("expected"));
        let ranked: Vec<&str> = index
            .search(query)
            .iter()
            .take(5)
            .map(|h| tools[h.tool].qualified_name.as_str())
            .collect();
        match ranked.iter().position(|n| *n == expected) {
            Some(0) => {
                at1 += 1;
                at5 += 1;
            }
            Some(_) => at5 += 1,
            None => misses.push(format!("{query:?} → {ranked:?}, wanted {expected}")),
        }
    }
    let n = queries.len() as f64;
    let (recall1, recall5) = (at1 as f64 / n, at5 as f64 / n);
    println!(
        "search quality: {} queries, recall@1 {recall1:.3}, recall@5 {recall5:.3}",
        queries.len()
    );
    for miss in &misses {
        println!("  miss: {miss}");
    }
    assert!(recall5 >= 0.9, "recall@5 {recall5:.3}; misses: {misses:#?}");
}
