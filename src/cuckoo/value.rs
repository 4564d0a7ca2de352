//! The value stored under a key of type `MBbloomCF`, and what the
//! server-wide totals (`INFO bf`) count for it.

use ferrobloom_core::cuckoo::filter::CuckooFilter;

use crate::metrics::TOTALS;

#[derive(Debug)]
pub struct Cuckoo {
    filter: CuckooFilter,
    counted: Counted,
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
        let counted = Counted::of(&filter);
        let t = &TOTALS;
        t.cuckoo_filters.add(1);
        t.cuckoo_sub_filters.add(counted.sub_filters);
        t.cuckoo_bytes.add(counted.bytes);
        t.cuckoo_items.add(counted.items);
        t.cuckoo_slots.add(counted.slots);
        Box::new(Cuckoo { filter, counted })
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

    fn recount(&mut self) {
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
