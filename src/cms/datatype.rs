//! What the `CMSk-TYPE` data type does when the server saves, loads,
//! rewrites, copies, digests, measures, defragments or frees a Count-Min
//! sketch. `ffi::datatype` calls these through [`DataType`].
//!
//! Registered with encoding version 0, RedisBloom 2.8.2's: a sketch with
//! 4-byte cells is saved byte for byte as 2.8.2 saves it; other cell sizes
//! add their size after the cells (see `ferrobloom_core::cms::rdb`).

use std::ffi::CStr;

use ferrobloom_core::alloc_guard::{AllocRequest, Unguarded};
use ferrobloom_core::cms::{dump, rdb};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::BitArray;

use super::Sketch;
use crate::datatype::{AofRecord, DataType, DigestSink};

const _: () = assert!(Sketch::NAME.to_bytes().len() == rdb::TYPE_NAME.len());

impl DataType for Sketch {
    /// RedisBloom's type name, so RDB files and DUMP payloads move both
    /// ways; the encoding version every value is written with.
    const NAME: &'static CStr = c"CMSk-TYPE";
    const ENCODING_VERSION: i32 = rdb::ENCODING_2_8_2;
    const WHAT: &'static str = super::WHAT;

    /// Encoding 0 (2.8.2's, and ours with other cell sizes) and 1
    /// (RedisBloom 8.12's).
    fn decode(input: &mut dyn RdbInput, encver: i32) -> Result<Box<Sketch>, RdbError> {
        Ok(Sketch::loaded(rdb::load(input, encver)?))
    }

    fn rdb_save(&self, out: &mut dyn RdbOutput) {
        rdb::save(self.sketch(), out);
    }

    /// One `RESTORE key 0 <payload>` of the value itself: 2.8.2 rewrites a
    /// sketch as commands without a SELECT, so keys outside database 0
    /// come back in database 0; a RESTORE is written in its database.
    fn aof_rewrite(&self, emit: &mut dyn FnMut(AofRecord<'_>)) {
        emit(AofRecord::Restore(&dump::dump_payload(
            self.sketch(),
            RDB_VERSION_7_0,
        )));
    }

    /// RedisBloom 2.8.2's number for 4-byte cells (8 + width·depth·8, spec
    /// §7.5), so both modules report the same; the bytes held otherwise.
    fn mem_usage(&self) -> usize {
        self.sketch().memory_usage() as usize
    }

    /// A unit per 4 KiB page of cells, as for the filters: large sketches
    /// are freed off the main thread.
    fn free_effort(&self) -> usize {
        1 + self.sketch().cell_bytes().len() / 4096
    }

    /// Width, depth, cell size, N and every cell.
    fn digest(&self, sink: &mut dyn DigestSink) {
        let s = self.sketch();
        sink.add_int(s.width());
        sink.add_int(s.depth());
        sink.add_int(s.cell_size().bytes());
        sink.add_int(s.count());
        sink.add_bytes(s.cell_bytes());
        sink.end_sequence();
    }

    fn footprint(&self) -> AllocRequest {
        let s = self.sketch();
        AllocRequest {
            bytes: s.cell_bytes().len() as u64,
            filter_size_after: s.memory_usage(),
        }
    }

    /// The cells copied; COPY's own guard ([`DataType::copy`]) admitted
    /// the size already.
    fn deep_copy(&self) -> Option<Box<Sketch>> {
        self.sketch().try_clone(&Unguarded).ok().map(Sketch::copied)
    }

    /// The cells, one array.
    fn has_part(&mut self, index: usize) -> bool {
        index == 0
    }

    fn relocate_part(&mut self, index: usize, relocate: impl FnOnce(BitArray) -> BitArray) {
        if index == 0 {
            self.sketch_for_defrag().relocate_cells(relocate);
        }
    }
}
