//! The value stored under a key of type `FBwindows`: the windowed filter,
//! and what the server-wide totals count for it.

use ferrobloom_core::hash::HashPair;
use ferrobloom_core::link::Link;
use ferrobloom_core::window::{Rotation, WindowAdd, WindowFilter};

use crate::metrics;

#[derive(Debug)]
pub struct Window {
    filter: WindowFilter,
}

impl Window {
    /// Wraps a filter and counts it in the totals (`INFO bf`).
    pub fn new(filter: WindowFilter) -> Box<Window> {
        metrics::TOTALS.windows.add(1);
        metrics::TOTALS.window_bytes.add(filter.bytes());
        Box::new(Window { filter })
    }

    #[inline]
    pub fn filter(&self) -> &WindowFilter {
        &self.filter
    }

    /// Slot `index`'s bit array, for defragmentation (which may move its
    /// memory, never its content).
    pub fn link_for_defrag(&mut self, index: usize) -> Option<&mut Link> {
        self.filter.link_mut(index)
    }

    /// Moves the window to `epoch`, counting what left it.
    pub fn rotate_to(&mut self, epoch: u64) -> Rotation {
        let rotation = self.filter.rotate_to(epoch);
        count_rotation(&rotation);
        rotation
    }

    /// Adds an item at the current epoch, counting what an item window's
    /// rotation after it forgot.
    pub fn add(&mut self, h: HashPair) -> WindowAdd {
        let added = self.filter.add(h);
        count_rotation(&added.rotation);
        added
    }
}

fn count_rotation(rotation: &Rotation) {
    metrics::TOTALS
        .window_rotations
        .add(u64::from(rotation.retired));
    metrics::TOTALS.window_forgotten.add(rotation.forgotten);
}

impl Drop for Window {
    fn drop(&mut self) {
        metrics::TOTALS.windows.sub(1);
        metrics::TOTALS.window_bytes.sub(self.filter.bytes());
    }
}
