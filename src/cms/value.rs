//! The value stored under a key of type `CMSk-TYPE`.

use ferrobloom_core::cms::CountMinSketch;

#[derive(Debug)]
pub struct Sketch {
    sketch: CountMinSketch,
}

impl Sketch {
    pub fn new(sketch: CountMinSketch) -> Box<Sketch> {
        Box::new(Sketch { sketch })
    }

    #[inline]
    pub fn sketch(&self) -> &CountMinSketch {
        &self.sketch
    }

    /// The sketch, for the commands that change it.
    #[inline]
    pub fn sketch_mut(&mut self) -> &mut CountMinSketch {
        &mut self.sketch
    }

    /// The sketch, for defragmentation (which may move its cells' memory,
    /// never their content).
    pub fn sketch_for_defrag(&mut self) -> &mut CountMinSketch {
        &mut self.sketch
    }
}

impl Drop for Sketch {
    fn drop(&mut self) {
        // May run on the lazy-free thread: only the shared counter.
        crate::guard::release(self.sketch.cell_bytes().len() as u64);
    }
}
