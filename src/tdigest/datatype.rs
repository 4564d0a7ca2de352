//! What the `TDIS-TYPE` data type does when the server saves, loads,
//! rewrites, copies, digests, measures or frees a t-digest. `ffi::datatype`
//! calls these through [`DataType`].
//!
//! Registered with encoding version 0, RedisBloom 2.8.2's: a value is
//! saved as 2.8.2 saves it, compressed (compress(S), in 2.8.2's bytes), so
//! RDB files and DUMP payloads move both ways. Saving changes nothing here
//! (2.8.2's DUMP and SAVE compress the stored digest); a save begun marks
//! every value changed before it as owing a compress
//! (`value::save_begins`), so the server's next client write on it
//! continues from compress(S), as whatever loads the save does, and tells
//! its replicas so.

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
    /// A 2.8.2 value of one observation (saved unmerged, without its
    /// point) is compressed at once: the point becomes its centroid, on
    /// every server that loads it.
    fn decode(input: &mut dyn RdbInput, encver: i32) -> Result<Box<TDigestValue>, RdbError> {
        let (mut td, single) = rdb::load_telling_single(input, encver, &Unguarded)?;
        if single {
            // Unreachable failure (a weight of at most 1).
            let _ = td.compress();
        }
        Ok(TDigestValue::loaded(td).as_loaded())
    }

    /// compress(S) in 2.8.2's bytes; the value itself is not changed
    /// (saving runs on a fork, and DUMP is a read).
    fn rdb_save(&self, out: &mut dyn RdbOutput) {
        self.with_compressed(|td| rdb::save(td, out));
    }

    /// One `RESTORE key 0 <payload>` of the value itself: 2.8.2 rewrites a
    /// t-digest as commands without a SELECT, so keys outside database 0
    /// come back in database 0; a RESTORE is written in its database.
    fn aof_rewrite(&self, emit: &mut dyn FnMut(AofRecord<'_>)) {
        self.with_compressed(|td| {
            emit(AofRecord::Restore(&dump::dump_payload(td, RDB_VERSION_7_0)))
        });
    }

    /// 2.8.2's number (spec §7.5): 16 bytes per node of capacity, plus 8;
    /// plus the compressed view reads keep while there is one.
    fn mem_usage(&self) -> usize {
        (self.digest().memory_usage() as u64 + self.view_bytes()) as usize
    }

    /// A unit per 4 KiB page of nodes: large digests are freed off the
    /// main thread.
    fn free_effort(&self) -> usize {
        1 + (self.node_bytes() / 4096) as usize
    }

    /// The payload of compress(S): two digests digest alike exactly when
    /// every read answers alike, so a master and its replica agree
    /// whenever their answers do, whatever reads compressed on either
    /// (2.8.2 returns one constant for every t-digest).
    fn digest(&self, sink: &mut dyn DigestSink) {
        self.with_compressed(|td| sink.add_bytes(&dump::dump_payload(td, RDB_VERSION_7_0)));
        sink.end_sequence();
    }

    fn footprint(&self) -> AllocRequest {
        AllocRequest {
            bytes: self.node_bytes(),
            filter_size_after: self.digest().memory_usage() as u64,
        }
    }

    /// The nodes copied, with P (the copy owes its replicas the same
    /// compress: they copy S); COPY's own guard ([`DataType::copy`])
    /// admitted the size already.
    fn deep_copy(&self) -> Option<Box<TDigestValue>> {
        self.digest()
            .try_clone(&Unguarded)
            .ok()
            .map(|d| TDigestValue::copied(d).with_pending_of(self))
    }

    /// The node array is not a bit array: active defragmentation leaves it
    /// where it is.
    fn has_part(&mut self, _index: usize) -> bool {
        false
    }

    fn relocate_part(&mut self, _index: usize, _relocate: impl FnOnce(BitArray) -> BitArray) {}
}
