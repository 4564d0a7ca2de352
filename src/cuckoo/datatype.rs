//! What the `MBbloomCF` data type does when the server saves, loads,
//! rewrites, copies, digests, measures or frees a Cuckoo filter: RedisBloom
//! 2.8.2's encoding (version 4 written, 0 to 4 read, every field checked).

use ferrobloom_core::alloc_guard::{AllocGuard, AllocRequest};
use ferrobloom_core::cuckoo::{dump, rdb, scandump};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};

use super::Cuckoo;
use crate::bloom::datatype::{digest_progress, AofRecord, DigestSink};
use crate::command::Env;
use crate::guard::{self, CommandGuard};

/// The module type's name and encoding version, as RedisBloom registers
/// them (so RDB files and DUMP payloads move both ways).
pub const TYPE_NAME: &std::ffi::CStr = c"MBbloomCF";
pub const ENCODING_VERSION: i32 = rdb::ENCODING_VERSION;
const _: () = assert!(TYPE_NAME.to_bytes().len() == rdb::TYPE_NAME.len());

pub fn rdb_load(
    input: &mut dyn RdbInput,
    encver: i32,
    key: &[u8],
    env: &impl Env,
) -> Result<Box<Cuckoo>, String> {
    match rdb::load_with_progress(input, encver) {
        Ok((filter, progress)) => {
            guard::check_loaded(
                env,
                super::WHAT,
                key,
                filter.total_bytes(),
                filter.reported_size(),
            );
            Ok(Cuckoo::with_progress(filter, progress))
        }
        Err(e) => {
            let what = if key.is_empty() {
                "a Cuckoo filter".to_string()
            } else {
                format!("the Cuckoo filter '{}'", guard::printable(key))
            };
            let why = match e {
                RdbError::Io => "the data ends early or cannot be read (Io)".to_string(),
                RdbError::Invalid(reason) => reason.to_string(),
            };
            Err(format!("refusing {what} in RDB/RESTORE data: {why}"))
        }
    }
}

/// A complete filter exactly as RedisBloom 2.8.2 saves it; one still
/// loading with its progress after it (`rdb::LOADING_MARK`).
pub fn rdb_save(cuckoo: &Cuckoo, out: &mut dyn RdbOutput) {
    rdb::save_with_progress(cuckoo.filter(), cuckoo.loading(), out);
}

/// The AOF rewrite of a Cuckoo filter, as RedisBloom writes it: `CF.LOADCHUNK
/// key 1 <header>`, then one `CF.LOADCHUNK key <next> <chunk>` per SCANDUMP
/// chunk (also for a filter with no items, which SCANDUMP cannot export);
/// a filter still loading as a RESTORE of its DUMP payload, which carries
/// its progress (see `bloom::datatype::AofRecord`).
pub fn aof_rewrite(cuckoo: &Cuckoo, mut emit: impl FnMut(AofRecord<'_>)) {
    let f = cuckoo.filter();
    if let Some(progress) = cuckoo.loading() {
        let payload = dump::dump_payload_with_progress(f, Some(progress), RDB_VERSION_7_0);
        emit(AofRecord::Restore(&payload));
        return;
    }
    emit(AofRecord::Chunk(1, &scandump::Header::of(f).encode()));
    for (next, chunk) in scandump::chunks(f) {
        emit(AofRecord::Chunk(next as i64, chunk));
    }
}

/// MEMORY USAGE: RedisBloom's number (CF.INFO Size), so both modules
/// report the same, plus the LOADCHUNK progress of a filter still loading.
pub fn mem_usage(cuckoo: &Cuckoo) -> usize {
    (cuckoo.filter().reported_size() + cuckoo.loading_heap_bytes()) as usize
}

/// A unit per 4 KiB page plus one per sub-filter, as for Bloom filters:
/// large filters are freed off the main thread.
pub fn free_effort(cuckoo: &Cuckoo) -> usize {
    let f = cuckoo.filter();
    (f.total_bytes() / 4096 + f.sub_filter_count()) as usize
}

/// DEBUG DIGEST: the value's encoding, which holds every field and bucket.
pub fn digest(cuckoo: &Cuckoo, sink: &mut impl DigestSink) {
    let payload = dump::dump_payload(cuckoo.filter(), RDB_VERSION_7_0);
    sink.add_bytes(&payload[..payload.len() - 10]);
    digest_progress(cuckoo.loading(), sink);
    sink.end_sequence();
}

/// COPY: a deep copy, each sub-filter's bytes copied directly (at its peak
/// the server holds the original and one copy), admitted by the memory
/// guard like a new filter (never refused when the COPY comes from a master
/// or an AOF). RedisBloom 2.8.2 refuses COPY of a Cuckoo filter; copying is
/// what a user asking for it expects.
pub fn copy(cuckoo: &Cuckoo, to: &[u8], env: &impl Env) -> Option<Box<Cuckoo>> {
    let f = cuckoo.filter();
    let request = AllocRequest {
        bytes: f.total_bytes(),
        filter_size_after: f.reported_size(),
    };
    let refused = match CommandGuard::new(env, to, super::WHAT).admit(request) {
        Ok(()) => match f.try_clone() {
            Ok(copy) => return Some(Cuckoo::new(copy)),
            Err(_) => guard::allocation_failed_message(request.bytes),
        },
        Err(refusal) => guard::refusal_message(&refusal, env.memory()),
    };
    env.log_warning(&format!(
        "COPY of a Cuckoo filter to '{}' refused: {}",
        guard::printable(to),
        refused.trim_start_matches("ERR ")
    ));
    None
}
