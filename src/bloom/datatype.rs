//! What the `MBbloom--` data type does when Redis calls it: RDB load and
//! save, AOF rewrite, memory usage, free effort, digest, copy and the
//! arrays defragmentation moves. `ffi::datatype` registers the type and
//! calls these through [`DataType`].

use std::ffi::CStr;

use ferrobloom_core::bloom::dump;
use ferrobloom_core::bloom::rdb;
use ferrobloom_core::bloom::scandump;
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::{AllocRequest, BitArray};

use super::Filter;
use crate::datatype::{digest_progress, AofRecord, DataType, DigestSink};

/// The command an AOF rewrite replays a filter with, as RedisBloom does.
const LOADCHUNK: &CStr = c"BF.LOADCHUNK";

impl DataType for Filter {
    /// Fixed by RedisBloom, and part of every RDB and DUMP.
    const NAME: &'static CStr = c"MBbloom--";
    const ENCODING_VERSION: i32 = rdb::ENCODING_VERSION;
    const WHAT: &'static str = super::WHAT;

    fn decode(input: &mut dyn RdbInput, encver: i32) -> Result<Box<Filter>, RdbError> {
        let (chain, progress) = rdb::load_with_progress(input, encver)?;
        Ok(Filter::with_progress(chain, progress))
    }

    /// A complete filter exactly as RedisBloom 2.8.2 saves it; one still
    /// loading with its progress after it (`rdb::LOADING_MARK`).
    fn rdb_save(&self, out: &mut dyn RdbOutput) {
        rdb::save_with_progress(self.chain(), self.loading(), out);
    }

    /// The filter as RedisBloom rewrites it: its SCANDUMP stream as
    /// `BF.LOADCHUNK key iter bytes` commands, so the AOF replays in either
    /// module; a filter still loading as a RESTORE of its DUMP payload,
    /// which carries its progress.
    fn aof_rewrite(&self, emit: &mut dyn FnMut(AofRecord<'_>)) {
        let chain = self.chain();
        if let Some(progress) = self.loading() {
            let payload = dump::dump_payload_with_progress(chain, Some(progress), RDB_VERSION_7_0);
            emit(AofRecord::Restore(&payload));
            return;
        }
        emit(AofRecord::Chunk {
            command: LOADCHUNK,
            iter: 1,
            bytes: &scandump::encode_header(chain),
        });
        let mut iter = 1i64;
        loop {
            let (next, chunk) = scandump::data_chunk(chain, iter);
            if next == 0 {
                break;
            }
            emit(AofRecord::Chunk {
                command: LOADCHUNK,
                iter: next,
                bytes: chunk,
            });
            iter = next;
        }
    }

    /// What BF.INFO reports as the size, plus the LOADCHUNK progress of a
    /// filter still loading.
    fn mem_usage(&self) -> usize {
        (self.chain().reported_size() + self.loading_heap_bytes()) as usize
    }

    /// Large filters are freed off the main thread: Redis frees a value
    /// asynchronously (UNLINK, FLUSHALL ASYNC, lazyfree-lazy-*) when the
    /// effort exceeds its threshold (64), so count one unit per 4 KiB page
    /// plus one per link.
    fn free_effort(&self) -> usize {
        let chain = self.chain();
        (chain.data_bytes() / 4096) as usize + chain.links().len()
    }

    fn digest(&self, sink: &mut dyn DigestSink) {
        let chain = self.chain();
        sink.add_int(chain.items());
        sink.add_int(u64::from(chain.options()));
        sink.add_int(u64::from(chain.growth()));
        for l in chain.links() {
            sink.add_int(l.entries);
            sink.add_int(l.error.to_bits());
            sink.add_int(u64::from(l.hashes));
            sink.add_int(l.bpe.to_bits());
            sink.add_int(l.bits);
            sink.add_int(u64::from(l.n2));
            sink.add_int(l.items);
            sink.add_bytes(l.data().as_bytes());
        }
        digest_progress(self.loading(), sink);
        sink.end_sequence();
    }

    fn footprint(&self) -> AllocRequest {
        let chain = self.chain();
        AllocRequest {
            bytes: chain.data_bytes(),
            filter_size_after: chain.reported_size(),
        }
    }

    /// RedisBloom refuses COPY; FerroBloom copies.
    fn deep_copy(&self) -> Option<Box<Filter>> {
        self.chain().try_clone().ok().map(Filter::new)
    }

    /// One bit array per link.
    fn has_part(&mut self, index: usize) -> bool {
        index < self.links_for_defrag().len()
    }

    fn relocate_part(&mut self, index: usize, relocate: impl FnOnce(BitArray) -> BitArray) {
        if let Some(link) = self.links_for_defrag().get_mut(index) {
            link.relocate_data(relocate);
        }
    }
}
