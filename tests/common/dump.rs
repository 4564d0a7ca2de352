//! The envelope of a DUMP payload (the core's `dump_format`, which
//! `ferrobloom migrate` uses too), with a panic for a payload a test
//! expects to be well formed.

use ferrobloom_core::dump_format::{restamp, split_trailer};

/// A DUMP payload is the serialized value, then the server's RDB version
/// (2 bytes, little-endian) and a CRC-64 of all before it (8 bytes): the
/// value part, which is the module's, and the version, which is the
/// server's. Panics on a payload whose CRC is wrong.
pub fn dump_parts(payload: &[u8]) -> (&[u8], u16) {
    split_trailer(payload)
        .unwrap_or_else(|e| panic!("DUMP payload of {} bytes: {e:?}", payload.len()))
}

/// The same module value in the envelope of a server with RDB version
/// `version` (a server refuses payloads of a version it does not read).
pub fn restamp_dump(payload: &[u8], version: u16) -> Vec<u8> {
    restamp(payload, version)
        .unwrap_or_else(|e| panic!("DUMP payload of {} bytes: {e:?}", payload.len()))
}

/// The bytes a hex string spells (the test vectors' DUMP payloads).
pub fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex digit"))
        .collect()
}
