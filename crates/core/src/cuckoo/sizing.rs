//! How big a Cuckoo filter and each of its sub-filters are, the limits on
//! every parameter, and the size CF.INFO reports.
//!
//! A filter stores no item capacity: only the base bucket count `N0`, the
//! bucket size `bs` (slots of one byte per bucket) and the stored expansion
//! `E`. Sub-filter `i` (0 = oldest) has `N0 × E^i` buckets.

/// Default capacity of CF.RESERVE-less filters (auto-created by CF.ADD and
/// CF.INSERT; not configurable in RedisBloom 2.8.2).
pub const DEFAULT_CAPACITY: u64 = 1024;
/// Default slots per bucket.
pub const DEFAULT_BUCKET_SIZE: u8 = 2;
/// Default kick-out steps before growing.
pub const DEFAULT_MAX_ITERATIONS: u16 = 20;
/// Default EXPANSION (stored as is: 1 is a power of two).
pub const DEFAULT_EXPANSION: u16 = 1;
/// Default of the module argument `CF_MAX_EXPANSIONS`: an add command fails
/// when the filter already has this many sub-filters.
pub const DEFAULT_MAX_EXPANSIONS: u64 = 32;

/// Largest bucket size (the field is one byte in every layout).
pub const MAX_BUCKET_SIZE: u8 = 255;
/// Largest MAXITERATIONS CF.RESERVE accepts (a u16 in every layout).
pub const MAX_ITERATIONS: u16 = u16::MAX;
/// Largest EXPANSION CF.RESERVE accepts (its power of two fits a u16).
pub const MAX_EXPANSION: u16 = 32768;
/// Most sub-filters: RedisBloom's counter is a u16.
pub const MAX_SUB_FILTERS: u64 = u16::MAX as u64;
/// Most buckets in one sub-filter: RedisBloom keeps N in a 56-bit field, and
/// refuses to create (or grow into) a bigger sub-filter.
pub const MAX_BUCKETS: u64 = (1 << 56) - 1;

/// The C struct sizes RedisBloom counts in CF.INFO `Size`: the filter, then
/// one per sub-filter. Kept literally because clients see the number.
pub const FILTER_OVERHEAD: u64 = 40;
pub const SUB_FILTER_OVERHEAD: u64 = 16;

/// The smallest power of two ≥ `x`, with RedisBloom's edge cases: 0 → 0 and
/// anything above 2^63 → 0 (the bit-smearing of `x − 1` then `+ 1` wraps).
pub fn next_pow2(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        x.checked_next_power_of_two().unwrap_or(0)
    }
}

/// The stored expansion for an EXPANSION option: its next power of two
/// (0 stays 0: the filter never grows; 3 → 4; 20000 → 32768).
pub fn stored_expansion(expansion: u16) -> u16 {
    // expansion ≤ 32768 makes the result fit; larger values saturate to 0
    // like RedisBloom's u16 arithmetic would, but CF.RESERVE refuses them.
    u16::try_from(next_pow2(u64::from(expansion))).unwrap_or(0)
}

/// The base bucket count for a capacity: `next_pow2(capacity / bs)`, and 1
/// when that is 0 (only reachable below the CF.RESERVE minimum).
pub fn base_buckets(capacity: u64, bucket_size: u8) -> u64 {
    let bs = u64::from(bucket_size.max(1));
    next_pow2(capacity / bs).max(1)
}

/// Buckets of sub-filter `index` (`N0 × E^index`), or `None` when that is
/// no valid sub-filter: the product overflows or passes [`MAX_BUCKETS`], or
/// it is 0 (E = 0 and `index` ≥ 1: such a filter never grows).
pub fn sub_filter_buckets(base: u64, expansion: u16, index: u32) -> Option<u64> {
    let n = u64::from(expansion)
        .checked_pow(index)
        .and_then(|factor| base.checked_mul(factor))?;
    (n != 0 && n <= MAX_BUCKETS).then_some(n)
}

/// Bytes of a sub-filter of `buckets` buckets, if they fit the address space.
pub fn sub_filter_bytes(buckets: u64, bucket_size: u8) -> Option<u64> {
    let bytes = buckets.checked_mul(u64::from(bucket_size))?;
    usize::try_from(bytes).ok().map(|_| bytes)
}

/// The most sub-filters a filter of base `N0`, stored expansion `E` and
/// bucket size `bs` can reach, whatever commands it receives:
///
/// - `E = 0`: 1 (such a filter never grows);
/// - `E ≥ 2`: sub-filter `i` has `N0 × E^i` buckets, and no sub-filter is
///   created past 2^56 − 1 buckets: `1 + ⌊log_E((2^56 − 1) / N0)⌋`, at most
///   56 (N0 = 1, E = 2);
/// - `E = 1`: every sub-filter has `N0` buckets, so only RedisBloom's u16
///   counter bounds them: 65,535. `cf-max-expansions` does not: it is
///   checked once at the start of an add command, and each item of that
///   command may add a sub-filter (RedisBloom 2.8.2 too: `CF.RESERVE m 4`,
///   one CF.INSERT of 300 items, 75 sub-filters with the limit at 32), so a
///   filter past the limit is a state its AOF rewrite must reload.
///
/// In every case the arrays together must fit the address space. 0 when
/// `N0` is no valid base bucket count.
pub fn max_sub_filters(base: u64, expansion: u16, bucket_size: u8) -> u64 {
    let Some(first) = sub_filter_buckets(base, expansion, 0)
        .filter(|n| n.is_power_of_two())
        .and_then(|n| sub_filter_bytes(n, bucket_size))
    else {
        return 0;
    };
    if first == 0 {
        return 0;
    }
    let space = isize::MAX as u64;
    match expansion {
        0 => 1,
        1 => MAX_SUB_FILTERS.min(space / first),
        _ => {
            let mut total = 0u64;
            for i in 0..MAX_SUB_FILTERS as u32 {
                let bytes = sub_filter_buckets(base, expansion, i)
                    .and_then(|n| sub_filter_bytes(n, bucket_size));
                match bytes.and_then(|b| total.checked_add(b)) {
                    Some(t) if t <= space => total = t,
                    _ => return u64::from(i),
                }
            }
            MAX_SUB_FILTERS
        }
    }
}

/// CF.INFO `Size` (and the type's memory usage): `40 + 16 × sub-filters +
/// total array bytes`.
pub fn reported_size(sub_filters: u64, total_bytes: u64) -> u64 {
    FILTER_OVERHEAD
        .saturating_add(SUB_FILTER_OVERHEAD.saturating_mul(sub_filters))
        .saturating_add(total_bytes)
}

/// The parameters of a new filter (CF.RESERVE, or the defaults when an add
/// creates the key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuckooParams {
    pub capacity: u64,
    pub bucket_size: u8,
    pub max_iterations: u16,
    /// The EXPANSION option as given; the filter stores its power of two.
    pub expansion: u16,
}

impl Default for CuckooParams {
    fn default() -> Self {
        CuckooParams {
            capacity: DEFAULT_CAPACITY,
            bucket_size: DEFAULT_BUCKET_SIZE,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            expansion: DEFAULT_EXPANSION,
        }
    }
}

/// Why parameters describe no filter. The module maps each to CF.RESERVE's
/// reply (the range errors are checked while parsing, in RedisBloom's
/// order; these are the same rules for callers that build params directly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizingError {
    /// `BUCKETSIZE: value must be an integer between 1 and 255, inclusive.`
    BucketSize,
    /// `MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.`
    MaxIterations,
    /// `EXPANSION: value must be an integer between 0 and 32768, inclusive.`
    Expansion,
    /// `Capacity must be at least (BucketSize * 2)`
    CapacityTooSmall,
    /// The first sub-filter would pass [`MAX_BUCKETS`] or the address space:
    /// `ERR Insufficient memory to create filter`.
    TooLarge,
}

/// The shape a filter is created with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuckooShape {
    pub base_buckets: u64,
    pub bucket_size: u8,
    pub max_iterations: u16,
    pub expansion: u16,
}

impl CuckooShape {
    /// Bytes of the first sub-filter.
    pub fn first_bytes(&self) -> u64 {
        self.base_buckets * u64::from(self.bucket_size)
    }
}

impl CuckooParams {
    /// Checks the parameters and computes the shape of the new filter.
    pub fn shape(&self) -> Result<CuckooShape, SizingError> {
        if self.bucket_size == 0 {
            return Err(SizingError::BucketSize);
        }
        if self.max_iterations == 0 {
            return Err(SizingError::MaxIterations);
        }
        if self.expansion > MAX_EXPANSION {
            return Err(SizingError::Expansion);
        }
        if self.capacity < 2 * u64::from(self.bucket_size) {
            return Err(SizingError::CapacityTooSmall);
        }
        // Checked before rounding: next_pow2 would turn a quotient above
        // 2^63 into 0, then 1 bucket.
        if self.capacity / u64::from(self.bucket_size) > MAX_BUCKETS {
            return Err(SizingError::TooLarge);
        }
        let base = base_buckets(self.capacity, self.bucket_size);
        if base > MAX_BUCKETS || sub_filter_bytes(base, self.bucket_size).is_none() {
            return Err(SizingError::TooLarge);
        }
        Ok(CuckooShape {
            base_buckets: base,
            bucket_size: self.bucket_size,
            max_iterations: self.max_iterations,
            expansion: stored_expansion(self.expansion),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_pow2_edges() {
        assert_eq!(next_pow2(0), 0);
        assert_eq!(next_pow2(1), 1);
        assert_eq!(next_pow2(3), 4);
        assert_eq!(next_pow2(500), 512);
        assert_eq!(next_pow2(1 << 63), 1 << 63);
        assert_eq!(next_pow2((1 << 63) + 1), 0);
        assert_eq!(stored_expansion(0), 0);
        assert_eq!(stored_expansion(5), 8);
        assert_eq!(stored_expansion(20000), 32768);
        assert_eq!(stored_expansion(32768), 32768);
    }

    #[test]
    fn shapes() {
        let p = |capacity, bucket_size| CuckooParams {
            capacity,
            bucket_size,
            ..CuckooParams::default()
        };
        assert_eq!(p(1000, 2).shape().unwrap().base_buckets, 512);
        assert_eq!(p(1000, 255).shape().unwrap().base_buckets, 4);
        assert_eq!(p(3, 2).shape(), Err(SizingError::CapacityTooSmall));
        assert_eq!(p(1 << 57, 2).shape(), Err(SizingError::TooLarge));
        assert_eq!(p(i64::MAX as u64, 2).shape(), Err(SizingError::TooLarge));
        assert_eq!(p(u64::MAX, 1).shape(), Err(SizingError::TooLarge));
        assert_eq!(sub_filter_buckets(4, 0, 1), None);
        assert_eq!(sub_filter_buckets(4, 0, 0), Some(4));
        assert_eq!(sub_filter_buckets(4, 32768, 3), Some(1 << 47));
        assert_eq!(sub_filter_buckets(4, 32768, 4), None);
    }

    #[test]
    fn reachable_sub_filters() {
        assert_eq!(max_sub_filters(4, 0, 2), 1);
        assert_eq!(max_sub_filters(4, 1, 2), MAX_SUB_FILTERS);
        // 2^0 … 2^55 buckets: 56 sub-filters.
        assert_eq!(max_sub_filters(1, 2, 1), 56);
        assert_eq!(max_sub_filters(4, 32768, 2), 4);
        assert_eq!(max_sub_filters(1 << 55, 2, 1), 1);
        assert_eq!(max_sub_filters(3, 2, 1), 0);
        assert_eq!(max_sub_filters(0, 1, 1), 0);
        // The arrays together must fit the address space (2^63 − 1 bytes).
        assert_eq!(max_sub_filters(1 << 55, 1, 255), 1);
        assert_eq!(max_sub_filters(1 << 54, 1, 255), 2);
        assert_eq!(max_sub_filters(1 << 50, 1, 255), 32);
    }
}
