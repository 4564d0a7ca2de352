//! What the `MBbloom--` data type does when Redis calls it: RDB load and
//! save, AOF rewrite, memory usage, free effort, digest and copy. The FFI
//! layer (`ffi::bloom`) registers the type and calls these.

use ferrobloom_core::bloom::dump;
use ferrobloom_core::bloom::rdb;
use ferrobloom_core::bloom::scandump;
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::{AllocGuard, AllocRequest};

use ferrobloom_core::received::LoadProgress;

use super::Filter;
use crate::command::Env;
use crate::guard::{self, CommandGuard};

/// The type name; fixed by RedisBloom, and part of every RDB and DUMP.
pub const TYPE_NAME: &std::ffi::CStr = c"MBbloom--";

/// The encoding version written with every value.
pub const ENCODING_VERSION: i32 = rdb::ENCODING_VERSION;

/// Reads a filter from RDB or RESTORE data. Never refused (the data would
/// be lost), but a filter over a limit is named in the log. The error is
/// the line to log.
pub fn rdb_load(
    input: &mut dyn RdbInput,
    encver: i32,
    key: &[u8],
    env: &impl Env,
) -> Result<Box<Filter>, String> {
    match rdb::load_with_progress(input, encver) {
        Ok((chain, progress)) => {
            guard::check_loaded(
                env,
                super::WHAT,
                key,
                chain.data_bytes(),
                chain.reported_size(),
            );
            Ok(Filter::with_progress(chain, progress))
        }
        Err(e) => Err(load_error_message(key, e)),
    }
}

/// The log line of a value that could not be loaded: the key (when the
/// server tells it), so an operator can find it, and the reason.
fn load_error_message(key: &[u8], e: RdbError) -> String {
    let what = if key.is_empty() {
        "a Bloom filter".to_string()
    } else {
        format!("the Bloom filter '{}'", guard::printable(key))
    };
    let why = match e {
        RdbError::Io => "the data ends early or cannot be read (Io)".to_string(),
        RdbError::Invalid(reason) => reason.to_string(),
    };
    format!("refusing {what} in RDB/RESTORE data: {why}")
}

/// A complete filter exactly as RedisBloom 2.8.2 saves it; one still
/// loading with its progress after it (`rdb::LOADING_MARK`).
pub fn rdb_save(filter: &Filter, out: &mut dyn RdbOutput) {
    rdb::save_with_progress(filter.chain(), filter.loading(), out);
}

/// What an AOF rewrite writes for a value.
pub enum AofRecord<'a> {
    /// `<TYPE>.LOADCHUNK key iter bytes`.
    Chunk(i64, &'a [u8]),
    /// `RESTORE key 0 payload`: a filter whose LOADCHUNK sequence is
    /// incomplete, whose state no LOADCHUNK command can rebuild (the bits
    /// adds set in bytes not received yet must stay mergeable).
    Restore(&'a [u8]),
}

/// The filter as RedisBloom rewrites it: its SCANDUMP stream as
/// `BF.LOADCHUNK key iter bytes` commands, so the AOF replays in either
/// module; a filter still loading as a RESTORE of its DUMP payload, which
/// carries its progress. `emit` is given each record.
pub fn aof_rewrite(filter: &Filter, mut emit: impl FnMut(AofRecord<'_>)) {
    let chain = filter.chain();
    if let Some(progress) = filter.loading() {
        let payload = dump::dump_payload_with_progress(chain, Some(progress), RDB_VERSION_7_0);
        emit(AofRecord::Restore(&payload));
        return;
    }
    emit(AofRecord::Chunk(1, &scandump::encode_header(chain)));
    let mut iter = 1i64;
    loop {
        let (next, chunk) = scandump::data_chunk(chain, iter);
        if next == 0 {
            break;
        }
        emit(AofRecord::Chunk(next, chunk));
        iter = next;
    }
}

/// MEMORY USAGE: what BF.INFO reports as the size, plus the LOADCHUNK
/// progress of a filter still loading.
pub fn mem_usage(filter: &Filter) -> usize {
    (filter.chain().reported_size() + filter.loading_heap_bytes()) as usize
}

/// Large filters are freed off the main thread: Redis frees a value
/// asynchronously (UNLINK, FLUSHALL ASYNC, lazyfree-lazy-*) when the effort
/// exceeds its threshold (64), so count one unit per 4 KiB page plus one per
/// link.
pub fn free_effort(filter: &Filter) -> usize {
    let chain = filter.chain();
    (chain.data_bytes() / 4096) as usize + chain.links().len()
}

/// Where DEBUG DIGEST values go.
pub trait DigestSink {
    fn add_int(&mut self, value: u64);
    fn add_bytes(&mut self, bytes: &[u8]);
    fn end_sequence(&mut self);
}

pub fn digest(filter: &Filter, sink: &mut impl DigestSink) {
    let chain = filter.chain();
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
    digest_progress(filter.loading(), sink);
    sink.end_sequence();
}

/// A filter still loading digests differently from the same bits complete
/// (a chunk would be merged into one and written over the other); a
/// complete filter's digest is unchanged.
pub fn digest_progress(loading: Option<&LoadProgress>, sink: &mut impl DigestSink) {
    if let Some(progress) = loading {
        sink.add_int(progress.total());
        sink.add_bytes(&progress.encode());
    }
}

/// COPY: an independent deep copy (RedisBloom refuses COPY), admitted by
/// the memory guard like any new filter. None when refused: Redis then
/// answers `ERR module key failed to copy`, and the reason is logged.
pub fn copy(filter: &Filter, to: &[u8], env: &impl Env) -> Option<Box<Filter>> {
    let chain = filter.chain();
    let request = AllocRequest {
        bytes: chain.data_bytes(),
        filter_size_after: chain.reported_size(),
    };
    let refused = match CommandGuard::new(env, to, super::WHAT).admit(request) {
        Ok(()) => match chain.try_clone() {
            Ok(chain) => return Some(Filter::new(chain)),
            Err(_) => guard::allocation_failed_message(request.bytes),
        },
        Err(refusal) => guard::refusal_message(&refusal, env.memory()),
    };
    env.log_warning(&format!(
        "COPY of a Bloom filter to '{}' refused: {}",
        guard::printable(to),
        refused.trim_start_matches("ERR ")
    ));
    None
}
