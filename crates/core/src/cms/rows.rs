//! An item's column in every row at once. Row `r` hashes the item with
//! MurmurHash2 under seed `r`; computed one row after another, each hash
//! is a chain of dependent multiplications that waits for the previous
//! one. But a block's mixed word `k` depends on the data alone, and the
//! seeds' chains do not depend on one another: here `k` is mixed once per
//! block and `LANES` chains advance side by side (vector lanes, or at
//! least independent instructions), bit for bit what [`murmur2`] gives for
//! each seed.
//!
//! [`murmur2`]: crate::hash::murmur2

use crate::modulus::Modulus;

/// Seeds hashed together.
pub(crate) const LANES: usize = 8;

/// `murmur2(data, first_seed + l)` for `l` in `0..N` (seeds wrap around
/// 2^32 as the row number does when 2.8.2 passes it as a seed).
#[inline(always)]
pub(crate) fn murmur2_lanes<const N: usize>(data: &[u8], first_seed: u32) -> [u32; N] {
    const M: u32 = 0x5bd1e995;
    let len = data.len() as u32;
    let mut h: [u32; N] = std::array::from_fn(|l| first_seed.wrapping_add(l as u32) ^ len);
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let mut k = u32::from_le_bytes(block.try_into().expect("4-byte block"));
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        for x in &mut h {
            *x = x.wrapping_mul(M) ^ k;
        }
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut t = 0u32;
        for (j, &byte) in tail.iter().enumerate() {
            t |= u32::from(byte) << (8 * j);
        }
        for x in &mut h {
            *x = (*x ^ t).wrapping_mul(M);
        }
    }
    for x in &mut h {
        *x ^= *x >> 13;
        *x = x.wrapping_mul(M);
        *x ^= *x >> 15;
    }
    h
}

/// Fills `out` (one entry per row, `out.len()` rows) with the flat index
/// of `item`'s cell in each row of a sketch `width` wide:
/// `row · width + murmur2(item, row) mod width`.
#[inline]
pub(crate) fn indexes(width: u64, modulus: Modulus, item: &[u8], out: &mut [usize]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: indexes_avx2 needs AVX2, which the CPU has (checked
            // just above).
            return unsafe { indexes_avx2(width, modulus, item, out) };
        }
    }
    indexes_exact(width, modulus, item, out);
}

/// [`indexes`] with the rows of a group hashed in one 8-lane vector: with
/// AVX2 a multiplication of eight 32-bit lanes is one instruction, so a
/// group of fewer rows costs the same as a full one.
///
/// # Safety
/// The CPU must have AVX2 (check with `is_x86_feature_detected!`): on one
/// without it the instructions are illegal.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn indexes_avx2(width: u64, modulus: Modulus, item: &[u8], out: &mut [usize]) {
    for (g, group) in out.chunks_mut(LANES).enumerate() {
        columns::<LANES>(width, modulus, item, g * LANES, group);
    }
}

/// [`indexes`] hashing as many seeds as a group has rows: a sketch of
/// depth 7 (CMS.INITBYPROB's usual 0.01) hashes 7, not 8, where each lane
/// is its own multiplications.
///
/// An increment uses this path on every CPU: its cells are read, checked
/// and written back right after, and there the scalar lanes, inlined,
/// measured faster than the AVX2 call (`cargo bench --bench core --
/// cms/incrby`: 30 ns against 34 ns an item), while a query, which only
/// reads, is faster with the vector (22.5 ns against 24 ns).
#[inline(always)]
pub(crate) fn indexes_exact(width: u64, modulus: Modulus, item: &[u8], out: &mut [usize]) {
    for (g, group) in out.chunks_mut(LANES).enumerate() {
        let first = g * LANES;
        match group.len() {
            1 => columns::<1>(width, modulus, item, first, group),
            2 => columns::<2>(width, modulus, item, first, group),
            3 => columns::<3>(width, modulus, item, first, group),
            4 => columns::<4>(width, modulus, item, first, group),
            5 => columns::<5>(width, modulus, item, first, group),
            6 => columns::<6>(width, modulus, item, first, group),
            7 => columns::<7>(width, modulus, item, first, group),
            _ => columns::<LANES>(width, modulus, item, first, group),
        }
    }
}

/// Rows `first..first + N` of [`indexes`].
#[inline(always)]
fn columns<const N: usize>(
    width: u64,
    modulus: Modulus,
    item: &[u8],
    first: usize,
    out: &mut [usize],
) {
    let hashes = murmur2_lanes::<N>(item, first as u32);
    for (l, (i, &hash)) in out.iter_mut().zip(&hashes).enumerate() {
        let row = (first + l) as u64;
        *i = (row * width + modulus.reduce(u64::from(hash))) as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::murmur2;

    #[test]
    fn lanes_are_murmur2_of_each_seed() {
        let data: Vec<u8> = (0..40u8).map(|b| b.wrapping_mul(37) ^ 0xa5).collect();
        for len in 0..data.len() {
            for first in [0u32, 1, 8, 24, u32::MAX - 3] {
                let lanes = murmur2_lanes::<LANES>(&data[..len], first);
                for (l, &h) in lanes.iter().enumerate() {
                    let seed = first.wrapping_add(l as u32);
                    assert_eq!(h, murmur2(&data[..len], seed), "len {len} seed {seed}");
                }
            }
        }
    }

    #[test]
    fn indexes_are_row_major_columns() {
        let shapes = [
            (2000u64, 7usize),
            (1, 3),
            (1024, 8),
            (7, 17),
            (100, 32),
            (5, 1),
        ];
        let shapes = shapes.into_iter().chain((1..=16).map(|d| (2000, d)));
        for (width, depth) in shapes {
            let modulus = Modulus::new(width).unwrap();
            let mut out = vec![0usize; depth];
            indexes(width, modulus, b"item:000000012345", &mut out);
            let mut exact = vec![0usize; depth];
            indexes_exact(width, modulus, b"item:000000012345", &mut exact);
            assert_eq!(
                out, exact,
                "{width}x{depth}: the vector path and the exact one"
            );
            for (r, &i) in out.iter().enumerate() {
                let column = u64::from(murmur2(b"item:000000012345", r as u32)) % width;
                assert_eq!(
                    i as u64,
                    r as u64 * width + column,
                    "{width}x{depth} row {r}"
                );
            }
        }
    }
}
