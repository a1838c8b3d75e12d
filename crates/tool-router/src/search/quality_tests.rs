//! Search quality over the real catalogs of six packaged servers (server-everything,
//! filesystem, git, memory, time, fetch; their `tools/list`, dumped into
//! `tests/data/packaged_tools.json`) with natural-language queries written before the ranking
//! was tuned (`tests/data/search_queries.json`). Recall@5 must stay at 0.9 or more.

use mcp_backend::{QualifiedTool, qualified_tool_name};
use serde_json::{Value, json};

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

/// Twelve searches of limit 3 over the packaged catalogs (the first twelve queries) grow the
/// model's specs by at most 8 KiB as OpenAI function tools, and every tool a search found is in
/// the next specs, callable by its name.
#[tokio::test]
async fn twelve_searches_grow_the_specs_by_at_most_8_kib_and_every_hit_is_callable() {
    let queries: Vec<Value> =
        serde_json::from_str(include_str!("../../tests/data/search_queries.json")).expect("json");
    let queries: Vec<String> =
        queries.iter().take(12).map(|q| q["query"].as_str().expect("query").into()).collect();
    let grown = twelve_searches(catalog(), &queries).await;
    println!("12 searches of limit 3, six catalogs: the specs grew by {grown} bytes");
    assert!(grown <= 8 * 1024, "grew by {grown} bytes");
}

/// The same over the development set's 21 catalogs (219 tools), with twelve of its needs spread
/// over the set (every fourteenth): needs about different servers reveal more different tools.
#[tokio::test]
async fn twelve_searches_over_21_catalogs_grow_the_specs_by_at_most_8_kib() {
    let needs: Vec<Value> =
        serde_json::from_str(include_str!("../../tests/data/search_eval/needs.json"))
            .expect("needs JSON");
    let needs: Vec<String> = needs
        .iter()
        .step_by(14)
        .take(12)
        .map(|n| n["need"].as_str().expect("need").into())
        .collect();
    assert_eq!(needs.len(), 12);
    let grown = twelve_searches(super::eval_tests::catalog(), &needs).await;
    println!("12 searches of limit 3, 21 catalogs: the specs grew by {grown} bytes");
    assert!(grown <= 8 * 1024, "grew by {grown} bytes");
}

/// How many bytes the OpenAI-format specs grow by over searches of limit 3 for `queries`, each
/// hit checked to be in the next specs.
async fn twelve_searches(tools: Vec<QualifiedTool>, queries: &[String]) -> usize {
    use crate::test_support::{FakeBackend, FakeServer, context};
    let mut servers: std::collections::BTreeMap<String, FakeServer> = Default::default();
    for tool in tools {
        servers.entry(tool.server.clone()).or_default().tools.push(tool.tool);
    }
    let backend = FakeBackend::with(servers.iter().map(|(s, f)| (s.as_str(), f.clone())).collect());
    let search = crate::search::mode::ToolSearch::new(
        crate::search::mode::ToolSearchMode::On,
        0,
        Default::default(),
    );
    let router = crate::ToolRouter::build(
        backend,
        crate::results::content::ContentPolicy::default(),
        None,
        Default::default(),
        search,
    );
    let format = crate::spec::ToolFormat::OpenAi;
    let bytes = |specs: &Vec<Value>| serde_json::to_vec(specs).expect("json").len();
    let before = bytes(&router.tool_list(format).await);
    for (i, query) in queries.iter().enumerate() {
        let (ctx, _rx) = context();
        let arguments = json!({"query": query, "limit": 3}).to_string();
        let call = crate::ToolCall {
            call_id: format!("s{i}"),
            name: "search_mcp_tools".into(),
            arguments: arguments.into(),
        };
        let output = router.dispatch_to_output(&ctx, call).await.expect("not fatal");
        let crate::ToolOutput::Function { content, .. } = output else { panic!("{output:?}") };
        let found: Value = serde_json::from_str(content.as_str()).expect("json");
        let specs = router.tool_list(format).await;
        for hit in found["tools"].as_array().expect("tools") {
            let name = hit["name"].as_str().expect("name");
            assert!(specs.iter().any(|s| s["name"] == name), "{name} is callable next turn");
        }
    }
    let grown = bytes(&router.tool_list(format).await) - before;
    println!("{} tools revealed", router.revealed_count().unwrap_or(0));
    grown
}
