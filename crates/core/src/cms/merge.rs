//! CMS.MERGE: the destination's cells become the weighted sum of the
//! sources' cells, and its N the weighted sum of theirs, or nothing
//! changes.
//!
//! The arithmetic is 2.8.2's pre-check, kept exactly so that the same
//! merges succeed: for every cell, each product `cell · weight` and each
//! partial sum (sources in the order given) must fit a signed 64-bit
//! integer, and the sum must end in `[0, cell maximum]`; for N, each
//! product of the unsigned N and the signed weight (computed exactly, in
//! 128 bits) and each partial sum must fit a signed 64-bit integer, and
//! the sum must end non-negative. 8.12 checks the cells against the cell
//! size's maximum, not 2^32 − 1; for 4-byte cells that is the same.
//!
//! The destination may be one of the sources ([`Operand::Dest`]): every
//! cell is computed from the same index of every source, so the second
//! pass writes in place after the first one read everything it needs.
//!
//! When no product or partial sum can leave the signed 64-bit range (the
//! sum over sources of the largest cell times the weight's magnitude fits
//! it: always with 4-byte cells and ordinary weights), the cells are
//! summed block by block without per-cell overflow checks, a loop the
//! compiler vectorizes; otherwise every step is checked.

use super::cells::{with_cell, Cell};
use super::sketch::CountMinSketch;

/// Why a merge changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeError {
    /// A source's width or depth differs from the destination's.
    Dimensions,
    /// A source's cell size differs from the destination's (8.12).
    CellSize,
    /// A cell or N out of range.
    Overflow,
}

impl MergeError {
    pub fn message(self) -> &'static str {
        match self {
            MergeError::Dimensions => "CMS: width/depth is not equal",
            MergeError::CellSize => "CMS: cell size is not equal",
            MergeError::Overflow => "CMS: MERGE overflow",
        }
    }
}

/// One source of a merge.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// The destination itself, as it was before the merge.
    Dest,
    Other(&'a CountMinSketch),
}

/// The check CMS.MERGE makes per source, after finding its key (spec §3.6
/// row 9, then 8.12's cell size check).
pub fn check_compatible(dest: &CountMinSketch, source: &CountMinSketch) -> Result<(), MergeError> {
    if dest.width() != source.width() || dest.depth() != source.depth() {
        return Err(MergeError::Dimensions);
    }
    if dest.cell_size() != source.cell_size() {
        return Err(MergeError::CellSize);
    }
    Ok(())
}

/// `Σ n_k · w_k` of 2.8.2's counter check.
fn merged_count(counts: impl Iterator<Item = (u64, i64)>) -> Option<u64> {
    let mut sum = 0i64;
    for (n, w) in counts {
        let product = i64::try_from(i128::from(n) * i128::from(w)).ok()?;
        sum = sum.checked_add(product)?;
    }
    u64::try_from(sum).ok()
}

/// Replaces `dest` by the weighted sum of `sources`, or returns why not
/// and changes nothing. Each source is checked with [`check_compatible`]
/// first (CMS.MERGE does that while it looks the keys up, to answer in
/// 2.8.2's order).
pub fn merge(dest: &mut CountMinSketch, sources: &[(Operand<'_>, i64)]) -> Result<(), MergeError> {
    for (operand, _) in sources {
        if let Operand::Other(s) = operand {
            check_compatible(dest, s)?;
        }
    }
    let dest_count = dest.count();
    let count = merged_count(sources.iter().map(|&(op, w)| {
        let n = match op {
            Operand::Dest => dest_count,
            Operand::Other(s) => s.count(),
        };
        (n, w)
    }))
    .ok_or(MergeError::Overflow)?;
    let size = dest.cell_size();
    with_cell!(size, C => merge_cells::<C>(dest, sources))?;
    dest.set_count(count);
    Ok(())
}

/// The weighted sum of one cell index, or `None` out of range.
#[inline(always)]
fn cell_sum<C: Cell>(dest: &[u8], others: &[(Option<&[u8]>, i64)], j: usize) -> Option<u64> {
    let mut sum = 0i64;
    for &(cells, w) in others {
        // A cell is at most 2^63 − 1, so it converts exactly.
        let cell = C::get(cells.unwrap_or(dest), j) as i64;
        sum = sum.checked_add(cell.checked_mul(w)?)?;
    }
    u64::try_from(sum).ok().filter(|&s| s <= C::MAX)
}

/// Cells summed per block of the fast path.
const BLOCK: usize = 512;

/// Whether no product or partial sum of any cell can overflow: the sum of
/// `bound_k · |w_k|` fits a signed 64-bit integer, `bound_k` being an upper
/// bound of source k's cells.
fn cannot_overflow(bounds_and_weights: impl Iterator<Item = (u64, i64)>) -> bool {
    let mut total = 0i128;
    for (bound, w) in bounds_and_weights {
        total += i128::from(bound) * i128::from(w.unsigned_abs());
        if total > i128::from(i64::MAX) {
            return false;
        }
    }
    true
}

/// The sums of cells `start..start + acc.len()`, without overflow checks
/// (the caller made sure none can happen); whether all are in range.
///
/// Written so that the compiler vectorizes every loop: the first source
/// sets the sums instead of adding to zeros, a weight of 1 (CMS.MERGE
/// without WEIGHTS) adds without a 64-bit multiply, and the range check
/// ORs the sums together instead of stopping at the first one out of
/// range (every maximum is 2^b − 1, so a sum is in `[0, C::MAX]` exactly
/// when it has no bit above `C::MAX`'s, the sign bit included).
#[inline(always)]
fn block_sums<C: Cell>(
    dest: &[u8],
    others: &[(Option<&[u8]>, i64)],
    start: usize,
    acc: &mut [i64],
) -> bool {
    let bytes = start * C::BYTES..(start + acc.len()) * C::BYTES;
    for (k, &(cells, w)) in others.iter().enumerate() {
        let src = cells.unwrap_or(dest)[bytes.clone()].chunks_exact(C::BYTES);
        let cells = acc.iter_mut().zip(src.map(|c| C::read(c) as i64));
        match (k == 0, w == 1) {
            (true, true) => cells.for_each(|(a, c)| *a = c),
            (true, false) => cells.for_each(|(a, c)| *a = c.wrapping_mul(w)),
            (false, true) => cells.for_each(|(a, c)| *a = a.wrapping_add(c)),
            (false, false) => cells.for_each(|(a, c)| *a = a.wrapping_add(c.wrapping_mul(w))),
        }
    }
    if others.is_empty() {
        acc.fill(0);
    }
    debug_assert!((C::MAX + 1).is_power_of_two());
    let bits = acc.iter().fold(0u64, |bits, &s| bits | s as u64);
    bits & !C::MAX == 0
}

fn merge_cells<C: Cell>(
    dest: &mut CountMinSketch,
    sources: &[(Operand<'_>, i64)],
) -> Result<(), MergeError> {
    let others: Vec<(Option<&[u8]>, i64)> = sources
        .iter()
        .map(|&(op, w)| match op {
            Operand::Dest => (None, w),
            Operand::Other(s) => (Some(s.cell_bytes()), w),
        })
        .collect();
    let cells = (dest.width() * dest.depth()) as usize;
    let fast = cannot_overflow(others.iter().map(|&(_, w)| (C::MAX, w))) || {
        // The cells' real maximum is usually far below the cell size's.
        let current = dest.cell_bytes();
        let fullest =
            |c: Option<&[u8]>| super::cells::fullest(dest.cell_size(), c.unwrap_or(current));
        cannot_overflow(others.iter().map(|&(c, w)| (fullest(c), w)))
    };
    if fast {
        let mut acc = [0i64; BLOCK];
        let current = dest.cell_bytes();
        for start in (0..cells).step_by(BLOCK) {
            let len = BLOCK.min(cells - start);
            if !block_sums::<C>(current, &others, start, &mut acc[..len]) {
                return Err(MergeError::Overflow);
            }
        }
        let bytes = dest.cells_mut();
        for start in (0..cells).step_by(BLOCK) {
            let len = BLOCK.min(cells - start);
            block_sums::<C>(bytes, &others, start, &mut acc[..len]);
            let out = &mut bytes[start * C::BYTES..(start + len) * C::BYTES];
            for (chunk, &s) in out.chunks_exact_mut(C::BYTES).zip(&acc[..len]) {
                C::write(chunk, s as u64);
            }
        }
        return Ok(());
    }
    {
        let current = dest.cell_bytes();
        if (0..cells).any(|j| cell_sum::<C>(current, &others, j).is_none()) {
            return Err(MergeError::Overflow);
        }
    }
    let bytes = dest.cells_mut();
    for j in 0..cells {
        let sum = cell_sum::<C>(bytes, &others, j).expect("checked in the first pass");
        C::set(bytes, j, sum);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;
    use crate::cms::cells::CellSize;

    fn holding(item: &[u8], n: i64) -> CountMinSketch {
        let mut s = CountMinSketch::new(2, 2, CellSize::Four, &Unguarded).unwrap();
        s.incrby(item, n).unwrap();
        s
    }

    fn merge_two(a: &CountMinSketch, b: &CountMinSketch, w: [i64; 2]) -> Result<u64, MergeError> {
        let mut dest = CountMinSketch::new(2, 2, CellSize::Four, &Unguarded).unwrap();
        dest.incrby(b"untouched", 1).unwrap();
        let before = dest.cell_bytes().to_vec();
        let r = merge(
            &mut dest,
            &[(Operand::Other(a), w[0]), (Operand::Other(b), w[1])],
        );
        if r.is_err() {
            assert_eq!(
                dest.cell_bytes(),
                &before[..],
                "a failed merge changed cells"
            );
            assert_eq!(dest.count(), 1, "a failed merge changed N");
        }
        r.map(|()| dest.count())
    }

    /// 8.12's tests (spec §3.9).
    #[test]
    fn upstream_weight_tables() {
        let big = holding(b"foo", 4_000_000_000);
        for w in [[1, -2], [-2, -2], [-2, 1], [2, 0], [0, 2], [-1, -1]] {
            assert_eq!(merge_two(&big, &big, w), Err(MergeError::Overflow), "{w:?}");
        }
        let four = holding(b"foo", 4);
        for w in [
            [9223372036854775807, -4000000000],
            [8000000000, -4000000000],
            [-8000000000, 4000000000],
            [-800000000000, 8000000000],
            [-1, -1],
            [-5, -4],
        ] {
            assert_eq!(
                merge_two(&four, &four, w),
                Err(MergeError::Overflow),
                "{w:?}"
            );
        }
        assert_eq!(
            merge_two(&four, &four, [-922337203685477500, 922337203685477502]),
            Ok(8)
        );
    }

    /// §3.6: cell 10 with weight 429496729 fits, 429496730 does not.
    #[test]
    fn cell_maximum_is_the_limit() {
        let ten = holding(b"x", 10);
        let zero = holding(b"y", 0);
        assert_eq!(merge_two(&ten, &zero, [429496729, 1]), Ok(4294967290));
        assert_eq!(
            merge_two(&ten, &zero, [429496730, 1]),
            Err(MergeError::Overflow)
        );
    }

    #[test]
    fn dest_may_be_a_source() {
        let mut a = holding(b"x", 7);
        let b = holding(b"y", 3);
        merge(&mut a, &[(Operand::Dest, 2), (Operand::Other(&b), 1)]).unwrap();
        assert_eq!((a.query(b"x"), a.count()), (14, 17));
        merge(&mut a, &[(Operand::Dest, 1), (Operand::Dest, -1)]).unwrap();
        assert_eq!(a.count(), 0);
        assert!(a.cell_bytes().iter().all(|&c| c == 0));
    }

    #[test]
    fn shapes_must_match() {
        let mut a = holding(b"x", 1);
        let wide = CountMinSketch::new(3, 2, CellSize::Four, &Unguarded).unwrap();
        let small = CountMinSketch::new(2, 2, CellSize::Two, &Unguarded).unwrap();
        assert_eq!(
            merge(&mut a, &[(Operand::Other(&wide), 1)]),
            Err(MergeError::Dimensions)
        );
        assert_eq!(
            merge(&mut a, &[(Operand::Other(&small), 1)]),
            Err(MergeError::CellSize)
        );
        assert_eq!(a.query(b"x"), 1);
    }

    #[test]
    fn intermediate_products_must_fit() {
        // 4·2^62 does not fit although 4·2^62 − 4·2^62 = 0 would.
        let four = holding(b"foo", 4);
        assert_eq!(
            merge_two(&four, &four, [1 << 62, -(1 << 62)]),
            Err(MergeError::Overflow)
        );
    }
}
