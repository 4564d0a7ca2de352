//! The envelope of a DUMP payload.

use ferrobloom_core::dump_format::crc64_jones;

/// A DUMP payload is the serialized value, then the server's RDB version
/// (2 bytes, little-endian) and a CRC-64 of all before it (8 bytes): the
/// value part, which is the module's, and the version, which is the
/// server's. Panics on a payload whose CRC is wrong.
pub fn dump_parts(payload: &[u8]) -> (&[u8], u16) {
    assert!(
        payload.len() >= 10,
        "DUMP payload of {} bytes",
        payload.len()
    );
    let (signed, crc) = payload.split_at(payload.len() - 8);
    assert_eq!(
        crc64_jones(signed).to_le_bytes(),
        crc,
        "DUMP payload with a wrong CRC"
    );
    let (value, version) = signed.split_at(signed.len() - 2);
    (value, u16::from_le_bytes([version[0], version[1]]))
}

/// The same value in the envelope of a server with RDB version `version`
/// (a server refuses payloads of a newer RDB version than its own).
pub fn restamp_dump(payload: &[u8], version: u16) -> Vec<u8> {
    let (value, _) = dump_parts(payload);
    let mut out = value.to_vec();
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
