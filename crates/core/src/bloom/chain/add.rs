//! The add engine: one item (BF.ADD) and a batch (BF.MADD, BF.INSERT) run
//! through the same code.
//!
//! While the newest link has room, items go through the pipeline: each
//! item's positions in the newest link are computed once, into the ring,
//! and their lines requested for writing `AHEAD` items before the item is
//! added (with the first lines the older links will test), so that a batch
//! overlaps its cache misses; a lone item is a batch of one and requests
//! nothing ahead. The newest link having room, "present" means present in
//! an older link, or every bit in the newest already set: setting the
//! bits and seeing whether any flipped answers the same as testing first,
//! in one pass, without waiting for the test before writing.
//!
//! An item that meets a full newest link (or a link whose items have more
//! positions than a ring slot holds) is added on its own: tested in every
//! link, then the chain scales out (or answers `Full`), then its bits are
//! set. Outcomes, bits and counts are exactly those of adding the items
//! one by one, in order (property-tested).

use super::lookup::{in_links, prefetch_heads};
use super::ring::{lookahead, Ring, AHEAD, RING_HASHES, RING_ITEMS};
use super::{AddOutcome, Chain};
use crate::alloc_guard::{AllocGuard, Unguarded};
use crate::bloom::link::Link;
use crate::hash::HashPair;

impl Chain {
    /// Adds one item (already hashed with [`Chain::hash`]): an add batch
    /// of one.
    #[inline]
    pub fn add(&mut self, h: HashPair, guard: &dyn AllocGuard) -> AddOutcome {
        let mut outcome = AddOutcome::Present;
        self.add_batch(1, |_| h, guard, |_, o| outcome = o);
        outcome
    }

    /// Adds many items in order; `out[i]` gets item `i`'s outcome. Stops
    /// after a `Full` outcome (returns how many were processed), as BF.MADD
    /// does.
    pub fn add_many(
        &mut self,
        hashes: &[HashPair],
        guard: &dyn AllocGuard,
        out: &mut [AddOutcome],
    ) -> usize {
        self.add_batch(hashes.len(), |j| hashes[j], guard, |i, o| out[i] = o)
    }

    /// Whether the newest link can take `n` more items with none of them
    /// making it full before the last, so a batch of `n` adds needs no
    /// scale-out and never meets a full link: the batches
    /// [`Chain::add_pipelined`] takes.
    #[inline]
    pub fn batch_fits(&self, n: usize) -> bool {
        let newest = self.newest();
        newest.items.saturating_add(n as u64) <= newest.entries
            && newest.hashes as usize <= RING_HASHES
    }

    /// Adds a batch that [`Chain::batch_fits`] with the add engine
    /// (no scale-out can happen, so no guard is asked); false, with nothing
    /// done, for any other batch. `hash` and `done` as in
    /// [`Chain::add_batch`].
    pub fn add_pipelined(
        &mut self,
        n: usize,
        hash: impl FnMut(usize) -> HashPair,
        done: impl FnMut(usize, AddOutcome),
    ) -> bool {
        if !self.batch_fits(n) {
            return false;
        }
        self.add_batch(n, hash, &Unguarded, done);
        true
    }

    /// The add engine. Adds `n` items in order: `hash(j)` is asked for
    /// item `j`'s hash once, in order, up to `AHEAD` items before its add;
    /// `done(i, outcome)` is told each outcome in order, as soon as it is
    /// known. Whatever the caller does there (hash the next item, reply to
    /// the previous one) overlaps with the cache misses in flight. Stops
    /// after a `Full` outcome; returns how many items were processed.
    #[inline]
    pub fn add_batch(
        &mut self,
        n: usize,
        mut hash: impl FnMut(usize) -> HashPair,
        guard: &dyn AllocGuard,
        mut done: impl FnMut(usize, AddOutcome),
    ) -> usize {
        let mut i = 0;
        while i < n {
            // Items the newest link takes with none of them finding it
            // full: each add fills it by at most one.
            let newest = self.newest();
            let room = newest.entries.saturating_sub(newest.items);
            let run = usize::try_from(room).unwrap_or(usize::MAX).min(n - i);
            // A ring per link: `None` when its items have too many positions.
            let added = match run {
                0 => None,
                1 => Ring::<1>::for_link(newest)
                    .map(|ring| self.add_run(ring, i, run, &mut hash, &mut done)),
                _ => Ring::<RING_ITEMS>::for_link(newest)
                    .map(|ring| self.add_run(ring, i, run, &mut hash, &mut done)),
            };
            if let Some(added) = added {
                self.count_added(added);
                i += run;
                continue;
            }
            let outcome = self.add_alone(hash(i), guard);
            done(i, outcome);
            i += 1;
            if outcome == AddOutcome::Full {
                break;
            }
        }
        i
    }

    /// Adds items `from..from + count` into the newest link, which takes
    /// them all without becoming full before the last, with `ring` made
    /// for it; returns how many were new. Counts are left to the caller.
    #[inline(always)]
    fn add_run<const SLOTS: usize>(
        &mut self,
        mut ring: Ring<SLOTS>,
        from: usize,
        count: usize,
        hash: &mut impl FnMut(usize) -> HashPair,
        done: &mut impl FnMut(usize, AddOutcome),
    ) -> u64 {
        let (newest, older) = self
            .links
            .split_last_mut()
            .expect("a chain always has a link");
        let ahead = lookahead(AHEAD, SLOTS);
        let end = from + count;
        let mut request = |ring: &mut Ring<SLOTS>, newest: &Link, j: usize| {
            let h = hash(j);
            newest.prefetch_positions_write(ring.fill(newest, j, h));
            if ahead > 0 {
                prefetch_heads(older, h);
            }
        };
        for j in from..end.min(from + ahead) {
            request(&mut ring, newest, j);
        }
        let mut added = 0u64;
        for i in from..end {
            if i + ahead < end {
                request(&mut ring, newest, i + ahead);
            }
            let outcome = if !older.is_empty() && in_links(older, ring.hash(i)) {
                AddOutcome::Present
            } else if newest.set_all(ring.get(i)) {
                added += 1;
                AddOutcome::Added
            } else {
                AddOutcome::Present
            };
            done(i, outcome);
        }
        added
    }

    /// Adds one item the newest link cannot take through the pipeline: it
    /// is full (scale out first, or answer `Full`), or its items have more
    /// positions than a ring slot holds.
    #[cold]
    fn add_alone(&mut self, h: HashPair, guard: &dyn AllocGuard) -> AddOutcome {
        if self.newest().is_full() {
            if in_links(&self.links, h) {
                return AddOutcome::Present;
            }
            if !self.is_scaling() {
                return AddOutcome::Full;
            }
            if let Err(outcome) = self.scale_out(guard) {
                return outcome;
            }
        } else {
            let (_, older) = self.links.split_last().expect("a chain always has a link");
            if in_links(older, h) {
                return AddOutcome::Present;
            }
        }
        let newest = self.links.last_mut().expect("a chain always has a link");
        if newest.insert(h) {
            self.count_added(1);
            AddOutcome::Added
        } else {
            AddOutcome::Present
        }
    }
}
