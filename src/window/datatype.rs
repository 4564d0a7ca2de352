//! What the `FBwindows` data type does when the server saves, loads,
//! rewrites, copies, digests, measures, defragments or frees a windowed
//! filter. `ffi::datatype` calls these through [`DataType`].

use std::ffi::CStr;

use ferrobloom_core::alloc_guard::AllocRequest;
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::window::{dump, rdb};
use ferrobloom_core::BitArray;

use super::Window;
use crate::datatype::{AofRecord, DataType, DigestSink};

impl DataType for Window {
    /// The core's type name and encoding version, the name as a C string
    /// for the server.
    const NAME: &'static CStr = c"FBwindows";
    const ENCODING_VERSION: i32 = rdb::ENCODING_VERSION;
    const WHAT: &'static str = super::WHAT;

    fn decode(input: &mut dyn RdbInput, encver: i32) -> Result<Box<Window>, RdbError> {
        Ok(Window::new(rdb::load(input, encver)?))
    }

    fn rdb_save(&self, out: &mut dyn RdbOutput) {
        rdb::save(self.filter(), out);
    }

    /// One `RESTORE key 0 <payload>`, whose payload is the value's DUMP (RDB
    /// version 10, which every supported server reads).
    fn aof_rewrite(&self, emit: &mut dyn FnMut(AofRecord<'_>)) {
        emit(AofRecord::Restore(&dump::dump_payload(
            self.filter(),
            RDB_VERSION_7_0,
        )));
    }

    /// The bit arrays (those grown by bursts too), the cells' stale marks
    /// and the slots describing them.
    fn mem_usage(&self) -> usize {
        let f = self.filter();
        (f.bytes() + f.cells().mark_bytes()) as usize
            + std::mem::size_of::<Window>()
            + (f.slots().len() + f.grown_links()) * 96
    }

    /// As for Bloom filters: a unit per 4 KiB page plus one per slot, so
    /// large windows are freed off the main thread.
    fn free_effort(&self) -> usize {
        let f = self.filter();
        (f.bytes() / 4096) as usize + f.slots().len()
    }

    /// What the window holds, not how far clearing of retired generations
    /// has got (which a master's idle time decides and replicas do not
    /// see).
    fn digest(&self, sink: &mut dyn DigestSink) {
        let f = self.filter();
        let params = f.spec().params;
        sink.add_int(params.error.to_bits());
        sink.add_int(params.capacity);
        sink.add_bytes(params.span.display().as_bytes());
        sink.add_int(u64::from(params.generations));
        sink.add_bytes(params.policy.name().as_bytes());
        if !params.scaling {
            sink.add_bytes(b"NONSCALING");
        }
        sink.add_int(f.origin_ms());
        sink.add_int(f.epoch());
        sink.add_int(f.rotations());
        sink.add_int(f.forgotten());
        let live = f.live_slots(f.epoch());
        for &i in &live {
            let slot = &f.slots()[i];
            if let ferrobloom_core::window::SlotState::Live { epoch } = slot.state {
                sink.add_int(epoch);
            }
            sink.add_int(slot.first_items);
            for link in &slot.grown {
                sink.add_int(link.items);
                sink.add_bytes(link.data().as_bytes());
            }
        }
        // The live generations' bits, in epoch order whatever slots hold them.
        f.live_bits(&live, &mut |block| sink.add_bytes(block));
        sink.end_sequence();
    }

    /// Windows report their bit arrays' size as their size.
    fn footprint(&self) -> AllocRequest {
        let bytes = self.filter().bytes();
        AllocRequest {
            bytes,
            filter_size_after: bytes,
        }
    }

    fn deep_copy(&self) -> Option<Box<Window>> {
        self.filter().try_clone().ok().map(Window::new)
    }

    /// The interleaved cells, then the arrays bursts grew.
    fn has_part(&mut self, index: usize) -> bool {
        self.has_array(index)
    }

    fn relocate_part(&mut self, index: usize, relocate: impl FnOnce(BitArray) -> BitArray) {
        self.relocate_array(index, relocate);
    }
}
