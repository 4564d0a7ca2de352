//! What the `MBbloomCF` data type does when the server saves, loads,
//! rewrites, copies, digests, measures, defragments or frees a Cuckoo
//! filter: RedisBloom 2.8.2's encoding (version 4 written, 0 to 4 read,
//! every field checked). `ffi::datatype` calls these through [`DataType`].

use std::ffi::CStr;

use ferrobloom_core::alloc_guard::AllocRequest;
use ferrobloom_core::cuckoo::{dump, rdb, scandump};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::BitArray;

use super::Cuckoo;
use crate::datatype::{digest_progress, AofRecord, DataType, DigestSink};

/// The command an AOF rewrite replays a filter with, as RedisBloom does.
const LOADCHUNK: &CStr = c"CF.LOADCHUNK";

const _: () = assert!(Cuckoo::NAME.to_bytes().len() == rdb::TYPE_NAME.len());

impl DataType for Cuckoo {
    /// The module type's name and encoding version, as RedisBloom registers
    /// them (so RDB files and DUMP payloads move both ways).
    const NAME: &'static CStr = c"MBbloomCF";
    const ENCODING_VERSION: i32 = rdb::ENCODING_VERSION;
    const WHAT: &'static str = super::WHAT;

    fn decode(input: &mut dyn RdbInput, encver: i32) -> Result<Box<Cuckoo>, RdbError> {
        let (filter, progress) = rdb::load_with_progress(input, encver)?;
        Ok(Cuckoo::with_progress(filter, progress))
    }

    /// A complete filter exactly as RedisBloom 2.8.2 saves it; one still
    /// loading with its progress after it (`rdb::LOADING_MARK`).
    fn rdb_save(&self, out: &mut dyn RdbOutput) {
        rdb::save_with_progress(self.filter(), self.loading(), out);
    }

    /// As RedisBloom writes it: `CF.LOADCHUNK key 1 <header>`, then one
    /// `CF.LOADCHUNK key <next> <chunk>` per SCANDUMP chunk (also for a
    /// filter with no items, which SCANDUMP cannot export); a filter still
    /// loading as a RESTORE of its DUMP payload, which carries its progress.
    fn aof_rewrite(&self, emit: &mut dyn FnMut(AofRecord<'_>)) {
        let f = self.filter();
        if let Some(progress) = self.loading() {
            let payload = dump::dump_payload_with_progress(f, Some(progress), RDB_VERSION_7_0);
            emit(AofRecord::Restore(&payload));
            return;
        }
        emit(AofRecord::Chunk {
            command: LOADCHUNK,
            iter: 1,
            bytes: &scandump::Header::of(f).encode(),
        });
        for (next, chunk) in scandump::chunks(f) {
            emit(AofRecord::Chunk {
                command: LOADCHUNK,
                iter: next as i64,
                bytes: chunk,
            });
        }
    }

    /// RedisBloom's number (CF.INFO Size), so both modules report the same,
    /// plus the LOADCHUNK progress of a filter still loading.
    fn mem_usage(&self) -> usize {
        (self.filter().reported_size() + self.loading_heap_bytes()) as usize
    }

    /// A unit per 4 KiB page plus one per sub-filter, as for Bloom filters:
    /// large filters are freed off the main thread.
    fn free_effort(&self) -> usize {
        let f = self.filter();
        (f.total_bytes() / 4096 + f.sub_filter_count()) as usize
    }

    /// The value's encoding, which holds every field and bucket.
    fn digest(&self, sink: &mut dyn DigestSink) {
        let payload = dump::dump_payload(self.filter(), RDB_VERSION_7_0);
        sink.add_bytes(&payload[..payload.len() - 10]);
        digest_progress(self.loading(), sink);
        sink.end_sequence();
    }

    fn footprint(&self) -> AllocRequest {
        let f = self.filter();
        AllocRequest {
            bytes: f.total_bytes(),
            filter_size_after: f.reported_size(),
        }
    }

    /// Each sub-filter's bytes copied directly (at its peak the server
    /// holds the original and one copy). RedisBloom 2.8.2 refuses COPY of a
    /// Cuckoo filter; copying is what a user asking for it expects.
    fn deep_copy(&self) -> Option<Box<Cuckoo>> {
        self.filter().try_clone().ok().map(Cuckoo::new)
    }

    /// One array per sub-filter.
    fn has_part(&mut self, index: usize) -> bool {
        index < self.filter().sub_filters().len()
    }

    fn relocate_part(&mut self, index: usize, relocate: impl FnOnce(BitArray) -> BitArray) {
        if let Some(sub) = self.filter_for_defrag().sub_filters_mut().get_mut(index) {
            sub.relocate_data(relocate);
        }
    }
}
