//! Sizing before creation: the memory a sketch takes, and the smallest
//! count its width, depth and decay track reliably.
//!
//! The reliability figure is a heuristic from the HeavyKeeper paper's
//! error bound (Gong et al., "HeavyKeeper: An Accurate Algorithm for
//! Finding Top-k Elephant Flows", USENIX ATC 2018, §4): for an item of
//! count n among N in one row of w buckets with exponential-weakening
//! decay of base b = 1/decay, the probability that its estimate falls
//! short by at least ⌈εN⌉ is at most 1 / (ε·N·w·(b − 1)·n). The estimate
//! is the largest of `depth` independent rows, so it falls short only
//! when every row does: the bound to the power `depth`. Taking the
//! shortfall as half the item's count (εN = n/2) gives
//! `P ≤ (2 / (w·(b − 1)·n²))^depth`, and the smallest n for which that is
//! at most δ is `n = ⌈sqrt(2 / (w·(b − 1)·δ^(1/depth)))⌉`. The bound
//! holds for the paper's independent random decay; the coin here is a
//! hash of the draw's inputs and a counter ([`super::decay`]), which is
//! meant to behave alike. With decay 1 (b = 1) every collision
//! decrements and the bound says nothing: [`min_reliable_count`] is
//! `None`. Measured numbers belong beside it (docs/sizing.md).

use super::sizing::{bytes, Params};
use super::sketch::{memory_usage, TopK};
use crate::topk::HeapSlot;

/// What a sketch of these parameters takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// What MEMORY USAGE reports (2.8.2's formula 2088 + W·D·8 + k·24).
    pub reported_bytes: u64,
    /// What the value holds before any item: struct, buckets, heap.
    pub allocated_bytes: u64,
    /// The same once every slot holds an item of `mean_item_len` bytes.
    pub full_bytes: u64,
    /// See [`min_reliable_count`], at probability [`Plan::delta`].
    pub min_reliable_count: Option<u64>,
    pub delta: f64,
}

/// The plan of a sketch with items of `mean_item_len` bytes on average,
/// reliability judged at failure probability `delta`; `None` when the
/// buckets do not fit the address space.
pub fn plan(params: Params, mean_item_len: u64, delta: f64) -> Option<Plan> {
    let sizes = bytes(params.k, params.width, params.depth).ok()?;
    let records = u64::from(params.k) * std::mem::size_of::<HeapSlot>() as u64;
    let allocated_bytes = std::mem::size_of::<TopK>() as u64 + sizes.buckets + records;
    Some(Plan {
        reported_bytes: memory_usage(params.k, params.width, params.depth),
        allocated_bytes,
        full_bytes: allocated_bytes + u64::from(params.k) * mean_item_len,
        min_reliable_count: min_reliable_count(params.width, params.depth, params.decay, delta),
        delta,
    })
}

/// The smallest count whose estimate is at least half of it with
/// probability `1 − delta` (see the module doc); `None` for decay 1 or a
/// `delta` outside (0, 1).
pub fn min_reliable_count(width: u32, depth: u32, decay: f64, delta: f64) -> Option<u64> {
    if !(decay > 0.0 && decay < 1.0 && delta > 0.0 && delta < 1.0) || width == 0 || depth == 0 {
        return None;
    }
    let b = 1.0 / decay;
    let n = (2.0 / (f64::from(width) * (b - 1.0) * delta.powf(1.0 / f64::from(depth)))).sqrt();
    Some(n.ceil().max(1.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reliable_count_falls_with_width_and_depth() {
        let n = |w, d| min_reliable_count(w, d, 0.9, 0.01).unwrap();
        assert!(n(8, 7) >= n(1000, 7));
        assert!(n(8, 1) > n(8, 7));
        assert_eq!(min_reliable_count(8, 7, 1.0, 0.01), None);
        assert_eq!(min_reliable_count(8, 7, 0.9, 0.0), None);
        // w 8, d 1, decay 0.5 (b − 1 = 1), δ 0.01: sqrt(2 / 0.08) = 5.
        assert_eq!(min_reliable_count(8, 1, 0.5, 0.01), Some(5));
    }

    #[test]
    fn memory() {
        let p = plan(Params::with_defaults(10), 16, 0.01).unwrap();
        assert_eq!(p.reported_bytes, 2776);
        assert!(p.allocated_bytes > 448 && p.full_bytes == p.allocated_bytes + 160);
        let huge = Params {
            k: 1,
            width: u32::MAX,
            depth: u32::MAX,
            decay: 0.9,
        };
        assert_eq!(plan(huge, 1, 0.01), None);
    }
}
