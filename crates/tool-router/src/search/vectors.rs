//! Static word vectors for tool search: one 64-dimension vector per WordPiece token of
//! all-MiniLM-L6-v2 (Apache-2.0), distilled by `scripts/distill-search-vectors` (each token
//! through the model alone, PCA, int8) and compiled in (`data/search-vectors.bin`, about 2.3
//! MB). A text's vector is the weighted mean of its tokens' vectors: words said differently but
//! meaning alike ("folder", "directory") land near each other, which counting words cannot
//! see. No model runs and nothing is fetched at run time.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The distilled vectors (format in `scripts/distill-search-vectors`).
const DATA: &[u8] = include_bytes!("../../data/search-vectors.bin");

/// Every token's vector, by token.
pub(crate) struct Vectors {
    ids: HashMap<Box<str>, u32>,
    scales: Vec<f32>,
    values: Vec<i8>,
    pub(crate) dim: usize,
}

/// The vectors, read on first use.
#[allow(clippy::expect_used, reason = "compiled in and parsed by a unit test")]
pub(crate) fn vectors() -> &'static Vectors {
    static VECTORS: OnceLock<Vectors> = OnceLock::new();
    VECTORS.get_or_init(|| Vectors::parse(DATA).expect("the compiled-in search vectors"))
}

impl Vectors {
    fn parse(data: &[u8]) -> Option<Self> {
        let rest = data.strip_prefix(b"MRSV1\0")?;
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(rest.get(at..at + 4)?.try_into().ok()?))
        };
        let (count, dim) = (u32_at(0)? as usize, u32_at(4)? as usize);
        let mut at = 8;
        let mut vectors = Self {
            ids: HashMap::with_capacity(count),
            scales: Vec::with_capacity(count),
            values: Vec::with_capacity(count * dim),
            dim,
        };
        for id in 0..count {
            let length = usize::from(*rest.get(at)?);
            let token = std::str::from_utf8(rest.get(at + 1..at + 1 + length)?).ok()?;
            at += 1 + length;
            let scale = f32::from_le_bytes(rest.get(at..at + 4)?.try_into().ok()?);
            at += 4;
            let row = rest.get(at..at + dim)?;
            at += dim;
            vectors.ids.insert(token.into(), id as u32);
            vectors.scales.push(scale);
            vectors.values.extend(row.iter().map(|&b| b as i8));
        }
        (at == rest.len()).then_some(vectors)
    }

    /// Adds `weight` × the vector of token `id` to `sum`.
    pub(crate) fn add(&self, id: u32, weight: f32, sum: &mut [f32]) {
        let id = id as usize;
        let scale = self.scales[id] * weight;
        let row = &self.values[id * self.dim..(id + 1) * self.dim];
        for (s, &v) in sum.iter_mut().zip(row) {
            *s += scale * f32::from(v);
        }
    }

    /// `word`'s WordPiece tokens (greedy longest match, `##` for the pieces after the first),
    /// appended to `out`; a word that cannot be split into known pieces adds none.
    pub(crate) fn tokens(&self, word: &str, out: &mut Vec<u32>) {
        let start_len = out.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while end > start {
                if word.is_char_boundary(end) {
                    piece.clear();
                    if start > 0 {
                        piece.push_str("##");
                    }
                    piece.push_str(&word[start..end]);
                    if let Some(&id) = self.ids.get(piece.as_str()) {
                        found = Some(id);
                        break;
                    }
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(start_len);
                    return;
                }
            }
        }
    }
}

/// `text`'s lower-case words: split at every character that is not a letter or a digit and
/// where a lower-case letter meets an upper-case one. The vectors take them as they are (the
/// vocabulary has the inflected forms); BM25 stems them (`index::words`).
pub(crate) fn plain_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut last_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() || (c.is_uppercase() && last_lower) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            if !c.is_alphanumeric() {
                last_lower = false;
                continue;
            }
        }
        last_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// `v` scaled to length 1 (a zero vector stays zero).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(text: &str) -> Vec<f32> {
        let v = vectors();
        let mut ids = Vec::new();
        for word in plain_words(text) {
            v.tokens(&word, &mut ids);
        }
        let mut sum = vec![0.0; v.dim];
        for id in ids {
            v.add(id, 1.0, &mut sum);
        }
        normalize(&mut sum);
        sum
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn the_vectors_load_and_words_split_into_known_pieces() {
        let v = vectors();
        assert_eq!(v.dim, 64);
        assert!(v.ids.len() > 29_000, "{}", v.ids.len());
        let mut ids = Vec::new();
        v.tokens("directory", &mut ids);
        assert_eq!(ids.len(), 1);
        ids.clear();
        v.tokens("kubectl", &mut ids);
        assert!(ids.len() > 1, "split into pieces: {ids:?}");
        ids.clear();
        v.tokens("日本語ok", &mut ids);
        assert!(ids.iter().all(|&id| (id as usize) < v.scales.len()));
        assert_eq!(
            plain_words("getCurrentTime, read_file!"),
            ["get", "current", "time", "read", "file"]
        );
    }

    #[test]
    fn words_that_mean_alike_are_nearer_than_words_that_do_not() {
        let folder = vector("folder");
        assert!(cosine(&folder, &vector("directory")) > cosine(&folder, &vector("timezone")));
        let size = vector("size");
        assert!(cosine(&size, &vector("length")) > cosine(&size, &vector("commit")));
    }
}
