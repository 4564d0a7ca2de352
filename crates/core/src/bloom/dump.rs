//! The DUMP payload of a Bloom filter: its RDB value (see [`super::rdb`])
//! framed as Redis frames a module value of type `MBbloom--`.

use super::chain::Chain;
use super::rdb;
use crate::dump_format::{DumpReader, DumpWriter};
use crate::rdb_io::RdbError;

/// The module id of type `MBbloom--` with encoding version 0; the low 10
/// bits carry the encoding version.
pub const TYPE_ID_BASE: u64 = 0x3016_e5a2_89be_f800;

/// The DUMP payload of `chain` as a Redis 7.0 server would produce it,
/// minus string compression.
pub fn dump_payload(chain: &Chain, rdb_version: u16) -> Vec<u8> {
    let mut w = DumpWriter::new(TYPE_ID_BASE | rdb::ENCODING_VERSION as u64);
    rdb::save(chain, &mut w);
    w.finish(rdb_version)
}

/// Parses a DUMP payload of a filter (any encoding version 0 to 4).
pub fn load_payload(payload: &[u8]) -> Result<Chain, RdbError> {
    let mut r = DumpReader::new(payload).map_err(|_| RdbError::Io)?;
    if r.type_id & !0x3ff != TYPE_ID_BASE {
        return Err(RdbError::Invalid("not a MBbloom-- value"));
    }
    let encver = r.encoding_version();
    let chain = rdb::load(&mut r, encver)?;
    if !r.at_eof() {
        return Err(RdbError::Invalid("trailing data"));
    }
    Ok(chain)
}
