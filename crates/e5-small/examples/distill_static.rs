//! Distils static piece vectors from the model (run by `scripts/distill-search-vectors`): every
//! lower-case ASCII piece of the vocabulary (letters and digits, at a word's start or inside
//! one) goes through the model alone, after the `query: ` prefix's pieces; the vectors are
//! centred, reduced by PCA to DIM dimensions, normalised, and written as int8 with an f32 scale
//! per piece, in the router's `MRSV1` format with WordPiece's spelling (a word's first piece as
//! it is, a piece inside a word after `##`), so the router's greedy splitter reads it.
//!
//! Usage: cargo run --release -p e5-small --example distill_static -- MODEL OUT [DIM=128]
//! [PREFIX=query]; PREFIX `query`, `passage` or `none` (the piece alone between the special
//! pieces). About two minutes on two cores for the English-pruned model's 27,276 such pieces.
//!
//! Measured on the tool-search development set (docs/benchmarks.md, "A static model distilled
//! from e5"): with each prefix, at 128 dimensions, it ranks no better than the all-MiniLM-L6-v2
//! vectors the router ships, alone or beside BM25 and e5, on the tuning half; so it is not
//! shipped, and this program stays to make it again.

use std::io::Write as _;
use std::path::PathBuf;

use e5_small::{Model, Role};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, out, rest @ ..] = args.as_slice() else {
        return Err("usage: distill_static MODEL OUT [DIM=128] [PREFIX=query]".into());
    };
    let dim: usize = rest.first().map_or(Ok(128), |d| d.parse())?;
    let prefix = match rest.get(1).map_or("query", String::as_str) {
        "query" => Some(Role::Query),
        "passage" => Some(Role::Passage),
        "none" => None,
        other => return Err(format!("PREFIX is query, passage or none, not {other:?}").into()),
    };
    let model = Model::load(&PathBuf::from(model))?;
    let pieces = chosen(&model);
    eprintln!("{} pieces", pieces.len());
    let vectors = embed_all(&model, &pieces, prefix);
    let reduced = pca(&vectors, model.dim(), dim);
    let mut file = std::io::BufWriter::new(std::fs::File::create(out)?);
    file.write_all(b"MRSV1\0")?;
    file.write_all(&(pieces.len() as u32).to_le_bytes())?;
    file.write_all(&(dim as u32).to_le_bytes())?;
    for ((_, spelling), row) in pieces.iter().zip(reduced.chunks_exact(dim)) {
        let scale = row.iter().fold(0f32, |m, v| m.max(v.abs())) / 127.0;
        file.write_all(&[spelling.len() as u8])?;
        file.write_all(spelling.as_bytes())?;
        file.write_all(&scale.to_le_bytes())?;
        let values: Vec<u8> = row
            .iter()
            .map(|v| (v / scale.max(1e-12)).round().clamp(-127.0, 127.0) as i8 as u8)
            .collect();
        file.write_all(&values)?;
    }
    file.flush()?;
    Ok(())
}

/// The pieces distilled: their ids and WordPiece spellings, in the vocabulary's order.
fn chosen(model: &Model) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (id, text, _) in model.vocabulary() {
        let (start, body) = match text.strip_prefix('\u{2581}') {
            Some(body) => (true, body),
            None => (false, text),
        };
        let plain = body.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if body.is_empty() || !plain || body.len() > 60 {
            continue;
        }
        out.push((id, if start { body.to_string() } else { format!("##{body}") }));
    }
    out
}

/// Each piece's embedding after `role`'s prefix (none: alone), on every core.
fn embed_all(model: &Model, pieces: &[(usize, String)], role: Option<Role>) -> Vec<f32> {
    // The pieces of "query: x" (or "passage: x") before x's.
    let prefix = match role {
        Some(role) => {
            let with = model.pieces("x", role);
            with[..with.len().saturating_sub(1)].to_vec()
        }
        None => Vec::new(),
    };
    let prefix = prefix.as_slice();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = pieces.len().div_ceil(threads).max(1);
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        let handles: Vec<_> = pieces
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut out = Vec::with_capacity(part.len() * model.dim());
                    for (n, (id, _)) in part.iter().enumerate() {
                        let mut ids = prefix.to_vec();
                        ids.push(*id);
                        out.extend(model.embed_pieces(&ids));
                        if n % 2000 == 0 {
                            eprintln!("{n}/{} in {:?}", part.len(), started.elapsed());
                        }
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}

/// The rows of `x` (each `n` long) centred and projected on their first `k` principal axes,
/// each row then scaled to length 1.
fn pca(x: &[f32], n: usize, k: usize) -> Vec<f32> {
    let rows = x.len() / n;
    let mut mean = vec![0f64; n];
    for row in x.chunks_exact(n) {
        mean.iter_mut().zip(row).for_each(|(m, &v)| *m += f64::from(v) / rows as f64);
    }
    let mut cov = vec![0f64; n * n];
    let mut centred = vec![0f64; n];
    for row in x.chunks_exact(n) {
        centred.iter_mut().zip(row).zip(&mean).for_each(|((c, &v), m)| *c = f64::from(v) - m);
        for i in 0..n {
            let ci = centred[i];
            for j in i..n {
                cov[i * n + j] += ci * centred[j];
            }
        }
    }
    for i in 0..n {
        for j in 0..i {
            cov[i * n + j] = cov[j * n + i];
        }
    }
    let axes = top_axes(&cov, n, k);
    let mut out = Vec::with_capacity(rows * k);
    for row in x.chunks_exact(n) {
        let mut projected: Vec<f32> = axes
            .chunks_exact(n)
            .map(|axis| {
                axis.iter()
                    .zip(row)
                    .zip(&mean)
                    .map(|((a, &v), m)| a * (f64::from(v) - m))
                    .sum::<f64>() as f32
            })
            .collect();
        let norm = projected.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        projected.iter_mut().for_each(|v| *v /= norm);
        out.extend(projected);
    }
    out
}

/// The first `k` eigenvectors (by eigenvalue) of the symmetric `n`×`n` matrix `a`, each `n`
/// long: orthogonal iteration (power iteration on a block, re-orthonormalised each step).
fn top_axes(a: &[f64], n: usize, k: usize) -> Vec<f64> {
    let mut q: Vec<f64> = (0..k * n).map(|i| (((i * 7919) % 1000) as f64 / 1000.0) - 0.5).collect();
    for _ in 0..300 {
        let mut next = vec![0f64; k * n];
        for (c, out) in q.chunks_exact(n).zip(next.chunks_exact_mut(n)) {
            for i in 0..n {
                out[i] = a[i * n..(i + 1) * n].iter().zip(c).map(|(x, y)| x * y).sum();
            }
        }
        orthonormalise(&mut next, n);
        q = next;
    }
    q
}

/// Gram–Schmidt over the rows of `q` (each `n` long), in order.
fn orthonormalise(q: &mut [f64], n: usize) {
    let k = q.len() / n;
    for i in 0..k {
        for j in 0..i {
            let dot: f64 = (0..n).map(|t| q[i * n + t] * q[j * n + t]).sum();
            for t in 0..n {
                q[i * n + t] -= dot * q[j * n + t];
            }
        }
        let norm = (0..n).map(|t| q[i * n + t] * q[i * n + t]).sum::<f64>().sqrt().max(1e-300);
        (0..n).for_each(|t| q[i * n + t] /= norm);
    }
}
