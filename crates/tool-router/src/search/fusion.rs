//! The ranking with the retrieval model (feature `e5`): three ranked lists — the words and
//! static vectors (`index`), e5 on the whole tool, e5 on its best sentence — fused by
//! reciprocal rank: each list gives a tool its weight / (5 + its rank), the words and the whole
//! tool 1, the best sentence 0.5 (chosen on the tuning half of the development set among 135
//! settings: the constant 5 to 60, each weight 0 to 2). A tool that no word matches is a
//! candidate when it is among the first [`E5_CANDIDATES`] of either e5 list.
//!
//! Until every tool of the catalog is embedded the words rank alone: a fusion over part of a
//! catalog ranks worse than the words (on the tuning half with 20 of its 219 tools embedded,
//! recall@1 0.09 and recall@5 0.54, against the words' 0.51 and 0.73; lower at every share
//! measured up to two thirds), because the embedded tools take the e5 lists' first places
//! whatever they are.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_backend::QualifiedTool;

use super::index::Hit;
use super::semantic::{Key, Semantic, key, texts_of};

/// The reciprocal-rank constant.
const K: f64 = 5.0;
/// The weights of the words', the whole tool's and the best sentence's lists.
const WEIGHTS: [f64; 3] = [1.0, 1.0, 0.5];
/// How far down the e5 lists a tool no word matches is still a candidate.
pub(crate) const E5_CANDIDATES: usize = 30;

/// The keys of each tool's texts (its whole first, then its sentences), queued for the model
/// when built.
pub(crate) struct Embedded {
    semantic: Option<Arc<Semantic>>,
    keys: Vec<Key>,
    /// Where each tool's keys start in `keys` (and, last, their end).
    starts: Vec<usize>,
}

/// One search's three lists (tool positions, best first).
pub(crate) struct Signals {
    pub(crate) words: Vec<usize>,
    pub(crate) whole: Vec<usize>,
    pub(crate) sentence: Vec<usize>,
}

impl Embedded {
    /// `tools`' texts, queued for `semantic`'s thread (a search never waits for them), their
    /// embeddings kept in `keep`.
    pub(crate) fn build(
        tools: &[QualifiedTool],
        semantic: Option<Arc<Semantic>>,
        keep: Option<&std::path::Path>,
    ) -> Self {
        let Some(semantic) = semantic else {
            return Self { semantic: None, keys: Vec::new(), starts: vec![0] };
        };
        let (mut texts, mut starts) = (Vec::new(), vec![0]);
        for tool in tools {
            texts.extend(texts_of(tool).into_iter().map(|t| (key(&t), t)));
            starts.push(texts.len());
        }
        let keys = texts.iter().map(|(key, _)| *key).collect();
        semantic.want(texts, keep);
        Self { semantic: Some(semantic), keys, starts }
    }

    /// Whether a search embeds its query: the model is loaded.
    pub(crate) fn embeds_queries(&self) -> bool {
        self.semantic.as_ref().is_some_and(|s| s.model().is_some())
    }

    /// The e5 lists for `query`, with the word list given: empty without the model and until
    /// every text of the catalog is embedded (then the query is not embedded either).
    pub(crate) fn signals(&self, query: &str, words: Vec<usize>) -> Signals {
        let words_alone = |words| Signals { words, whole: Vec::new(), sentence: Vec::new() };
        let Some(semantic) = &self.semantic else { return words_alone(words) };
        let found = semantic.embedded(&self.keys);
        if found.iter().any(Option::is_none) {
            return words_alone(words);
        }
        let Some(q) = semantic.query(query) else { return words_alone(words) };
        let cosine = |v: &Arc<[f32]>| v.iter().zip(&q).map(|(a, b)| a * b).sum::<f32>();
        let (mut whole, mut sentence) = (Vec::new(), Vec::new());
        for (tool, span) in self.starts.windows(2).enumerate() {
            let mine = &found[span[0]..span[1]];
            if let Some(Some(v)) = mine.first() {
                whole.push((tool, cosine(v)));
            }
            let best = mine
                .iter()
                .skip(1)
                .flatten()
                .map(cosine)
                .fold(None, |m: Option<f32>, c| Some(m.map_or(c, |m| m.max(c))));
            if let Some(best) = best {
                sentence.push((tool, best));
            }
        }
        let ranked = |mut scored: Vec<(usize, f32)>| -> Vec<usize> {
            scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            scored.into_iter().map(|(tool, _)| tool).collect()
        };
        Signals { words, whole: ranked(whole), sentence: ranked(sentence) }
    }
}

impl Signals {
    /// The lists fused, best first (ties by position).
    pub(crate) fn fused(&self) -> Vec<Hit> {
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for (rank, &tool) in self.words.iter().enumerate() {
            *scores.entry(tool).or_default() += WEIGHTS[0] / (K + rank as f64);
        }
        for (list, weight) in [(&self.whole, WEIGHTS[1]), (&self.sentence, WEIGHTS[2])] {
            for (rank, &tool) in list.iter().enumerate() {
                let candidate = rank < E5_CANDIDATES || scores.contains_key(&tool);
                if candidate {
                    *scores.entry(tool).or_default() += weight / (K + rank as f64);
                }
            }
        }
        let mut hits: Vec<Hit> =
            scores.into_iter().map(|(tool, score)| Hit { tool, score }).collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::index::SearchIndex;
    use crate::search::semantic::{Semantic, harness_model};

    fn tool(server: &str, name: &str, description: &str) -> QualifiedTool {
        let schema = serde_json::Map::new();
        let tool = rmcp::model::Tool::new(name.to_string(), description.to_string(), schema);
        let qualified_name = mcp_backend::qualified_tool_name(server, name);
        QualifiedTool { qualified_name, server: server.to_string(), tool }
    }

    fn tools() -> Vec<QualifiedTool> {
        vec![
            tool(
                "time",
                "get_current_time",
                "Get current time in a specific timezone. Use the IANA name.",
            ),
            tool("time", "convert_time", "Convert time between timezones."),
            tool(
                "filesystem",
                "search_files",
                "Recursively search for files and directories matching a pattern. Searches through all subdirectories from the starting path.",
            ),
            tool(
                "filesystem",
                "read_text_file",
                "Read the complete contents of a file from the file system as text.",
            ),
            tool("github", "add_issue_comment", "Add a comment to an existing issue."),
            tool(
                "github",
                "create_pull_request",
                "Create a new pull request in a GitHub repository.",
            ),
            tool(
                "memory",
                "create_entities",
                "Create multiple new entities in the knowledge graph.",
            ),
            tool("git", "git_log", "Shows the commit logs."),
        ]
    }

    /// `tools` indexed with the harness's model, every text embedded.
    fn settled(tools: &[QualifiedTool]) -> (SearchIndex, Arc<Semantic>) {
        let semantic = Semantic::start(Some(harness_model()));
        let index = SearchIndex::build_with(tools, Some(semantic.clone()), None);
        semantic.settle();
        assert!(semantic.model().is_some(), "no retrieval model: run tests/harness/install");
        (index, semantic)
    }

    /// Needs the words miss and the model finds; without a model the ranking is the words'.
    #[test]
    fn a_need_the_words_miss_is_found_by_meaning() {
        let tools = tools();
        let (index, _) = settled(&tools);
        let words_only = SearchIndex::build(&tools);
        for (need, expected) in [
            ("what hour is it in Tokyo", "mcp__time__get_current_time"),
            ("propose my changes for review", "mcp__github__create_pull_request"),
            ("what does the README contain", "mcp__filesystem__read_text_file"),
            ("store facts about people I meet", "mcp__memory__create_entities"),
        ] {
            let top = |hits: Vec<Hit>, n: usize| -> Vec<String> {
                hits.iter().take(n).map(|h| tools[h.tool].qualified_name.clone()).collect()
            };
            let fused = top(index.search(need), 2);
            assert!(fused.iter().any(|n| n == expected), "{need}: {fused:?}");
            // The words' side of a search: its shorthand said in words first.
            let said = crate::search::commands::expand(need);
            let words = top(index.word_search(&said), 2);
            assert!(
                !words.iter().any(|n| n == expected),
                "the words find {need:?} alone: {words:?}"
            );
            assert_eq!(
                words_only.search(need).iter().map(|h| h.tool).collect::<Vec<_>>(),
                index.word_search(&said).iter().map(|h| h.tool).collect::<Vec<_>>(),
                "without the model, the words' ranking"
            );
        }
    }

    /// While any text of the catalog is not embedded, the words rank alone; once all are, the
    /// e5 lists count.
    #[test]
    fn the_words_rank_alone_until_the_whole_catalog_is_embedded() {
        let tools = tools();
        let (index, semantic) = settled(&tools);
        let need = "store facts about people I meet";
        let words: Vec<usize> = index.word_search(need).iter().map(|h| h.tool).collect();
        let whole = index.signals(need);
        assert_eq!(whole.whole.len(), tools.len());
        assert_eq!(whole.sentence.len(), tools.len());
        // The same catalog with one text more, never queued: not all embedded.
        let mut keys: Vec<Key> = tools.iter().flat_map(texts_of).map(|t| key(&t)).collect();
        let mut starts: Vec<usize> = vec![0];
        for tool in &tools {
            starts.push(starts.last().copied().unwrap_or(0) + texts_of(tool).len());
        }
        keys.push(key("a sentence nobody asked the model for"));
        *starts.last_mut().expect("starts") += 1;
        let part = Embedded { semantic: Some(semantic), keys, starts };
        let signals = part.signals(need, words.clone());
        assert!(signals.whole.is_empty() && signals.sentence.is_empty());
        let fused: Vec<usize> = signals.fused().iter().map(|h| h.tool).collect();
        assert_eq!(fused, words, "the words' hits, in their order");
    }

    /// No model file: said, and the words rank alone (nothing waits).
    #[test]
    fn without_a_model_the_words_rank_alone() {
        let tools = tools();
        let semantic = Semantic::start(Some("/nonexistent/e5.bin".into()));
        semantic.settle();
        assert!(semantic.model().is_none());
        let index = SearchIndex::build_with(&tools, Some(semantic), None);
        let hits: Vec<usize> = index.search("current time").iter().map(|h| h.tool).collect();
        let words: Vec<usize> = index.word_search("current time").iter().map(|h| h.tool).collect();
        assert_eq!(hits, words);
    }
}
