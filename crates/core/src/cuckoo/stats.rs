//! How full a Cuckoo filter is and what it answers wrongly: occupied slots
//! and load per sub-filter, and the false positive rate those loads give.
//!
//! A lookup matches a sub-filter when one of the `2 × bs` slots of its two
//! buckets holds the item's one-byte fingerprint (1 to 255). An occupied
//! slot holds any given fingerprint with probability 1/255, so with a
//! fraction `load` of a sub-filter's slots occupied, a lookup of an absent
//! item matches it with probability `1 − (1 − load/255)^(2·bs)`; the filter
//! answers wrongly when any sub-filter matches.

use super::filter::CuckooFilter;

/// Distinct non-zero fingerprints.
pub const FINGERPRINTS: f64 = 255.0;

/// One sub-filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubFilterStats {
    pub buckets: u64,
    pub bytes: u64,
    pub occupied: u64,
    /// Occupied slots / slots.
    pub load: f64,
    pub fpr: f64,
}

/// The whole filter.
#[derive(Clone, Debug, PartialEq)]
pub struct CuckooStats {
    pub slots: u64,
    pub occupied: u64,
    /// Item counter / slots (what CF.INFO's counters say).
    pub load: f64,
    pub fpr: f64,
    pub sub_filters: Vec<SubFilterStats>,
}

/// The false positive rate of one sub-filter at `load` with `bucket_size`
/// slots a bucket.
pub fn sub_filter_fpr(load: f64, bucket_size: u8) -> f64 {
    let miss = 1.0 - load.clamp(0.0, 1.0) / FINGERPRINTS;
    1.0 - miss.powi(2 * i32::from(bucket_size))
}

/// Non-zero bytes, eight at a time.
fn occupied_slots(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut empty = 0u64;
    for w in words.by_ref() {
        let v = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        // A byte is 0 exactly when its high bit ends up set here.
        const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let zero_bytes = !(((v & LOW) + LOW) | v | LOW);
        empty += u64::from(zero_bytes.count_ones());
    }
    empty += words.remainder().iter().filter(|&&b| b == 0).count() as u64;
    bytes.len() as u64 - empty
}

/// Reads every slot: O(bytes).
pub fn stats(f: &CuckooFilter) -> CuckooStats {
    let bs = f.bucket_size();
    let mut miss_all = 1.0;
    let sub_filters: Vec<SubFilterStats> = f
        .sub_filters()
        .iter()
        .map(|s| {
            let occupied = occupied_slots(s.as_bytes());
            let load = occupied as f64 / s.bytes().max(1) as f64;
            let fpr = sub_filter_fpr(load, bs);
            miss_all *= 1.0 - fpr;
            SubFilterStats {
                buckets: s.buckets(),
                bytes: s.bytes(),
                occupied,
                load,
                fpr,
            }
        })
        .collect();
    let slots = f.total_bytes();
    CuckooStats {
        slots,
        occupied: sub_filters.iter().map(|s| s.occupied).sum(),
        load: f.items() as f64 / slots.max(1) as f64,
        fpr: 1.0 - miss_all,
        sub_filters,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuckoo::{CuckooHash, CuckooParams};
    use crate::Unguarded;

    #[test]
    fn counts_occupied_slots() {
        assert_eq!(occupied_slots(&[]), 0);
        assert_eq!(occupied_slots(&[0, 1, 0, 255, 128, 0, 0, 0, 7, 0, 3]), 5);
        let mut all = [0u8; 64];
        assert_eq!(occupied_slots(&all), 0);
        all.iter_mut().for_each(|b| *b = 0x80);
        assert_eq!(occupied_slots(&all), 64);
        all[9] = 0;
        assert_eq!(occupied_slots(&all), 63);
    }

    #[test]
    fn estimated_fpr_matches_measured() {
        let params = CuckooParams {
            capacity: 1 << 16,
            expansion: 0,
            ..CuckooParams::default()
        };
        let mut f = crate::cuckoo::CuckooFilter::new(&params, &Unguarded).unwrap();
        let n = 50_000u32;
        for i in 0..n {
            f.insert(CuckooHash::of(&i.to_le_bytes()), &Unguarded);
        }
        let s = stats(&f);
        assert_eq!(s.occupied, f.items());
        let trials = 400_000u32;
        let wrong = (0..trials)
            .filter(|i| f.contains(CuckooHash::of(format!("absent-{i}").as_bytes())))
            .count();
        let measured = wrong as f64 / f64::from(trials);
        assert!(
            (measured - s.fpr).abs() < s.fpr * 0.05,
            "measured {measured}, estimated {}",
            s.fpr
        );
    }
}
