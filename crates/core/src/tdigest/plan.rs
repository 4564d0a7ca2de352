//! Sizing a t-digest before it exists: memory for a compression, and the
//! accuracy to expect from it. Nothing is allocated.
//!
//! Memory. A digest holds `cap = 6·⌊c⌋ + 10` nodes of 16 bytes (a mean and
//! a weight), reserved at creation whatever is added; 2.8.2 reports
//! `16·cap + 8` in MEMORY USAGE and TDIGEST.INFO, and so does FerroBloom.
//! The honest figure adds the value's own struct ([`TDigestPlan::bytes`]).
//!
//! Accuracy. The merging t-digest with the k1 scale function
//! (Dunning and Ertl, "Computing extremely accurate quantiles using
//! t-digests", 2019, §2.2) bounds each centroid's weight by the scale
//! function; in 2.8.2's form of it, compress's merge condition (spec §5.3)
//! admits a merged centroid of weight `P` only while
//! `P·c/(2π·W·ln W) ≤ q(1 − q)` at both of its ends, so a centroid around
//! quantile q spans at most a fraction `2π·ln W·q(1 − q)/c` of the
//! observations. That whole span is the guidance given here, as the worst
//! rank error of a quantile, a fraction of the observations, at the median
//! and at the 1% / 99% tails, for a number of observations: a quantile is
//! interpolated between two neighbouring centroids, over half of each, and
//! the points of a centroid are not spread evenly around its mean, so the
//! answer can be off by up to about one centroid. Half the span is not a
//! safe guide: the `tdigest_accuracy` example measured errors up to 1.04
//! times it (compression 20, a million lognormal values in random order,
//! at the 1% tail); against the whole span the worst measured was 0.52
//! of it, and usually far less (docs/sizing.md gives the measurements).
//! It bounds the error in rank, not in value, and grows only with `ln W`.

use super::digest::{capacity_for, memory_usage_for, CreateError, TWO_PI};

/// The size of the digest's struct beside its node array.
pub const STRUCT_BYTES: u64 = std::mem::size_of::<super::TDigest>() as u64;

/// The tail quantile the guidance is given at (and at `1 − TAIL_QUANTILE`).
pub const TAIL_QUANTILE: f64 = 0.01;

/// A planned digest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TDigestPlan {
    pub compression: f64,
    /// `6·⌊c⌋ + 10`.
    pub capacity: i64,
    /// What MEMORY USAGE and INFO report: `16·cap + 8`.
    pub memory_usage: i64,
    /// Bytes held: the node array plus the struct.
    pub bytes: u64,
    /// Observations the accuracy below is computed for.
    pub observations: u64,
    /// Worst rank error at the median, as a fraction of the observations.
    pub rank_error_median: f64,
    /// Worst rank error at the 1% and 99% quantiles.
    pub rank_error_tail: f64,
}

/// The largest span `2π·ln W·q(1−q)/c` of a centroid at quantile q, as a
/// fraction of the observations: the worst rank error to expect there.
pub fn rank_error(compression: f64, observations: u64, q: f64) -> f64 {
    let w = observations.max(2) as f64;
    TWO_PI * w.ln() * q * (1.0 - q) / compression
}

/// Plans a digest of `compression` holding `observations` values.
pub fn plan(compression: f64, observations: u64) -> Result<TDigestPlan, CreateError> {
    let capacity = capacity_for(compression)?;
    Ok(TDigestPlan {
        compression,
        capacity,
        memory_usage: memory_usage_for(capacity),
        bytes: 16 * capacity as u64 + STRUCT_BYTES,
        observations,
        rank_error_median: rank_error(compression, observations, 0.5),
        rank_error_tail: rank_error(compression, observations, TAIL_QUANTILE),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_compression() {
        let p = plan(100.0, 1_000_000).unwrap();
        assert_eq!((p.capacity, p.memory_usage), (610, 9768));
        assert!(p.bytes >= 9760);
        assert!(p.rank_error_median > p.rank_error_tail);
        // 2π·ln(10^6)·0.25/100.
        assert!(p.rank_error_median < 0.22 && p.rank_error_median > 0.21);
        assert_eq!(plan(0.0, 1), Err(CreateError::NotPositive));
    }
}
