//! The DUMP payload of a windowed filter: its RDB value (see
//! [`super::rdb`]) framed as Redis frames a module value of type
//! `FBwindows`.

use super::filter::WindowFilter;
use super::rdb;
use crate::dump_format::{module_type_id, DumpReader, DumpWriter};
use crate::rdb_io::RdbError;

/// The module id of `FBwindows` at its encoding version.
pub fn type_id() -> u64 {
    module_type_id(rdb::TYPE_NAME, rdb::ENCODING_VERSION as u16).expect("a valid type name")
}

pub fn dump_payload(f: &WindowFilter, rdb_version: u16) -> Vec<u8> {
    let mut w = DumpWriter::new(type_id());
    rdb::save(f, &mut w);
    w.finish(rdb_version)
}

pub fn load_payload(payload: &[u8]) -> Result<WindowFilter, RdbError> {
    let mut r = DumpReader::new(payload).map_err(|_| RdbError::Io)?;
    if r.type_id & !0x3ff != type_id() & !0x3ff {
        return Err(RdbError::Invalid("not a FBwindows value"));
    }
    let encver = r.encoding_version();
    let f = rdb::load(&mut r, encver)?;
    if !r.at_eof() {
        return Err(RdbError::Invalid("trailing data"));
    }
    Ok(f)
}
