//! The value stored under a key of type `CMSk-TYPE`, and what the
//! server-wide totals (`INFO bf`) count for it.

use ferrobloom_core::cms::{stats, CountMinSketch, IncrError};

use crate::metrics::{self, TOTALS};

#[derive(Debug)]
pub struct Sketch {
    sketch: CountMinSketch,
    counted: Counted,
}

/// What the totals count for one sketch.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Counted {
    /// N as stored.
    count: u64,
    /// The fullest cell as far as the totals know: exact when the sketch
    /// was made, loaded, copied or merged into, raised by increments since
    /// (a decrement does not lower it: finding the new fullest cell would
    /// read every cell).
    fullest: u64,
}

impl Counted {
    fn fill(&self, s: &CountMinSketch) -> f64 {
        self.fullest as f64 / s.max_count() as f64
    }
}

/// The fullest cell, read only when a cell can be non-zero: every row of
/// a sketch sums to N, so an empty sketch (a new one, however large) is
/// not read.
fn fullest(s: &CountMinSketch) -> u64 {
    if s.count() == 0 {
        0
    } else {
        stats::stats(s).fullest_cell
    }
}

impl Sketch {
    /// Wraps a sketch created by a command and counts it in the totals.
    pub fn new(sketch: CountMinSketch) -> Box<Sketch> {
        TOTALS.cms_created.incr();
        Sketch::counted(sketch)
    }

    /// [`Sketch::new`] of a sketch read from an RDB file or a DUMP payload.
    pub fn loaded(sketch: CountMinSketch) -> Box<Sketch> {
        TOTALS.cms_loaded.incr();
        Sketch::counted(sketch)
    }

    /// [`Sketch::new`] of a COPY.
    pub fn copied(sketch: CountMinSketch) -> Box<Sketch> {
        TOTALS.cms_copied.incr();
        Sketch::counted(sketch)
    }

    fn counted(sketch: CountMinSketch) -> Box<Sketch> {
        let counted = Counted {
            count: sketch.count(),
            fullest: fullest(&sketch),
        };
        let t = &TOTALS;
        t.cms_sketches.add(1);
        t.cms_bytes.add(sketch.cell_bytes().len() as u64);
        t.cms_count.add(counted.count);
        metrics::cms_enter(counted.fill(&sketch));
        Box::new(Sketch { sketch, counted })
    }

    #[inline]
    pub fn sketch(&self) -> &CountMinSketch {
        &self.sketch
    }

    /// CMS.INCRBY's change of one item, counted: N, the fullest cell when
    /// the item's cells rose past it, and the refusals.
    #[inline]
    pub fn incrby(&mut self, item: &[u8], incr: i64) -> Result<u64, IncrError> {
        match self.sketch.incrby_cells(item, incr) {
            Ok(changed) => {
                let count = self.sketch.count();
                TOTALS.cms_count.shift(self.counted.count, count);
                self.counted.count = count;
                if changed.largest > self.counted.fullest {
                    let was = self.counted.fill(&self.sketch);
                    self.counted.fullest = changed.largest;
                    metrics::cms_change(was, self.counted.fill(&self.sketch));
                }
                Ok(changed.estimate)
            }
            Err(e) => {
                match e {
                    IncrError::Overflow => TOTALS.cms_overflows.incr(),
                    IncrError::Underflow => TOTALS.cms_underflows.incr(),
                }
                Err(e)
            }
        }
    }

    /// Changes any number of cells (CMS.MERGE into this sketch, all or
    /// nothing), then counts the sketch again, reading every cell (as the
    /// merge did).
    pub fn merge_into<T, E>(
        &mut self,
        merge: impl FnOnce(&mut CountMinSketch) -> Result<T, E>,
    ) -> Result<T, E> {
        let merged = merge(&mut self.sketch)?;
        TOTALS.cms_merges.incr();
        self.recount();
        Ok(merged)
    }

    fn recount(&mut self) {
        let was = self.counted;
        let was_fill = was.fill(&self.sketch);
        self.counted = Counted {
            count: self.sketch.count(),
            fullest: fullest(&self.sketch),
        };
        TOTALS.cms_count.shift(was.count, self.counted.count);
        metrics::cms_change(was_fill, self.counted.fill(&self.sketch));
    }

    /// The sketch, for defragmentation (which may move its cells' memory,
    /// never their content).
    pub fn sketch_for_defrag(&mut self) -> &mut CountMinSketch {
        &mut self.sketch
    }
}

impl Drop for Sketch {
    fn drop(&mut self) {
        // May run on the lazy-free thread: only the shared counter and
        // halves.
        let bytes = self.sketch.cell_bytes().len() as u64;
        crate::guard::release(bytes);
        let t = &TOTALS;
        t.cms_sketches.sub(1);
        t.cms_bytes.sub(bytes);
        t.cms_count.sub(self.counted.count);
        metrics::cms_leave(self.counted.fill(&self.sketch));
    }
}
