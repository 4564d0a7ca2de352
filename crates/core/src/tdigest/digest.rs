//! The digest's state (spec §5.1) and adding a point (§5.2).
//!
//! One node array of `cap = 6·⌊c⌋ + 10` slots holds the merged centroids,
//! sorted by mean, followed by the points added since the last compress.
//! The array is reserved whole at creation, through the allocation guard,
//! as 2.8.2 allocates it (16 bytes a node), so MEMORY USAGE's `16·cap + 8`
//! is the bytes actually held.

use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal};

use super::compress::CompressError;

/// A centroid (or a buffered point): its mean and how many observations
/// it stands for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Node {
    pub mean: f64,
    pub weight: i64,
}

/// What a digest with exactly one observation does (spec §5.8, §6.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SingleObservation {
    /// The fix (issue 30, as later t-digest-c versions behave): compress
    /// makes the point a centroid, so QUANTILE, CDF, TRIMMED_MEAN and the
    /// ranks answer from it, and it is saved like any centroid (2.8.2 loads
    /// that payload and answers the value too).
    #[default]
    Kept,
    /// 2.8.2: compress returns early when the total weight is at most 1,
    /// the point stays unmerged, reads answer `nan` (ranks INT64_MIN,
    /// BYRANK `inf`) and the saved value loses it.
    Lost282,
}

/// Why a digest cannot be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateError {
    /// Compression not finite or below 1 once truncated (2.8.2 accepts only
    /// positive integers from commands).
    NotPositive,
    /// `6·⌊c⌋ + 10` does not fit the 32-bit capacity 2.8.2 stores (it
    /// wraps there; refused here).
    CapacityOverflow,
    /// The allocation guard said no.
    Refused(Refusal),
    /// The allocator failed.
    Alloc,
}

impl CreateError {
    /// RedisBloom's reply text (without the `ERR ` prefix).
    pub fn message(self) -> &'static str {
        match self {
            CreateError::NotPositive => {
                "T-Digest: compression parameter needs to be a positive integer"
            }
            _ => "T-Digest: allocation failed",
        }
    }
}

/// Why a point could not be added (2.8.2's `overflow detected`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The compress the add needed failed.
    Compress(CompressError),
    /// No free node after compressing, a negative weight, or a total
    /// weight above 2^63 − 1.
    Overflow,
}

impl AddError {
    /// RedisBloom's reply text (without the `ERR ` prefix).
    pub fn message(self) -> &'static str {
        "T-Digest: overflow detected"
    }
}

/// TDIGEST.INFO's numbers, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// The compression as an integer (C's truncating conversion).
    pub compression: i64,
    pub capacity: i64,
    pub merged_nodes: i64,
    pub unmerged_nodes: i64,
    pub merged_weight: i64,
    pub unmerged_weight: i64,
    /// Merged plus unmerged weight.
    pub observations: i64,
    pub total_compressions: i64,
    /// `16·cap + 8`.
    pub memory_usage: i64,
}

/// 2.8.2's `2π` factor: C's `M_PI` (3.14159265358979323846, the double
/// nearest π, which is `std::f64::consts::PI`) times 2.
pub(crate) const TWO_PI: f64 = 2.0 * std::f64::consts::PI;

/// The largest compression whose capacity fits 32 bits.
pub const MAX_COMPRESSION: i64 = (i32::MAX as i64 - 10) / 6;

/// `6·⌊c⌋ + 10` for a compression `c`, if `c` is at least 1 and the
/// capacity fits 32 bits.
pub fn capacity_for(compression: f64) -> Result<i64, CreateError> {
    if !compression.is_finite() || compression < 1.0 {
        return Err(CreateError::NotPositive);
    }
    if compression >= (MAX_COMPRESSION + 1) as f64 {
        return Err(CreateError::CapacityOverflow);
    }
    Ok(6 * compression as i64 + 10)
}

/// What MEMORY USAGE and INFO report for a capacity (2.8.2's formula:
/// the node array plus 8).
pub fn memory_usage_for(capacity: i64) -> i64 {
    16 * capacity + 8
}

/// A merging t-digest with 2.8.2's state and arithmetic.
#[derive(Clone, Debug, PartialEq)]
pub struct TDigest {
    pub(crate) compression: f64,
    pub(crate) cap: i64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    /// The first `merged_nodes` are the sorted centroids, the rest points
    /// added since (`nodes.len()` = merged + unmerged ≤ cap).
    pub(crate) nodes: Vec<Node>,
    pub(crate) merged_nodes: usize,
    pub(crate) merged_weight: i64,
    pub(crate) unmerged_weight: i64,
    pub(crate) total_compressions: i64,
    pub(crate) single: SingleObservation,
}

/// Reserves exactly `cap` nodes after asking the guard.
pub(crate) fn reserve_nodes(cap: i64, guard: &dyn AllocGuard) -> Result<Vec<Node>, CreateError> {
    let cap_u = u64::try_from(cap).map_err(|_| CreateError::CapacityOverflow)?;
    guard
        .admit(AllocRequest {
            bytes: 16 * cap_u,
            filter_size_after: memory_usage_for(cap) as u64,
        })
        .map_err(CreateError::Refused)?;
    let mut nodes = Vec::new();
    nodes
        .try_reserve_exact(cap_u as usize)
        .map_err(|_| CreateError::Alloc)?;
    Ok(nodes)
}

impl TDigest {
    /// An empty digest (TDIGEST.CREATE, or MERGE's new destination).
    pub fn new(compression: f64, guard: &dyn AllocGuard) -> Result<TDigest, CreateError> {
        let cap = capacity_for(compression)?;
        let nodes = reserve_nodes(cap, guard)?;
        let mut td = TDigest {
            compression,
            cap,
            min: 0.0,
            max: 0.0,
            nodes,
            merged_nodes: 0,
            merged_weight: 0,
            unmerged_weight: 0,
            total_compressions: 0,
            single: SingleObservation::default(),
        };
        td.reset();
        Ok(td)
    }

    /// A copy with its own node array of the same capacity, through the
    /// guard (COPY, a scratch digest for a read that must not compress the
    /// stored one).
    pub fn try_clone(&self, guard: &dyn AllocGuard) -> Result<TDigest, CreateError> {
        let mut nodes = reserve_nodes(self.cap, guard)?;
        nodes.extend_from_slice(&self.nodes);
        Ok(TDigest {
            nodes,
            compression: self.compression,
            cap: self.cap,
            min: self.min,
            max: self.max,
            merged_nodes: self.merged_nodes,
            merged_weight: self.merged_weight,
            unmerged_weight: self.unmerged_weight,
            total_compressions: self.total_compressions,
            single: self.single,
        })
    }

    /// TDIGEST.RESET: empty again, compression and capacity kept.
    pub fn reset(&mut self) {
        self.min = f64::MAX;
        self.max = -f64::MAX;
        self.nodes.clear();
        self.merged_nodes = 0;
        self.merged_weight = 0;
        self.unmerged_weight = 0;
        self.total_compressions = 0;
    }

    /// Chooses what a single observation does (default: kept).
    pub fn set_single_observation(&mut self, mode: SingleObservation) {
        self.single = mode;
    }

    pub fn single_observation(&self) -> SingleObservation {
        self.single
    }

    /// TDIGEST.ADD of one value (weight 1). The caller checks the value is
    /// finite, as the command does before adding anything.
    pub fn add(&mut self, value: f64) -> Result<(), AddError> {
        self.add_weighted(value, 1)
    }

    /// Adds a point of weight `weight` ≥ 0 (§5.2; MERGE adds centroids).
    /// On error nothing changed but a compress that already ran.
    pub fn add_weighted(&mut self, mean: f64, weight: i64) -> Result<(), AddError> {
        if weight < 0 {
            return Err(AddError::Overflow);
        }
        if self.nodes.len() as i64 >= self.cap - 1 {
            self.compress().map_err(AddError::Compress)?;
        }
        if self.nodes.len() as i64 >= self.cap {
            return Err(AddError::Overflow);
        }
        let unmerged = self
            .unmerged_weight
            .checked_add(weight)
            .ok_or(AddError::Overflow)?;
        // The total weight must fit too.
        unmerged
            .checked_add(self.merged_weight)
            .ok_or(AddError::Overflow)?;
        // 2.8.2 also refuses a total whose 2π·W·ln W is not finite; with
        // W at most 2^63 − 1 it never is (about 2.5e21 at most), so that
        // check, a `log` per point, is left out.
        if mean < self.min {
            self.min = mean;
        }
        if mean > self.max {
            self.max = mean;
        }
        self.nodes.push(Node { mean, weight });
        self.unmerged_weight = unmerged;
        Ok(())
    }

    /// Whether any points wait for a compress.
    pub fn has_unmerged(&self) -> bool {
        self.nodes.len() > self.merged_nodes
    }

    pub fn compression(&self) -> f64 {
        self.compression
    }

    pub fn capacity(&self) -> i64 {
        self.cap
    }

    /// The smallest value added (f64::MAX when empty).
    pub fn min_raw(&self) -> f64 {
        self.min
    }

    /// The largest value added (−f64::MAX when empty).
    pub fn max_raw(&self) -> f64 {
        self.max
    }

    /// TDIGEST.MIN: `nan` when nothing was added; no compress.
    pub fn min(&self) -> f64 {
        if self.total_weight() == 0 {
            f64::NAN
        } else {
            self.min
        }
    }

    /// TDIGEST.MAX: `nan` when nothing was added; no compress.
    pub fn max(&self) -> f64 {
        if self.total_weight() == 0 {
            f64::NAN
        } else {
            self.max
        }
    }

    pub fn merged_nodes(&self) -> usize {
        self.merged_nodes
    }

    pub fn unmerged_nodes(&self) -> usize {
        self.nodes.len() - self.merged_nodes
    }

    pub fn merged_weight(&self) -> i64 {
        self.merged_weight
    }

    pub fn unmerged_weight(&self) -> i64 {
        self.unmerged_weight
    }

    /// Merged plus unmerged weight (the observations; RANK's size).
    pub fn total_weight(&self) -> i64 {
        self.merged_weight.wrapping_add(self.unmerged_weight)
    }

    pub fn total_compressions(&self) -> i64 {
        self.total_compressions
    }

    /// Merged centroids then unmerged points.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// `16·cap + 8`, as 2.8.2 reports it.
    pub fn memory_usage(&self) -> i64 {
        memory_usage_for(self.cap)
    }

    /// TDIGEST.INFO's numbers (no compress).
    pub fn info(&self) -> Info {
        Info {
            compression: super::c_double_to_i64(self.compression),
            capacity: self.cap,
            merged_nodes: self.merged_nodes as i64,
            unmerged_nodes: self.unmerged_nodes() as i64,
            merged_weight: self.merged_weight,
            unmerged_weight: self.unmerged_weight,
            observations: self.total_weight(),
            total_compressions: self.total_compressions,
            memory_usage: self.memory_usage(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::{RefusalKind, Unguarded};

    #[test]
    fn capacities() {
        assert_eq!(capacity_for(100.0), Ok(610));
        assert_eq!(capacity_for(5.9), Ok(40));
        assert_eq!(capacity_for(0.5), Err(CreateError::NotPositive));
        assert_eq!(capacity_for(-3.0), Err(CreateError::NotPositive));
        assert_eq!(capacity_for(f64::NAN), Err(CreateError::NotPositive));
        assert_eq!(
            capacity_for(MAX_COMPRESSION as f64),
            Ok(6 * MAX_COMPRESSION + 10)
        );
        assert!(6 * MAX_COMPRESSION + 10 <= i32::MAX as i64);
        assert_eq!(
            capacity_for((MAX_COMPRESSION + 1) as f64),
            Err(CreateError::CapacityOverflow)
        );
        assert_eq!(memory_usage_for(610), 9768);
    }

    #[test]
    fn creation_asks_the_guard() {
        struct No;
        impl AllocGuard for No {
            fn admit(&self, r: AllocRequest) -> Result<(), Refusal> {
                assert_eq!((r.bytes, r.filter_size_after), (9760, 9768));
                Err(Refusal {
                    kind: RefusalKind::MaxMemory,
                    needed: r.bytes,
                    limit: 0,
                    in_use: 0,
                })
            }
        }
        assert!(matches!(
            TDigest::new(100.0, &No),
            Err(CreateError::Refused(_))
        ));
        let td = TDigest::new(100.0, &Unguarded).unwrap();
        assert!(td.nodes.capacity() >= 610);
        assert!(td.min().is_nan() && td.max().is_nan());
        assert_eq!(td.min_raw(), f64::MAX);
    }

    #[test]
    fn adds_compress_when_the_array_is_full() {
        let mut td = TDigest::new(1.0, &Unguarded).unwrap();
        for i in 0..100 {
            td.add(f64::from(i)).unwrap();
            assert!(td.nodes.len() as i64 <= td.cap);
        }
        assert_eq!(td.total_weight(), 100);
        assert!(td.total_compressions() > 0);
        assert_eq!((td.min(), td.max()), (0.0, 99.0));
        assert_eq!(td.add_weighted(1.0, -1), Err(AddError::Overflow));
        td.merged_weight = i64::MAX - td.unmerged_weight;
        assert_eq!(td.add(1.0), Err(AddError::Overflow));
    }
}
