//! What the `TDIS-TYPE` data type does when the server saves, loads,
//! rewrites, copies, digests, measures or frees a t-digest. `ffi::datatype`
//! calls these through [`DataType`].
//!
//! Registered with encoding version 0, RedisBloom 2.8.2's: values are
//! saved byte for byte as 2.8.2 saves them (compressed, as its save
//! compresses), so RDB files and DUMP payloads move both ways.

use std::ffi::CStr;

use ferrobloom_core::alloc_guard::{AllocRequest, Unguarded};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::tdigest::{dump, rdb};
use ferrobloom_core::BitArray;

use super::TDigestValue;
use crate::datatype::{AofRecord, DataType, DigestSink};

const _: () = assert!(TDigestValue::NAME.to_bytes().len() == rdb::TYPE_NAME.len());

impl DataType for TDigestValue {
    /// RedisBloom's type name, so RDB files and DUMP payloads move both
    /// ways.
    const NAME: &'static CStr = c"TDIS-TYPE";
    const ENCODING_VERSION: i32 = rdb::ENCODING_VERSION;
    const WHAT: &'static str = super::WHAT;

    /// Persisted data is never refused for its size (the guard only logs
    /// it, in [`DataType::rdb_load`]).
    fn decode(input: &mut dyn RdbInput, encver: i32) -> Result<Box<TDigestValue>, RdbError> {
        Ok(TDigestValue::loaded(rdb::load(input, encver, &Unguarded)?))
    }

    /// The compressed digest, as 2.8.2 saves; the stored digest itself is
    /// not changed (saving runs on a fork or a replica's behalf too).
    fn rdb_save(&self, out: &mut dyn RdbOutput) {
        rdb::save(self.digest(), out);
    }

    /// One `RESTORE key 0 <payload>` of the value itself: 2.8.2 rewrites a
    /// t-digest as commands without a SELECT, so keys outside database 0
    /// come back in database 0; a RESTORE is written in its database.
    fn aof_rewrite(&self, emit: &mut dyn FnMut(AofRecord<'_>)) {
        emit(AofRecord::Restore(&dump::dump_payload(
            self.digest(),
            RDB_VERSION_7_0,
        )));
    }

    /// 2.8.2's number (spec §7.5): 16 bytes per node of capacity, plus 8.
    fn mem_usage(&self) -> usize {
        self.digest().memory_usage() as usize
    }

    /// A unit per 4 KiB page of nodes: large digests are freed off the
    /// main thread.
    fn free_effort(&self) -> usize {
        1 + (self.node_bytes() / 4096) as usize
    }

    /// The saved bytes: two digests digest alike exactly when they save
    /// alike (2.8.2 returns one constant for every t-digest).
    fn digest(&self, sink: &mut dyn DigestSink) {
        sink.add_bytes(&dump::dump_payload(self.digest(), RDB_VERSION_7_0));
        sink.end_sequence();
    }

    fn footprint(&self) -> AllocRequest {
        AllocRequest {
            bytes: self.node_bytes(),
            filter_size_after: self.digest().memory_usage() as u64,
        }
    }

    /// The nodes copied; COPY's own guard ([`DataType::copy`]) admitted
    /// the size already.
    fn deep_copy(&self) -> Option<Box<TDigestValue>> {
        self.digest()
            .try_clone(&Unguarded)
            .ok()
            .map(TDigestValue::copied)
    }

    /// The node array is not a bit array: active defragmentation leaves it
    /// where it is.
    fn has_part(&mut self, _index: usize) -> bool {
        false
    }

    fn relocate_part(&mut self, _index: usize, _relocate: impl FnOnce(BitArray) -> BitArray) {}
}
