//! Ranked search over MCP tools: BM25 over each tool's words — its original name and title
//! (weighted twice), its server's name and its description (its parameters' words, which
//! matched more wrong tools than right ones on the development set, are left out); words are split at case changes, digits and
//! punctuation, lower-cased and lightly stemmed (plural and verb endings), on both sides. Beside
//! it, a meaning score: the cosine of the query's and the tool's static word vectors
//! (`vectors`: its name twice and its description, each token weighted by how rare it is among
//! the tools). A tool's score is its BM25 over the best BM25 of the query, plus
//! [`MEANING_WEIGHT`] × that cosine; a tool is a hit when a word matches or the cosine reaches
//! [`MEANING_FLOOR`].

use std::collections::HashMap;

use mcp_backend::QualifiedTool;

use super::vectors::{Vectors, normalize, plain_words, vectors};

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// How many times a name word counts against a description word.
const NAME_WEIGHT: usize = 2;
/// What the meaning score weighs against the best word match's 1. This, [`NAME_WEIGHT`] and
/// leaving the parameters out were chosen on the tuning half of the development set
/// (`tests/data/search_eval`, see `eval_tests`), never on the held-out half.
const MEANING_WEIGHT: f64 = 0.75;
/// The cosine from which a tool no word matches is a hit all the same.
const MEANING_FLOOR: f32 = 0.65;

/// Words that say nothing about which tool is meant.
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "i", "in", "is",
    "it", "me", "my", "of", "on", "or", "please", "some", "that", "the", "this", "to", "want",
    "what", "which", "with", "you", "your",
];

/// An index over one set of tools.
pub(crate) struct SearchIndex {
    /// Word → (tool, how often).
    postings: HashMap<String, Vec<(usize, u32)>>,
    /// Words per tool.
    lengths: Vec<u32>,
    average: f64,
    /// Each tool's unit meaning vector, one after another.
    meanings: Vec<f32>,
    /// Token → how many tools' texts have it (the meaning weights).
    token_tools: HashMap<u32, u32>,
    /// The tools' texts for the retrieval model (see `fusion`).
    #[cfg(feature = "e5")]
    embedded: super::fusion::Embedded,
}

/// A hit: the tool's position in the indexed list, and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hit {
    pub(crate) tool: usize,
    pub(crate) score: f64,
}

impl SearchIndex {
    /// The index of `tools`, by their words and meaning vectors.
    pub(crate) fn build(tools: &[QualifiedTool]) -> Self {
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(tools.len());
        for (i, tool) in tools.iter().enumerate() {
            let words = tool_words(tool);
            lengths.push(words.len() as u32);
            let mut counts: HashMap<String, u32> = HashMap::new();
            for word in words {
                *counts.entry(word).or_default() += 1;
            }
            for (word, n) in counts {
                postings.entry(word).or_default().push((i, n));
            }
        }
        let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        let average = total as f64 / lengths.len().max(1) as f64;
        let (meanings, token_tools) = meanings(tools);
        Self {
            postings,
            lengths,
            average,
            meanings,
            token_tools,
            #[cfg(feature = "e5")]
            embedded: super::fusion::Embedded::build(tools, None, None),
        }
    }

    /// The index of `tools`, with `semantic`'s model too (see `fusion`), its embeddings kept
    /// in `keep`.
    #[cfg(feature = "e5")]
    pub(crate) fn build_with(
        tools: &[QualifiedTool],
        semantic: Option<std::sync::Arc<super::semantic::Semantic>>,
        keep: Option<&std::path::Path>,
    ) -> Self {
        let embedded = super::fusion::Embedded::build(tools, semantic, keep);
        Self { embedded, ..Self::build(tools) }
    }

    /// How much token `id` says: rare among the tools, much (one no tool has, most).
    fn token_weight(&self, id: u32) -> f32 {
        let tools = self.lengths.len() as f32;
        let df = self.token_tools.get(&id).copied().unwrap_or(0) as f32;
        ((tools + 1.0) / (df + 0.5)).ln()
    }

    /// `query`'s unit meaning vector (`None` when no word of it is known).
    fn query_meaning(&self, query: &str) -> Option<Vec<f32>> {
        let v = vectors();
        let mut ids = Vec::new();
        for word in plain_words(query).iter().filter(|w| !STOP.contains(&w.as_str())) {
            v.tokens(word, &mut ids);
        }
        if ids.is_empty() {
            return None;
        }
        let mut sum = vec![0.0; v.dim];
        for id in ids {
            v.add(id, self.token_weight(id), &mut sum);
        }
        normalize(&mut sum);
        Some(sum)
    }

    /// Every tool matching some word of `query` (shell commands in it said in words:
    /// `commands`), best first (ties by position); with the retrieval model, fused with its
    /// lists (see `fusion`).
    pub(crate) fn search(&self, query: &str) -> Vec<Hit> {
        let query = &*super::commands::expand(query);
        let hits = self.word_search(query);
        #[cfg(feature = "e5")]
        {
            let words = hits.iter().map(|hit| hit.tool).collect();
            let signals = self.embedded.signals(query, words);
            if !(signals.whole.is_empty() && signals.sentence.is_empty()) {
                return signals.fused();
            }
        }
        hits
    }

    /// Whether a search embeds its query (the retrieval model is loaded for this index).
    #[cfg(feature = "e5")]
    pub(crate) fn embeds_queries(&self) -> bool {
        self.embedded.embeds_queries()
    }

    /// The three lists for `query` (the e5 ones empty without the model).
    #[cfg(all(test, feature = "e5"))]
    pub(crate) fn signals(&self, query: &str) -> super::fusion::Signals {
        let query = &*super::commands::expand(query);
        let words = self.word_search(query).into_iter().map(|hit| hit.tool).collect();
        self.embedded.signals(query, words)
    }

    /// Every tool matching some word of `query` (or near enough in meaning), best first.
    pub(crate) fn word_search(&self, query: &str) -> Vec<Hit> {
        let words = self.lexical(query);
        let mut hits = self.with_meaning(query, words);
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
        hits
    }

    /// Each tool's BM25 for `query`'s words (the tools no word matches left out).
    fn lexical(&self, query: &str) -> HashMap<usize, f64> {
        let mut words = words(query);
        words.retain(|w| !STOP.contains(&w.as_str()));
        words.sort();
        words.dedup();
        let n = self.lengths.len() as f64;
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for word in &words {
            let Some(posting) = self.postings.get(word) else { continue };
            let df = posting.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(tool, tf) in posting {
                let tf = f64::from(tf);
                let length = f64::from(self.lengths[tool]) / self.average.max(1.0);
                let score = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length));
                *scores.entry(tool).or_default() += score;
            }
        }
        scores
    }

    /// Each tool's meaning cosine with `query` (`None` when no word of it is known).
    pub(crate) fn cosines(&self, query: &str) -> Option<Vec<f32>> {
        let meaning = self.query_meaning(query)?;
        let dim = meaning.len();
        let cosine = |v: &[f32]| v.iter().zip(&meaning).map(|(a, b)| a * b).sum::<f32>();
        Some(self.meanings.chunks_exact(dim).map(cosine).collect())
    }

    /// The word scores, over the best, plus the meaning score: every tool a word matched, and
    /// every other whose meaning is near enough.
    fn with_meaning(&self, query: &str, words: HashMap<usize, f64>) -> Vec<Hit> {
        let best = words.values().copied().fold(0.0, f64::max);
        let lexical = |tool: usize| words.get(&tool).map_or(0.0, |s| s / best);
        let Some(cosines) = self.cosines(query) else {
            return words.keys().map(|&tool| Hit { tool, score: lexical(tool) }).collect();
        };
        let near = |(tool, &cosine): (usize, &f32)| {
            (words.contains_key(&tool) || cosine >= MEANING_FLOOR)
                .then(|| Hit { tool, score: lexical(tool) + MEANING_WEIGHT * f64::from(cosine) })
        };
        cosines.iter().enumerate().filter_map(near).collect()
    }
}

/// Each tool's unit meaning vector (its name's and title's tokens twice, its description's
/// once, each weighted by its rarity among the tools), and how many tools have each token.
fn meanings(tools: &[QualifiedTool]) -> (Vec<f32>, HashMap<u32, u32>) {
    let v: &Vectors = vectors();
    let mut texts = Vec::with_capacity(tools.len());
    let mut token_tools: HashMap<u32, u32> = HashMap::new();
    // Words recur across tools: each is split into tokens once.
    let mut split: HashMap<String, Vec<u32>> = HashMap::new();
    let mut tokens = |word: String, ids: &mut Vec<u32>| {
        let known = split.entry(word).or_insert_with_key(|word| {
            let mut pieces = Vec::new();
            v.tokens(word, &mut pieces);
            pieces
        });
        ids.extend_from_slice(known);
    };
    for tool in tools {
        let t = &tool.tool;
        let mut ids = Vec::new();
        let names = [Some(t.name.as_ref()), t.title.as_deref()];
        for word in names.into_iter().flatten().flat_map(plain_words) {
            tokens(word, &mut ids);
        }
        let named = ids.len();
        for word in t.description.as_deref().map(plain_words).unwrap_or_default() {
            tokens(word, &mut ids);
        }
        let mut seen = ids.clone();
        seen.sort_unstable();
        seen.dedup();
        for id in seen {
            *token_tools.entry(id).or_default() += 1;
        }
        texts.push((ids, named));
    }
    let count = tools.len() as f32;
    let weight = |id: u32| ((count + 1.0) / (token_tools[&id] as f32 + 0.5)).ln();
    let mut meanings = vec![0.0; tools.len() * v.dim];
    for ((ids, named), vector) in texts.iter().zip(meanings.chunks_exact_mut(v.dim)) {
        for (i, &id) in ids.iter().enumerate() {
            let times = if i < *named { 2.0 } else { 1.0 };
            v.add(id, times * weight(id), vector);
        }
        normalize(vector);
    }
    (meanings, token_tools)
}

/// The words a tool is found by, name words repeated to weigh more.
fn tool_words(tool: &QualifiedTool) -> Vec<String> {
    let t = &tool.tool;
    let mut names = words(&t.name);
    names.extend(t.title.as_deref().map(words).unwrap_or_default());
    let mut out = Vec::new();
    for _ in 0..NAME_WEIGHT {
        out.extend(names.iter().cloned());
    }
    out.extend(words(&tool.server));
    out.extend(t.description.as_deref().map(words).unwrap_or_default());
    out
}

/// `text` split into lower-case, stemmed words: [`plain_words`] (split at every character that
/// is not a letter or a digit, and where a lower-case letter meets an upper-case one), each
/// stemmed.
pub(crate) fn words(text: &str) -> Vec<String> {
    plain_words(text).iter().map(|word| stem(word)).collect()
}

/// Plural and verb endings off: `files` → `file`, `directories` → `directory`, `listing` →
/// `list`, `created` → `creat`, `matches` → `match`.
fn stem(word: &str) -> String {
    let n = word.chars().count();
    let cut = |suffix: &str| word[..word.len() - suffix.len()].to_string();
    if n >= 5 && word.ends_with("ies") {
        return format!("{}y", cut("ies"));
    }
    if n >= 6 && word.ends_with("ing") {
        return cut("ing");
    }
    if n >= 5 && word.ends_with("ed") {
        return cut("ed");
    }
    if n >= 5 && ["ches", "shes", "xes", "sses"].iter().any(|s| word.ends_with(s)) {
        return cut("es");
    }
    if n >= 4 && word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") {
        return cut("s");
    }
    word.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(server: &str, name: &str, description: &str) -> QualifiedTool {
        let schema = serde_json::json!({"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}}});
        let schema = schema.as_object().cloned().unwrap_or_default();
        QualifiedTool {
            qualified_name: format!("mcp__{server}__{name}"),
            server: server.to_string(),
            tool: rmcp::model::Tool::new(name.to_string(), description.to_string(), schema),
        }
    }

    #[test]
    fn words_split_names_and_stem_endings() {
        assert_eq!(words("getCurrentTime"), ["get", "current", "time"]);
        assert_eq!(words("read_text_file"), ["read", "text", "file"]);
        assert_eq!(words("list_directories, Matches!"), ["list", "directory", "match"]);
        assert_eq!(words("files listing created"), ["file", "list", "creat"]);
        assert_eq!(words("class status"), ["class", "status"]);
    }

    #[test]
    fn the_tool_whose_words_match_ranks_first() {
        let tools = vec![
            tool("fs", "read_text_file", "Read the complete contents of a file as text."),
            tool("time", "get_current_time", "Get current time in a specific timezone."),
            tool("time", "convert_time", "Convert time between timezones."),
            tool("git", "git_status", "Shows the working tree status."),
        ];
        let index = SearchIndex::build(&tools);
        let first = |q: &str| index.search(q).first().map(|h| tools[h.tool].qualified_name.clone());
        assert_eq!(
            first("current time in a timezone").as_deref(),
            Some("mcp__time__get_current_time")
        );
        assert_eq!(first("read a file").as_deref(), Some("mcp__fs__read_text_file"));
        assert_eq!(first("working tree status").as_deref(), Some("mcp__git__git_status"));
        assert!(index.search("the of a").is_empty(), "stop words alone match nothing");
        assert!(index.search("zebra").is_empty());
    }
}
