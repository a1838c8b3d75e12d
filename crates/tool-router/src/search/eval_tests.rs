//! The development set that tells: the `tools/list` of 21 packaged servers (219 tools, dumped by
//! `scripts/dump-search-catalogs` at pinned versions) and 170 needs written before any tuning,
//! in five styles (everyday paraphrase, terse CLI-style, domain implied, confusable across
//! servers, multi-intent), each with every tool that does the job. Needs alternate between the
//! tuning half and the held-out half; the ranking's weights were chosen on the tuning half only.
//! The figures of both halves are held here (a ratchet: they may rise, not fall), against a
//! plain BM25 over the same fields.

use std::collections::{BTreeMap, HashMap};

use mcp_backend::{QualifiedTool, qualified_tool_name};
use serde_json::Value;

use crate::search::index::SearchIndex;

pub(super) fn catalog() -> Vec<QualifiedTool> {
    let rows: Vec<Value> =
        serde_json::from_str(include_str!("../../tests/data/search_eval/catalogs.json"))
            .expect("catalogs JSON");
    rows.iter()
        .map(|row| {
            let server = row["server"].as_str().expect("server");
            let name = row["name"].as_str().expect("name");
            let schema = row["inputSchema"].as_object().cloned().unwrap_or_default();
            let description = row["description"].as_str().unwrap_or_default().to_string();
            let mut tool = rmcp::model::Tool::new(name.to_string(), description, schema);
            tool.title = row["title"].as_str().map(str::to_string);
            QualifiedTool {
                qualified_name: qualified_tool_name(server, name),
                server: server.to_string(),
                tool,
            }
        })
        .collect()
}

struct Need {
    text: String,
    style: String,
    half: String,
    /// Qualified names of every tool that does the job.
    expected: Vec<String>,
}

fn needs() -> Vec<Need> {
    let rows: Vec<Value> =
        serde_json::from_str(include_str!("../../tests/data/search_eval/needs.json"))
            .expect("needs JSON");
    rows.iter()
        .map(|row| Need {
            text: row["need"].as_str().expect("need").to_string(),
            style: row["style"].as_str().expect("style").to_string(),
            half: row["half"].as_str().expect("half").to_string(),
            expected: row["expected"]
                .as_array()
                .expect("expected")
                .iter()
                .map(|e| {
                    let (server, tool) =
                        e.as_str().expect("server/tool").split_once('/').expect("/");
                    qualified_tool_name(server, tool)
                })
                .collect(),
        })
        .collect()
}

/// Plain BM25 (k1 1.2, b 0.75) over the same fields, each once, words lower-cased and split at
/// non-alphanumerics and case changes, nothing stemmed or weighted: the baseline.
struct PlainBm25 {
    docs: Vec<HashMap<String, u32>>,
    lengths: Vec<f64>,
    df: HashMap<String, u32>,
}

impl PlainBm25 {
    fn words(text: &str) -> Vec<String> {
        super::vectors::plain_words(text)
    }

    fn build(tools: &[QualifiedTool]) -> Self {
        let mut docs = Vec::new();
        let mut df: HashMap<String, u32> = HashMap::new();
        for tool in tools {
            let t = &tool.tool;
            let mut words = Self::words(&t.name);
            words.extend(Self::words(t.title.as_deref().unwrap_or_default()));
            words.extend(Self::words(&tool.server));
            words.extend(Self::words(t.description.as_deref().unwrap_or_default()));
            if let Some(Value::Object(properties)) = t.input_schema.get("properties") {
                for (name, schema) in properties {
                    words.extend(Self::words(name));
                    let text = schema.get("description").and_then(Value::as_str);
                    words.extend(Self::words(text.unwrap_or_default()));
                }
            }
            let mut counts: HashMap<String, u32> = HashMap::new();
            for word in words {
                *counts.entry(word).or_default() += 1;
            }
            for word in counts.keys() {
                *df.entry(word.clone()).or_default() += 1;
            }
            docs.push(counts);
        }
        let lengths = docs.iter().map(|d| f64::from(d.values().sum::<u32>())).collect();
        Self { docs, lengths, df }
    }

    fn search(&self, query: &str) -> Vec<usize> {
        let n = self.docs.len() as f64;
        let average = self.lengths.iter().sum::<f64>() / n;
        let mut words = Self::words(query);
        words.sort();
        words.dedup();
        let mut scored: Vec<(usize, f64)> = (0..self.docs.len())
            .map(|i| {
                let score = words
                    .iter()
                    .filter_map(|w| Some((self.docs[i].get(w)?, self.df.get(w)?)))
                    .map(|(&tf, &df)| {
                        let (tf, df) = (f64::from(tf), f64::from(df));
                        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                        let norm = 1.0 - 0.75 + 0.75 * self.lengths[i] / average;
                        idf * tf * 2.2 / (tf + 1.2 * norm)
                    })
                    .sum();
                (i, score)
            })
            .filter(|(_, s)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.into_iter().map(|(i, _)| i).collect()
    }
}

/// Recall@1 and recall@5 (a need is found when any of its tools ranks there), and how often
/// one of its tools is in front of the model after one search of the default limit: revealed
/// (the first 5) or named after them (`more`, the next `MORE_NAMES`).
#[derive(Default, Clone, Copy)]
struct Recall {
    needs: usize,
    at1: usize,
    at5: usize,
    in_front: usize,
}

impl Recall {
    fn add(&mut self, ranked: &[&str], expected: &[String]) {
        self.needs += 1;
        let shown = 5 + crate::search::handler::MORE_NAMES;
        match ranked.iter().take(shown).position(|n| expected.iter().any(|e| e == n)) {
            Some(0) => {
                self.at1 += 1;
                self.at5 += 1;
                self.in_front += 1;
            }
            Some(1..5) => {
                self.at5 += 1;
                self.in_front += 1;
            }
            Some(_) => self.in_front += 1,
            None => {}
        }
    }

    fn front(&self) -> f64 {
        self.in_front as f64 / self.needs as f64
    }

    fn r1(&self) -> f64 {
        self.at1 as f64 / self.needs as f64
    }

    fn r5(&self) -> f64 {
        self.at5 as f64 / self.needs as f64
    }
}

/// (ranker, half or style) → recall.
type Table = BTreeMap<(&'static str, String), Recall>;

fn measure() -> Table {
    let tools = catalog();
    let ours = SearchIndex::build(&tools);
    let plain = PlainBm25::build(&tools);
    let mut table = Table::new();
    for need in needs() {
        let found: Vec<&str> =
            ours.search(&need.text).iter().map(|h| tools[h.tool].qualified_name.as_str()).collect();
        let baseline: Vec<&str> =
            plain.search(&need.text).iter().map(|&i| tools[i].qualified_name.as_str()).collect();
        for (ranker, ranked) in [("ours", &found), ("bm25", &baseline)] {
            for key in [need.half.clone(), format!("{}/{}", need.half, need.style)] {
                table.entry((ranker, key)).or_default().add(ranked, &need.expected);
            }
        }
    }
    table
}

#[test]
fn the_development_set_holds_its_figures_on_both_halves() {
    assert_eq!(catalog().len(), 219);
    assert_eq!(needs().len(), 170);
    let table = measure();
    for ((ranker, key), recall) in &table {
        println!(
            "{ranker:>4} {key:<22} {:>3} needs  recall@1 {:.3}  recall@5 {:.3}  in front {:.3}",
            recall.needs,
            recall.r1(),
            recall.r5(),
            recall.front()
        );
    }
    let at = |ranker: &'static str, key: &str| table[&(ranker, key.to_string())];
    // The ratchet: what the ranking reaches now (its weights were chosen on the tuning half and
    // the older regression set, `quality_tests`; the held-out half was only measured).
    let (tune, held) = (at("ours", "tune"), at("ours", "held"));
    let figures = |r: Recall| format!("recall@1 {:.3}, recall@5 {:.3}", r.r1(), r.r5());
    assert!(tune.r1() >= 0.55 && tune.r5() >= 0.76, "tuning half fell: {}", figures(tune));
    assert!(held.r1() >= 0.54 && held.r5() >= 0.72, "held-out half fell: {}", figures(held));
    // The hits named after the revealed ones put the right tool in front of the model more
    // often than the revealed ones alone (0.729 → 0.847 held out, 0.765 → 0.859 tuning).
    assert!(
        held.front() >= 0.84 && tune.front() >= 0.85,
        "in front: {} / {}",
        held.front(),
        tune.front()
    );
    // Ahead of plain BM25 on both halves (on the held-out half since shell commands are said
    // in words: `commands`).
    assert!(tune.at5 > at("bm25", "tune").at5 && tune.at1 >= at("bm25", "tune").at1);
    assert!(held.at5 > at("bm25", "held").at5 && held.at1 > at("bm25", "held").at1);
}

/// With the retrieval model (feature `e5`, the model the harness installs): each signal alone
/// and the fusion, on both halves. The fusion's form (three lists, their weights and
/// constant, tools embedded with e5's `query: ` prefix too) was chosen on the tuning half; the
/// held-out half was only measured.
#[cfg(feature = "e5")]
#[test]
#[ignore = "embeds 900 texts, minutes in a debug build: `cargo test -p tool-router --features e5 -- --ignored retrieval_model`"]
fn the_retrieval_model_ranks_both_halves_higher() {
    use crate::search::semantic::{Semantic, harness_model};
    let tools = catalog();
    let semantic = Semantic::start(Some(harness_model()));
    // Kept between runs (keyed by each text's digest, so never stale).
    let keep = std::env::temp_dir().join("mcp-router-eval-embeddings");
    let index = SearchIndex::build_with(&tools, Some(semantic.clone()), Some(&keep));
    semantic.settle();
    assert!(semantic.model().is_some(), "no retrieval model: run tests/harness/install");
    let mut table: BTreeMap<(&'static str, String), Recall> = BTreeMap::new();
    for need in needs() {
        let signals = index.signals(&need.text);
        let fused: Vec<usize> = signals.fused().iter().map(|h| h.tool).collect();
        let mut meaning: Vec<usize> = (0..tools.len()).collect();
        if let Some(cosines) = index.cosines(&crate::search::commands::expand(&need.text)) {
            meaning.sort_by(|&a, &b| cosines[b].total_cmp(&cosines[a]).then(a.cmp(&b)));
        }
        let lists = [
            ("words", &signals.words),
            ("e5 whole", &signals.whole),
            ("e5 sentence", &signals.sentence),
            ("static", &meaning),
            ("fused", &fused),
        ];
        for (signal, list) in lists {
            let ranked: Vec<&str> =
                list.iter().map(|&t| tools[t].qualified_name.as_str()).collect();
            table.entry((signal, need.half.clone())).or_default().add(&ranked, &need.expected);
        }
    }
    for ((signal, half), r) in &table {
        println!(
            "{signal:>11} {half:<4} {:>3} needs  recall@1 {:.3}  recall@5 {:.3}  in front {:.3}",
            r.needs,
            r.r1(),
            r.r5(),
            r.front()
        );
    }
    let at = |signal: &'static str, half: &str| table[&(signal, half.to_string())];
    let (words, fused) = (at("words", "held"), at("fused", "held"));
    assert!(fused.at5 > words.at5 && fused.in_front > words.in_front, "held out: no lift");
    let (tune, held) = (at("fused", "tune"), at("fused", "held"));
    let figures = |r: Recall| format!("r@1 {:.3} r@5 {:.3} front {:.3}", r.r1(), r.r5(), r.front());
    assert!(tune.r1() >= 0.60 && tune.r5() >= 0.83, "tuning half fell: {}", figures(tune));
    assert!(tune.front() >= 0.92, "tuning half fell: {}", figures(tune));
    assert!(held.r1() >= 0.56 && held.r5() >= 0.80, "held-out half fell: {}", figures(held));
    assert!(held.front() >= 0.88, "held-out half fell: {}", figures(held));
}
