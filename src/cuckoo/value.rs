//! The value stored under a key of type `MBbloomCF`, and what the
//! server-wide totals (`INFO bf`) count for it.

use ferrobloom_core::cuckoo::filter::CuckooFilter;
use ferrobloom_core::cuckoo::load_progress::{self, LoadProgress};
use ferrobloom_core::cuckoo::scandump::{self, ChunkError};

use crate::loading::Loading;
use crate::metrics::TOTALS;

#[derive(Debug)]
pub struct Cuckoo {
    filter: CuckooFilter,
    counted: Counted,
    /// Set from a CF.LOADCHUNK header until every byte of its stream has
    /// arrived; saved and loaded with the filter.
    loading: Loading,
}

/// What the totals count for one filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counted {
    pub sub_filters: u64,
    pub bytes: u64,
    pub items: u64,
    pub slots: u64,
}

impl Counted {
    pub fn of(f: &CuckooFilter) -> Counted {
        let data = f.total_bytes();
        Counted {
            sub_filters: f.sub_filter_count(),
            bytes: f.reported_size(),
            items: f.items(),
            // Every slot is one byte.
            slots: data,
        }
    }
}

impl Cuckoo {
    /// Wraps a filter and counts it in the totals.
    pub fn new(filter: CuckooFilter) -> Box<Cuckoo> {
        Cuckoo::with_progress(filter, None)
    }

    /// [`Cuckoo::new`] of a filter loaded with the progress of its
    /// LOADCHUNK sequence (RDB, RESTORE), or made from a header.
    pub fn with_progress(filter: CuckooFilter, progress: Option<LoadProgress>) -> Box<Cuckoo> {
        let counted = Counted::of(&filter);
        let t = &TOTALS;
        t.cuckoo_filters.add(1);
        t.cuckoo_sub_filters.add(counted.sub_filters);
        t.cuckoo_bytes.add(counted.bytes);
        t.cuckoo_items.add(counted.items);
        t.cuckoo_slots.add(counted.slots);
        Box::new(Cuckoo {
            filter,
            counted,
            loading: Loading::from(progress),
        })
    }

    /// A filter made from a CF.LOADCHUNK header, waiting for its chunks.
    pub fn from_header(filter: CuckooFilter) -> Box<Cuckoo> {
        let progress = load_progress::start(&filter);
        Cuckoo::with_progress(filter, Some(progress))
    }

    /// The progress of a LOADCHUNK sequence not yet complete.
    pub fn loading(&self) -> Option<&LoadProgress> {
        self.loading.get()
    }

    /// Bytes the LOADCHUNK progress holds (0 for a complete filter).
    pub fn loading_heap_bytes(&self) -> u64 {
        self.loading.heap_bytes()
    }

    /// Applies a CF.LOADCHUNK data chunk: combined with the fingerprints
    /// stored since the header while the filter is loading (see
    /// `ferrobloom_core::cuckoo::load_progress`), written over a complete
    /// one. Gives the fingerprints that found no slot again.
    pub fn load_chunk(&mut self, iterator: i64, data: &[u8]) -> Result<u64, ChunkError> {
        let filter = &mut self.filter;
        let result = match self.loading.update(|progress| {
            load_progress::load_chunk_in_progress(filter, progress, iterator, data)
        }) {
            Some(result) => result,
            None => scandump::load_chunk(filter, iterator, data).map(|()| 0),
        };
        self.recount();
        result
    }

    #[inline]
    pub fn filter(&self) -> &CuckooFilter {
        &self.filter
    }

    /// Changes the filter, then brings the totals up to date (once per
    /// command, however many items it changed).
    #[inline]
    pub fn update<R>(&mut self, change: impl FnOnce(&mut CuckooFilter) -> R) -> R {
        let result = change(&mut self.filter);
        self.recount();
        result
    }

    /// A loading filter that lost stream bytes (compaction freed a
    /// sub-filter) waits only for the bytes it still has.
    fn clip_loading(&mut self) {
        if self
            .loading
            .get()
            .is_some_and(|p| p.total() > self.filter.total_bytes())
        {
            let filter = &self.filter;
            self.loading
                .update(|progress| load_progress::clip(filter, progress));
        }
    }

    fn recount(&mut self) {
        self.clip_loading();
        let now = Counted::of(&self.filter);
        let was = std::mem::replace(&mut self.counted, now);
        if now == was {
            return;
        }
        let t = &TOTALS;
        if now.sub_filters > was.sub_filters {
            t.cuckoo_expansions.add(now.sub_filters - was.sub_filters);
        }
        t.cuckoo_sub_filters.shift(was.sub_filters, now.sub_filters);
        t.cuckoo_bytes.shift(was.bytes, now.bytes);
        t.cuckoo_items.shift(was.items, now.items);
        t.cuckoo_slots.shift(was.slots, now.slots);
    }

    /// The filter's sub-filters, for defragmentation (which may move their
    /// memory, never their content).
    pub fn filter_for_defrag(&mut self) -> &mut CuckooFilter {
        &mut self.filter
    }
}

impl Drop for Cuckoo {
    fn drop(&mut self) {
        // May run on the lazy-free thread: only the shared halves.
        crate::guard::release(self.filter.total_bytes());
        let t = &TOTALS;
        let c = self.counted;
        t.cuckoo_filters.sub(1);
        t.cuckoo_sub_filters.sub(c.sub_filters);
        t.cuckoo_bytes.sub(c.bytes);
        t.cuckoo_items.sub(c.items);
        t.cuckoo_slots.sub(c.slots);
    }
}
