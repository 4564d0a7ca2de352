//! The envelope of a DUMP payload (the core's `dump_format`, which
//! `ferrobloom migrate` uses too), with a panic for a payload a test
//! expects to be well formed.

use ferrobloom_core::dump_format::{crc64_jones, split_trailer};

/// A DUMP payload is the serialized value, then the server's RDB version
/// (2 bytes, little-endian) and a CRC-64 of all before it (8 bytes): the
/// value part, which is the module's, and the version, which is the
/// server's. Panics on a payload whose CRC is wrong.
pub fn dump_parts(payload: &[u8]) -> (&[u8], u16) {
    split_trailer(payload)
        .unwrap_or_else(|e| panic!("DUMP payload of {} bytes: {e:?}", payload.len()))
}

/// The same value in the envelope of a server with RDB version `version`
/// (a server refuses payloads of a version it does not read). Unlike the
/// core's `restamp`, which `migrate` uses and which takes module values
/// only, any value: the tests also carry strings between servers (the
/// differential runners' DUMP of every key), whose encoding is the same in
/// every RDB version the tests meet (Redis 7.0's 10 to Valkey 9's 80).
pub fn restamp_dump(payload: &[u8], version: u16) -> Vec<u8> {
    let (value, _) = dump_parts(payload);
    let mut out = Vec::with_capacity(payload.len());
    out.extend_from_slice(value);
    out.extend_from_slice(&version.to_le_bytes());
    let crc = crc64_jones(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The bytes a hex string spells (the test vectors' DUMP payloads).
pub fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex digit"))
        .collect()
}
