//! The value stored under a key of type `TopK-TYPE`.

use ferrobloom_core::topk::{AddError, TopK};

#[derive(Debug)]
pub struct TopKey {
    sketch: TopK,
}

impl TopKey {
    /// Wraps a sketch created by a command, read from an RDB file or a
    /// DUMP payload, or copied.
    pub fn new(sketch: TopK) -> Box<TopKey> {
        Box::new(TopKey { sketch })
    }

    #[inline]
    pub fn sketch(&self) -> &TopK {
        &self.sketch
    }

    /// Counts `incr` more of `item`; the item the list expelled, if any.
    #[inline]
    pub fn incrby(&mut self, item: &[u8], incr: u32) -> Result<Option<Box<[u8]>>, AddError> {
        self.sketch.incrby(item, incr)
    }

    /// The sketch, for defragmentation (which may move its buckets'
    /// memory, never their content).
    pub fn sketch_for_defrag(&mut self) -> &mut TopK {
        &mut self.sketch
    }
}

impl Drop for TopKey {
    fn drop(&mut self) {
        // May run on the lazy-free thread: only the shared counter.
        crate::guard::release(self.sketch.allocated_bytes());
    }
}
