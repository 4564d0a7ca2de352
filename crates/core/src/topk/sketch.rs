//! The sketch: `depth` rows of `width` buckets {fingerprint, count},
//! row-major, and a heap of `k` records (spec §4.1). An item's
//! fingerprint is MurmurHash2(item, 1919); its bucket in row `r` is
//! column MurmurHash2(item, r) mod width (2.8.2's placement, so buckets
//! match its bytes).
//!
//! The buckets live in one byte array in their saved form (fingerprint
//! then count, both little-endian u32), so saving writes it as is and
//! loading adopts the loaded string.

use super::decay::{coin, DecayTable, Draw};
use super::heap::{find, sift_down, HeapSlot};
use super::sizing::{bytes, ParamError, Params, BUCKET_BYTES};
use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal};
use crate::bitarray::{AllocError, BitArray};
use crate::cms::rows::{murmur2_lanes, LANES};
use crate::hash::murmur2;
use crate::modulus::Modulus;

/// The seed of an item's fingerprint.
pub const FP_SEED: u32 = 1919;

/// What MEMORY USAGE reports beyond the buckets and heap records: 2.8.2's
/// struct with its 256-entry decay table.
pub const REPORTED_OVERHEAD: u64 = 2088;

/// Why a sketch could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateError {
    /// The buckets do not fit the address space.
    Params(ParamError),
    /// The allocation guard said no.
    Refused(Refusal),
    /// The allocator said no.
    Alloc(AllocError),
}

impl CreateError {
    /// The reply: every failure is 2.8.2's `Insufficient memory` text.
    pub fn message(self) -> &'static str {
        ParamError::InsufficientMemory.message()
    }
}

/// Why an add was refused, with nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The heap records an item's length in 32 bits.
    ItemTooLong,
}

impl AddError {
    pub fn message(self) -> &'static str {
        match self {
            AddError::ItemTooLong => "TopK: item longer than 4294967295 bytes",
        }
    }
}

/// A Top-K sketch.
#[derive(Debug)]
pub struct TopK {
    k: u32,
    width: u32,
    depth: u32,
    decay: f64,
    table: DecayTable,
    modulus: Modulus,
    buckets: BitArray,
    heap: Vec<HeapSlot>,
    /// Decay coins drawn so far (wrapping): an input of every coin, saved
    /// with the value (see [`super::decay`]).
    draws: u32,
}

/// The fingerprint of `item`.
#[inline]
pub fn fingerprint(item: &[u8]) -> u32 {
    murmur2(item, FP_SEED)
}

/// What MEMORY USAGE reports for a value: 2.8.2's formula
/// `2088 + W·D·8 + k·24` (item strings not counted; spec §7.5), so the
/// replies match.
pub fn memory_usage(k: u32, width: u32, depth: u32) -> u64 {
    (u64::from(width) * u64::from(depth))
        .saturating_mul(BUCKET_BYTES)
        .saturating_add(u64::from(k) * 24)
        .saturating_add(REPORTED_OVERHEAD)
}

/// A zeroed heap of `k` records, or the allocator's refusal.
fn empty_heap(k: u32) -> Result<Vec<HeapSlot>, AllocError> {
    let mut heap = Vec::new();
    let bytes = u64::from(k) * std::mem::size_of::<HeapSlot>() as u64;
    heap.try_reserve_exact(k as usize)
        .map_err(|_| AllocError { bytes })?;
    heap.resize_with(k as usize, HeapSlot::default);
    Ok(heap)
}

impl TopK {
    /// An empty sketch (parameters already checked by [`super::sizing`]),
    /// the guard asked first for the buckets and heap records.
    pub fn new(params: Params, guard: &dyn AllocGuard) -> Result<TopK, CreateError> {
        let Params {
            k,
            width,
            depth,
            decay: _,
        } = params;
        let sizes = bytes(k, width, depth).map_err(CreateError::Params)?;
        guard
            .admit(AllocRequest {
                bytes: sizes.buckets + sizes.heap,
                filter_size_after: memory_usage(k, width, depth),
            })
            .map_err(CreateError::Refused)?;
        let buckets = BitArray::zeroed(sizes.buckets).map_err(CreateError::Alloc)?;
        let heap = empty_heap(k).map_err(CreateError::Alloc)?;
        Ok(Self::from_parts(params, buckets, heap, 0))
    }

    /// A sketch over loaded parts (sizes checked by the caller: the RDB
    /// loader). The decay table is computed here.
    pub(crate) fn from_parts(
        params: Params,
        buckets: BitArray,
        heap: Vec<HeapSlot>,
        draws: u32,
    ) -> TopK {
        debug_assert_eq!(
            buckets.len() as u64,
            u64::from(params.width) * u64::from(params.depth) * BUCKET_BYTES
        );
        debug_assert_eq!(heap.len(), params.k as usize);
        TopK {
            k: params.k,
            width: params.width,
            depth: params.depth,
            decay: params.decay,
            table: DecayTable::new(params.decay),
            modulus: Modulus::new(u64::from(params.width)).expect("width >= 1"),
            buckets,
            heap,
            draws,
        }
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }

    pub fn decay(&self) -> f64 {
        self.decay
    }

    pub fn params(&self) -> Params {
        Params {
            k: self.k,
            width: self.width,
            depth: self.depth,
            decay: self.decay,
        }
    }

    /// The decay coins drawn so far (wrapping at 2^32).
    pub fn draws(&self) -> u32 {
        self.draws
    }

    /// The buckets as saved: W·D × {fp u32 LE, count u32 LE}, row-major.
    pub fn bucket_bytes(&self) -> &[u8] {
        self.buckets.as_bytes()
    }

    /// Bucket `index` (row-major) as (fingerprint, count).
    #[inline]
    pub fn bucket(&self, index: usize) -> (u32, u32) {
        let b = &self.buckets.as_bytes()[index * 8..index * 8 + 8];
        (
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        )
    }

    #[inline]
    fn set_bucket(&mut self, index: usize, fp: u32, count: u32) {
        let b = &mut self.buckets.as_bytes_mut()[index * 8..index * 8 + 8];
        b[..4].copy_from_slice(&fp.to_le_bytes());
        b[4..].copy_from_slice(&count.to_le_bytes());
    }

    #[inline]
    fn set_count(&mut self, index: usize, count: u32) {
        let b = &mut self.buckets.as_bytes_mut()[index * 8 + 4..index * 8 + 8];
        b.copy_from_slice(&count.to_le_bytes());
    }

    /// The heap records in array order (slot 0 holds the smallest count).
    pub fn heap(&self) -> &[HeapSlot] {
        &self.heap
    }

    /// The flat index and column of `item`'s bucket in `row`.
    #[inline]
    fn bucket_of(&self, item: &[u8], row: u32) -> (usize, u32) {
        let column = self.modulus.reduce(u64::from(murmur2(item, row))) as u32;
        (
            (u64::from(row) * u64::from(self.width) + u64::from(column)) as usize,
            column,
        )
    }

    /// Fills `out` with the flat indexes of `item`'s buckets in rows
    /// `first..first + out.len()` (at most [`LANES`] rows), the rows'
    /// hashes computed side by side (`murmur2_lanes`: a block is mixed once
    /// for every seed).
    #[inline(always)]
    fn bucket_indexes(&self, item: &[u8], first: u32, out: &mut [usize]) {
        match out.len() {
            1 => self.lanes::<1>(item, first, out),
            2 => self.lanes::<2>(item, first, out),
            3 => self.lanes::<3>(item, first, out),
            4 => self.lanes::<4>(item, first, out),
            5 => self.lanes::<5>(item, first, out),
            6 => self.lanes::<6>(item, first, out),
            7 => self.lanes::<7>(item, first, out),
            _ => self.lanes::<LANES>(item, first, out),
        }
    }

    #[inline(always)]
    fn lanes<const N: usize>(&self, item: &[u8], first: u32, out: &mut [usize]) {
        let hashes = murmur2_lanes::<N>(item, first);
        for (l, (index, &hash)) in out.iter_mut().zip(&hashes).enumerate() {
            let row = u64::from(first) + l as u64;
            let column = self.modulus.reduce(u64::from(hash));
            *index = (row * u64::from(self.width) + column) as usize;
        }
    }

    /// TOPK.ADD of one item: [`TopK::incrby`] by 1.
    pub fn add(&mut self, item: &[u8]) -> Result<Option<Box<[u8]>>, AddError> {
        self.incrby(item, 1)
    }

    /// Adds `incr` to `item` (spec §4.3) and returns the item expelled
    /// from the heap: `Ok(None)` when none was, or the slot taken had no
    /// bytes (2.8.2's null). The expelled item is whole (2.8.2 cuts it at
    /// its first NUL). TOPK.INCRBY limits `incr` to
    /// [`super::sizing::MAX_INCREMENT`]; the work is O(depth · incr) when
    /// buckets collide.
    pub fn incrby(&mut self, item: &[u8], incr: u32) -> Result<Option<Box<[u8]>>, AddError> {
        if u32::try_from(item.len()).is_err() {
            return Err(AddError::ItemTooLong);
        }
        let fp = fingerprint(item);
        let floor = self.heap.first().map_or(0, |s| s.count);
        let mut maxc = 0u32;
        // The rows in groups of LANES: a group's buckets are located, then
        // all requested from memory, then updated in row order, so their
        // cache misses (the buckets of a sketch outgrow L1 quickly, and the
        // server's own work evicts them between commands) overlap instead
        // of following one another.
        let mut indexes = [0usize; LANES];
        let mut first = 0u32;
        while first < self.depth {
            let n = (self.depth - first).min(LANES as u32);
            let group = &mut indexes[..n as usize];
            self.bucket_indexes(item, first, group);
            for &index in group.iter() {
                self.buckets.prefetch_byte(index * BUCKET_BYTES as usize);
            }
            for (l, &index) in group.iter().enumerate() {
                let row = first + l as u32;
                let (owner, count) = self.bucket(index);
                if count == 0 {
                    self.set_bucket(index, fp, incr);
                    maxc = maxc.max(incr);
                } else if owner == fp {
                    let count = count.wrapping_add(incr);
                    self.set_count(index, count);
                    maxc = maxc.max(count);
                } else {
                    let column = (index - row as usize * self.width as usize) as u32;
                    if let Some(taken) = self.decay_bucket(fp, row, column, count, incr) {
                        self.set_bucket(index, fp, taken);
                        maxc = maxc.max(taken);
                    }
                }
            }
            first += n;
        }
        if maxc < floor {
            return Ok(None);
        }
        Ok(match find(&self.heap, fp, item) {
            Some(slot) => {
                self.heap[slot].count = maxc;
                sift_down(&mut self.heap, slot);
                None
            }
            None => {
                let old = std::mem::replace(&mut self.heap[0], HeapSlot::new(fp, item, maxc));
                sift_down(&mut self.heap, 0);
                old.item
            }
        })
    }

    /// The units of `incr` meet a bucket at `count` owned by another item:
    /// each decrements it with the decay probability; the unit that takes
    /// it to 0 makes the item its owner with the units left, this one
    /// included (returned). Otherwise the decremented count is stored.
    fn decay_bucket(
        &mut self,
        fp: u32,
        row: u32,
        column: u32,
        count: u32,
        incr: u32,
    ) -> Option<u32> {
        let index = (u64::from(row) * u64::from(self.width) + u64::from(column)) as usize;
        let mut now = count;
        for unit in (1..=incr).rev() {
            // Decides `coin < probability(now)`; the bound spares the exact
            // probability's `pow` calls unless the coin is below it. A
            // bound of 1 is decay 1: p = 1, no coin drawn.
            let bound = self.table.bound(now);
            let hit = bound >= 1.0 || {
                let c = coin(Draw {
                    counter: self.draws,
                    fp,
                    row,
                    column,
                    count: now,
                    unit,
                });
                self.draws = self.draws.wrapping_add(1);
                c < bound && (now < 256 || c < self.table.probability(now))
            };
            if hit {
                now -= 1;
                if now == 0 {
                    return Some(unit);
                }
            }
        }
        if now != count {
            self.set_count(index, now);
        }
        None
    }

    /// TOPK.QUERY: whether `item` is in the heap (count-0 records too).
    pub fn query(&self, item: &[u8]) -> bool {
        find(&self.heap, fingerprint(item), item).is_some()
    }

    /// TOPK.COUNT (spec §4.6): the largest count among the item's buckets
    /// that carry its fingerprint, counting only those at least the heap's
    /// minimum when the item is in the heap; 0 if none.
    pub fn count(&self, item: &[u8]) -> u32 {
        let fp = fingerprint(item);
        let floor = self.heap.first().map_or(0, |s| s.count);
        let in_heap = self.query(item);
        (0..self.depth)
            .map(|row| self.bucket(self.bucket_of(item, row).0))
            .filter(|&(owner, count)| owner == fp && (!in_heap || count >= floor))
            .map(|(_, count)| count)
            .max()
            .unwrap_or(0)
    }

    /// TOPK.LIST: the heap's records by count, largest first, equal counts
    /// in array order (2.8.2's stable sort), up to the first count 0.
    pub fn list(&self) -> Vec<&HeapSlot> {
        let mut slots: Vec<&HeapSlot> = self.heap.iter().collect();
        slots.sort_by_key(|s| std::cmp::Reverse(s.count));
        let end = slots
            .iter()
            .position(|s| s.count == 0)
            .unwrap_or(slots.len());
        slots.truncate(end);
        slots
    }

    /// What MEMORY USAGE reports (see [`memory_usage`]).
    pub fn memory_usage(&self) -> u64 {
        memory_usage(self.k, self.width, self.depth)
    }

    /// The bytes this value really holds: the struct, the buckets, the
    /// heap records and the items' bytes.
    pub fn allocated_bytes(&self) -> u64 {
        let items: usize = self
            .heap
            .iter()
            .filter_map(|s| s.item())
            .map(<[u8]>::len)
            .sum();
        (std::mem::size_of::<TopK>()
            + self.buckets.len()
            + self.heap.capacity() * std::mem::size_of::<HeapSlot>()
            + items) as u64
    }

    /// Hands the bucket array to `relocate` (active defragmentation), which
    /// may move it but must keep its size and content.
    pub fn relocate_buckets(&mut self, relocate: impl FnOnce(BitArray) -> BitArray) {
        let len = self.buckets.len();
        let empty = BitArray::zeroed(0).expect("an empty array needs no memory");
        let moved = relocate(std::mem::replace(&mut self.buckets, empty));
        assert_eq!(moved.len(), len, "relocation must keep the size");
        self.buckets = moved;
    }

    /// An identical copy (COPY), the guard asked first.
    pub fn try_clone(&self, guard: &dyn AllocGuard) -> Result<TopK, CreateError> {
        guard
            .admit(AllocRequest {
                bytes: self.buckets.len() as u64 + u64::from(self.k) * 24,
                filter_size_after: self.memory_usage(),
            })
            .map_err(CreateError::Refused)?;
        let buckets = self.buckets.try_clone().map_err(CreateError::Alloc)?;
        let mut heap = empty_heap(self.k).map_err(CreateError::Alloc)?;
        heap.clone_from_slice(&self.heap);
        Ok(Self::from_parts(self.params(), buckets, heap, self.draws))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;

    fn sketch(k: u32, width: u32, depth: u32, decay: f64) -> TopK {
        let params = Params {
            k,
            width,
            depth,
            decay,
        };
        TopK::new(params, &Unguarded).unwrap()
    }

    fn listed(s: &TopK) -> Vec<(Vec<u8>, u32)> {
        s.list()
            .iter()
            .map(|h| (h.item().unwrap_or_default().to_vec(), h.count()))
            .collect()
    }

    /// §4.7: the collision-free worked example.
    #[test]
    fn worked_example() {
        let mut s = sketch(2, 1000, 3, 0.9);
        let replies: Vec<_> = ["foo", "bar", "foo", "baz", "baz", "baz", "qux"]
            .map(|i| s.add(i.as_bytes()).unwrap())
            .into_iter()
            .collect();
        assert_eq!(replies[3].as_deref(), Some(b"bar".as_slice()));
        assert_eq!(replies.iter().filter(|r| r.is_some()).count(), 1);
        assert_eq!(
            s.incrby(b"qux", 5).unwrap().as_deref(),
            Some(b"foo".as_slice())
        );
        assert_eq!(s.incrby(b"zero", 0).unwrap(), None);
        assert_eq!(listed(&s), [(b"qux".to_vec(), 6), (b"baz".to_vec(), 3)]);
        assert_eq!(s.draws(), 0);
    }

    /// §4.3: ties expel the minimum; decay 1 always decrements.
    #[test]
    fn decay_one_is_deterministic() {
        let mut s = sketch(4, 2, 2, 1.0);
        let replies: Vec<_> = ["p", "q", "r", "s", "t", "p", "q", "p"]
            .iter()
            .map(|i| s.add(i.as_bytes()).unwrap().map(|b| b.to_vec()))
            .collect();
        let expected: Vec<Option<Vec<u8>>> = vec![
            None,
            None,
            None,
            None,
            Some(b"q".to_vec()),
            None,
            Some(b"s".to_vec()),
            None,
        ];
        assert_eq!(replies, expected);
        assert_eq!(
            listed(&s),
            [
                (b"t".to_vec(), 1),
                (b"q".to_vec(), 1),
                (b"r".to_vec(), 1),
                (b"p".to_vec(), 1)
            ]
        );
        assert_eq!(s.draws(), 0);
    }

    /// §4.3: INCRBY 0 enters a heap with free slots at count 0: QUERY
    /// finds it, LIST omits it.
    #[test]
    fn incrby_zero_enters_the_heap() {
        let mut s = sketch(3, 100, 2, 0.9);
        assert_eq!(s.incrby(b"z", 0).unwrap(), None);
        assert!(s.query(b"z"));
        assert!(listed(&s).is_empty());
        assert_eq!(s.count(b"z"), 0);
        assert!(s.heap().iter().any(|h| h.item() == Some(b"z".as_slice())));
    }

    /// Bucket counts wrap at 2^32 as in 2.8.2; the heap follows.
    #[test]
    fn counts_wrap() {
        let mut s = sketch(1, 10, 1, 1.0);
        s.incrby(b"w", u32::MAX).unwrap();
        assert_eq!(s.count(b"w"), u32::MAX);
        assert_eq!(listed(&s), [(b"w".to_vec(), u32::MAX)]);
        // The bucket wraps to 1, below the heap's minimum: the heap keeps
        // the old count, and COUNT ignores a bucket below it.
        s.incrby(b"w", 2).unwrap();
        assert_eq!(s.bucket(s.bucket_of(b"w", 0).0), (fingerprint(b"w"), 1));
        assert_eq!(s.count(b"w"), 0);
        assert_eq!(listed(&s), [(b"w".to_vec(), u32::MAX)]);
    }

    /// Items are binary-safe: "a\0b" and "a\0c" are different items and
    /// the expelled reply is whole.
    #[test]
    fn binary_items() {
        let mut s = sketch(1, 1000, 3, 0.9);
        s.add(b"a\0b").unwrap();
        assert!(s.query(b"a\0b"));
        assert!(!s.query(b"a"));
        assert!(!s.query(b"a\0c"));
        assert_eq!(s.add(b"q\0z").unwrap().as_deref(), Some(b"a\0b".as_slice()));
        assert_eq!(listed(&s), [(b"q\0z".to_vec(), 1)]);
    }

    #[test]
    fn colliding_decay_draws_coins_deterministically() {
        let run = || {
            let mut s = sketch(3, 2, 2, 0.9);
            for i in 0..500u32 {
                let item = format!("i{}", i % 7 + (i % 3) * (i % 5));
                s.add(item.as_bytes()).unwrap();
            }
            (listed(&s), s.bucket_bytes().to_vec(), s.draws())
        };
        let (a, b) = (run(), run());
        assert_eq!(a, b);
        assert!(a.2 > 0, "collisions drew coins");
    }

    /// The coin is part of the data format in effect: a replica or a
    /// reload on another build must draw the same coins. These outcomes
    /// pin it (k 3, width 4, depth 2, decay 0.9, a fixed stream).
    #[test]
    fn coin_outcomes_are_pinned() {
        let mut s = sketch(3, 4, 2, 0.9);
        for i in 0..2000u32 {
            let item = format!("x{}", (i * 7919) % 23 % (1 + i % 11));
            s.incrby(item.as_bytes(), i % 3).unwrap();
        }
        let got: Vec<(String, u32)> = listed(&s)
            .into_iter()
            .map(|(i, c)| (String::from_utf8(i).unwrap(), c))
            .collect();
        let expected = [("x0", 576), ("x1", 378), ("x4", 166)].map(|(i, c)| (i.to_string(), c));
        assert_eq!(got, expected);
        assert_eq!(s.draws(), 1748);
        assert_eq!(
            crate::dump_format::crc64_jones(s.bucket_bytes()),
            15699675816479220251
        );
    }

    #[test]
    fn huge_dimensions_are_refused_not_aborted() {
        let params = Params {
            k: 1,
            width: u32::MAX,
            depth: u32::MAX,
            decay: 0.9,
        };
        assert_eq!(
            TopK::new(params, &Unguarded).err(),
            Some(CreateError::Params(ParamError::InsufficientMemory))
        );
        // Fits the address space, not this machine: the allocator says no.
        let params = Params {
            k: u32::MAX,
            width: u32::MAX,
            depth: 1 << 20,
            decay: 0.9,
        };
        assert!(matches!(
            TopK::new(params, &Unguarded),
            Err(CreateError::Alloc(_))
        ));
    }

    #[test]
    fn memory_usage_is_2_8_2s() {
        assert_eq!(memory_usage(10, 8, 7), 2776);
        assert_eq!(sketch(10, 8, 7, 0.9).memory_usage(), 2776);
    }

    #[test]
    fn clone_is_identical() {
        let mut s = sketch(3, 4, 2, 0.8);
        for i in 0..40u8 {
            s.add(&[i % 9]).unwrap();
        }
        let c = s.try_clone(&Unguarded).unwrap();
        assert_eq!(c.heap(), s.heap());
        assert_eq!(c.bucket_bytes(), s.bucket_bytes());
        assert_eq!(c.draws(), s.draws());
    }
}
