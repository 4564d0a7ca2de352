//! The value stored under a key of type `MBbloom--`: the chain, and what
//! the server-wide totals currently count for it.

use ferrobloom_core::bloom::link::Link;
use ferrobloom_core::bloom::load_progress::{self, LoadProgress};

use crate::loading::Loading;
use ferrobloom_core::bloom::scandump::{self, LoadError};
use ferrobloom_core::bloom::stats;
use ferrobloom_core::{AddOutcome, AllocGuard, Chain, HashPair};

use crate::metrics::{self, Crossings, Observation};

/// Every change to the chain goes through the methods here, which keep the
/// server-wide totals (`INFO bf`) in step with it.
#[derive(Debug)]
pub struct Filter {
    chain: Chain,
    /// What the totals count for this filter (updated by `refresh`).
    observed: Observation,
    /// The item count at which fill and FPR are next re-observed: every
    /// 1/1024 of the capacity, so an add usually costs one comparison.
    next_refresh: u64,
    /// Set from a BF.LOADCHUNK header until every byte of its stream has
    /// arrived (counted in `INFO bf` as `bf_filters_loading`); saved and
    /// loaded with the filter.
    loading: Loading,
}

/// How finely fill is tracked: a filter is re-observed every
/// capacity / REFRESH_STEPS items.
const REFRESH_STEPS: u64 = 1024;

fn observe(chain: &Chain) -> Observation {
    let capacity = chain.capacity();
    Observation {
        items: chain.items(),
        capacity,
        bytes: chain.reported_size(),
        links: chain.links().len() as u64,
        pow2_rounding_bytes: stats::pow2_rounding_bytes(chain),
        pow2: chain.policy() == ferrobloom_core::Policy::Pow2,
        fill: stats::ratio(chain.items(), capacity),
        fpr: stats::estimated_fpr(chain),
    }
}

fn next_refresh(chain: &Chain, observed: &Observation) -> u64 {
    chain
        .items()
        .saturating_add((observed.capacity / REFRESH_STEPS).max(1))
}

impl Filter {
    /// Wraps a chain and starts counting it in the totals.
    pub fn new(chain: Chain) -> Box<Filter> {
        Filter::with_progress(chain, None)
    }

    /// [`Filter::new`] of a filter loaded with the progress of its
    /// LOADCHUNK sequence (RDB, RESTORE).
    pub fn with_progress(chain: Chain, progress: Option<LoadProgress>) -> Box<Filter> {
        let observed = observe(&chain);
        metrics::enter(&observed);
        let next_refresh = next_refresh(&chain, &observed);
        Box::new(Filter {
            chain,
            observed,
            next_refresh,
            loading: Loading::from(progress),
        })
    }

    /// The chain, for reading.
    #[inline]
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The links, for the defragmenter only: it moves their memory and
    /// changes no bit, so the totals stay as they are.
    pub fn links_for_defrag(&mut self) -> &mut [Link] {
        self.chain.links_mut()
    }

    /// Marks a filter just made from a LOADCHUNK header as waiting for its
    /// data chunks.
    pub fn start_loading(&mut self) {
        self.loading = Loading::from(Some(LoadProgress::new(self.chain.data_bytes())));
    }

    /// The progress of a LOADCHUNK sequence not yet complete.
    pub fn loading(&self) -> Option<&LoadProgress> {
        self.loading.get()
    }

    /// Bytes the LOADCHUNK progress holds (0 for a complete filter).
    pub fn loading_heap_bytes(&self) -> u64 {
        self.loading.heap_bytes()
    }

    /// Applies a LOADCHUNK data chunk: merged into a filter still loading
    /// (see `ferrobloom_core::bloom::load_progress`), written over a complete one.
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), LoadError> {
        let chain = &mut self.chain;
        match self
            .loading
            .update(|progress| load_progress::load_chunk_in_progress(chain, progress, iter, data))
        {
            Some(result) => result,
            None => scandump::load_chunk(chain, iter, data),
        }
    }

    #[inline]
    pub fn hash(&self, item: &[u8]) -> HashPair {
        self.chain.hash(item)
    }

    #[inline]
    pub fn contains(&self, h: HashPair) -> bool {
        self.chain.contains(h)
    }

    /// Adds one item and reports what it changed.
    #[inline]
    pub fn add(&mut self, h: HashPair, guard: &dyn AllocGuard) -> (AddOutcome, Changes) {
        let links = self.chain.links().len();
        let outcome = self.chain.add(h, guard);
        if outcome == AddOutcome::Added {
            // Item totals stay exact on every add; the rest is refreshed
            // periodically.
            self.observed.items = self.observed.items.wrapping_add(1);
            metrics::TOTALS.items.add(1);
        }
        let mut changes = Changes {
            scaled: self.chain.links().len() != links,
            ..Changes::default()
        };
        if changes.scaled {
            metrics::TOTALS.scale_outs.incr();
        }
        if changes.scaled || self.chain.items() >= self.next_refresh {
            changes.crossings = self.refresh();
        }
        (outcome, changes)
    }

    /// The pipelined add of `n` items (see [`Chain::add_pipelined`]: `item`
    /// is asked for each item ahead of its add, `done` told each outcome in
    /// order), for a batch the newest link takes whole. The
    /// batch is observed once, at its end: fill only rises within it.
    /// `None`, with nothing done, for any other batch: then add item by
    /// item, so that each add is observed and a threshold crossed just
    /// before a scale-out is still reported.
    pub fn add_pipelined<'a>(
        &mut self,
        n: usize,
        item: impl Fn(usize) -> &'a [u8],
        done: impl FnMut(usize, AddOutcome),
    ) -> Option<Changes> {
        let before = self.chain.items();
        let width = self.chain.hash_width();
        let hash = |j| HashPair::of(item(j), width);
        if !self.chain.add_pipelined(n, hash, done) {
            return None;
        }
        let added = self.chain.items().wrapping_sub(before);
        self.observed.items = self.observed.items.wrapping_add(added);
        metrics::TOTALS.items.add(added);
        let mut changes = Changes::default();
        if self.chain.items() >= self.next_refresh {
            changes.crossings = self.refresh();
        }
        Some(changes)
    }

    /// Re-observes the filter and updates the totals (after adds that
    /// reached the refresh point, a scale-out, or a LOADCHUNK).
    pub fn refresh(&mut self) -> Crossings {
        let now = observe(&self.chain);
        let crossings = metrics::change(&self.observed, &now);
        self.observed = now;
        self.next_refresh = next_refresh(&self.chain, &now);
        crossings
    }
}

impl Drop for Filter {
    /// Stops counting the filter. May run on Redis' lazy-free thread.
    fn drop(&mut self) {
        crate::guard::release(self.chain.data_bytes());
        metrics::leave(&self.observed);
    }
}

/// What an add changed beyond the item itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct Changes {
    /// A link was added.
    pub scaled: bool,
    /// Fill thresholds crossed upwards.
    pub crossings: Crossings,
}
