//! What a sketch holds and how far it is from its limits: N, the
//! overestimate bound at the current N (see [`super::plan`] for the
//! formula), and the fullest cell against its cell size's maximum, the
//! first thing an increment would overflow.

use super::cells::{fullest, CellSize};
use super::plan::{bound, Bound};
use super::sketch::CountMinSketch;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CmsStats {
    pub width: u64,
    pub depth: u64,
    pub cell_size: CellSize,
    /// N as stored.
    pub count: u64,
    /// `2N/width` with probability `1 − 2^−depth`.
    pub bound: Bound,
    pub fullest_cell: u64,
    pub cell_max: u64,
    /// `fullest_cell / cell_max`.
    pub fullest_fraction: f64,
    /// How much N may still grow (2^63 − 1 − N; 0 for a value 2.8.2
    /// wrapped past it).
    pub count_headroom: u64,
}

/// Reads every cell: O(width·depth).
pub fn stats(s: &CountMinSketch) -> CmsStats {
    let fullest_cell = fullest(s.cell_size(), s.cell_bytes());
    let cell_max = s.max_count();
    CmsStats {
        width: s.width(),
        depth: s.depth(),
        cell_size: s.cell_size(),
        count: s.count(),
        bound: bound(s.width(), s.depth(), s.count()),
        fullest_cell,
        cell_max,
        fullest_fraction: fullest_cell as f64 / cell_max as f64,
        count_headroom: (i64::MAX as u64).saturating_sub(s.count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;

    #[test]
    fn fullest_cell_and_bound() {
        let mut s = CountMinSketch::new(100, 4, CellSize::One, &Unguarded).unwrap();
        s.incrby(b"a", 51).unwrap();
        s.incrby(b"b", 9).unwrap();
        let st = stats(&s);
        assert_eq!(st.count, 60);
        assert!(st.fullest_cell >= 51);
        assert_eq!(st.cell_max, 255);
        assert!((st.fullest_fraction - st.fullest_cell as f64 / 255.0).abs() < 1e-12);
        assert_eq!(st.bound.counts, 1.2);
        assert_eq!(st.bound.confidence, 1.0 - 1.0 / 16.0);
        assert_eq!(st.count_headroom, i64::MAX as u64 - 60);
    }
}
