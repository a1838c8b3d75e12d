//! The packed model file (`E5S1`, version 1): a header of the model's sizes, the tokenizer
//! (pieces, scores, the normalization map), and a directory of tensors — each named, of type
//! f32 (0) or 4-bit blocks (1: per 32 weights an f16 scale and 16 bytes of nibbles, weight
//! `j` in the low nibble of byte `j`, weight `j + 16` in the high one), at an offset.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::encoder::{Encoder, Layer, Q4Rows};
use crate::tokenizer::Tokenizer;

/// Why a model file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// It cannot be read.
    #[error("cannot read the model file {0}: {1}")]
    Read(PathBuf, std::io::Error),
    /// It is not a model file of a format this crate reads, or it is cut short.
    #[error("not an e5 model file of format E5S1 version 1: {0}")]
    Format(String),
}

fn bad(what: impl Into<String>) -> LoadError {
    LoadError::Format(what.into())
}

/// A reader over the file's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], LoadError> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| bad(format!("cut short at byte {}", self.at)))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], LoadError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, LoadError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn count(&mut self) -> Result<usize, LoadError> {
        let n = i32::from_le_bytes(self.array()?);
        usize::try_from(n).map_err(|_| bad(format!("a negative count: {n}")))
    }

    fn u64(&mut self) -> Result<usize, LoadError> {
        let n = u64::from_le_bytes(self.array()?);
        usize::try_from(n).map_err(|_| bad("an offset past this machine's memory"))
    }

    fn f32s(&mut self, n: usize) -> Result<Vec<f32>, LoadError> {
        Ok(f32s(self.take(n.checked_mul(4).ok_or_else(|| bad("too large"))?)?))
    }
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// The model's sizes, from the header.
struct Sizes {
    hidden: usize,
    layers: usize,
    heads: usize,
    ff: usize,
    positions: usize,
    types: usize,
    eps: f32,
}

/// The tokenizer and the encoder in `bytes`.
pub(crate) fn parse(bytes: &[u8]) -> Result<(Tokenizer, Encoder), LoadError> {
    let mut c = Cursor { bytes, at: 0 };
    if c.take(4)? != b"E5S1" {
        return Err(bad("no E5S1 magic"));
    }
    let version = c.u32()?;
    if version != 1 {
        return Err(bad(format!("version {version}")));
    }
    let (hidden, layers, heads, ff) = (c.count()?, c.count()?, c.count()?, c.count()?);
    let (_vocab, positions, types) = (c.count()?, c.count()?, c.count()?);
    let eps = f32::from_le_bytes(c.array()?);
    let block = c.count()?;
    if block != 32
        || !hidden.is_multiple_of(32)
        || !ff.is_multiple_of(32)
        || heads == 0
        || !hidden.is_multiple_of(heads)
    {
        return Err(bad("sizes this reader does not support"));
    }
    let sizes = Sizes { hidden, layers, heads, ff, positions, types, eps };
    let tokenizer = tokenizer(&mut c)?;
    let tensors = directory(&mut c)?;
    let encoder = encoder(&sizes, &tensors, tokenizer.pieces())?;
    Ok((tokenizer, encoder))
}

fn tokenizer(c: &mut Cursor<'_>) -> Result<Tokenizer, LoadError> {
    let pieces = c.count()?;
    let (bos, eos, _pad, unk) = (c.count()?, c.count()?, c.count()?, c.count()?);
    let blob_len = c.u64()?;
    let offsets: Vec<usize> =
        (0..=pieces).map(|_| c.u32().map(|o| o as usize)).collect::<Result<_, _>>()?;
    let scores = c.f32s(pieces)?;
    let blob = c.take(blob_len)?;
    let texts = offsets
        .windows(2)
        .map(|w| {
            blob.get(w[0]..w[1]).map(<[u8]>::to_vec).ok_or_else(|| bad("a piece past the blob"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let entries = c.count()?;
    let map_len = c.u32()? as usize;
    let mut map = Cursor { bytes: c.take(map_len)?, at: 0 };
    let mut normalized = HashMap::with_capacity(entries);
    for _ in 0..entries {
        let from = map.u32()?;
        let n = usize::from(map.take(1)?[0]);
        let to = (0..n).map(|_| map.u32()).collect::<Result<Vec<_>, _>>()?;
        normalized.insert(from, to);
    }
    Tokenizer::new(texts, scores, normalized, [bos, eos, unk])
}

/// Each tensor by name: its type (0 f32, 1 4-bit) and bytes.
type Tensors<'a> = HashMap<String, (u8, &'a [u8])>;

fn directory<'a>(c: &mut Cursor<'a>) -> Result<Tensors<'a>, LoadError> {
    let n = c.count()?;
    let mut tensors = HashMap::with_capacity(n);
    for _ in 0..n {
        let name_len = usize::from(u16::from_le_bytes(c.array()?));
        let name = String::from_utf8_lossy(c.take(name_len)?).into_owned();
        let kind = c.take(1)?[0];
        let _elements = c.u32()?;
        let (offset, len) = (c.u64()?, c.u64()?);
        let end = offset.checked_add(len).filter(|&end| end <= c.bytes.len());
        let end = end.ok_or_else(|| bad(format!("tensor {name} past the file's end")))?;
        tensors.insert(name, (kind, &c.bytes[offset..end]));
    }
    Ok(tensors)
}

fn encoder(sizes: &Sizes, tensors: &Tensors<'_>, pieces: usize) -> Result<Encoder, LoadError> {
    let h = sizes.hidden;
    let floats = |name: &str, n: usize| -> Result<Vec<f32>, LoadError> {
        match tensors.get(name) {
            Some((0, bytes)) if bytes.len() == n * 4 => Ok(f32s(bytes)),
            _ => Err(bad(format!("tensor {name}: missing, or not {n} f32"))),
        }
    };
    let q4 = |name: &str, rows: usize, cols: usize| -> Result<Q4Rows, LoadError> {
        match tensors.get(name) {
            Some((1, bytes)) => Q4Rows::new(bytes, rows, cols)
                .ok_or_else(|| bad(format!("tensor {name}: not {rows}×{cols} 4-bit"))),
            _ => Err(bad(format!("tensor {name}: missing, or not 4-bit"))),
        }
    };
    let layer = |l: usize| -> Result<Layer, LoadError> {
        let (ff, name) = (sizes.ff, |s: &str| format!("l{l}.{s}"));
        Ok(Layer {
            q: (q4(&name("q.w"), h, h)?, floats(&name("q.b"), h)?),
            k: (q4(&name("k.w"), h, h)?, floats(&name("k.b"), h)?),
            v: (q4(&name("v.w"), h, h)?, floats(&name("v.b"), h)?),
            out: (q4(&name("ao.w"), h, h)?, floats(&name("ao.b"), h)?),
            attention_norm: (floats(&name("aln.w"), h)?, floats(&name("aln.b"), h)?),
            up: (q4(&name("fi.w"), ff, h)?, floats(&name("fi.b"), ff)?),
            down: (q4(&name("fo.w"), h, ff)?, floats(&name("fo.b"), h)?),
            output_norm: (floats(&name("oln.w"), h)?, floats(&name("oln.b"), h)?),
        })
    };
    Ok(Encoder {
        hidden: h,
        heads: sizes.heads,
        positions: sizes.positions,
        eps: sizes.eps,
        words: tensors
            .get("emb.word")
            .filter(|(kind, _)| *kind == 1)
            .map(|(_, bytes)| bytes.to_vec())
            .filter(|bytes| bytes.len() == pieces * (h / 32) * 18)
            .ok_or_else(|| bad("tensor emb.word: missing, or not one 4-bit row per piece"))?,
        position: floats("emb.pos", sizes.positions * h)?,
        token_type: floats("emb.type", sizes.types.max(1) * h)?[..h].to_vec(),
        embedding_norm: (floats("emb.ln.w", h)?, floats("emb.ln.b", h)?),
        layers: (0..sizes.layers).map(layer).collect::<Result<_, _>>()?,
    })
}
