//! The ranking with the retrieval model (feature `e5`): three scored lists — the words and
//! static vectors (`index`), e5 on the whole tool, e5 on its best sentence — fused by their
//! scores: a tool's words score (its BM25 over the best, plus the meaning score) + 0.4 × the
//! standard score of its whole-tool cosine + 0.4 × that of its best sentence's cosine (each
//! cosine less the mean over the embedded tools, over their standard deviation), chosen on the
//! tuning half of the development set (and the older six-catalog set) by recall@1, recall@5
//! and mean reciprocal rank among 240 settings (the reciprocal-rank fusion it replaced,
//! weight / (5 + rank), reached 0.565 / 0.824 / 0.679 there; this 0.612 / 0.812 / 0.698). The
//! e5 cosines crowd together (0.75 to 0.85 for any text), so their spread, not their size,
//! tells. A tool that no word matches is a candidate when it is
//! among the first [`E5_CANDIDATES`] of either e5 list.
//!
//! Until every tool of the catalog is embedded the words rank alone: a fusion over part of a
//! catalog ranks worse than the words (on the tuning half with 20 of its 219 tools embedded,
//! recall@1 0.25 by these scores and 0.09 by the reciprocal ranks they replaced, against the
//! words' 0.51; recall@5 lower at every share measured up to two thirds), because the embedded
//! tools stand out against the ones not embedded, whatever they are.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_backend::QualifiedTool;

use super::index::Hit;
use super::semantic::{Key, Semantic, key, texts_of};

/// The weights of the words' score and of the whole tool's and the best sentence's standard
/// scores.
const WEIGHTS: [f64; 3] = [1.0, 0.4, 0.4];
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

/// One search's three lists (tool positions and their scores, best first): the words' scores,
/// and the cosines of the query with each embedded tool's whole and best sentence.
pub(crate) struct Signals {
    pub(crate) words: Vec<Hit>,
    pub(crate) whole: Vec<Hit>,
    pub(crate) sentence: Vec<Hit>,
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
    pub(crate) fn signals(&self, query: &str, words: Vec<Hit>) -> Signals {
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
            let Some(Some(v)) = mine.first() else { continue };
            let score = f64::from(cosine(v));
            whole.push(Hit { tool, score });
            // A tool without sentences of its own (no description) is its whole.
            let best = mine.iter().skip(1).flatten().map(|v| f64::from(cosine(v))).reduce(f64::max);
            sentence.push(Hit { tool, score: best.unwrap_or(score) });
        }
        let ranked = |mut scored: Vec<Hit>| -> Vec<Hit> {
            scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
            scored
        };
        Signals { words, whole: ranked(whole), sentence: ranked(sentence) }
    }
}

impl Signals {
    /// The lists fused, best first (ties by position).
    pub(crate) fn fused(&self) -> Vec<Hit> {
        let mut scores: HashMap<usize, f64> =
            self.words.iter().map(|hit| (hit.tool, WEIGHTS[0] * hit.score)).collect();
        for list in [&self.whole, &self.sentence] {
            for hit in list.iter().take(E5_CANDIDATES) {
                scores.entry(hit.tool).or_default();
            }
        }
        for (list, weight) in [(&self.whole, WEIGHTS[1]), (&self.sentence, WEIGHTS[2])] {
            let standard = standard_scores(list);
            for (hit, z) in list.iter().zip(standard) {
                if let Some(score) = scores.get_mut(&hit.tool) {
                    *score += weight * z;
                }
            }
        }
        let mut hits: Vec<Hit> =
            scores.into_iter().map(|(tool, score)| Hit { tool, score }).collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
        hits
    }
}

/// Each hit's score less the list's mean, over its standard deviation (all 0 when the scores
/// do not spread).
fn standard_scores(list: &[Hit]) -> Vec<f64> {
    let n = list.len().max(1) as f64;
    let mean = list.iter().map(|hit| hit.score).sum::<f64>() / n;
    let spread = (list.iter().map(|hit| (hit.score - mean).powi(2)).sum::<f64>() / n).sqrt();
    let spread = if spread > f64::EPSILON { spread } else { f64::INFINITY };
    list.iter().map(|hit| (hit.score - mean) / spread).collect()
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

    /// Needs the words miss and the model finds; without a model the ranking is the words'.
    #[test]
    fn a_need_the_words_miss_is_found_by_meaning() {
        let tools = tools();
        let semantic = Semantic::start(Some(harness_model()));
        let index = SearchIndex::build_with(&tools, Some(semantic.clone()), None);
        semantic.settle();
        assert!(semantic.model().is_some(), "no retrieval model: run tests/harness/install");
        let words_only = SearchIndex::build(&tools);
        for (need, expected) in [
            ("what hour is it in Tokyo", "mcp__time__get_current_time"),
            ("make a PR with my changes", "mcp__github__create_pull_request"),
            ("what does the README contain", "mcp__filesystem__read_text_file"),
            ("store facts about people I meet", "mcp__memory__create_entities"),
        ] {
            let top = |hits: Vec<Hit>, n: usize| -> Vec<String> {
                hits.iter().take(n).map(|h| tools[h.tool].qualified_name.clone()).collect()
            };
            let fused = top(index.search(need), 2);
            assert!(fused.iter().any(|n| n == expected), "{need}: {fused:?}");
            let words = top(index.word_search(need), 2);
            assert!(
                !words.iter().any(|n| n == expected),
                "the words find {need:?} alone: {words:?}"
            );
            assert_eq!(
                words_only.search(need).iter().map(|h| h.tool).collect::<Vec<_>>(),
                index.word_search(need).iter().map(|h| h.tool).collect::<Vec<_>>(),
                "without the model, the words' ranking"
            );
        }
    }

    fn hits(scores: &[(usize, f64)]) -> Vec<Hit> {
        scores.iter().map(|&(tool, score)| Hit { tool, score }).collect()
    }

    /// e5 lists that do not spread leave the words' order; a tool e5 sets well apart from the
    /// rest passes a weak word match; a tool missing from the e5 lists counts as the mean.
    #[test]
    fn the_scores_add_up_by_their_spread() {
        let words = hits(&[(0, 1.0), (1, 0.5)]);
        let flat = hits(&[(0, 0.8), (1, 0.8), (2, 0.8), (3, 0.8)]);
        let signals = Signals { words: words.clone(), whole: flat.clone(), sentence: flat };
        let order: Vec<usize> = signals.fused().iter().map(|h| h.tool).collect();
        assert_eq!(order, [0, 1, 2, 3], "flat e5 lists: the words' order, then by position");

        // Tool 2 no word matches stands out in both e5 lists; tool 0's match is weak there.
        let apart = hits(&[(2, 0.86), (1, 0.80), (0, 0.79), (3, 0.79)]);
        let signals = Signals { words, whole: apart.clone(), sentence: apart };
        let fused = signals.fused();
        assert_eq!(fused[0].tool, 2, "{fused:?}");
        // Tool 4 is in no e5 list: only its words count, as if e5 put it at the mean.
        let words = hits(&[(4, 1.0), (0, 1.0)]);
        let spread = hits(&[(0, 0.9), (1, 0.7)]);
        let signals = Signals { words, whole: spread.clone(), sentence: spread };
        let fused = signals.fused();
        let score = |tool| fused.iter().find(|h| h.tool == tool).map(|h| h.score);
        assert_eq!(score(4), Some(1.0));
        let above = score(0).expect("tool 0");
        assert!((above - (1.0 + 0.4 + 0.4)).abs() < 1e-9, "one deviation above in both: {above}");
    }

    /// While any text of the catalog is not embedded, the words rank alone; once all are, the
    /// e5 lists count.
    #[test]
    fn the_words_rank_alone_until_the_whole_catalog_is_embedded() {
        let tools = tools();
        let semantic = Semantic::start(Some(harness_model()));
        let index = SearchIndex::build_with(&tools, Some(semantic.clone()), None);
        semantic.settle();
        let need = "store facts about people I meet";
        let words = index.word_search(need);
        let whole = index.signals(need);
        assert_eq!(whole.whole.len(), tools.len());
        assert_eq!(whole.sentence.len(), tools.len());
        // The same catalog with one text more, never queued: not all embedded.
        let mut texts: Vec<Key> = tools.iter().flat_map(texts_of).map(|t| key(&t)).collect();
        let mut starts: Vec<usize> = vec![0];
        for tool in &tools {
            starts.push(starts.last().copied().unwrap_or(0) + texts_of(tool).len());
        }
        texts.push(key("a sentence nobody asked the model for"));
        *starts.last_mut().expect("starts") += 1;
        let part = Embedded { semantic: Some(semantic), keys: texts, starts };
        let signals = part.signals(need, words.clone());
        assert!(signals.whole.is_empty() && signals.sentence.is_empty());
        assert_eq!(signals.fused(), words, "the words' hits, in their order");
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
