//! The loading state of a filter made by a LOADCHUNK header (Bloom or
//! Cuckoo): the progress of its data chunks, kept until every byte has
//! arrived, and counted in `INFO bf` (`bf_filters_loading`,
//! `bf_loading_bytes`) wherever it is made, changed or freed.
//!
//! The state is part of the value: saved with it (RDB, DUMP, full sync),
//! restored by a load, rewritten into the AOF and digested, so a master,
//! its replicas and an AOF replay that see the same commands hold the same
//! state, and a chunk after a reload is combined as it would have been
//! before (docs/commands.md, BF.LOADCHUNK).

use ferrobloom_core::received::LoadProgress;

use crate::metrics::TOTALS;

#[derive(Debug, Default)]
pub struct Loading {
    progress: Option<Box<LoadProgress>>,
    /// What the totals count for it (heap bytes of the progress).
    counted: u64,
}

impl Loading {
    /// A loading state from a load (RDB, RESTORE) or a header: `None` for
    /// a complete filter.
    pub fn from(progress: Option<LoadProgress>) -> Loading {
        let mut loading = Loading::default();
        if let Some(p) = progress.filter(|p| !p.is_complete()) {
            TOTALS.filters_loading.add(1);
            loading.progress = Some(Box::new(p));
            loading.recount();
        }
        loading
    }

    pub fn get(&self) -> Option<&LoadProgress> {
        self.progress.as_deref()
    }

    /// Runs `f` on the progress, if the filter is loading; the state ends
    /// when every byte has arrived.
    pub fn update<R>(&mut self, f: impl FnOnce(&mut LoadProgress) -> R) -> Option<R> {
        let progress = self.progress.as_deref_mut()?;
        let result = f(progress);
        if progress.is_complete() {
            self.progress = None;
            TOTALS.filters_loading.sub(1);
        }
        self.recount();
        Some(result)
    }

    /// Bytes the progress holds (MEMORY USAGE adds them to the filter's).
    pub fn heap_bytes(&self) -> u64 {
        self.counted
    }

    fn recount(&mut self) {
        let now = self.progress.as_deref().map_or(0, LoadProgress::heap_bytes);
        if now > self.counted {
            TOTALS.loading_bytes.add(now - self.counted);
        } else {
            TOTALS.loading_bytes.sub(self.counted - now);
        }
        self.counted = now;
    }
}

impl Drop for Loading {
    /// May run on Redis' lazy-free thread: only the shared halves.
    fn drop(&mut self) {
        if self.progress.is_some() {
            TOTALS.filters_loading.sub(1);
        }
        TOTALS.loading_bytes.sub(self.counted);
    }
}
