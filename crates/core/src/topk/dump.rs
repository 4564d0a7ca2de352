//! The DUMP payload of a Top-K sketch: its RDB value (see [`super::rdb`])
//! framed as Redis frames a module value of type `TopK-TYPE`.
//!
//! Redis compresses strings over 20 bytes with LZF when it writes a DUMP;
//! [`dump_payload`] writes them raw. Both forms load.

use super::rdb;
use super::sketch::TopK;
use crate::dump_format::{module_type_id, DumpReader, DumpWriter};
use crate::rdb_io::RdbError;

/// The module id of `TopK-TYPE` at encoding version `encver`
/// (0x4e8a4af9360f1000 for 0).
pub fn type_id(encver: u16) -> u64 {
    module_type_id(rdb::TYPE_NAME, encver).expect("a valid type name")
}

/// The payload, encoding 0.
pub fn dump_payload(s: &TopK, rdb_version: u16) -> Vec<u8> {
    let mut w = DumpWriter::new(type_id(rdb::ENCODING_VERSION as u16));
    rdb::save(s, &mut w);
    w.finish(rdb_version)
}

/// RESTORE: the payload's checksum, type and fields, and nothing after
/// them (2.8.2 refuses a trailing field too: `ERR Bad data format`).
pub fn load_payload(payload: &[u8]) -> Result<TopK, RdbError> {
    let mut r = DumpReader::new(payload).map_err(|_| RdbError::Io)?;
    if r.type_id & !0x3ff != type_id(0) {
        return Err(RdbError::Invalid("not a TopK-TYPE value"));
    }
    let encver = r.encoding_version();
    let s = rdb::load(&mut r, encver)?;
    if !r.at_eof() {
        return Err(RdbError::Invalid("trailing data"));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_id_is_the_vectors_one() {
        assert_eq!(type_id(0), 0x4e8a_4af9_360f_1000);
    }
}
