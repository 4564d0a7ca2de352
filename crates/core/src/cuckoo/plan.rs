//! Sizing a Cuckoo filter before it exists: what CF.RESERVE allocates, what
//! every expansion up to the `cf-max-expansions` limit adds, the false
//! positive rate bound, and — measured, not derived — at what load the
//! first expansion typically happens. Nothing is allocated.
//!
//! A Cuckoo filter's capacity is not a promise: CF.RESERVE of N items gives
//! `next_pow2(N / bs)` buckets of `bs` slots, and an insert that finds no
//! free slot in its two buckets after MAXITERATIONS kick-outs adds a
//! sub-filter. At bucket size 1 that happens around half full, at bucket
//! size 2 well before the slots run out (see [`FIRST_EXPANSION`]).

use super::filter::{CuckooFilter, InsertOutcome};
use super::hash::CuckooHash;
use super::sizing::{
    reported_size, sub_filter_buckets, sub_filter_bytes, CuckooParams, SizingError, MAX_SUB_FILTERS,
};
use super::stats::FINGERPRINTS;
use crate::alloc_guard::Unguarded;
use crate::bloom::sizing::{self as bloom_sizing, LinkSpec, Policy};

/// One sub-filter of the plan, the first (what CF.RESERVE allocates) or one
/// an expansion adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedSubFilter {
    pub buckets: u64,
    /// Bytes of its slot array (`buckets × bs`).
    pub bytes: u64,
    /// CF.INFO `Size` of the filter once this sub-filter exists (the
    /// type's memory usage: MEMORY USAGE less the key's own overhead).
    pub size_after: u64,
}

/// When the first expansion typically happens, from [`FIRST_EXPANSION`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FirstExpansion {
    /// Items stored (over the first sub-filter's slots) when the first
    /// insert that needs a new sub-filter arrives: the median measured.
    pub load: f64,
    /// The lowest load measured for the same shape.
    pub low_load: f64,
    /// `load × slots` of the first sub-filter, rounded down.
    pub items: u64,
    /// The measured row used: bucket size, slots and max iterations (the
    /// nearest shape measured that expands no later than this one).
    pub measured_bucket_size: u8,
    pub measured_slots: u64,
    pub measured_max_iterations: u16,
}

/// The Bloom filter for the same job: a non-scaling `BF.RESERVE key
/// error capacity NONSCALING` (exact policy) with the Cuckoo filter's
/// capacity and its false positive bound as the error rate. It answers
/// lookups as well, never expands and never deletes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BloomEquivalent {
    pub error: f64,
    pub hashes: u32,
    /// Bytes of its bit array.
    pub bytes: u64,
    /// BF.INFO `Size` (MEMORY USAGE less the key's own overhead).
    pub size: u64,
}

/// What CF.RESERVE with these parameters creates and may grow into.
#[derive(Clone, Debug, PartialEq)]
pub struct CuckooPlan {
    pub capacity: u64,
    pub bucket_size: u8,
    pub max_iterations: u16,
    /// The stored expansion (EXPANSION's next power of two; 0: never grows).
    pub expansion: u16,
    /// The `cf-max-expansions` limit planned with.
    pub max_expansions: u64,
    /// The first sub-filter, then each one expansions add, up to the most
    /// the filter can have (see [`max_sub_filters`]).
    pub sub_filters: Vec<PlannedSubFilter>,
    /// `2 × bs / 255`: the false positive rate bound of one sub-filter (a
    /// lookup compares the item's fingerprint with `2 × bs` slots).
    pub fpr_per_sub_filter: f64,
    /// The bound with every planned sub-filter: the sum over sub-filters.
    pub worst_fpr: f64,
    /// None for shapes that never expand (EXPANSION 0, or a limit of one
    /// sub-filter): such a filter answers `Filter is full` or `Maximum
    /// expansions reached` instead.
    pub first_expansion: Option<FirstExpansion>,
}

impl CuckooPlan {
    /// The first sub-filter.
    pub fn first(&self) -> &PlannedSubFilter {
        &self.sub_filters[0]
    }

    /// Slots of the first sub-filter (`buckets × bs`), what CF.RESERVE's
    /// capacity was rounded to.
    pub fn slots(&self) -> u64 {
        self.first().bytes
    }

    /// The Bloom filter of the same capacity and false positive rate; None
    /// where the bound is 1 (bucket sizes of 128 and up: every lookup may
    /// match, no Bloom filter is that bad).
    pub fn bloom_equivalent(&self) -> Option<BloomEquivalent> {
        let link = LinkSpec::new(self.capacity, self.fpr_per_sub_filter, Policy::Exact).ok()?;
        Some(BloomEquivalent {
            error: self.fpr_per_sub_filter,
            hashes: link.hashes,
            bytes: link.bytes,
            size: bloom_sizing::reported_size([link.bytes]),
        })
    }

    /// Expansions the filter can make (sub-filters − 1).
    pub fn expansions(&self) -> u64 {
        self.sub_filters.len() as u64 - 1
    }

    /// Bytes of all planned sub-filters.
    pub fn worst_bytes(&self) -> u64 {
        self.sub_filters.iter().map(|s| s.bytes).sum()
    }

    /// CF.INFO `Size` with every planned sub-filter.
    pub fn worst_size(&self) -> u64 {
        self.sub_filters.last().map_or(0, |s| s.size_after)
    }

    /// The sub-filter (index, 0 = what CF.RESERVE allocates) whose
    /// allocation the per-filter cap `cap` (`bf.max-filter-bytes`; 0: none)
    /// refuses: the first after which CF.INFO `Size` passes the cap, as the
    /// memory guard computes it.
    pub fn refused_by_cap(&self, cap: u64) -> Option<usize> {
        if cap == 0 {
            return None;
        }
        self.sub_filters.iter().position(|s| s.size_after > cap)
    }
}

/// The most sub-filters a filter reaches by CF.ADD: 1 with expansion 0;
/// else `max_expansions` (an add is refused once the filter has that many;
/// at least 1), fewer when a sub-filter would pass the largest bucket count
/// or address space, never more than the u16 counter allows. One CF.INSERT
/// of many items checks the limit once and may grow past it.
pub fn max_sub_filters(base_buckets: u64, bucket_size: u8, expansion: u16, limit: u64) -> u64 {
    if expansion == 0 {
        return 1;
    }
    let mut n = 1;
    while n < limit.clamp(1, MAX_SUB_FILTERS) {
        let fits = sub_filter_buckets(base_buckets, expansion, n as u32)
            .and_then(|b| sub_filter_bytes(b, bucket_size))
            .is_some();
        if !fits {
            break;
        }
        n += 1;
    }
    n
}

/// The false positive rate bound of one sub-filter with `bucket_size`
/// slots a bucket: `2 × bs / 255`.
pub fn fpr_bound(bucket_size: u8) -> f64 {
    (2.0 * f64::from(bucket_size) / FINGERPRINTS).min(1.0)
}

/// The plan for CF.RESERVE with `params` under the `cf-max-expansions`
/// limit `max_expansions`.
pub fn plan(params: &CuckooParams, max_expansions: u64) -> Result<CuckooPlan, SizingError> {
    let shape = params.shape()?;
    let bs = shape.bucket_size;
    let count = max_sub_filters(shape.base_buckets, bs, shape.expansion, max_expansions);
    let mut sub_filters = Vec::with_capacity(count as usize);
    let mut total = 0u64;
    for i in 0..count {
        let buckets = sub_filter_buckets(shape.base_buckets, shape.expansion, i as u32)
            .expect("max_sub_filters checked it");
        let bytes = buckets * u64::from(bs);
        total = total.saturating_add(bytes);
        sub_filters.push(PlannedSubFilter {
            buckets,
            bytes,
            size_after: reported_size(i + 1, total),
        });
    }
    let per = fpr_bound(bs);
    let first_expansion = (count > 1)
        .then(|| first_expansion(bs, shape.max_iterations, shape.first_bytes()))
        .flatten();
    Ok(CuckooPlan {
        capacity: params.capacity,
        bucket_size: bs,
        max_iterations: shape.max_iterations,
        expansion: shape.expansion,
        max_expansions,
        worst_fpr: (per * count as f64).min(1.0),
        fpr_per_sub_filter: per,
        sub_filters,
        first_expansion,
    })
}

/// One measured row: the load at which the first insert needing a second
/// sub-filter arrived, for a shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    pub bucket_size: u8,
    pub max_iterations: u16,
    /// Slots of the first sub-filter (`buckets × bs`).
    pub slots: u64,
    /// Median and lowest load over the trials.
    pub median: f64,
    pub low: f64,
}

const fn m(bucket_size: u8, max_iterations: u16, slots: u64, median: f64, low: f64) -> Measured {
    Measured {
        bucket_size,
        max_iterations,
        slots,
        median,
        low,
    }
}

/// Measured loads at the first expansion.
///
/// How: `cargo run --release -p ferrobloom-core --example cf_first_expansion`
/// creates, per row, filters with EXPANSION 1 through [`CuckooFilter`] (the
/// same placement and kick-out as the module and RedisBloom 2.8.2), adds
/// distinct random 8-byte items (splitmix64; 25 trials with different
/// seeds, 9 for the 2^21-slot rows, 5 for the 2^24-slot rows) until the first insert adds a second
/// sub-filter, and records the items stored before that insert over the
/// first sub-filter's slots: the median and the lowest of the trials. The
/// test `measured_table_holds_for_a_small_size` re-measures a small row.
pub const FIRST_EXPANSION: &[Measured] = &[
    m(1, 1, 1024, 0.203, 0.109),
    m(1, 1, 16384, 0.112, 0.024),
    m(1, 1, 262144, 0.051, 0.012),
    m(1, 1, 2097152, 0.026, 0.018),
    m(1, 1, 16777216, 0.018, 0.016),
    m(1, 20, 1024, 0.511, 0.437),
    m(1, 20, 16384, 0.431, 0.280),
    m(1, 20, 262144, 0.341, 0.197),
    m(1, 20, 2097152, 0.210, 0.113),
    m(1, 20, 16777216, 0.161, 0.094),
    m(1, 100, 1024, 0.546, 0.459),
    m(1, 100, 16384, 0.487, 0.280),
    m(1, 100, 262144, 0.386, 0.197),
    m(1, 100, 2097152, 0.210, 0.113),
    m(1, 100, 16777216, 0.161, 0.094),
    m(1, 500, 1024, 0.546, 0.459),
    m(1, 500, 16384, 0.487, 0.280),
    m(1, 500, 262144, 0.386, 0.197),
    m(1, 500, 2097152, 0.210, 0.113),
    m(1, 500, 16777216, 0.161, 0.094),
    m(2, 1, 1024, 0.374, 0.207),
    m(2, 1, 16384, 0.259, 0.146),
    m(2, 1, 262144, 0.163, 0.067),
    m(2, 1, 2097152, 0.102, 0.081),
    m(2, 1, 16777216, 0.092, 0.075),
    m(2, 20, 1024, 0.704, 0.621),
    m(2, 20, 16384, 0.623, 0.566),
    m(2, 20, 262144, 0.552, 0.421),
    m(2, 20, 2097152, 0.426, 0.273),
    m(2, 20, 16777216, 0.334, 0.301),
    m(2, 100, 1024, 0.735, 0.678),
    m(2, 100, 16384, 0.684, 0.566),
    m(2, 100, 262144, 0.582, 0.421),
    m(2, 100, 2097152, 0.426, 0.273),
    m(2, 100, 16777216, 0.334, 0.301),
    m(2, 500, 1024, 0.735, 0.678),
    m(2, 500, 16384, 0.684, 0.566),
    m(2, 500, 262144, 0.582, 0.421),
    m(2, 500, 2097152, 0.426, 0.273),
    m(2, 500, 16777216, 0.334, 0.301),
    m(3, 1, 1024, 0.486, 0.367),
    m(3, 1, 16384, 0.322, 0.182),
    m(3, 1, 262144, 0.225, 0.162),
    m(3, 1, 2097152, 0.192, 0.140),
    m(3, 1, 16777216, 0.136, 0.119),
    m(3, 20, 1024, 0.867, 0.820),
    m(3, 20, 16384, 0.801, 0.765),
    m(3, 20, 262144, 0.754, 0.717),
    m(3, 20, 2097152, 0.719, 0.657),
    m(3, 20, 16777216, 0.691, 0.684),
    m(3, 100, 1024, 0.937, 0.900),
    m(3, 100, 16384, 0.912, 0.902),
    m(3, 100, 262144, 0.902, 0.886),
    m(3, 100, 2097152, 0.885, 0.872),
    m(3, 100, 16777216, 0.874, 0.857),
    m(3, 500, 1024, 0.954, 0.946),
    m(3, 500, 16384, 0.948, 0.941),
    m(3, 500, 262144, 0.942, 0.937),
    m(3, 500, 2097152, 0.940, 0.936),
    m(3, 500, 16777216, 0.937, 0.932),
    m(4, 1, 1024, 0.552, 0.387),
    m(4, 1, 16384, 0.417, 0.280),
    m(4, 1, 262144, 0.325, 0.263),
    m(4, 1, 2097152, 0.272, 0.233),
    m(4, 1, 16777216, 0.231, 0.197),
    m(4, 20, 1024, 0.901, 0.831),
    m(4, 20, 16384, 0.843, 0.819),
    m(4, 20, 262144, 0.802, 0.749),
    m(4, 20, 2097152, 0.774, 0.755),
    m(4, 20, 16777216, 0.737, 0.727),
    m(4, 100, 1024, 0.958, 0.944),
    m(4, 100, 16384, 0.938, 0.925),
    m(4, 100, 262144, 0.925, 0.907),
    m(4, 100, 2097152, 0.917, 0.906),
    m(4, 100, 16777216, 0.909, 0.902),
    m(4, 500, 1024, 0.968, 0.956),
    m(4, 500, 16384, 0.962, 0.957),
    m(4, 500, 262144, 0.958, 0.953),
    m(4, 500, 2097152, 0.954, 0.953),
    m(4, 500, 16777216, 0.954, 0.953),
    m(6, 1, 1024, 0.587, 0.465),
    m(6, 1, 16384, 0.509, 0.336),
    m(6, 1, 262144, 0.403, 0.325),
    m(6, 1, 2097152, 0.331, 0.267),
    m(6, 1, 16777216, 0.294, 0.235),
    m(6, 20, 1024, 0.928, 0.868),
    m(6, 20, 16384, 0.884, 0.857),
    m(6, 20, 262144, 0.856, 0.816),
    m(6, 20, 2097152, 0.827, 0.795),
    m(6, 20, 16777216, 0.811, 0.787),
    m(6, 100, 1024, 0.980, 0.962),
    m(6, 100, 16384, 0.965, 0.947),
    m(6, 100, 262144, 0.954, 0.945),
    m(6, 100, 2097152, 0.947, 0.935),
    m(6, 100, 16777216, 0.942, 0.937),
    m(6, 500, 1024, 0.989, 0.981),
    m(6, 500, 16384, 0.986, 0.983),
    m(6, 500, 262144, 0.983, 0.978),
    m(6, 500, 2097152, 0.980, 0.977),
    m(6, 500, 16777216, 0.979, 0.977),
    m(8, 1, 1024, 0.688, 0.547),
    m(8, 1, 16384, 0.567, 0.456),
    m(8, 1, 262144, 0.475, 0.415),
    m(8, 1, 2097152, 0.407, 0.388),
    m(8, 1, 16777216, 0.377, 0.351),
    m(8, 20, 1024, 0.951, 0.875),
    m(8, 20, 16384, 0.921, 0.883),
    m(8, 20, 262144, 0.883, 0.837),
    m(8, 20, 2097152, 0.859, 0.818),
    m(8, 20, 16777216, 0.844, 0.819),
    m(8, 100, 1024, 0.988, 0.976),
    m(8, 100, 16384, 0.979, 0.968),
    m(8, 100, 262144, 0.969, 0.962),
    m(8, 100, 2097152, 0.961, 0.953),
    m(8, 100, 16777216, 0.958, 0.954),
    m(8, 500, 1024, 0.995, 0.991),
    m(8, 500, 16384, 0.993, 0.990),
    m(8, 500, 262144, 0.990, 0.987),
    m(8, 500, 2097152, 0.989, 0.987),
    m(8, 500, 16777216, 0.987, 0.986),
];

/// The measured row for a shape: the same bucket size and max iterations
/// or the nearest below (fewer slots a bucket or fewer kick-outs expand
/// earlier, so the answer errs early), then the nearest slot count (loads
/// fall slowly as filters grow; beyond the largest row the largest is used).
pub fn measured_row(bucket_size: u8, max_iterations: u16, slots: u64) -> Option<Measured> {
    let bs = FIRST_EXPANSION
        .iter()
        .map(|r| r.bucket_size)
        .filter(|&b| b <= bucket_size)
        .max()?;
    let mi = FIRST_EXPANSION
        .iter()
        .filter(|r| r.bucket_size == bs)
        .map(|r| r.max_iterations)
        .filter(|&m| m <= max_iterations)
        .max()?;
    let log = |s: u64| (s.max(1) as f64).log2();
    FIRST_EXPANSION
        .iter()
        .filter(|r| r.bucket_size == bs && r.max_iterations == mi)
        .min_by(|a, b| {
            let da = (log(a.slots) - log(slots)).abs();
            let db = (log(b.slots) - log(slots)).abs();
            // On a tie, the larger (lower load) row.
            da.total_cmp(&db).then(b.slots.cmp(&a.slots))
        })
        .copied()
}

fn first_expansion(bucket_size: u8, max_iterations: u16, slots: u64) -> Option<FirstExpansion> {
    let row = measured_row(bucket_size, max_iterations, slots)?;
    Some(FirstExpansion {
        load: row.median,
        low_load: row.low,
        items: (row.median * slots as f64) as u64,
        measured_bucket_size: row.bucket_size,
        measured_slots: row.slots,
        measured_max_iterations: row.max_iterations,
    })
}

/// splitmix64: distinct outputs for distinct inputs (a bijection of u64),
/// so the items of one trial are all different.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One trial: a filter of `slots` slots (a power of two multiple of the
/// bucket size), EXPANSION 1, filled with distinct random items until an
/// insert adds a second sub-filter; the load before that insert.
pub fn measure_first_expansion(bucket_size: u8, max_iterations: u16, slots: u64, seed: u64) -> f64 {
    let params = CuckooParams {
        capacity: slots,
        bucket_size,
        max_iterations,
        expansion: 1,
    };
    let mut f = CuckooFilter::new(&params, &Unguarded).expect("a small filter");
    let slots = f.total_bytes();
    let base = splitmix64(seed).wrapping_mul(slots.max(1));
    let mut i = 0u64;
    loop {
        let before = f.items();
        let item = splitmix64(base.wrapping_add(i)).to_le_bytes();
        i += 1;
        let outcome = f.insert(CuckooHash::of(&item), &Unguarded);
        assert_eq!(outcome, InsertOutcome::Inserted);
        if f.sub_filter_count() > 1 {
            return before as f64 / slots as f64;
        }
    }
}

/// The median and the lowest load of `trials` trials (seeds 1 to
/// `trials`).
pub fn measure(bucket_size: u8, max_iterations: u16, slots: u64, trials: u64) -> (f64, f64) {
    let mut loads: Vec<f64> = (1..=trials)
        .map(|seed| measure_first_expansion(bucket_size, max_iterations, slots, seed))
        .collect();
    loads.sort_by(f64::total_cmp);
    (loads[loads.len() / 2], loads[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuckoo::sizing::DEFAULT_MAX_EXPANSIONS;

    fn params(capacity: u64, bucket_size: u8, expansion: u16) -> CuckooParams {
        CuckooParams {
            capacity,
            bucket_size,
            expansion,
            ..CuckooParams::default()
        }
    }

    #[test]
    fn the_bloom_filter_for_the_same_job() {
        // CF.RESERVE k 1000 (1,024 slots of bucket size 2, bound 4/255)
        // against BF.RESERVE k 0.0156862… 1000 NONSCALING: 8,648 bits in
        // 136 words, 6 hashes, Size 32 + 64 + 1,088.
        let p = plan(&params(1000, 2, 1), DEFAULT_MAX_EXPANSIONS).unwrap();
        let b = p.bloom_equivalent().unwrap();
        assert_eq!(b.error, 4.0 / 255.0);
        assert_eq!((b.hashes, b.bytes, b.size), (6, 1088, 1184));
        // Every lookup of bucket size 128 may match: no Bloom filter.
        let wide = plan(&params(1000, 128, 1), DEFAULT_MAX_EXPANSIONS).unwrap();
        assert_eq!(wide.bloom_equivalent(), None);
        assert!(plan(&params(1000, 127, 1), DEFAULT_MAX_EXPANSIONS)
            .unwrap()
            .bloom_equivalent()
            .is_some());
    }

    #[test]
    fn reserve_sizes_match_the_spec() {
        // CF.RESERVE k 1000: 512 buckets, 1,024 bytes, Size 1,080.
        let p = plan(&params(1000, 2, 1), DEFAULT_MAX_EXPANSIONS).unwrap();
        assert_eq!(p.first().buckets, 512);
        assert_eq!(p.first().bytes, 1024);
        assert_eq!(p.first().size_after, 1080);
        assert_eq!(p.slots(), 1024);
        // Expansion 1: 32 equal sub-filters.
        assert_eq!(p.sub_filters.len(), 32);
        assert_eq!(p.expansions(), 31);
        assert_eq!(p.worst_bytes(), 32 * 1024);
        assert_eq!(p.worst_size(), 40 + 16 * 32 + 32 * 1024);
        // CF.RESERVE k 1000000 BUCKETSIZE 4: 262,144 buckets, Size 1,048,632.
        let p = plan(&params(1_000_000, 4, 1), 32).unwrap();
        assert_eq!(p.first().buckets, 262_144);
        assert_eq!(p.first().size_after, 1_048_632);
        // CF.RESERVE ex 8 EXPANSION 3 (E = 4): N = 4, 16, 64, Size 256 at 3.
        let p = plan(&params(8, 2, 3), 3).unwrap();
        assert_eq!(p.expansion, 4);
        let n: Vec<u64> = p.sub_filters.iter().map(|s| s.buckets).collect();
        assert_eq!(n, [4, 16, 64]);
        assert_eq!(p.worst_size(), 256);
        // CF.RESERVE ex 12 BUCKETSIZE 3 EXPANSION 5 (E = 8): N = 4, 32, Size 180.
        let p = plan(&params(12, 3, 5), 2).unwrap();
        assert_eq!(p.sub_filters[1].buckets, 32);
        assert_eq!(p.worst_size(), 180);
    }

    #[test]
    fn limits_on_growth() {
        // EXPANSION 0 never grows; neither does a limit of 1 (or 0).
        let p = plan(&params(1000, 2, 0), 32).unwrap();
        assert_eq!(p.sub_filters.len(), 1);
        assert_eq!(p.first_expansion, None);
        assert_eq!(p.worst_fpr, p.fpr_per_sub_filter);
        assert_eq!(plan(&params(1000, 2, 1), 1).unwrap().sub_filters.len(), 1);
        assert_eq!(plan(&params(1000, 2, 1), 0).unwrap().sub_filters.len(), 1);
        // EXPANSION 32768 from 4 buckets: 4, 2^17, 2^32, 2^47, then 2^62
        // passes the largest bucket count.
        let p = plan(&params(4, 1, 32768), 32).unwrap();
        assert_eq!(p.sub_filters.len(), 4);
        assert_eq!(p.sub_filters[3].buckets, 1 << 47);
        // The u16 counter bounds the limit.
        assert_eq!(max_sub_filters(4, 1, 1, u64::MAX), MAX_SUB_FILTERS);
        // Refusals come from the shape.
        assert_eq!(
            plan(&params(3, 2, 1), 32),
            Err(SizingError::CapacityTooSmall)
        );
        assert_eq!(
            plan(&params(i64::MAX as u64, 2, 1), 32),
            Err(SizingError::TooLarge)
        );
    }

    #[test]
    fn false_positive_bounds() {
        let p = plan(&params(1000, 2, 1), 32).unwrap();
        assert!((p.fpr_per_sub_filter - 4.0 / 255.0).abs() < 1e-15);
        assert!((p.worst_fpr - 32.0 * 4.0 / 255.0).abs() < 1e-12);
        // Large buckets: the bound saturates at 1.
        assert_eq!(fpr_bound(255), 1.0);
        assert_eq!(plan(&params(1000, 100, 1), 32).unwrap().worst_fpr, 1.0);
    }

    #[test]
    fn the_cap_refuses_what_the_guard_refuses() {
        let p = plan(&params(1000, 2, 1), 32).unwrap();
        assert_eq!(p.refused_by_cap(0), None);
        assert_eq!(p.refused_by_cap(1079), Some(0));
        assert_eq!(p.refused_by_cap(1080), Some(1));
        // Two sub-filters: 40 + 32 + 2048 = 2120.
        assert_eq!(p.refused_by_cap(2120), Some(2));
        assert_eq!(p.refused_by_cap(p.worst_size()), None);
    }

    #[test]
    fn first_expansion_comes_from_the_table() {
        let p = plan(&params(1000, 2, 1), 32).unwrap();
        let e = p.first_expansion.expect("measured");
        assert_eq!(e.measured_bucket_size, 2);
        assert_eq!(e.measured_max_iterations, 20);
        assert_eq!(e.measured_slots, 1024);
        assert!(e.load > 0.5 && e.load < 1.0, "{e:?}");
        assert!(e.low_load <= e.load);
        assert_eq!(e.items, (e.load * 1024.0) as u64);
        // Bucket size 5 was not measured: 4's row (expands no later).
        let e = plan(&params(1 << 20, 5, 1), 32)
            .unwrap()
            .first_expansion
            .unwrap();
        assert_eq!(e.measured_bucket_size, 4);
        // Bucket size 1 expands around half full, or earlier.
        let e = plan(&params(1 << 16, 1, 1), 32)
            .unwrap()
            .first_expansion
            .unwrap();
        assert!(e.load < 0.6, "{e:?}");
        // Loads rise with the bucket size.
        let load = |bs| {
            plan(&params(1 << 16, bs, 1), 32)
                .unwrap()
                .first_expansion
                .unwrap()
                .load
        };
        assert!(load(1) < load(2) && load(2) < load(4));
    }

    #[test]
    fn measured_table_holds_for_a_small_size() {
        // Re-measures the 1,024-slot rows with default max iterations: the
        // median of 9 fresh trials (other seeds than the table's) lies
        // within 0.1 of the table's.
        for bs in [1u8, 2, 4] {
            let row = measured_row(bs, 20, 1024).unwrap();
            assert_eq!((row.bucket_size, row.slots), (bs, 1024));
            let mut loads: Vec<f64> = (1001..1010)
                .map(|seed| measure_first_expansion(bs, 20, 1024, seed))
                .collect();
            loads.sort_by(f64::total_cmp);
            let median = loads[4];
            assert!(
                (median - row.median).abs() < 0.1,
                "bucket size {bs}: measured {median}, table {}",
                row.median
            );
        }
    }

    #[test]
    fn trials_are_deterministic_and_distinct() {
        assert_eq!(
            measure_first_expansion(2, 20, 256, 7),
            measure_first_expansion(2, 20, 256, 7)
        );
        let mut seen = std::collections::HashSet::new();
        for i in 0..10_000u64 {
            assert!(seen.insert(splitmix64(i)));
        }
    }
}
