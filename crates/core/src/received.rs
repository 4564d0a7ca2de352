//! Which bytes of a LOADCHUNK stream have arrived since its header: the
//! load progress every data type's loading state keeps (Bloom and Cuckoo
//! filters today).
//!
//! The received parts are kept as disjoint, non-adjacent ranges in an
//! ordered map, with the count of distinct bytes beside them, so a chunk
//! costs a lookup and the ranges it touches (merged into one), never a walk
//! over everything received: in-order, reversed or duplicated chunks keep a
//! single range, and even disjoint chunks cost O(log ranges) each.
//!
//! The progress is part of a loading filter's saved value (RDB, DUMP,
//! replication), encoded by [`LoadProgress::encode`] as the total and the
//! ranges packed as little-endian `u64` pairs.

use std::collections::BTreeMap;

/// The received parts of a stream of `total` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadProgress {
    total: u64,
    /// Distinct bytes received (the sum of the ranges' lengths).
    received: u64,
    /// start → end of sorted, disjoint, non-adjacent half-open ranges, all
    /// inside `[0, total)`.
    ranges: BTreeMap<u64, u64>,
}

/// Heap bytes one range costs in the map, at most: a B-tree leaf of
/// RedisBloom-sized keys holds 11 pairs of 16 bytes in about 192 bytes and
/// is at least half full, plus the internal nodes above the leaves.
pub const BYTES_PER_RANGE: u64 = 48;

/// Why encoded progress is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressError {
    /// Not a whole number of ranges.
    Length,
    /// A range empty, past the total, or not after the one before it.
    Range,
}

impl LoadProgress {
    /// Nothing received yet of a stream of `total` bytes.
    pub fn new(total: u64) -> LoadProgress {
        LoadProgress {
            total,
            received: 0,
            ranges: BTreeMap::new(),
        }
    }

    /// Bytes of the stream (the data bytes the header announced).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Distinct bytes of the stream received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Whether every byte of the stream has arrived.
    pub fn is_complete(&self) -> bool {
        self.received == self.total
    }

    /// How many disjoint ranges are held.
    pub fn ranges(&self) -> usize {
        self.ranges.len()
    }

    /// The memory the progress holds, at most (counted in MEMORY USAGE and
    /// `INFO bf`).
    pub fn heap_bytes(&self) -> u64 {
        std::mem::size_of::<LoadProgress>() as u64 + self.ranges.len() as u64 * BYTES_PER_RANGE
    }

    /// The parts of `[start, end)` not received yet, in order.
    pub fn missing_in(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut missing = Vec::new();
        let mut at = start;
        // A range that starts before `start` may cover its beginning.
        if let Some((_, &e)) = self.ranges.range(..start).next_back() {
            at = at.max(e);
        }
        if at < end {
            for (&s, &e) in self.ranges.range(at..end) {
                if s > at {
                    missing.push((at, s));
                }
                at = e;
                if at >= end {
                    break;
                }
            }
        }
        if at < end {
            missing.push((at, end));
        }
        missing
    }

    /// Records `[start, end)` (clamped to the stream) as received.
    pub fn mark(&mut self, start: u64, end: u64) {
        let end = end.min(self.total);
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        // The range before `start` merges when it reaches it.
        if let Some((&ps, &pe)) = self.ranges.range(..=start).next_back() {
            if pe >= start {
                s = ps;
                e = e.max(pe);
                self.ranges.remove(&ps);
                self.received -= pe - ps;
            }
        }
        // Ranges starting inside or right after [s, e) merge into it; each
        // is removed once, so their count is paid for by the chunks that
        // made them.
        while let Some((&ns, &ne)) = self.ranges.range(s..=e).next() {
            e = e.max(ne);
            self.ranges.remove(&ns);
            self.received -= ne - ns;
        }
        self.ranges.insert(s, e);
        self.received += e - s;
    }

    /// The saved form: the ranges as little-endian `u64` start/end pairs
    /// (the total is saved beside it).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.ranges.len() * 16);
        for (&s, &e) in &self.ranges {
            out.extend_from_slice(&s.to_le_bytes());
            out.extend_from_slice(&e.to_le_bytes());
        }
        out
    }

    /// Reads [`LoadProgress::encode`]'s form, checking every range.
    pub fn decode(total: u64, bytes: &[u8]) -> Result<LoadProgress, ProgressError> {
        if bytes.len() % 16 != 0 {
            return Err(ProgressError::Length);
        }
        let mut p = LoadProgress::new(total);
        let mut last_end: Option<u64> = None;
        for pair in bytes.chunks_exact(16) {
            let s = u64::from_le_bytes(pair[..8].try_into().expect("8 bytes"));
            let e = u64::from_le_bytes(pair[8..].try_into().expect("8 bytes"));
            // Sorted, disjoint and non-adjacent, as `mark` keeps them.
            if s >= e || e > total || last_end.is_some_and(|l| s <= l) {
                return Err(ProgressError::Range);
            }
            p.ranges.insert(s, e);
            p.received += e - s;
            last_end = Some(e);
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(p: &LoadProgress) -> Vec<(u64, u64)> {
        p.ranges.iter().map(|(&s, &e)| (s, e)).collect()
    }

    #[test]
    fn ranges_merge_and_gaps_are_found() {
        let mut p = LoadProgress::new(100);
        assert_eq!(p.missing_in(0, 100), vec![(0, 100)]);
        p.mark(10, 20);
        p.mark(30, 40);
        assert_eq!(p.missing_in(0, 100), vec![(0, 10), (20, 30), (40, 100)]);
        assert_eq!(p.missing_in(12, 35), vec![(20, 30)]);
        assert_eq!(p.missing_in(12, 18), Vec::<(u64, u64)>::new());
        assert_eq!(p.missing_in(20, 30), vec![(20, 30)]);
        assert_eq!(p.missing_in(45, 50), vec![(45, 50)]);
        p.mark(20, 30);
        assert_eq!(ranges(&p), vec![(10, 40)]);
        p.mark(0, 5);
        p.mark(5, 10);
        assert_eq!(ranges(&p), vec![(0, 40)]);
        assert!(!p.is_complete());
        assert_eq!(p.received(), 40);
        p.mark(35, 100);
        assert!(p.is_complete());
        p.mark(50, 50);
        assert_eq!(ranges(&p), vec![(0, 100)]);
        assert_eq!(p.received(), 100);
    }

    #[test]
    fn a_range_over_several_merges_them_and_counts_once() {
        let mut p = LoadProgress::new(1000);
        for i in 0..10 {
            p.mark(i * 100, i * 100 + 10);
        }
        assert_eq!(p.received(), 100);
        p.mark(5, 905);
        assert_eq!(ranges(&p), vec![(0, 910)]);
        assert_eq!(p.received(), 910);
        // Past the total: clamped.
        p.mark(900, 5000);
        assert!(p.is_complete());
    }

    #[test]
    fn agrees_with_a_byte_map() {
        // Pseudo-random ranges against a plain array of flags.
        let total = 500u64;
        let mut p = LoadProgress::new(total);
        let mut flags = vec![false; total as usize];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..400 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let s = x % total;
            let e = (s + x / total % 40).min(total);
            let q = (x >> 20) % total;
            let qe = (q + (x >> 40) % 60).min(total);
            let want: Vec<(u64, u64)> = {
                let mut v: Vec<(u64, u64)> = Vec::new();
                for i in q..qe {
                    if !flags[i as usize] {
                        match v.last_mut() {
                            Some(last) if last.1 == i => last.1 = i + 1,
                            _ => v.push((i, i + 1)),
                        }
                    }
                }
                v
            };
            assert_eq!(p.missing_in(q, qe), want);
            p.mark(s, e);
            for f in &mut flags[s as usize..e as usize] {
                *f = true;
            }
            assert_eq!(p.received(), flags.iter().filter(|&&f| f).count() as u64);
            let back = LoadProgress::decode(total, &p.encode()).unwrap();
            assert_eq!(back, p);
        }
    }

    #[test]
    fn decode_refuses_what_mark_never_makes() {
        let enc = |v: &[(u64, u64)]| {
            let mut out = Vec::new();
            for &(s, e) in v {
                out.extend_from_slice(&s.to_le_bytes());
                out.extend_from_slice(&e.to_le_bytes());
            }
            out
        };
        assert!(LoadProgress::decode(10, &enc(&[(0, 5), (6, 10)])).is_ok());
        assert_eq!(
            LoadProgress::decode(10, &[0; 15]),
            Err(ProgressError::Length)
        );
        for bad in [
            &[(5, 5)][..],
            &[(0, 11)],
            &[(0, 5), (5, 7)],
            &[(4, 6), (0, 2)],
        ] {
            assert_eq!(
                LoadProgress::decode(10, &enc(bad)),
                Err(ProgressError::Range)
            );
        }
    }
}
