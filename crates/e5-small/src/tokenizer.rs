//! XLM-RoBERTa's SentencePiece unigram tokenizer as the model file holds it: each code point
//! through the normalization map, runs of spaces collapsed to one, a leading space added,
//! spaces as `▁` (U+2581), then the most likely split into pieces (Viterbi over the pieces'
//! log-probabilities; a character no piece covers is the unknown piece).

use std::collections::HashMap;

use crate::format::LoadError;

/// SentencePiece's word-boundary mark.
const META: char = '\u{2581}';

/// The pieces and how a text is split into them.
pub(crate) struct Tokenizer {
    ids: HashMap<Vec<u8>, usize>,
    scores: Vec<f32>,
    normalized: HashMap<u32, Vec<u32>>,
    /// The unknown piece's score: the lowest piece's, less 10.
    unknown_score: f32,
    longest: usize,
    pub(crate) bos: usize,
    pub(crate) eos: usize,
    unknown: usize,
}

impl Tokenizer {
    /// Pieces `texts` with `scores`, the normalization map, and the ids of `[bos, eos, unk]`.
    pub(crate) fn new(
        texts: Vec<Vec<u8>>,
        scores: Vec<f32>,
        normalized: HashMap<u32, Vec<u32>>,
        [bos, eos, unknown]: [usize; 3],
    ) -> Result<Self, LoadError> {
        if [bos, eos, unknown].iter().any(|&id| id >= texts.len()) || scores.len() != texts.len() {
            return Err(LoadError::Format("the special pieces are not among the pieces".into()));
        }
        let lowest = scores.iter().copied().fold(f32::INFINITY, f32::min);
        let longest = texts.iter().map(Vec::len).max().unwrap_or(1);
        let mut ids = HashMap::with_capacity(texts.len());
        for (id, text) in texts.into_iter().enumerate() {
            if !text.is_empty() {
                ids.entry(text).or_insert(id);
            }
        }
        let unknown_score = lowest - 10.0;
        Ok(Self { ids, scores, normalized, unknown_score, longest, bos, eos, unknown })
    }

    /// The bytes its tables hold (the pieces twice over, for the map's keys and entries).
    pub(crate) fn heap_bytes(&self) -> usize {
        let pieces: usize = self.ids.keys().map(|k| k.capacity() + 24 + 8).sum();
        let normalized: usize = self.normalized.values().map(|v| v.capacity() * 4 + 28).sum();
        pieces + normalized + self.scores.capacity() * 4
    }

    /// How many pieces there are (the rows of the word embeddings).
    pub(crate) fn pieces(&self) -> usize {
        self.scores.len()
    }

    /// Every piece with its text and log-probability, by id (the special and empty ones left
    /// out).
    pub(crate) fn vocabulary(&self) -> Vec<(usize, &str, f32)> {
        let mut out: Vec<(usize, &str, f32)> = (self.ids.iter())
            .filter(|&(_, &id)| ![self.bos, self.eos, self.unknown].contains(&id))
            .filter_map(|(text, &id)| Some((id, std::str::from_utf8(text).ok()?, self.scores[id])))
            .collect();
        out.sort_by_key(|&(id, _, _)| id);
        out
    }

    /// `text`'s pieces, without the special ones.
    pub(crate) fn encode(&self, text: &str) -> Vec<usize> {
        let chars = self.normalize(text);
        // Each character's start in the UTF-8 text the pieces are matched against.
        let mut bytes = String::with_capacity(chars.len() * 3);
        let mut starts = Vec::with_capacity(chars.len() + 1);
        for c in &chars {
            starts.push(bytes.len());
            bytes.push(*c);
        }
        starts.push(bytes.len());
        self.viterbi(bytes.as_bytes(), &starts)
    }

    /// The normalized characters, spaces collapsed and marked, with the leading mark.
    fn normalize(&self, text: &str) -> Vec<char> {
        let mut cps: Vec<u32> = Vec::with_capacity(text.len() + 1);
        for c in text.chars() {
            match self.normalized.get(&u32::from(c)) {
                Some(to) => cps.extend(to),
                None => cps.push(u32::from(c)),
            }
        }
        cps.dedup_by(|b, a| *a == 0x20 && *b == 0x20);
        let mut chars = Vec::with_capacity(cps.len() + 1);
        if cps.first() != Some(&0x20) {
            chars.push(META);
        }
        let char_of =
            |cp: u32| if cp == 0x20 { META } else { char::from_u32(cp).unwrap_or('\u{fffd}') };
        chars.extend(cps.into_iter().map(char_of));
        chars
    }

    /// The most likely pieces of `bytes` (characters starting at `starts`, its length last).
    fn viterbi(&self, bytes: &[u8], starts: &[usize]) -> Vec<usize> {
        let n = starts.len() - 1;
        let mut best = vec![f32::NEG_INFINITY; n + 1];
        // For each end: the piece (None: unknown) and where it started.
        let mut back: Vec<(Option<usize>, usize)> = vec![(None, 0); n + 1];
        best[0] = 0.0;
        for i in 0..n {
            if best[i] == f32::NEG_INFINITY {
                continue;
            }
            for e in i + 1..=n {
                let span = &bytes[starts[i]..starts[e]];
                if span.len() > self.longest {
                    break;
                }
                if let Some(&id) = self.ids.get(span).filter(|&&id| id != self.unknown) {
                    let score = best[i] + self.scores[id];
                    if score > best[e] {
                        (best[e], back[e]) = (score, (Some(id), i));
                    }
                }
            }
            let unknown = best[i] + self.unknown_score;
            if unknown > best[i + 1] {
                (best[i + 1], back[i + 1]) = (unknown, (None, i));
            }
        }
        let mut pieces = Vec::new();
        let mut end = n;
        while end > 0 {
            let (piece, from) = back[end];
            pieces.push(piece.unwrap_or(self.unknown));
            end = from;
        }
        pieces.reverse();
        pieces
    }
}
