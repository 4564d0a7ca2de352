//! What the `TopK-TYPE` data type does when the server saves, loads,
//! rewrites, copies, digests, measures, defragments or frees a Top-K
//! sketch. `ffi::datatype` calls these through [`DataType`].
//!
//! Registered with encoding version 0, RedisBloom 2.8.2's, so RDB files and
//! DUMP payloads move both ways (see `ferrobloom_core::topk::rdb`).

use std::ffi::CStr;

use ferrobloom_core::alloc_guard::{AllocRequest, Unguarded};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::topk::{dump, rdb};
use ferrobloom_core::BitArray;

use super::TopKey;
use crate::datatype::{AofRecord, DataType, DigestSink};

const _: () = assert!(TopKey::NAME.to_bytes().len() == rdb::TYPE_NAME.len());

impl DataType for TopKey {
    /// RedisBloom's type name and encoding version.
    const NAME: &'static CStr = c"TopK-TYPE";
    const ENCODING_VERSION: i32 = rdb::ENCODING_VERSION;
    const WHAT: &'static str = super::WHAT;

    fn decode(input: &mut dyn RdbInput, encver: i32) -> Result<Box<TopKey>, RdbError> {
        Ok(TopKey::loaded(rdb::load(input, encver)?))
    }

    fn rdb_save(&self, out: &mut dyn RdbOutput) {
        rdb::save(self.sketch(), out);
    }

    /// One `RESTORE key 0 <payload>` of the value itself: no command
    /// sequence rebuilds the heap and buckets exactly.
    fn aof_rewrite(&self, emit: &mut dyn FnMut(AofRecord<'_>)) {
        emit(AofRecord::Restore(&dump::dump_payload(
            self.sketch(),
            RDB_VERSION_7_0,
        )));
    }

    /// RedisBloom 2.8.2's number (spec §7.5), so both modules report the
    /// same.
    fn mem_usage(&self) -> usize {
        self.sketch().memory_usage() as usize
    }

    /// A unit per 4 KiB page held: large sketches are freed off the main
    /// thread.
    fn free_effort(&self) -> usize {
        1 + (self.sketch().allocated_bytes() / 4096) as usize
    }

    /// Everything saved: the parameters, the buckets, the heap records
    /// (pointer bytes zero) and the items.
    fn digest(&self, sink: &mut dyn DigestSink) {
        let s = self.sketch();
        sink.add_int(u64::from(s.k()));
        sink.add_int(u64::from(s.width()));
        sink.add_int(u64::from(s.depth()));
        sink.add_int(s.decay().to_bits());
        sink.add_bytes(s.bucket_bytes());
        sink.add_bytes(&rdb::heap_image(s));
        for slot in s.heap() {
            sink.add_bytes(&rdb::item_string(slot));
        }
        sink.end_sequence();
    }

    fn footprint(&self) -> AllocRequest {
        let s = self.sketch();
        AllocRequest {
            bytes: s.allocated_bytes(),
            filter_size_after: s.memory_usage(),
        }
    }

    /// The buckets and heap copied; COPY's own guard ([`DataType::copy`])
    /// admitted the size already.
    fn deep_copy(&self) -> Option<Box<TopKey>> {
        self.sketch().try_clone(&Unguarded).ok().map(TopKey::copied)
    }

    /// The buckets, one array (the heap records are small and few).
    fn has_part(&mut self, index: usize) -> bool {
        index == 0
    }

    fn relocate_part(&mut self, index: usize, relocate: impl FnOnce(BitArray) -> BitArray) {
        if index == 0 {
            self.sketch_for_defrag().relocate_buckets(relocate);
        }
    }
}
