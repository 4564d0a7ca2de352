//! The value stored under a key of type `TopK-TYPE`, and what the
//! server-wide totals (`INFO bf`, `metrics::TOPK`) count for it.

use ferrobloom_core::topk::sizing::RECORD_BYTES;
use ferrobloom_core::topk::{AddError, TopK};

use crate::metrics::TOPK;

#[derive(Debug)]
pub struct TopKey {
    sketch: TopK,
}

/// What the totals count as a sketch's bytes: its buckets and heap
/// records as saved (W·D·8 + k·24), which never change while it lives,
/// so the gauge needs nothing from the adds.
fn counted_bytes(sketch: &TopK) -> u64 {
    sketch.bucket_bytes().len() as u64 + u64::from(sketch.k()) * RECORD_BYTES
}

impl TopKey {
    /// Wraps a sketch created by a command and counts it in the totals.
    pub fn new(sketch: TopK) -> Box<TopKey> {
        TOPK.created.incr();
        TopKey::counted(sketch)
    }

    /// [`TopKey::new`] of a sketch read from an RDB file or a DUMP payload.
    pub fn loaded(sketch: TopK) -> Box<TopKey> {
        TOPK.loaded.incr();
        TopKey::counted(sketch)
    }

    /// [`TopKey::new`] of a COPY.
    pub fn copied(sketch: TopK) -> Box<TopKey> {
        TOPK.copied.incr();
        TopKey::counted(sketch)
    }

    fn counted(sketch: TopK) -> Box<TopKey> {
        TOPK.sketches.add(1);
        TOPK.bytes.add(counted_bytes(&sketch));
        Box::new(TopKey { sketch })
    }

    #[inline]
    pub fn sketch(&self) -> &TopK {
        &self.sketch
    }

    /// Counts `incr` more of `item`; the item the list expelled, if any.
    #[inline]
    pub fn incrby(&mut self, item: &[u8], incr: u32) -> Result<Option<Box<[u8]>>, AddError> {
        let result = self.sketch.incrby(item, incr);
        if let Ok(expelled) = &result {
            TOPK.adds.incr();
            if expelled.is_some() {
                TOPK.expelled.incr();
            }
        }
        result
    }

    /// The sketch, for defragmentation (which may move its buckets'
    /// memory, never their content).
    pub fn sketch_for_defrag(&mut self) -> &mut TopK {
        &mut self.sketch
    }
}

impl Drop for TopKey {
    fn drop(&mut self) {
        // May run on the lazy-free thread: only the shared counter and
        // the gauges' shared halves.
        crate::guard::release(self.sketch.allocated_bytes());
        TOPK.sketches.sub(1);
        TOPK.bytes.sub(counted_bytes(&self.sketch));
    }
}
