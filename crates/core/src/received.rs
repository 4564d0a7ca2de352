//! Which bytes of a LOADCHUNK stream have arrived since its header: the
//! load progress every data type's loading state keeps (Bloom and Cuckoo
//! filters today).
//!
//! The received parts are kept as disjoint, non-adjacent ranges in an
//! ordered map, with the count of distinct bytes beside them, so a chunk
//! costs a lookup and the ranges it touches (merged into one), never a walk
//! over everything received: in-order, reversed or duplicated chunks keep a
//! single range, and disjoint chunks cost O(log ranges) each. Once the
//! ranges would take more memory than one bit per byte of the stream, they
//! become that bitmap: a chunk then costs its own length / 64 words, and
//! the progress never holds more than an eighth of the filter's bytes.
//!
//! The progress is part of a loading filter's saved value (RDB, DUMP,
//! replication), encoded by [`LoadProgress::encode`].

use std::collections::BTreeMap;

/// The received parts of a stream of `total` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadProgress {
    total: u64,
    /// Distinct bytes received.
    received: u64,
    parts: Parts,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Parts {
    /// start → end of sorted, disjoint, non-adjacent half-open ranges, all
    /// inside `[0, total)`.
    Ranges(BTreeMap<u64, u64>),
    /// Bit `i` (word `i / 64`, bit `i % 64`) set when byte `i` arrived;
    /// bits past `total` are 0.
    Bitmap(Vec<u64>),
}

/// Heap bytes one range costs in the map, at most: a B-tree leaf of
/// 16-byte pairs holds 11 of them in about 192 bytes and is at least half
/// full, plus the internal nodes above the leaves.
pub const BYTES_PER_RANGE: u64 = 48;

/// Why encoded progress is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressError {
    /// Not a known form, or not of the stream's length.
    Length,
    /// A range empty, past the total, or not after the one before it; or
    /// a bit set past the total.
    Range,
}

const TAG_RANGES: u8 = 0;
const TAG_BITMAP: u8 = 1;

fn bitmap_words(total: u64) -> u64 {
    total.div_ceil(64)
}

/// The bits `[s, e)` of word `w`, as a mask (`s < e`, both within the
/// stream).
fn word_mask(w: u64, s: u64, e: u64) -> u64 {
    let lo = s.max(w * 64) - w * 64;
    let hi = e.min(w * 64 + 64) - w * 64;
    let upper = if hi == 64 { u64::MAX } else { (1u64 << hi) - 1 };
    upper & !((1u64 << lo) - 1)
}

/// The first position in `[from, to)` whose bit is `set`, or `to`.
fn next_bit(words: &[u64], from: u64, to: u64, set: bool) -> u64 {
    let mut at = from;
    while at < to {
        let w = at / 64;
        let word = if set {
            words[w as usize]
        } else {
            !words[w as usize]
        };
        let bits = word & word_mask(w, at, to);
        if bits != 0 {
            return w * 64 + u64::from(bits.trailing_zeros());
        }
        at = (w + 1) * 64;
    }
    to
}

impl LoadProgress {
    /// Nothing received yet of a stream of `total` bytes.
    pub fn new(total: u64) -> LoadProgress {
        LoadProgress {
            total,
            received: 0,
            parts: Parts::Ranges(BTreeMap::new()),
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

    /// The memory the progress holds, at most (counted in MEMORY USAGE and
    /// `INFO bf`).
    pub fn heap_bytes(&self) -> u64 {
        std::mem::size_of::<LoadProgress>() as u64
            + match &self.parts {
                Parts::Ranges(r) => r.len() as u64 * BYTES_PER_RANGE,
                Parts::Bitmap(w) => w.len() as u64 * 8,
            }
    }

    /// The parts of `[start, end)` not received yet, in order.
    pub fn missing_in(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut missing = Vec::new();
        match &self.parts {
            Parts::Ranges(ranges) => {
                let mut at = start;
                // A range that starts before `start` may cover its beginning.
                if let Some((_, &e)) = ranges.range(..start).next_back() {
                    at = at.max(e);
                }
                if at < end {
                    for (&s, &e) in ranges.range(at..end) {
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
            }
            Parts::Bitmap(words) => {
                // Past the stream nothing is received (the chunk checks
                // keep chunks inside it).
                let inside = end.min(self.total);
                let mut at = start.min(inside);
                while at < inside {
                    let gap = next_bit(words, at, inside, false);
                    if gap == inside {
                        break;
                    }
                    let gap_end = next_bit(words, gap, inside, true);
                    missing.push((gap, gap_end));
                    at = gap_end;
                }
                if inside < end {
                    match missing.last_mut() {
                        Some(last) if last.1 == inside => last.1 = end,
                        _ => missing.push((inside.max(start), end)),
                    }
                }
            }
        }
        missing
    }

    /// Records `[start, end)` (clamped to the stream) as received.
    pub fn mark(&mut self, start: u64, end: u64) {
        let end = end.min(self.total);
        if start >= end {
            return;
        }
        match &mut self.parts {
            Parts::Ranges(ranges) => {
                let (mut s, mut e) = (start, end);
                // The range before `start` merges when it reaches it.
                if let Some((&ps, &pe)) = ranges.range(..=start).next_back() {
                    if pe >= start {
                        s = ps;
                        e = e.max(pe);
                        ranges.remove(&ps);
                        self.received -= pe - ps;
                    }
                }
                // Ranges starting inside or right after [s, e) merge into
                // it; each is removed once, so their count is paid for by
                // the chunks that made them.
                while let Some((&ns, &ne)) = ranges.range(s..=e).next() {
                    e = e.max(ne);
                    ranges.remove(&ns);
                    self.received -= ne - ns;
                }
                ranges.insert(s, e);
                self.received += e - s;
                if ranges.len() as u64 * BYTES_PER_RANGE > bitmap_words(self.total) * 8 {
                    self.switch_to_bitmap();
                }
            }
            Parts::Bitmap(words) => {
                for w in start / 64..=(end - 1) / 64 {
                    let mask = word_mask(w, start, end);
                    let word = &mut words[w as usize];
                    self.received += u64::from((mask & !*word).count_ones());
                    *word |= mask;
                }
            }
        }
    }

    /// Turns the ranges into the bitmap (once they would cost more).
    fn switch_to_bitmap(&mut self) {
        let Parts::Ranges(ranges) = &self.parts else {
            return;
        };
        let mut words = vec![0u64; bitmap_words(self.total) as usize];
        for (&s, &e) in ranges {
            for w in s / 64..=(e - 1) / 64 {
                words[w as usize] |= word_mask(w, s, e);
            }
        }
        self.parts = Parts::Bitmap(words);
    }

    /// The saved form: a tag byte, then the ranges as little-endian `u64`
    /// start/end pairs (tag 0) or the bitmap's little-endian words (tag 1).
    /// The total is saved beside it.
    pub fn encode(&self) -> Vec<u8> {
        match &self.parts {
            Parts::Ranges(ranges) => {
                let mut out = Vec::with_capacity(1 + ranges.len() * 16);
                out.push(TAG_RANGES);
                for (&s, &e) in ranges {
                    out.extend_from_slice(&s.to_le_bytes());
                    out.extend_from_slice(&e.to_le_bytes());
                }
                out
            }
            Parts::Bitmap(words) => {
                let mut out = Vec::with_capacity(1 + words.len() * 8);
                out.push(TAG_BITMAP);
                for w in words {
                    out.extend_from_slice(&w.to_le_bytes());
                }
                out
            }
        }
    }

    /// Reads [`LoadProgress::encode`]'s form, checking every range or bit.
    pub fn decode(total: u64, bytes: &[u8]) -> Result<LoadProgress, ProgressError> {
        let Some((&tag, body)) = bytes.split_first() else {
            return Err(ProgressError::Length);
        };
        let mut p = LoadProgress::new(total);
        match tag {
            TAG_RANGES if body.len() % 16 == 0 => {
                let mut ranges = BTreeMap::new();
                let mut last_end: Option<u64> = None;
                for pair in body.chunks_exact(16) {
                    let s = u64::from_le_bytes(pair[..8].try_into().expect("8 bytes"));
                    let e = u64::from_le_bytes(pair[8..].try_into().expect("8 bytes"));
                    // Sorted, disjoint and non-adjacent, as `mark` keeps them.
                    if s >= e || e > total || last_end.is_some_and(|l| s <= l) {
                        return Err(ProgressError::Range);
                    }
                    ranges.insert(s, e);
                    p.received += e - s;
                    last_end = Some(e);
                }
                p.parts = Parts::Ranges(ranges);
            }
            TAG_BITMAP if body.len() as u64 == bitmap_words(total) * 8 => {
                let words: Vec<u64> = body
                    .chunks_exact(8)
                    .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                    .collect();
                if let Some(&last) = words.last() {
                    let w = words.len() as u64 - 1;
                    if last & !word_mask(w, w * 64, total) != 0 {
                        return Err(ProgressError::Range);
                    }
                }
                p.received = words.iter().map(|w| u64::from(w.count_ones())).sum();
                p.parts = Parts::Bitmap(words);
            }
            _ => return Err(ProgressError::Length),
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(p: &LoadProgress) -> Vec<(u64, u64)> {
        match &p.parts {
            Parts::Ranges(r) => r.iter().map(|(&s, &e)| (s, e)).collect(),
            Parts::Bitmap(_) => {
                let mut v = Vec::new();
                let mut at = 0;
                for (gs, ge) in p.missing_in(0, p.total) {
                    if gs > at {
                        v.push((at, gs));
                    }
                    at = ge;
                }
                if at < p.total {
                    v.push((at, p.total));
                }
                v
            }
        }
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
        // A stream of 500 bytes (the bitmap after a few ranges), and the
        // first 500 bytes of a huge one (ranges throughout).
        for stream in [500u64, 1 << 40] {
            agrees_with_a_byte_map_over(stream);
        }
    }

    fn agrees_with_a_byte_map_over(stream: u64) {
        // Pseudo-random ranges against a plain array of flags.
        let total = 500u64;
        let mut p = LoadProgress::new(stream);
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
            let back = LoadProgress::decode(stream, &p.encode()).unwrap();
            assert_eq!(back, p);
        }
        assert_eq!(matches!(p.parts, Parts::Bitmap(_)), stream == total);
    }

    #[test]
    fn many_disjoint_ranges_become_a_bitmap_of_bounded_size() {
        let total = 64 * 1024;
        let mut p = LoadProgress::new(total);
        for i in 0..100 {
            p.mark(i * 2, i * 2 + 1);
        }
        assert!(matches!(p.parts, Parts::Ranges(_)));
        for i in 100..20_000 {
            p.mark(i * 2, i * 2 + 1);
        }
        assert!(matches!(p.parts, Parts::Bitmap(_)));
        assert_eq!(p.received(), 20_000);
        assert!(p.heap_bytes() <= std::mem::size_of::<LoadProgress>() as u64 + total / 8);
        assert_eq!(p.missing_in(0, 5), vec![(1, 2), (3, 4)]);
        assert_eq!(p.missing_in(39_999, 40_010), vec![(39_999, 40_010)]);
        p.mark(0, total);
        assert!(p.is_complete());
    }

    #[test]
    fn decode_refuses_what_mark_never_makes() {
        let enc = |v: &[(u64, u64)]| {
            let mut out = vec![TAG_RANGES];
            for &(s, e) in v {
                out.extend_from_slice(&s.to_le_bytes());
                out.extend_from_slice(&e.to_le_bytes());
            }
            out
        };
        assert!(LoadProgress::decode(10, &enc(&[(0, 5), (6, 10)])).is_ok());
        for bad in [
            &[0u8; 16][..],
            &[],
            &[2],
            &[TAG_BITMAP, 0, 0, 0, 0, 0, 0, 0],
        ] {
            assert_eq!(LoadProgress::decode(10, bad), Err(ProgressError::Length));
        }
        let mut bitmap = vec![TAG_BITMAP];
        bitmap.extend_from_slice(&0x3ffu64.to_le_bytes());
        assert_eq!(LoadProgress::decode(10, &bitmap).unwrap().received(), 10);
        bitmap[2] = 0x07;
        assert_eq!(LoadProgress::decode(10, &bitmap), Err(ProgressError::Range));
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
