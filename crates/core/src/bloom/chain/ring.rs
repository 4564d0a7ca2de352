//! The items in flight in the add and lookup engines: each item's hash and
//! its bit positions in the link being worked on, computed once when the
//! item's cache lines are requested and read back when it is processed.
//!
//! A batch keeps the memory system busy by requesting the lines of items
//! further down the batch while the current item is tested or set; a lone
//! item has nothing to overlap with and runs through the same code with a
//! ring of one slot and no lookahead (see [`lookahead`]).

use crate::bloom::link::Link;
use crate::hash::HashPair;

/// How many items ahead of the one processed a batch requests lines. With
/// about 10 lines per item, 4 items keep some 40 misses queued: more than
/// the core can have in flight, so the queue never runs dry, and few
/// enough that the lines are still cached when their item comes.
pub const AHEAD: usize = 4;

/// Positions per item a slot holds; links with more hash functions (link
/// error rates below about 2e-10) are probed item by item, positions
/// computed as they are tested.
pub const RING_HASHES: usize = 32;

/// Slots of a batch's ring: the staged lookup spans `FIRST_LINE_AHEAD`
/// items plus the one processed (see `lookup`). A power of two, so the
/// slot is a mask.
pub const RING_ITEMS: usize = 32;
const _: () = assert!(RING_ITEMS > AHEAD && RING_ITEMS.is_power_of_two());

/// How far ahead an engine running with a ring of `slots` slots requests
/// lines, for a pipeline depth of `depth` items: at most `slots - 1`, so
/// that a slot is never refilled before its item is processed. With one
/// slot (a lone item) nothing is requested ahead, and the engines skip the
/// prefetches that would only precede the reads by a few instructions.
#[inline(always)]
pub const fn lookahead(depth: usize, slots: usize) -> usize {
    if depth < slots {
        depth
    } else {
        slots - 1
    }
}

/// `SLOTS` items in flight: item `i` in slot `i % SLOTS`.
pub struct Ring<const SLOTS: usize> {
    /// Positions per item in the link the ring was made for.
    pub k: usize,
    hashes: [HashPair; SLOTS],
    slots: [[u64; RING_HASHES]; SLOTS],
}

impl<const SLOTS: usize> Ring<SLOTS> {
    /// A ring for `link`, or `None` when its items have more positions
    /// than a slot holds.
    #[inline(always)]
    pub fn for_link(link: &Link) -> Option<Self> {
        let k = link.hashes as usize;
        (k <= RING_HASHES).then_some(Ring {
            k,
            hashes: [HashPair { a: 0, b: 0 }; SLOTS],
            slots: [[0; RING_HASHES]; SLOTS],
        })
    }

    /// Records item `i`'s hash and computes its positions in `link` (the
    /// link the ring was made for).
    #[inline(always)]
    pub fn fill(&mut self, link: &Link, i: usize, h: HashPair) -> &[u64] {
        self.hashes[i % SLOTS] = h;
        let slot = &mut self.slots[i % SLOTS][..self.k];
        link.positions_into(h, slot);
        slot
    }

    /// Records item `i`'s hash and computes only its first position, where
    /// every lookup starts (most lookups of absent items stop there).
    #[inline(always)]
    pub fn fill_first(&mut self, link: &Link, i: usize, h: HashPair) -> u64 {
        self.hashes[i % SLOTS] = h;
        let slot = &mut self.slots[i % SLOTS][..1];
        link.positions_into(h, slot);
        slot[0]
    }

    #[inline(always)]
    pub fn hash(&self, i: usize) -> HashPair {
        self.hashes[i % SLOTS]
    }

    /// Item `i`'s first position (after [`Ring::fill_first`] or [`Ring::fill`]).
    #[inline(always)]
    pub fn first(&self, i: usize) -> u64 {
        self.slots[i % SLOTS][0]
    }

    /// Item `i`'s positions (after [`Ring::fill`]).
    #[inline(always)]
    pub fn get(&self, i: usize) -> &[u64] {
        &self.slots[i % SLOTS][..self.k]
    }
}
