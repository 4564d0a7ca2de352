//! Sizing before creation: the memory a sketch takes, and the smallest
//! count its width, depth and decay track reliably in a stream of a given
//! total.
//!
//! # The reliability model
//!
//! An item counted `n` times in a stream of `N` counts competes, in each
//! row, for the one bucket it hashes to with the other items that land
//! there: about `N/w` counts (`w` the width). While it owns the bucket at
//! count `C`, each of their counts takes one away with probability
//! `decay^C`; while another item owns it, its own counts do that to the
//! owner's. Nothing else lowers a count, and 32-bit fingerprints make an
//! estimate above the truth negligible: an estimate is the true count less
//! what the bucket lost. Two things decide how much:
//!
//! - **Getting a foothold.** At a low count the item's bucket is taken
//!   from it as fast as the others arrive. Once it arrives faster than the
//!   others do (`n ≥ N/w`) it keeps the bucket from the start; below that
//!   it must first climb, against the stream, to the count where
//!   `decay^C · N/w` falls under its own rate, which it may do late or
//!   never (measured: the smallest count always tracked is 0.2 to 0.75
//!   times `N/w` at widths 8 and 100).
//!   With decay 1 every count of another item takes one away, for good:
//!   the estimate falls short by about the `N/w` counts the bucket
//!   received from the others, so being within a fraction `ε` needs
//!   `n ≥ N/(w·ε)`.
//! - **Keeping it.** Once it holds the bucket, the expected decrements are
//!   at most `Σ decay^C ≈ (N/w)/(n·ln b)` with `b = 1/decay`, as its count
//!   grows with the stream. Markov's inequality bounds the chance that
//!   they reach `ε·n` by that over `ε·n`, and the estimate (the largest of
//!   the `depth` rows) falls short only when every row does: the bound to
//!   the power `depth`. At most `δ` from
//!   `n = sqrt(N / (w·ε·ln(b)·δ^(1/depth)))` on. This is the form of the
//!   HeavyKeeper paper's error bound (Gong et al., USENIX ATC 2018: a
//!   shortfall of `εN` has probability at most `1/(ε·w·(b − 1)·n)` per
//!   row), with the shortfall relative to the item's own count.
//!
//! [`min_reliable_count`] is the larger of the two for decay below 1,
//! `N/(w·ε)` for decay 1, never more than `N/(w·ε)`. It grows with the
//! stream's total: an earlier form, `sqrt(2/(w·(b − 1)·δ^(1/depth)))`,
//! had lost `N` and promised counts that a long stream cannot keep (3 for
//! the defaults, where 100,000 Zipf-distributed adds track nothing below
//! about 4,000). It is a guide, not a proof: collisions with heavier items
//! (which depth answers) and the heap (an item is listed only while at
//! most `k − 1` items have larger estimates) are left out. docs/sizing.md
//! has what streams of Zipf-distributed items measure against it (`cargo
//! run --release -p ferrobloom-core --example topk_reliability`): it is
//! above every measured threshold.

use super::sizing::{bytes, Params};
use super::sketch::{memory_usage, TopK};
use crate::topk::HeapSlot;

/// The shortfall [`min_reliable_count`] is stated for by TOPK.PLAN and
/// TOPK.STATS: estimates within 10% of the true count.
pub const RELIABLE_ERROR: f64 = 0.1;
/// The failure probability they state it at: 1%.
pub const RELIABLE_DELTA: f64 = 0.01;

/// What a sketch of these parameters takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// What MEMORY USAGE reports (2.8.2's formula 2088 + W·D·8 + k·24).
    pub reported_bytes: u64,
    /// Buckets and heap records: W·D·8 + k·24 (what the guard admits).
    pub data_bytes: u64,
    /// What the value holds before any item: struct, buckets, heap.
    pub allocated_bytes: u64,
    /// The same once every slot holds an item of `mean_item_len` bytes.
    pub full_bytes: u64,
    /// See [`min_reliable_count`] (at [`RELIABLE_ERROR`] and
    /// [`RELIABLE_DELTA`]); `None` without a stream total.
    pub min_reliable_count: Option<u64>,
}

/// The plan of a sketch with items of `mean_item_len` bytes on average in
/// a stream of `total` counts (0: not known); `None` when the buckets do
/// not fit the address space.
pub fn plan(params: Params, mean_item_len: u64, total: u64) -> Option<Plan> {
    let sizes = bytes(params.k, params.width, params.depth).ok()?;
    let records = u64::from(params.k) * std::mem::size_of::<HeapSlot>() as u64;
    let allocated_bytes = std::mem::size_of::<TopK>() as u64 + sizes.buckets + records;
    Some(Plan {
        reported_bytes: memory_usage(params.k, params.width, params.depth),
        data_bytes: sizes.buckets + sizes.heap,
        allocated_bytes,
        full_bytes: allocated_bytes.saturating_add(u64::from(params.k) * mean_item_len),
        min_reliable_count: (total > 0).then(|| {
            min_reliable_count(
                params.width,
                params.depth,
                params.decay,
                total,
                RELIABLE_ERROR,
                RELIABLE_DELTA,
            )
        }),
    })
}

/// The smallest true count whose estimate is within `error` (a fraction)
/// of it with probability at least `1 − delta`, in a stream of `total`
/// counts (see the module doc). `error` and `delta` are clamped into
/// (0, 1); a total of 0 gives 0.
pub fn min_reliable_count(
    width: u32,
    depth: u32,
    decay: f64,
    total: u64,
    error: f64,
    delta: f64,
) -> u64 {
    if total == 0 {
        return 0;
    }
    let error = error.clamp(f64::MIN_POSITIVE, 1.0);
    let delta = delta.clamp(f64::MIN_POSITIVE, 1.0);
    let per_row = delta.powf(1.0 / f64::from(depth.max(1)));
    // The counts of other items a row's bucket receives.
    let share = total as f64 / f64::from(width.max(1));
    let mut n = share / error;
    if decay > 0.0 && decay < 1.0 {
        let ln_b = -decay.ln();
        let keep = (share / (error * ln_b * per_row)).sqrt();
        n = n.min(share.max(keep));
    }
    (n.ceil().max(1.0)).min(total as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reliable_count_falls_with_width_depth_and_decay_and_grows_with_the_stream() {
        let n = |w, d, decay, total| min_reliable_count(w, d, decay, total, 0.1, 0.01);
        assert!(n(8, 7, 0.9, 1_000_000) > n(1000, 7, 0.9, 1_000_000));
        assert!(n(100, 5, 1.0, 1_000_000) > n(100, 5, 0.9, 1_000_000));
        // Decay 1: N/(w·ε), whatever the depth.
        assert_eq!(n(100, 1, 1.0, 1_000_000), 100_000);
        assert_eq!(n(100, 7, 1.0, 1_000_000), 100_000);
        // Decay below 1: the foothold N/w ...
        assert_eq!(n(100, 7, 0.9, 1_000_000), 10_000);
        // ... or keeping the bucket, where the stream is short against
        // the width: sqrt(500 / (0.1 · ln(1/0.9) · 0.01^(1/2))).
        let keep = (500.0 / (0.1 * -(0.9f64.ln()) * 0.1)).sqrt().ceil() as u64;
        assert_eq!(n(100, 2, 0.9, 50_000), keep);
        assert!(keep > 500 && keep < 5_000, "{keep}");
        // Depth only helps keeping the bucket.
        assert!(n(100, 1, 0.9, 50_000) > n(100, 2, 0.9, 50_000));
        // Never above N/(w·ε), nor the total.
        assert_eq!(n(100, 1, 0.9999, 1_000_000), 100_000);
        assert_eq!(min_reliable_count(1, 1, 1.0, 50, 0.1, 0.01), 50);
        assert_eq!(min_reliable_count(8, 7, 0.9, 0, 0.1, 0.01), 0);
    }

    #[test]
    fn memory() {
        let p = plan(Params::with_defaults(10), 16, 1_000_000).unwrap();
        assert_eq!(p.reported_bytes, 2776);
        assert_eq!(p.data_bytes, 448 + 240);
        assert!(p.allocated_bytes > 448 && p.full_bytes == p.allocated_bytes + 160);
        assert_eq!(
            p.min_reliable_count,
            Some(min_reliable_count(8, 7, 0.9, 1_000_000, 0.1, 0.01))
        );
        assert_eq!(
            plan(Params::with_defaults(10), 0, 0)
                .unwrap()
                .min_reliable_count,
            None
        );
        let huge = Params {
            k: 1,
            width: u32::MAX,
            depth: u32::MAX,
            decay: 0.9,
        };
        assert_eq!(plan(huge, 1, 0), None);
    }
}
