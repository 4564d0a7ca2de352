//! The lookup engine: whether items may have been added, for one item
//! (BF.EXISTS) and for a batch (BF.MEXISTS) alike.
//!
//! A lone lookup waits at least one memory round trip with nothing else to
//! do meanwhile; a batch overlaps its items' cache misses by requesting the
//! lines of items further down while the current one is tested (see
//! [`super::ring`]). The caller's work per item (reading the item,
//! replying) runs inside the pipeline, while the misses of the next items
//! are in flight. A lone item is a batch of one: no line is requested
//! ahead of its test, so it costs what a plain probe loop does.
//!
//! One link: lookups of absent items (most lookups, in a deduplication
//! workload) usually stop at the first clear bit, so a lookup is staged:
//! the first line is requested `FIRST_LINE_AHEAD` items early;
//! `REST_AHEAD` items early that bit is read (it has arrived by then) and
//! only an item that passes it gets its other lines requested. Lines an
//! absent item would never read are not fetched, which leaves the memory
//! system to the lines that are.
//!
//! Several links: each item's first two positions in the newest
//! `PREFETCHED_LINKS` links are computed once and prefetched together
//! before the first test (see [`in_links`]), so that a long chain waits
//! for about one cache miss, not one per link; a batch also requests them
//! `AHEAD` items early.
//!
//! Answers are the reference formula's, link by link (property-tested).

use super::ring::{lookahead, Ring, AHEAD, RING_ITEMS};
use super::Chain;
use crate::bloom::link::Link;
use crate::hash::HashPair;

/// Older links whose first lines are prefetched together (the newest
/// ones; a chain rarely has more).
pub(super) const PREFETCHED_LINKS: usize = 32;

/// How far ahead a one-link lookup requests an item's first line, and
/// how far ahead it reads that bit (and requests the other lines). An
/// absent item needs one line, so the first stage must run far ahead to
/// keep as many misses in flight as an add's `AHEAD` items do: measured
/// side by side on a 100M filter holding 6.3M items, BF.MEXISTS×100 of
/// items a third of them present, 12 alternating rounds: 11.3 µs median
/// with 20 / 6 against 11.6 µs with 8 / 4, lower in 10 rounds of 11.
const FIRST_LINE_AHEAD: usize = 20;
const REST_AHEAD: usize = 6;
const _: () = assert!(RING_ITEMS > FIRST_LINE_AHEAD && FIRST_LINE_AHEAD > REST_AHEAD);

/// Whether the item is in any of `links`, newest first: the test of one
/// item in a chain. The first two positions of the item in the newest
/// `PREFETCHED_LINKS` of them are computed and prefetched before the first
/// test, so that a long chain waits for about one cache miss, not one per
/// link, and each position is computed once.
#[inline]
pub(super) fn in_links(links: &[Link], h: HashPair) -> bool {
    if let [only] = links {
        // Nothing to overlap: the plain probe, without the heads buffer.
        return only.contains_from_head(h, only.head(h));
    }
    let mut heads = [[0u64; 2]; PREFETCHED_LINKS];
    let n = links.len().min(PREFETCHED_LINKS);
    for (head, link) in heads[..n].iter_mut().zip(links.iter().rev()) {
        *head = link.head(h);
        link.prefetch_head(*head);
    }
    let mut rest = links.iter().rev();
    for (head, link) in heads[..n].iter().zip(rest.by_ref()) {
        if link.contains_from_head(h, *head) {
            return true;
        }
    }
    rest.any(|l| l.contains_from_head(h, l.head(h)))
}

/// Requests the first lines [`in_links`] will test for `h`.
#[inline(always)]
pub(super) fn prefetch_heads(links: &[Link], h: HashPair) {
    for link in links.iter().rev().take(PREFETCHED_LINKS) {
        link.prefetch_head(link.head(h));
    }
}

impl Chain {
    /// Whether the item may have been added: a lookup batch of one.
    #[inline]
    pub fn contains(&self, h: HashPair) -> bool {
        let mut found = false;
        self.contains_batch(1, |_| h, |_, f| found = f);
        found
    }

    /// Whether each item may have been added: `out[i]` for `hashes[i]`.
    pub fn contains_many(&self, hashes: &[HashPair], out: &mut [bool]) {
        self.contains_batch(hashes.len(), |j| hashes[j], |i, found| out[i] = found);
    }

    /// Looks `n` items up (the same as [`Chain::contains_batch`]).
    #[inline]
    pub fn contains_pipelined(
        &self,
        n: usize,
        hash: impl FnMut(usize) -> HashPair,
        done: impl FnMut(usize, bool),
    ) {
        self.contains_batch(n, hash, done)
    }

    /// The lookup engine. Looks `n` items up: `hash(j)` is asked for item
    /// `j`'s hash once, in order, ahead of its lookup; `done(i, found)` is
    /// told each answer in order, as soon as it is known.
    #[inline]
    pub fn contains_batch(
        &self,
        n: usize,
        hash: impl FnMut(usize) -> HashPair,
        done: impl FnMut(usize, bool),
    ) {
        if n == 1 {
            self.lookups::<1>(n, hash, done)
        } else {
            self.lookups::<RING_ITEMS>(n, hash, done)
        }
    }

    /// The engine with a ring of `SLOTS` items in flight.
    #[inline(always)]
    fn lookups<const SLOTS: usize>(
        &self,
        n: usize,
        hash: impl FnMut(usize) -> HashPair,
        done: impl FnMut(usize, bool),
    ) {
        // One slot (a lone item): nothing to stage, the item is tested at
        // once, as the plain probe loop would.
        if let ([only], true) = (self.links.as_slice(), SLOTS > 1) {
            if let Some(ring) = Ring::<SLOTS>::for_link(only) {
                return staged_lookups(only, ring, n, hash, done);
            }
        }
        chain_lookups::<SLOTS>(&self.links, n, hash, done)
    }
}

/// Lookups in several links (or in one whose items have more positions
/// than a ring slot holds): every link's first lines, `AHEAD` items early
/// in a batch (most lookups stop there in each link), then [`in_links`].
#[inline(always)]
fn chain_lookups<const SLOTS: usize>(
    links: &[Link],
    n: usize,
    mut hash: impl FnMut(usize) -> HashPair,
    mut done: impl FnMut(usize, bool),
) {
    let ahead = lookahead(AHEAD, SLOTS);
    let mut ring = [HashPair { a: 0, b: 0 }; SLOTS];
    let mut request = |ring: &mut [HashPair; SLOTS], j: usize| {
        let h = hash(j);
        ring[j % SLOTS] = h;
        if ahead > 0 {
            prefetch_heads(links, h);
        }
    };
    for j in 0..n.min(ahead) {
        request(&mut ring, j);
    }
    for i in 0..n {
        if i + ahead < n {
            request(&mut ring, i + ahead);
        }
        done(i, in_links(links, ring[i % SLOTS]));
    }
}

/// The staged lookup of a one-link chain (see the module's notes): stage 1
/// at `i + FIRST_LINE_AHEAD` hashes the item, computes its first position
/// and requests its line; stage 2 at `i + REST_AHEAD` reads that bit and,
/// only when it is set, computes the other positions and requests their
/// lines; stage 3 at `i` answers. With one slot all three run back to back
/// and request nothing.
#[inline(always)]
fn staged_lookups<const SLOTS: usize>(
    link: &Link,
    mut ring: Ring<SLOTS>,
    n: usize,
    mut hash: impl FnMut(usize) -> HashPair,
    mut done: impl FnMut(usize, bool),
) {
    if ring.k == 0 {
        // No positions: every item is "present", as in the reference.
        for i in 0..n {
            hash(i);
            done(i, true);
        }
        return;
    }
    let first_ahead = lookahead(FIRST_LINE_AHEAD, SLOTS);
    let rest_ahead = lookahead(REST_AHEAD, SLOTS);
    let data = link.data();
    // `passed[i % SLOTS]`: whether item i's first bit is set.
    let mut passed = [false; SLOTS];
    // Stage 1 computes the first position only: most items stop there.
    let mut stage1 = |ring: &mut Ring<SLOTS>, j: usize| {
        let first = ring.fill_first(link, j, hash(j));
        if first_ahead > 0 {
            data.prefetch(first);
        }
    };
    let stage2 = |ring: &mut Ring<SLOTS>, passed: &mut [bool; SLOTS], j: usize| {
        let set = data.get(ring.first(j));
        passed[j % SLOTS] = set;
        if set {
            let positions = ring.fill(link, j, ring.hash(j));
            if rest_ahead > 0 {
                link.prefetch_positions(&positions[1..]);
            }
        }
    };
    for j in 0..n.min(first_ahead) {
        stage1(&mut ring, j);
    }
    for j in 0..n.min(rest_ahead) {
        stage2(&mut ring, &mut passed, j);
    }
    for i in 0..n {
        if i + first_ahead < n {
            stage1(&mut ring, i + first_ahead);
        }
        if i + rest_ahead < n {
            stage2(&mut ring, &mut passed, i + rest_ahead);
        }
        done(i, passed[i % SLOTS] && link.all_set(&ring.get(i)[1..]));
    }
}
