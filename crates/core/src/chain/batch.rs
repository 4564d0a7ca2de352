//! Batches (BF.MADD, BF.MEXISTS, BF.INSERT): many items, their cache misses
//! overlapped by software pipelining.
//!
//! A lone lookup waits at least one memory round trip with nothing else to
//! do meanwhile; a batch can keep the memory system busy by requesting the lines of items
//! further down the batch while the current item is tested or set. Each
//! item is hashed and its bit positions computed once, into a small ring,
//! when its lines are requested, and read back when it is processed; the
//! caller's work per item (reading the item, replying) runs inside the
//! pipeline, while the misses of the next items are in flight.
//!
//! Adds need every line of an item, so an add requests all of them
//! `AHEAD` items early. Lookups of absent items (most lookups, in a
//! deduplication workload) usually stop at the first clear bit, so a
//! lookup is staged: the first line is requested `FIRST_LINE_AHEAD` items
//! early; `REST_AHEAD` items early that bit is read (it has arrived by
//! then) and only an item that passes it gets its other lines requested.
//! Lines an absent item would never read are not fetched, which leaves the
//! memory system to the lines that are.
//!
//! Answers and bits are exactly those of adding or testing the items one
//! by one, in order (property-tested against [`Chain::add`] and
//! [`Chain::contains`]).

use super::{in_links, AddOutcome, AllocGuard, Chain, PREFETCHED_LINKS};
use crate::hash::HashPair;
use crate::link::Link;

/// How many items ahead of the one processed a batch requests lines. With
/// about 10 lines per item, 4 items keep some 40 misses queued: more than
/// the core can have in flight, so the queue never runs dry, and few
/// enough that the lines are still cached when their item comes.
pub const AHEAD: usize = 4;

/// Positions per item the ring holds; links with more hash functions
/// (link error rates below about 2e-10) take the item-by-item path.
const RING_HASHES: usize = 32;

/// How far ahead a one-link lookup requests an item's first line, and
/// how far ahead it reads that bit (and requests the other lines). An
/// absent item needs one line, so the first stage must run far ahead to
/// keep as many misses in flight as an add's `AHEAD` items do: measured
/// side by side on a 100M filter holding 6.3M items, BF.MEXISTS×100 of
/// items a third of them present, 12 alternating rounds: 11.3 µs median
/// with 20 / 6 against 11.6 µs with 8 / 4, lower in 10 rounds of 11.
const FIRST_LINE_AHEAD: usize = 20;
const REST_AHEAD: usize = 6;

/// Items whose positions are kept: the lookup pipeline spans
/// `FIRST_LINE_AHEAD` items plus the one processed. A power of two, so the
/// slot is a mask.
const RING_ITEMS: usize = 32;
const _: () = assert!(
    RING_ITEMS > FIRST_LINE_AHEAD
        && FIRST_LINE_AHEAD > REST_AHEAD
        && RING_ITEMS > AHEAD
        && RING_ITEMS.is_power_of_two()
);

/// The items in flight: item `i` in slot `i % RING_ITEMS`, with its hash
/// and its bit positions in the link being worked on.
struct Ring {
    k: usize,
    hashes: [HashPair; RING_ITEMS],
    slots: [[u64; RING_HASHES]; RING_ITEMS],
}

impl Ring {
    /// A ring for `link`, or `None` when its items have too many positions.
    #[inline]
    fn for_link(link: &Link) -> Option<Ring> {
        let k = link.hashes as usize;
        (k <= RING_HASHES).then_some(Ring {
            k,
            hashes: [HashPair { a: 0, b: 0 }; RING_ITEMS],
            slots: [[0; RING_HASHES]; RING_ITEMS],
        })
    }

    /// Records item `i`'s hash and computes its positions in `link`.
    #[inline(always)]
    fn fill(&mut self, link: &Link, i: usize, h: HashPair) -> &[u64] {
        self.hashes[i % RING_ITEMS] = h;
        let slot = &mut self.slots[i % RING_ITEMS][..self.k];
        link.positions_into(h, slot);
        slot
    }

    #[inline(always)]
    fn hash(&self, i: usize) -> HashPair {
        self.hashes[i % RING_ITEMS]
    }

    #[inline(always)]
    fn get(&self, i: usize) -> &[u64] {
        &self.slots[i % RING_ITEMS][..self.k]
    }
}

/// Requests the first lines older links will test for `h` (see
/// [`in_links`], which starts from the same positions).
#[inline(always)]
fn prefetch_older(older: &[Link], h: HashPair) {
    for link in older.iter().rev().take(PREFETCHED_LINKS) {
        link.prefetch_head(link.head(h));
    }
}

impl Chain {
    /// Adds many items in order; `out[i]` gets item `i`'s outcome. Stops
    /// after a `Full` outcome (returns how many were processed), as BF.MADD
    /// does.
    pub fn add_many(
        &mut self,
        hashes: &[HashPair],
        guard: &dyn AllocGuard,
        out: &mut [AddOutcome],
    ) -> usize {
        if self.add_pipelined(hashes.len(), |j| hashes[j], |i, o| out[i] = o) {
            return hashes.len();
        }
        for (i, &h) in hashes.iter().enumerate() {
            out[i] = self.add(h, guard);
            if out[i] == AddOutcome::Full {
                return i + 1;
            }
        }
        hashes.len()
    }

    /// Whether the newest link can take `n` more items with none of them
    /// making it full before the last, so a batch of `n` adds needs no
    /// scale-out and never meets a full link: what [`Chain::add_pipelined`]
    /// requires.
    #[inline]
    pub fn batch_fits(&self, n: usize) -> bool {
        let newest = self.newest();
        newest.items.saturating_add(n as u64) <= newest.entries
            && newest.hashes as usize <= RING_HASHES
    }

    /// The pipelined add of `n` items, for a batch that
    /// [`Chain::batch_fits`]; false, with nothing done, for any other batch
    /// (then add item by item). `hash(j)` is asked for item `j`'s hash once,
    /// in order, `AHEAD` items before its add; `done(i, outcome)` is told
    /// each outcome in order, as soon as it is known. Whatever the callers
    /// do there (hash the next item, reply to the previous one) overlaps
    /// with the cache misses in flight.
    pub fn add_pipelined(
        &mut self,
        n: usize,
        mut hash: impl FnMut(usize) -> HashPair,
        mut done: impl FnMut(usize, AddOutcome),
    ) -> bool {
        if !self.batch_fits(n) {
            return false;
        }
        let (newest, older) = self
            .links
            .split_last_mut()
            .expect("a chain always has a link");
        let Some(mut ring) = Ring::for_link(newest) else {
            return false;
        };
        let mut request = |ring: &mut Ring, newest: &Link, j: usize| {
            let h = hash(j);
            newest.prefetch_positions_write(ring.fill(newest, j, h));
            prefetch_older(older, h);
        };
        for j in 0..n.min(AHEAD) {
            request(&mut ring, newest, j);
        }
        let mut added = 0u64;
        for i in 0..n {
            if i + AHEAD < n {
                request(&mut ring, newest, i + AHEAD);
            }
            // As in `Chain::add`: present in an older link means present;
            // else setting the bits and seeing whether one flipped answers.
            let outcome = if !older.is_empty() && in_links(older, ring.hash(i)) {
                AddOutcome::Present
            } else if newest.set_all(ring.get(i)) {
                newest.items = newest.items.wrapping_add(1);
                added += 1;
                AddOutcome::Added
            } else {
                AddOutcome::Present
            };
            done(i, outcome);
        }
        self.items = self.items.wrapping_add(added);
        true
    }

    /// Whether each item may have been added: `out[i]` for `hashes[i]`.
    pub fn contains_many(&self, hashes: &[HashPair], out: &mut [bool]) {
        self.contains_pipelined(hashes.len(), |j| hashes[j], |i, found| out[i] = found);
    }

    /// Looks `n` items up: `hash(j)` is asked for item `j`'s hash once, in
    /// order, ahead of its lookup; `done(i, found)` is told each answer in
    /// order (as in [`Chain::add_pipelined`]).
    pub fn contains_pipelined(
        &self,
        n: usize,
        mut hash: impl FnMut(usize) -> HashPair,
        mut done: impl FnMut(usize, bool),
    ) {
        match self.links.as_slice() {
            [only] => match Ring::for_link(only) {
                Some(ring) => staged_lookups(only, ring, n, hash, done),
                None => (0..n).for_each(|i| done(i, only.contains(hash(i)))),
            },
            links => {
                // Every link's first lines, `AHEAD` items early: most
                // lookups in a chain stop there in each link.
                let mut ring = [HashPair { a: 0, b: 0 }; RING_ITEMS];
                let mut request = |ring: &mut [HashPair; RING_ITEMS], j: usize| {
                    let h = hash(j);
                    ring[j % RING_ITEMS] = h;
                    prefetch_older(links, h);
                };
                for j in 0..n.min(AHEAD) {
                    request(&mut ring, j);
                }
                for i in 0..n {
                    if i + AHEAD < n {
                        request(&mut ring, i + AHEAD);
                    }
                    done(i, in_links(links, ring[i % RING_ITEMS]));
                }
            }
        }
    }
}

/// The staged lookup of a one-link chain (see the module's notes): stage 1
/// at `i + FIRST_LINE_AHEAD` hashes the item, computes its first position
/// and requests its line; stage 2 at `i + REST_AHEAD` reads that bit and,
/// only when it is set, computes the other positions and requests their
/// lines; stage 3 at `i` answers.
fn staged_lookups(
    link: &Link,
    mut ring: Ring,
    n: usize,
    mut hash: impl FnMut(usize) -> HashPair,
    mut done: impl FnMut(usize, bool),
) {
    if ring.k == 0 {
        // No positions: every item is "present", as in `Link::contains`.
        for i in 0..n {
            hash(i);
            done(i, true);
        }
        return;
    }
    let data = link.data();
    // `passed[i % RING_ITEMS]`: whether item i's first bit is set.
    let mut passed = [false; RING_ITEMS];
    // Stage 1 computes the first position only: most items stop there.
    let mut stage1 = |ring: &mut Ring, j: usize| {
        let h = hash(j);
        ring.hashes[j % RING_ITEMS] = h;
        let first = link.first_position(h);
        ring.slots[j % RING_ITEMS][0] = first;
        data.prefetch(first);
    };
    let stage2 = |ring: &mut Ring, passed: &mut [bool; RING_ITEMS], j: usize| {
        let set = data.get(ring.slots[j % RING_ITEMS][0]);
        passed[j % RING_ITEMS] = set;
        if set {
            let positions = ring.fill(link, j, ring.hash(j));
            link.prefetch_positions(&positions[1..]);
        }
    };
    for j in 0..n.min(FIRST_LINE_AHEAD) {
        stage1(&mut ring, j);
    }
    for j in 0..n.min(REST_AHEAD) {
        stage2(&mut ring, &mut passed, j);
    }
    for i in 0..n {
        if i + FIRST_LINE_AHEAD < n {
            stage1(&mut ring, i + FIRST_LINE_AHEAD);
        }
        if i + REST_AHEAD < n {
            stage2(&mut ring, &mut passed, i + REST_AHEAD);
        }
        done(i, passed[i % RING_ITEMS] && link.all_set(&ring.get(i)[1..]));
    }
}
