//! The DUMP payload of a Count-Min sketch: its RDB value (see
//! [`super::rdb`]) framed as Redis frames a module value of type
//! `CMSk-TYPE`.
//!
//! Redis compresses strings over 20 bytes with LZF when it writes a DUMP;
//! [`dump_payload`] writes them raw, so its bytes equal Redis' only for
//! sketches of at most 20 bytes of cells. Both forms load.

use super::rdb;
use super::sketch::CountMinSketch;
use crate::dump_format::{module_type_id, DumpReader, DumpWriter};
use crate::rdb_io::RdbError;

/// The module id of `CMSk-TYPE` at encoding version `encver`
/// (0x08c4a4f9360f1000 for 0).
pub fn type_id(encver: u16) -> u64 {
    module_type_id(rdb::TYPE_NAME, encver).expect("a valid type name")
}

/// The payload: encoding 0, as [`rdb::save`] writes every sketch.
pub fn dump_payload(s: &CountMinSketch, rdb_version: u16) -> Vec<u8> {
    let mut w = DumpWriter::new(type_id(rdb::ENCODING_2_8_2 as u16));
    let written = rdb::save(s, &mut w);
    debug_assert_eq!(written, rdb::ENCODING_2_8_2);
    w.finish(rdb_version)
}

/// RESTORE: the payload's checksum, type and fields, and nothing after them
/// (2.8.2 refuses a trailing field too: `ERR Bad data format`).
pub fn load_payload(payload: &[u8]) -> Result<CountMinSketch, RdbError> {
    let mut r = DumpReader::new(payload).map_err(|_| RdbError::Io)?;
    if r.type_id & !0x3ff != type_id(0) {
        return Err(RdbError::Invalid("not a CMSk-TYPE value"));
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
    fn type_id_is_the_spec_one() {
        assert_eq!(type_id(0), 0x08c4_a4f9_360f_1000);
        assert_eq!(type_id(1), 0x08c4_a4f9_360f_1001);
    }
}
