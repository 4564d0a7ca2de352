//! The Cuckoo filter: a chain of sub-filters (oldest first), each a flat
//! array of `N × bs` one-byte slots (bucket `b` is bytes `b·bs .. b·bs+bs`,
//! a slot holds a fingerprint or 0), with RedisBloom 2.8.2's placement,
//! kick-out, delete and compaction orders, so that the same commands leave
//! the same bytes (what SCANDUMP and DUMP carry).
//!
//! Choices where 2.8.2 is defective (its behaviour in brackets):
//! - Bucket offsets and the kick-out use 64-bit arithmetic [offsets wrap
//!   modulo 2^32 in sub-filters over 4 GiB; a kick-out in a sub-filter of
//!   2^32 or more buckets divides by zero]. Bytes are identical for every
//!   sub-filter 2.8.2 handles correctly.
//! - Every allocation is fallible and goes through an [`AllocGuard`]; a
//!   sub-filter that cannot be had is "growth failed" with the filter
//!   unchanged [7.0.15 aborts the server].
//! - Counters wrap like 2.8.2's unsigned C fields (a crafted value of
//!   2^64 − 1 plus one add is 0), never panic.
//!
//! Kept although odd, because clients or bytes show it: duplicates are
//! stored as separate copies; CF.COUNT counts a bucket twice when both of an
//! item's buckets are the same one; the `Maximum expansions reached` limit is
//! checked once per command by the caller ([`CuckooFilter::at_expansion_limit`]),
//! so one CF.INSERT may grow past it; CF.ADD never answers "exists".

use super::hash::{alt_bucket, CuckooHash};
use super::sizing::{
    reported_size, sub_filter_buckets, sub_filter_bytes, CuckooParams, CuckooShape, SizingError,
    MAX_BUCKETS, MAX_SUB_FILTERS,
};
use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal};
use crate::bitarray::{AllocError, BitArray};

/// One sub-filter: `buckets` (a power of two) buckets of the filter's
/// bucket size.
#[derive(Debug)]
pub struct SubFilter {
    buckets: u64,
    mask: u64,
    data: BitArray,
}

impl SubFilter {
    /// A zero-filled sub-filter.
    pub fn zeroed(buckets: u64, bucket_size: u8) -> Result<SubFilter, AllocError> {
        let bytes = sub_filter_bytes(buckets, bucket_size).ok_or(AllocError { bytes: u64::MAX })?;
        Ok(SubFilter::with_data(buckets, BitArray::zeroed(bytes)?))
    }

    /// A sub-filter over loaded bytes. The caller has checked that
    /// `buckets` is a power of two ≤ [`MAX_BUCKETS`] and that `data` holds
    /// `buckets × bucket size` bytes.
    pub(crate) fn with_data(buckets: u64, data: BitArray) -> SubFilter {
        debug_assert!(buckets.is_power_of_two() && buckets <= MAX_BUCKETS);
        SubFilter {
            buckets,
            mask: buckets - 1,
            data,
        }
    }

    pub fn buckets(&self) -> u64 {
        self.buckets
    }

    /// `buckets - 1`: a hash masked with it is a bucket index.
    pub(super) fn mask(&self) -> u64 {
        self.mask
    }

    pub fn bytes(&self) -> u64 {
        self.data.len() as u64
    }

    /// Hands the bytes to `relocate`, which may move them to a new block
    /// of the same size and content (active defragmentation).
    pub fn relocate_data(&mut self, relocate: impl FnOnce(BitArray) -> BitArray) {
        let len = self.data.len();
        let empty = BitArray::zeroed(0).expect("an empty array needs no memory");
        let moved = relocate(std::mem::replace(&mut self.data, empty));
        assert_eq!(moved.len(), len, "relocation must keep the size");
        self.data = moved;
    }

    /// The slots, bucket after bucket (what SCANDUMP and RDB carry).
    pub fn as_bytes(&self) -> &[u8] {
        self.data.as_bytes()
    }

    /// The slots, writable: LOADCHUNK writes raw bytes, unchecked like
    /// RedisBloom (a fingerprint is any non-zero byte).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        self.data.as_bytes_mut()
    }

    fn range(&self, bucket: u64, bs: usize) -> std::ops::Range<usize> {
        let start = bucket as usize * bs;
        start..start + bs
    }

    fn bucket(&self, bucket: u64, bs: usize) -> &[u8] {
        &self.data.as_bytes()[self.range(bucket, bs)]
    }

    fn bucket_mut(&mut self, bucket: u64, bs: usize) -> &mut [u8] {
        let r = self.range(bucket, bs);
        &mut self.data.as_bytes_mut()[r]
    }

    /// Whether `bucket` has an empty slot.
    pub(super) fn has_room(&self, bucket: u64, bs: usize) -> bool {
        self.bucket(bucket, bs).contains(&0)
    }

    /// Puts `fp` in the first empty slot of `bucket`.
    pub(super) fn place(&mut self, bucket: u64, bs: usize, fp: u8) -> bool {
        match self.bucket_mut(bucket, bs).iter_mut().find(|s| **s == 0) {
            Some(slot) => {
                *slot = fp;
                true
            }
            None => false,
        }
    }

    /// Puts `fp` in bucket i1, else i2 (first empty slot of each).
    fn place_either(&mut self, h: CuckooHash, bs: usize) -> bool {
        self.place(h.i1(self.mask), bs, h.fp) || self.place(h.i2(self.mask), bs, h.fp)
    }

    /// Whether bucket i1 or i2 holds the fingerprint. Both buckets are
    /// read, without a branch between them, so that their two cache
    /// misses overlap.
    #[inline(always)]
    fn holds(&self, h: CuckooHash, bs: usize) -> bool {
        let bytes = self.data.as_bytes();
        let (b1, b2) = (h.i1(self.mask) as usize * bs, h.i2(self.mask) as usize * bs);
        bucket_holds(bytes, b1, bs, h.fp) | bucket_holds(bytes, b2, bs, h.fp)
    }

    /// Requests both of the item's buckets (lines about to be read).
    #[inline(always)]
    fn prefetch_buckets(&self, h: CuckooHash, bs: usize) {
        self.data.prefetch_byte(h.i1(self.mask) as usize * bs);
        self.data.prefetch_byte(h.i2(self.mask) as usize * bs);
    }

    /// Requests both of the item's buckets, to be written.
    #[inline(always)]
    fn prefetch_buckets_write(&self, h: CuckooHash, bs: usize) {
        let at = |b: u64| (b as usize * bs) as u64 * 8;
        self.data
            .prefetch_many_write(&[at(h.i1(self.mask)), at(h.i2(self.mask))]);
    }

    fn copies(&self, h: CuckooHash, bs: usize) -> u64 {
        let n = |b| self.bucket(b, bs).iter().filter(|&&s| s == h.fp).count() as u64;
        n(h.i1(self.mask)) + n(h.i2(self.mask))
    }

    /// Clears the first slot holding `fp`, bucket i1 then i2.
    fn remove(&mut self, h: CuckooHash, bs: usize) -> bool {
        for b in [h.i1(self.mask), h.i2(self.mask)] {
            if let Some(slot) = self.bucket_mut(b, bs).iter_mut().find(|s| **s == h.fp) {
                *slot = 0;
                return true;
            }
        }
        false
    }

    /// RedisBloom's kick-out: the new fingerprint takes slot 0
    /// of bucket i1, the evicted one moves to its other bucket, taking the
    /// next slot index there when that bucket is full, and so on for at most
    /// `max_iterations` steps; the victim slot index advances once per step
    /// and is not reset per bucket. On failure every swap is undone in
    /// reverse order, so the sub-filter is unchanged.
    pub(super) fn kick_out(&mut self, h: CuckooHash, bs: usize, max_iterations: u16) -> bool {
        let mask = self.mask;
        let slots = self.data.as_bytes_mut();
        let mut cur = h.fp;
        let mut b = h.i1(mask);
        let mut v = 0usize;
        for _ in 0..max_iterations {
            std::mem::swap(&mut cur, &mut slots[b as usize * bs + v]);
            b = alt_bucket(cur, b, mask);
            let start = b as usize * bs;
            if let Some(slot) = slots[start..start + bs].iter_mut().find(|s| **s == 0) {
                *slot = cur;
                return true;
            }
            v = (v + 1) % bs;
        }
        for _ in 0..max_iterations {
            v = (v + bs - 1) % bs;
            b = alt_bucket(cur, b, mask);
            std::mem::swap(&mut cur, &mut slots[b as usize * bs + v]);
        }
        debug_assert_eq!(cur, h.fp, "the rollback restores the sub-filter");
        false
    }
}

/// Whether `bytes[start..start + bs]` holds `fp`. Buckets of 2, 4 and 8
/// slots are read as one word and compared at once (SWAR: a byte of
/// `word ^ fp…fp` is zero where a slot holds `fp`), with no branch per slot.
#[inline(always)]
fn bucket_holds(bytes: &[u8], start: usize, bs: usize, fp: u8) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let word = match bs {
        2 => u64::from(u16::from_le_bytes([bytes[start], bytes[start + 1]])),
        4 => {
            let b: [u8; 4] = bytes[start..start + 4].try_into().expect("4 bytes");
            u64::from(u32::from_le_bytes(b))
        }
        8 => {
            let b: [u8; 8] = bytes[start..start + 8].try_into().expect("8 bytes");
            u64::from_le_bytes(b)
        }
        _ => return bytes[start..start + bs].contains(&fp),
    };
    // The bytes past a bucket of 2 or 4 are 0 in `word`, so `fp` (never 0)
    // in `x`: only the bucket's own slots can match. The zero-byte test
    // is exact on whether some byte is zero.
    let x = word ^ (LO * u64::from(fp));
    x.wrapping_sub(LO) & !x & HI != 0
}

/// Items hashed and requested ahead of their probe in a batch.
const AHEAD: usize = 8;
/// Sub-filters whose buckets a batch requests ahead (the first ones
/// probed); a filter that expanded further has its other sub-filters read
/// when reached.
const PREFETCHED_SUBS: usize = 4;

/// What an insert did. The module maps each to its reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertOutcome {
    /// Stored (`1`).
    Inserted,
    /// Unique insert only: the fingerprint is already in one of the item's
    /// buckets of some sub-filter (`0`; false positives included).
    Exists,
    /// Expansion 0 and no room (`Filter is full` / `-1`).
    NoRoom,
    /// A new sub-filter was needed and could not be had (`ERR Insufficient
    /// memory` / `-1`); the filter is unchanged.
    GrowthFailed(GrowError),
}

/// Why a sub-filter could not be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowError {
    /// Its bucket count passes [`MAX_BUCKETS`] or overflows.
    TooLarge,
    /// The filter already has [`MAX_SUB_FILTERS`] sub-filters.
    TooMany,
    Refused(Refusal),
    Alloc(AllocError),
}

/// Why a filter could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateError {
    Sizing(SizingError),
    Refused(Refusal),
    Alloc(AllocError),
}

/// The two compaction modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactMode {
    /// CF.COMPACT: try every sub-filter even after one could not be emptied.
    Continue,
    /// The automatic compaction after a delete: stop at the first
    /// sub-filter that cannot be emptied.
    Stop,
}

/// A Cuckoo filter (type `MBbloomCF`).
///
/// Invariants every constructor and loader keeps: at least one sub-filter,
/// bucket size ≥ 1, every bucket count a power of two of at most
/// [`MAX_BUCKETS`], bucket counts non-decreasing from the oldest sub-filter
/// to the newest, and an expansion that is 0 or a power of two. Filters
/// made by commands and loaded ones also have `N0 × E^i` buckets in
/// sub-filter `i` and max iterations ≥ 1 (what the AOF rewrite's
/// CF.LOADCHUNK header rebuilds).
#[derive(Debug)]
pub struct CuckooFilter {
    bucket_size: u8,
    max_iterations: u16,
    expansion: u16,
    base_buckets: u64,
    items: u64,
    deletes: u64,
    subs: Vec<SubFilter>,
}

/// The fields of a filter as a loader validated them.
pub(crate) struct Parts {
    pub bucket_size: u8,
    pub max_iterations: u16,
    pub expansion: u16,
    pub base_buckets: u64,
    pub items: u64,
    pub deletes: u64,
    pub subs: Vec<SubFilter>,
}

impl CuckooFilter {
    /// A new, empty filter (CF.RESERVE, or the defaults for an add that
    /// creates the key).
    pub fn new(params: &CuckooParams, guard: &dyn AllocGuard) -> Result<CuckooFilter, CreateError> {
        let shape = params.shape().map_err(CreateError::Sizing)?;
        CuckooFilter::with_shape(&shape, guard)
    }

    pub fn with_shape(
        shape: &CuckooShape,
        guard: &dyn AllocGuard,
    ) -> Result<CuckooFilter, CreateError> {
        let bytes = shape.first_bytes();
        guard
            .admit(AllocRequest {
                bytes,
                filter_size_after: reported_size(1, bytes),
            })
            .map_err(CreateError::Refused)?;
        let first =
            SubFilter::zeroed(shape.base_buckets, shape.bucket_size).map_err(CreateError::Alloc)?;
        Ok(CuckooFilter {
            bucket_size: shape.bucket_size,
            max_iterations: shape.max_iterations,
            expansion: shape.expansion,
            base_buckets: shape.base_buckets,
            items: 0,
            deletes: 0,
            subs: vec![first],
        })
    }

    pub(crate) fn from_parts(p: Parts) -> CuckooFilter {
        debug_assert!(!p.subs.is_empty() && p.bucket_size > 0);
        CuckooFilter {
            bucket_size: p.bucket_size,
            max_iterations: p.max_iterations,
            expansion: p.expansion,
            base_buckets: p.base_buckets,
            items: p.items,
            deletes: p.deletes,
            subs: p.subs,
        }
    }

    pub fn bucket_size(&self) -> u8 {
        self.bucket_size
    }

    pub fn max_iterations(&self) -> u16 {
        self.max_iterations
    }

    /// The stored expansion (a power of two, or 0).
    pub fn expansion(&self) -> u16 {
        self.expansion
    }

    /// CF.INFO `Number of buckets`: the first sub-filter's, never changes.
    pub fn base_buckets(&self) -> u64 {
        self.base_buckets
    }

    /// CF.INFO `Number of items inserted`: copies stored minus copies deleted.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// CF.INFO `Number of items deleted`: deletes since the last compaction.
    pub fn deletes(&self) -> u64 {
        self.deletes
    }

    /// CF.INFO `Number of filters`.
    pub fn sub_filter_count(&self) -> u64 {
        self.subs.len() as u64
    }

    pub fn sub_filters(&self) -> &[SubFilter] {
        &self.subs
    }

    pub fn sub_filters_mut(&mut self) -> &mut [SubFilter] {
        &mut self.subs
    }

    /// Bytes of all sub-filters.
    pub fn total_bytes(&self) -> u64 {
        self.subs.iter().map(SubFilter::bytes).sum()
    }

    /// CF.INFO `Size` and the type's memory usage.
    pub fn reported_size(&self) -> u64 {
        reported_size(self.sub_filter_count(), self.total_bytes())
    }

    /// CF.INFO's eight pairs, labels and order as RedisBloom replies them
    /// (labels are simple strings, values integers).
    pub fn info(&self) -> [(&'static str, u64); 8] {
        [
            ("Size", self.reported_size()),
            ("Number of buckets", self.base_buckets),
            ("Number of filters", self.sub_filter_count()),
            ("Number of items inserted", self.items),
            ("Number of items deleted", self.deletes),
            ("Bucket size", u64::from(self.bucket_size)),
            ("Expansion rate", u64::from(self.expansion)),
            ("Max iterations", u64::from(self.max_iterations)),
        ]
    }

    /// CF.DEBUG's reply (one bulk string).
    pub fn debug_line(&self) -> String {
        format!(
            "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
            self.bucket_size,
            self.base_buckets,
            self.items,
            self.deletes,
            self.subs.len(),
            self.max_iterations,
            self.expansion
        )
    }

    /// Whether an add command must answer `Maximum expansions reached`
    /// (`CF_MAX_EXPANSIONS`, checked once at the start of the command).
    pub fn at_expansion_limit(&self, max_expansions: u64) -> bool {
        self.sub_filter_count() >= max_expansions
    }

    pub(super) fn bs(&self) -> usize {
        usize::from(self.bucket_size)
    }

    /// Buckets of the next sub-filter: `N0 × E^count`, as 2.8.2 computes
    /// it, but never fewer than the newest sub-filter has. Compaction needs
    /// bucket counts that do not decrease from older to newer sub-filters
    /// (it places a fingerprint of bucket `b` at `b mod N` of an older one);
    /// every loader refuses sizes other than `N0 × E^i` (see `rdb.rs`), so
    /// the bound is a safeguard, never in effect.
    pub fn next_sub_filter_buckets(&self) -> Result<u64, GrowError> {
        if self.sub_filter_count() >= MAX_SUB_FILTERS {
            return Err(GrowError::TooMany);
        }
        let newest = self.subs.last().map_or(0, SubFilter::buckets);
        let n = sub_filter_buckets(self.base_buckets, self.expansion, self.subs.len() as u32)
            .ok_or(GrowError::TooLarge)?
            .max(newest);
        sub_filter_bytes(n, self.bucket_size).ok_or(GrowError::TooLarge)?;
        Ok(n)
    }

    pub(super) fn grow(&mut self, guard: &dyn AllocGuard) -> Result<(), GrowError> {
        let n = self.next_sub_filter_buckets()?;
        let bytes = n * u64::from(self.bucket_size);
        guard
            .admit(AllocRequest {
                bytes,
                filter_size_after: self
                    .reported_size()
                    .saturating_add(super::sizing::SUB_FILTER_OVERHEAD)
                    .saturating_add(bytes),
            })
            .map_err(GrowError::Refused)?;
        let sub = SubFilter::zeroed(n, self.bucket_size).map_err(GrowError::Alloc)?;
        self.subs.push(sub);
        Ok(())
    }

    /// CF.ADD / CF.INSERT: a free slot in bucket i1 then i2 of
    /// the newest sub-filter, then of older ones; else a kick-out in the
    /// newest; else a new sub-filter (unless the expansion is 0), where the
    /// item then takes bucket i1, slot 0.
    pub fn insert(&mut self, h: CuckooHash, guard: &dyn AllocGuard) -> InsertOutcome {
        let bs = self.bs();
        self.prefetch_for_insert(h, bs);
        loop {
            if self.subs.iter_mut().rev().any(|s| s.place_either(h, bs)) {
                break;
            }
            let newest = self.subs.last_mut().expect("a filter has a sub-filter");
            if newest.kick_out(h, bs, self.max_iterations) {
                break;
            }
            if self.expansion == 0 {
                return InsertOutcome::NoRoom;
            }
            if let Err(e) = self.grow(guard) {
                return InsertOutcome::GrowthFailed(e);
            }
        }
        self.items = self.items.wrapping_add(1);
        InsertOutcome::Inserted
    }

    /// CF.ADDNX / CF.INSERTNX: [`InsertOutcome::Exists`] when the item looks
    /// present, else [`CuckooFilter::insert`].
    pub fn insert_unique(&mut self, h: CuckooHash, guard: &dyn AllocGuard) -> InsertOutcome {
        if self.contains(h) {
            InsertOutcome::Exists
        } else {
            self.insert(h, guard)
        }
    }

    /// CF.EXISTS: the fingerprint is in bucket i1 or i2 of some sub-filter.
    pub fn contains(&self, h: CuckooHash) -> bool {
        let bs = self.bs();
        if let [only] = self.subs.as_slice() {
            return only.holds(h, bs);
        }
        self.prefetch_for_lookup(h, bs);
        self.subs.iter().any(|s| s.holds(h, bs))
    }

    #[inline(always)]
    fn prefetch_for_lookup(&self, h: CuckooHash, bs: usize) {
        for s in self.subs.iter().take(PREFETCHED_SUBS) {
            s.prefetch_buckets(h, bs);
        }
    }

    #[inline(always)]
    fn prefetch_for_insert(&self, h: CuckooHash, bs: usize) {
        for s in self.subs.iter().rev().take(PREFETCHED_SUBS) {
            s.prefetch_buckets_write(h, bs);
        }
    }

    /// CF.MEXISTS: looks `n` items up, `hash(j)` giving item `j`'s hash
    /// (asked once, in order) and `done(j, found)` told each answer in
    /// order. Items are hashed and their buckets requested [`AHEAD`] items
    /// before they are probed, so that the misses of several items overlap;
    /// the answers are those of [`CuckooFilter::contains`].
    pub fn contains_batch(
        &self,
        n: usize,
        mut hash: impl FnMut(usize) -> CuckooHash,
        mut done: impl FnMut(usize, bool),
    ) {
        let bs = self.bs();
        let mut ring = [CuckooHash { hash: 0, fp: 0 }; AHEAD];
        for (j, slot) in ring.iter_mut().enumerate().take(n) {
            *slot = hash(j);
            self.prefetch_for_lookup(*slot, bs);
        }
        for i in 0..n {
            let h = ring[i % AHEAD];
            if i + AHEAD < n {
                let next = hash(i + AHEAD);
                self.prefetch_for_lookup(next, bs);
                ring[i % AHEAD] = next;
            }
            done(i, self.subs.iter().any(|s| s.holds(h, bs)));
        }
    }

    /// CF.INSERT / CF.INSERTNX: inserts `n` items in order (`unique`: as
    /// [`CuckooFilter::insert_unique`], else as [`CuckooFilter::insert`]),
    /// `hash(j)` giving item `j`'s hash (asked once, in order) and
    /// `done(j, outcome)` told each outcome in order. Items are hashed and
    /// their buckets requested [`AHEAD`] items early; the bytes and outcomes
    /// are those of inserting the items one by one.
    pub fn insert_batch(
        &mut self,
        n: usize,
        unique: bool,
        guard: &dyn AllocGuard,
        mut hash: impl FnMut(usize) -> CuckooHash,
        mut done: impl FnMut(usize, InsertOutcome),
    ) {
        let bs = self.bs();
        let mut ring = [CuckooHash { hash: 0, fp: 0 }; AHEAD];
        for (j, slot) in ring.iter_mut().enumerate().take(n) {
            *slot = hash(j);
            self.prefetch_for_insert(*slot, bs);
        }
        for i in 0..n {
            let h = ring[i % AHEAD];
            if i + AHEAD < n {
                let next = hash(i + AHEAD);
                self.prefetch_for_insert(next, bs);
                ring[i % AHEAD] = next;
            }
            let outcome = if unique {
                self.insert_unique(h, guard)
            } else {
                self.insert(h, guard)
            };
            done(i, outcome);
        }
    }

    /// CF.COUNT: copies of the fingerprint in both buckets of every
    /// sub-filter, a bucket counted twice when i1 = i2 (as 2.8.2 answers).
    pub fn count(&self, h: CuckooHash) -> u64 {
        let bs = self.bs();
        self.subs.iter().map(|s| s.copies(h, bs)).sum()
    }

    /// CF.DEL: clears one copy, newest sub-filter first, bucket
    /// i1 then i2; then, with more than one sub-filter and more deletes than
    /// a tenth of the items, compacts in [`CompactMode::Stop`] mode.
    pub fn delete(&mut self, h: CuckooHash) -> bool {
        let bs = self.bs();
        self.prefetch_for_insert(h, bs);
        if !self.subs.iter_mut().rev().any(|s| s.remove(h, bs)) {
            return false;
        }
        self.items = self.items.wrapping_sub(1);
        self.deletes = self.deletes.wrapping_add(1);
        if self.subs.len() > 1 && self.deletes as f64 > self.items as f64 * 0.1 {
            self.compact(CompactMode::Stop);
        }
        true
    }

    /// Compaction: from the newest sub-filter down to the second,
    /// moves every fingerprint into the first older sub-filter (oldest
    /// first) with room in one of its two buckets there, both recomputed
    /// from the bucket index alone; frees the newest sub-filter when it was
    /// emptied. Only a trailing sub-filter is freed; an emptied one in the
    /// middle stays. Resets the delete counter; the item counter stays.
    /// Linear in the filter's size (see `cuckoo/compact.rs`).
    pub fn compact(&mut self, mode: CompactMode) {
        let bs = self.bs();
        super::compact::compact(&mut self.subs, bs, mode);
        self.deletes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;

    fn reserve(
        capacity: u64,
        bucket_size: u8,
        max_iterations: u16,
        expansion: u16,
    ) -> CuckooFilter {
        CuckooFilter::new(
            &CuckooParams {
                capacity,
                bucket_size,
                max_iterations,
                expansion,
            },
            &Unguarded,
        )
        .unwrap()
    }

    #[test]
    fn spec_kickout_example() {
        let mut f = reserve(32, 2, 20, 1);
        for i in 0..=21 {
            let h = CuckooHash::of(i.to_string().as_bytes());
            assert_eq!(f.insert(h, &Unguarded), InsertOutcome::Inserted);
        }
        let want = "c6216581620a13002c146100d40000002281dd000000b2e3d6006700e46caead";
        let got: String = f.subs[0]
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn info_and_debug() {
        let f = CuckooFilter::new(&CuckooParams::default(), &Unguarded).unwrap();
        assert_eq!(
            f.debug_line(),
            "bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1"
        );
        assert_eq!(f.info()[0], ("Size", 1080));
        assert_eq!(f.info()[7], ("Max iterations", 20));
    }

    #[test]
    fn count_doubles_when_buckets_coincide() {
        let mut f = reserve(4, 2, 20, 1);
        let a = CuckooHash::of(b"a");
        f.insert(a, &Unguarded);
        assert_eq!(f.count(a), 2);
    }

    #[test]
    fn bucket_words_match_byte_scans() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for bs in [1usize, 2, 3, 4, 8] {
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Slots from a few values, 0 (empty) and 0xff included.
                let pick = [0u8, 1, 0x7f, 0x80, 0xfe, 0xff];
                let bytes: Vec<u8> = (0..bs + 3)
                    .map(|k| pick[((x >> (8 * k)) % 6) as usize])
                    .collect();
                let fp = pick[1 + ((x >> 61) % 5) as usize];
                let start = (x >> 40) as usize % 4;
                let want = bytes[start..start + bs].contains(&fp);
                assert_eq!(bucket_holds(&bytes, start, bs, fp), want, "{bytes:?} {fp}");
            }
        }
    }

    /// Batches answer and store exactly what items one by one do, on filters
    /// that expand (several sub-filters, kick-outs) and on unique inserts.
    #[test]
    fn batches_match_single_items() {
        for (bs, expansion) in [(2u8, 1u16), (4, 2), (3, 1), (1, 4)] {
            let mut one = reserve(64, bs, 20, expansion);
            let mut many = reserve(64, bs, 20, expansion);
            let hashes: Vec<CuckooHash> = (0..700)
                .map(|i| CuckooHash::of(format!("item{}", i % 500).as_bytes()))
                .collect();
            for unique in [false, true] {
                let singles: Vec<InsertOutcome> = hashes
                    .iter()
                    .map(|&h| {
                        if unique {
                            one.insert_unique(h, &Unguarded)
                        } else {
                            one.insert(h, &Unguarded)
                        }
                    })
                    .collect();
                let mut batched = Vec::new();
                many.insert_batch(
                    hashes.len(),
                    unique,
                    &Unguarded,
                    |j| hashes[j],
                    |j, o| {
                        assert_eq!(j, batched.len());
                        batched.push(o);
                    },
                );
                assert_eq!(singles, batched);
            }
            assert_eq!(one.sub_filter_count(), many.sub_filter_count());
            assert!(one.sub_filter_count() > 1);
            for (a, b) in one.subs.iter().zip(&many.subs) {
                assert_eq!(a.as_bytes(), b.as_bytes());
            }
            let probes: Vec<CuckooHash> = (0..1000)
                .map(|i| CuckooHash::of(format!("item{i}").as_bytes()))
                .collect();
            for n in [0, 1, 7, 8, 9, 1000] {
                let mut found = Vec::new();
                many.contains_batch(n, |j| probes[j], |_, f| found.push(f));
                let want: Vec<bool> = probes[..n].iter().map(|&h| one.contains(h)).collect();
                assert_eq!(found, want);
            }
        }
    }

    #[test]
    fn expansion_zero_fills_up() {
        let mut f = reserve(4, 2, 20, 0);
        let mut outcomes = Vec::new();
        for i in 0..8 {
            outcomes.push(f.insert(CuckooHash::of(format!("{i}").as_bytes()), &Unguarded));
        }
        assert!(outcomes.contains(&InsertOutcome::NoRoom));
        assert_eq!(f.sub_filter_count(), 1);
    }
}
