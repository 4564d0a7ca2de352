//! Compaction (CF.COMPACT, and the automatic one after CF.DEL), in time
//! linear in the filter's size.
//!
//! The order is RedisBloom 2.8.2's: from the newest sub-filter down to the
//! second, every fingerprint (bucket after bucket, slot after slot) moves to
//! the first older sub-filter, oldest first, with a free slot in bucket
//! `b mod N` or else `(b XOR alt) mod N` there; a trailing sub-filter that
//! was emptied is freed. Done literally, each fingerprint looks at every
//! older sub-filter: with `S` sub-filters of one size (EXPANSION 1) that is
//! quadratic in `S` (a 512-sub-filter filter took 10.9 s).
//!
//! The older sub-filters form runs of equal bucket count (sizes never
//! decrease, so there are at most 57 runs: one per power of two up to
//! 2^56). Within a run, both buckets a fingerprint may go to have the same
//! index in every sub-filter, and a bucket of a sub-filter that is still
//! only a destination never loses a fingerprint. So per run and per bucket
//! index a cursor can remember the first sub-filter whose bucket may still
//! have room: it only moves forward, at most once past each sub-filter, and
//! the whole compaction costs O(total slots + runs × fingerprints). Short
//! runs (the usual EXPANSION ≥ 2 filters, one sub-filter each) are looked
//! at directly.

use super::filter::{CompactMode, SubFilter};
use super::hash::alt_xor;
use std::ops::Range;

/// Runs of at most this many sub-filters are scanned one by one (no cursor
/// array, whose memory would then be large next to the run's).
const SCANNED_RUN: usize = 8;

/// Per bucket index of a run, the run-local index of the first sub-filter
/// whose bucket there may still have a free slot (`run length`: none).
struct Cursors(Vec<u16>);

impl Cursors {
    /// The cursors of `run`, found in one pass over its bytes in memory
    /// order (looking bucket by bucket down the run would miss the cache
    /// at every step); `None` when the memory is not available: the run is
    /// then scanned.
    fn new(run: &[SubFilter], bs: usize) -> Option<Cursors> {
        let n = usize::try_from(run.first()?.buckets()).ok()?;
        let mut v = Vec::new();
        v.try_reserve_exact(n).ok()?;
        // run length ≤ 65,535 sub-filters.
        let none = run.len() as u16;
        v.resize(n, none);
        let mut unset = n;
        for (o, sub) in run.iter().enumerate() {
            for (j, bucket) in sub.as_bytes().chunks_exact(bs).enumerate() {
                if v[j] == none && bucket.contains(&0) {
                    v[j] = o as u16;
                    unset -= 1;
                }
            }
            if unset == 0 {
                break;
            }
        }
        Some(Cursors(v))
    }

    /// The first sub-filter of `run` (from `cursor[j]` on) whose bucket `j`
    /// has a free slot, or `run.len()`.
    fn first_room(&mut self, run: &[SubFilter], j: u64, bs: usize) -> usize {
        let c = &mut self.0[j as usize];
        let mut p = usize::from(*c);
        while p < run.len() && !run[p].has_room(j, bs) {
            p += 1;
        }
        // p ≤ run length ≤ 65,535 sub-filters.
        *c = p as u16;
        p
    }
}

/// One run of equal-size sub-filters, with its cursors once built.
struct Run {
    subs: Range<usize>,
    cursors: Option<Cursors>,
    /// Building the cursors failed: scan.
    scan_only: bool,
}

fn runs(subs: &[SubFilter]) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for (i, s) in subs.iter().enumerate() {
        match out.last_mut() {
            Some(r) if subs[r.subs.start].buckets() == s.buckets() => r.subs.end = i + 1,
            _ => out.push(Run {
                subs: i..i + 1,
                cursors: None,
                scan_only: false,
            }),
        }
    }
    out
}

/// Moves `fp` from bucket `b` of the sub-filter being emptied into the
/// first of `older` (oldest first) with room in one of its two buckets.
fn place_older(older: &mut [SubFilter], runs: &mut [Run], b: u64, fp: u8, bs: usize) -> bool {
    let x = alt_xor(fp);
    for run in runs.iter_mut() {
        if run.subs.start >= older.len() {
            break;
        }
        let end = run.subs.end.min(older.len());
        let mask = older[run.subs.start].buckets() - 1;
        let (j1, j2) = (b & mask, (b ^ x) & mask);
        if run.subs.len() > SCANNED_RUN && run.cursors.is_none() && !run.scan_only {
            // Built over the run's destinations at first use; later
            // sub-filters being emptied only shorten that list.
            run.cursors = Cursors::new(&older[run.subs.start..end], bs);
            run.scan_only = run.cursors.is_none();
        }
        let Some(cursors) = run.cursors.as_mut() else {
            let found = older[run.subs.start..end]
                .iter_mut()
                .any(|o| o.place(j1, bs, fp) || o.place(j2, bs, fp));
            if found {
                return true;
            }
            continue;
        };
        // The run's destinations: a cursor at or past their end means
        // none has room there.
        let whole = &older[run.subs.start..end];
        let first1 = cursors.first_room(whole, j1, bs);
        let first2 = cursors.first_room(whole, j2, bs);
        let o = first1.min(first2);
        if o < whole.len() {
            let sub = &mut older[run.subs.start + o];
            let placed = if first1 == o {
                sub.place(j1, bs, fp)
            } else {
                sub.place(j2, bs, fp)
            };
            debug_assert!(placed, "the cursor's bucket has room");
            return true;
        }
    }
    false
}

/// Compacts `subs` (see the module documentation); the caller resets the
/// delete counter.
pub(super) fn compact(subs: &mut Vec<SubFilter>, bs: usize, mode: CompactMode) {
    let mut runs = runs(subs);
    for k in (1..subs.len()).rev() {
        let (older, rest) = subs.split_at_mut(k);
        let slots = rest[0].as_bytes_mut();
        let mut emptied = true;
        for (at, slot) in slots.iter_mut().enumerate() {
            if *slot == 0 {
                continue;
            }
            if place_older(older, &mut runs, (at / bs) as u64, *slot, bs) {
                *slot = 0;
            } else {
                emptied = false;
            }
        }
        if emptied && k == subs.len() - 1 {
            subs.pop();
        }
        if !emptied && mode == CompactMode::Stop {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;
    use crate::bitarray::BitArray;
    use crate::cuckoo::filter::{CuckooFilter, Parts};
    use crate::cuckoo::hash::CuckooHash;
    use crate::cuckoo::sizing::CuckooParams;
    use proptest::prelude::*;

    /// The algorithm as RedisBloom 2.8.2 states it: every fingerprint looks
    /// at every older sub-filter in turn (quadratic in sub-filters).
    fn reference(subs: &mut Vec<SubFilter>, bs: usize, mode: CompactMode) {
        for k in (1..subs.len()).rev() {
            let (older, rest) = subs.split_at_mut(k);
            let sub = &mut rest[0];
            let mut emptied = true;
            for b in 0..sub.buckets() {
                for s in 0..bs {
                    let at = b as usize * bs + s;
                    let fp = sub.as_bytes()[at];
                    if fp == 0 {
                        continue;
                    }
                    let x = alt_xor(fp);
                    let moved = older.iter_mut().any(|o| {
                        let mask = o.buckets() - 1;
                        o.place(b & mask, bs, fp) || o.place((b ^ x) & mask, bs, fp)
                    });
                    if moved {
                        sub.as_bytes_mut()[at] = 0;
                    } else {
                        emptied = false;
                    }
                }
            }
            if emptied && k == subs.len() - 1 {
                subs.pop();
            }
            if !emptied && mode == CompactMode::Stop {
                break;
            }
        }
    }

    fn sub_filters(sizes: &[u64], bs: u8, fill: &[(u8, u8)]) -> Vec<SubFilter> {
        let mut k = 0usize;
        sizes
            .iter()
            .map(|&n| {
                let bytes: Vec<u8> = (0..n * u64::from(bs))
                    .map(|_| {
                        // A slot empty or holding a fingerprint, from the
                        // (density, value) pairs in turn.
                        let (density, fp) = fill[k % fill.len()];
                        k += 1;
                        if density < 96 {
                            0
                        } else {
                            fp.max(1)
                        }
                    })
                    .collect();
                SubFilter::with_data(n, BitArray::from_bytes(&bytes).unwrap())
            })
            .collect()
    }

    fn snapshot(subs: &[SubFilter]) -> Vec<Vec<u8>> {
        subs.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    /// Bucket counts: non-decreasing powers of two, long runs of one size
    /// (EXPANSION 1) and single ones (EXPANSION ≥ 2) mixed.
    fn sizes() -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec((0u32..4, 1usize..24), 1..5).prop_map(|runs| {
            let mut exp = 0;
            let mut out = Vec::new();
            for (step, len) in runs {
                exp += step;
                out.extend(std::iter::repeat_n(1u64 << exp, len));
            }
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The same bytes and sub-filters as the literal algorithm, on
        /// random contents (every fingerprint value, any fill).
        #[test]
        fn equals_the_literal_algorithm(
            sizes in sizes(),
            bs in 1u8..5,
            fill in prop::collection::vec((any::<u8>(), any::<u8>()), 1..300),
            stop in any::<bool>(),
        ) {
            let mode = if stop { CompactMode::Stop } else { CompactMode::Continue };
            let mut want = sub_filters(&sizes, bs, &fill);
            let mut got = sub_filters(&sizes, bs, &fill);
            reference(&mut want, usize::from(bs), mode);
            compact(&mut got, usize::from(bs), mode);
            prop_assert_eq!(snapshot(&got), snapshot(&want));
        }

        /// Filters grown by inserts (kick-outs, EXPANSION 1 and 2), with
        /// some items deleted, compact as the literal algorithm does.
        #[test]
        fn grown_filters_compact_as_the_literal_algorithm(
            bs in 1u8..4,
            expansion in 1u16..3,
            items in 50u32..2500,
            deleted in 0u32..100,
            stop in any::<bool>(),
        ) {
            let params = CuckooParams {
                capacity: 2 * u64::from(bs),
                bucket_size: bs,
                max_iterations: 3,
                expansion,
            };
            let mut f = CuckooFilter::new(&params, &Unguarded).unwrap();
            for i in 0..items {
                f.insert(CuckooHash::of(&i.to_le_bytes()), &Unguarded);
            }
            let copy = |f: &CuckooFilter| -> Vec<SubFilter> {
                f.sub_filters()
                    .iter()
                    .map(|s| SubFilter::with_data(s.buckets(), BitArray::from_bytes(s.as_bytes()).unwrap()))
                    .collect()
            };
            // Deletes through the raw slots, so that no compaction runs yet.
            let mut subs = copy(&f);
            for (n, slot) in subs.iter_mut().flat_map(|s| s.as_bytes_mut().iter_mut()).enumerate() {
                if (n as u32 * 7919) % 100 < deleted {
                    *slot = 0;
                }
            }
            let mode = if stop { CompactMode::Stop } else { CompactMode::Continue };
            let mut want = subs;
            let mut got: Vec<SubFilter> = want
                .iter()
                .map(|s| SubFilter::with_data(s.buckets(), BitArray::from_bytes(s.as_bytes()).unwrap()))
                .collect();
            reference(&mut want, usize::from(bs), mode);
            let mut filter = CuckooFilter::from_parts(Parts {
                bucket_size: bs,
                max_iterations: 3,
                expansion,
                base_buckets: got[0].buckets(),
                items: u64::from(items),
                deletes: 5,
                subs: std::mem::take(&mut got),
            });
            filter.compact(mode);
            prop_assert_eq!(filter.deletes(), 0);
            prop_assert_eq!(snapshot(filter.sub_filters()), snapshot(&want));
        }
    }

    /// Thousands of full sub-filters of one size: every fingerprint fails
    /// to move, which the literal algorithm pays per older sub-filter.
    #[test]
    fn many_full_sub_filters_compact_quickly() {
        let subs = 20_000u64;
        let mut v: Vec<SubFilter> = (0..subs)
            .map(|_| SubFilter::with_data(8, BitArray::from_bytes(&[7u8; 16]).unwrap()))
            .collect();
        let start = std::time::Instant::now();
        compact(&mut v, 2, CompactMode::Continue);
        assert_eq!(v.len() as u64, subs);
        // The literal algorithm needs about 3 × 10^9 bucket reads here.
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }
}
