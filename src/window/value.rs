//! The value stored under a key of type `FBwindows`: the windowed filter,
//! and what the server-wide totals count for it.

use ferrobloom_core::alloc_guard::AllocGuard;
use ferrobloom_core::bitarray::BitArray;
use ferrobloom_core::hash::HashPair;
use ferrobloom_core::window::{GrowError, Rotation, WindowAdd, WindowFilter};

use crate::metrics::{self, Crossings, WindowObservation};

#[derive(Debug)]
pub struct Window {
    filter: WindowFilter,
    /// What the totals count for it (`INFO bf`), as of its last write.
    observed: WindowObservation,
}

impl Window {
    /// Wraps a filter and counts it in the totals (`INFO bf`).
    pub fn new(filter: WindowFilter) -> Box<Window> {
        metrics::TOTALS.windows.add(1);
        metrics::TOTALS.window_bytes.add(filter.bytes());
        let observed = observe(&filter);
        metrics::window_enter(&observed);
        Box::new(Window { filter, observed })
    }

    #[inline]
    pub fn filter(&self) -> &WindowFilter {
        &self.filter
    }

    /// Whether the window has bit array `index` (the cells, then what
    /// bursts grew), for defragmentation.
    pub fn has_array(&self, index: usize) -> bool {
        index < self.filter.arrays()
    }

    /// Hands bit array `index` to `relocate` (defragmentation: it may move
    /// the memory, never the content).
    pub fn relocate_array(&mut self, index: usize, relocate: impl FnOnce(BitArray) -> BitArray) {
        self.filter.relocate_array(index, relocate);
    }

    /// Moves the window to `epoch`, counting what left it.
    pub fn rotate_to(&mut self, epoch: u64) -> Rotation {
        let rotation = self.filter.rotate_to(epoch);
        count_rotation(&rotation);
        rotation
    }

    /// Adds an item at the current epoch, counting what a generation grew
    /// and what an item window's rotation after it forgot.
    pub fn add(&mut self, h: HashPair, guard: &dyn AllocGuard) -> Result<WindowAdd, GrowError> {
        let added = self.filter.add(h, guard)?;
        if added.grown_bytes > 0 {
            metrics::TOTALS.window_bytes.add(added.grown_bytes);
            metrics::TOTALS.window_growths.incr();
        }
        count_rotation(&added.rotation);
        Ok(added)
    }

    /// Counts the window's level anew after a write; returns the levels
    /// it rose to (for `bf.fill-warning` / `bf.fill-alert`).
    pub fn refresh(&mut self) -> Crossings {
        let now = observe(&self.filter);
        let crossings = metrics::window_change(&self.observed, &now);
        self.observed = now;
        crossings
    }
}

/// The window's level at its own epoch (the last write's).
fn observe(f: &WindowFilter) -> WindowObservation {
    let (load, fpr) = f.health(f.epoch());
    WindowObservation {
        level: super::observe::level(load, fpr, f.spec().params.error),
        load,
        fpr,
    }
}

fn count_rotation(rotation: &Rotation) {
    let t = &metrics::TOTALS;
    t.window_rotations.add(u64::from(rotation.retired));
    t.window_forgotten.add(rotation.forgotten);
    t.window_bytes.sub(rotation.freed_bytes);
}

impl Drop for Window {
    fn drop(&mut self) {
        crate::guard::release(self.filter.bytes());
        metrics::TOTALS.windows.sub(1);
        metrics::TOTALS.window_bytes.sub(self.filter.bytes());
        metrics::window_leave(&self.observed);
    }
}
