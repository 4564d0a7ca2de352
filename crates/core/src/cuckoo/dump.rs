//! The DUMP payload of a Cuckoo filter: its RDB value (see [`super::rdb`])
//! framed as Redis frames a module value of type `MBbloomCF`.
//!
//! Redis compresses strings over 20 bytes with LZF when it writes a DUMP;
//! [`dump_payload`] writes them raw, so its bytes equal Redis' only for
//! filters of at most 20 bytes per sub-filter. Both forms load.

use super::filter::CuckooFilter;
use super::rdb;
use crate::dump_format::{module_type_id, DumpReader, DumpWriter};
use crate::rdb_io::RdbError;
use crate::received::LoadProgress;

/// The module id of `MBbloomCF` at encoding version `encver`
/// (0x3016e5a289821404 for 4).
pub fn type_id(encver: u16) -> u64 {
    module_type_id(rdb::TYPE_NAME, encver).expect("a valid type name")
}

pub fn dump_payload(f: &CuckooFilter, rdb_version: u16) -> Vec<u8> {
    dump_payload_with_progress(f, None, rdb_version)
}

/// [`dump_payload`] of a filter whose LOADCHUNK sequence may be incomplete
/// (what DUMP returns for it, and what an AOF rewrite restores it from).
pub fn dump_payload_with_progress(
    f: &CuckooFilter,
    loading: Option<&LoadProgress>,
    rdb_version: u16,
) -> Vec<u8> {
    let mut w = DumpWriter::new(type_id(rdb::ENCODING_VERSION as u16));
    rdb::save_with_progress(f, loading, &mut w);
    w.finish(rdb_version)
}

/// RESTORE: the payload's checksum, type and fields, and nothing after them
/// (2.8.2 refuses a trailing field too: `ERR Bad data format`).
pub fn load_payload(payload: &[u8]) -> Result<CuckooFilter, RdbError> {
    load_payload_with_progress(payload).map(|(f, _)| f)
}

/// [`load_payload`], with the progress of a LOADCHUNK sequence.
pub fn load_payload_with_progress(
    payload: &[u8],
) -> Result<(CuckooFilter, Option<LoadProgress>), RdbError> {
    let mut r = DumpReader::new(payload).map_err(|_| RdbError::Io)?;
    if r.type_id & !0x3ff != type_id(0) {
        return Err(RdbError::Invalid("not a MBbloomCF value"));
    }
    let encver = r.encoding_version();
    let loaded = rdb::load_with_progress(&mut r, encver)?;
    if !r.at_eof() {
        return Err(RdbError::Invalid("trailing data"));
    }
    Ok(loaded)
}
