//! Redis' serialized form of a module value, as `DUMP` returns it and
//! `RESTORE` takes it: `0x07`, the module id, the module's typed fields
//! (opcodes 2 unsigned, 4 double, 5 string), EOF, the RDB version and a
//! CRC-64. Redis writes and reads this itself; FerroBloom needs it to build
//! legacy payloads in tests, to fuzz the loader, and in tools.
//!
//! The framing is the same for every module type; each type's folder says
//! which type id and fields go inside (the Bloom filter's: `bloom::dump`).

use crate::bitarray::BitArray;
use crate::rdb_io::{RdbError, RdbInput, RdbOutput};

/// Redis' RDB version on 7.0 (the DUMP trailer).
pub const RDB_VERSION_7_0: u16 = 10;

const RDB_TYPE_MODULE_2: u8 = 7;
const OPCODE_EOF: u64 = 0;
const OPCODE_UINT: u64 = 2;
const OPCODE_DOUBLE: u64 = 4;
const OPCODE_STRING: u64 = 5;

/// The module id for a type name of 9 characters and an encoding version:
/// 6 bits per character (A-Z, a-z, 0-9, '-', '_'), first character most
/// significant, then the 10-bit version.
pub fn module_type_id(name: &[u8; 9], encver: u16) -> Option<u64> {
    let mut id = 0u64;
    for &c in name {
        let code = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        id = (id << 6) | u64::from(code);
    }
    Some((id << 10) | u64::from(encver & 0x3ff))
}

/// CRC-64/Jones (reflected, init 0), Redis' DUMP checksum.
pub fn crc64_jones(data: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5;
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u64; 256];
        for (i, slot) in t.iter_mut().enumerate() {
            let mut crc = i as u64;
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ POLY
                } else {
                    crc >> 1
                };
            }
            *slot = crc;
        }
        t
    });
    data.iter().fold(0u64, |crc, &b| {
        table[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}

fn push_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// Builds a DUMP payload field by field (strings stored uncompressed).
pub struct DumpWriter {
    out: Vec<u8>,
}

impl DumpWriter {
    /// Starts a payload for module id `type_id` (see [`module_type_id`]).
    pub fn new(type_id: u64) -> Self {
        let mut out = vec![RDB_TYPE_MODULE_2];
        push_len(&mut out, type_id);
        DumpWriter { out }
    }

    /// Ends the value and appends the trailer (RDB version and CRC).
    pub fn finish(mut self, rdb_version: u16) -> Vec<u8> {
        push_len(&mut self.out, OPCODE_EOF);
        self.out.extend_from_slice(&rdb_version.to_le_bytes());
        let crc = crc64_jones(&self.out);
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.out
    }
}

impl RdbOutput for DumpWriter {
    fn write_unsigned(&mut self, value: u64) {
        push_len(&mut self.out, OPCODE_UINT);
        push_len(&mut self.out, value);
    }
    fn write_double(&mut self, value: f64) {
        push_len(&mut self.out, OPCODE_DOUBLE);
        self.out.extend_from_slice(&value.to_le_bytes());
    }
    fn write_bytes(&mut self, bytes: &[u8]) {
        push_len(&mut self.out, OPCODE_STRING);
        push_len(&mut self.out, bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }
}

/// Why a payload cannot be parsed as a DUMP of a module value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpError {
    TooShort,
    BadChecksum,
    NotAModuleValue,
}

/// The bytes after the serialized value: RDB version (2) and CRC (8).
const TRAILER: usize = 10;

/// A payload's serialized value and the RDB version of its trailer, once
/// its CRC is checked. The value part is what the module (or the server,
/// for its own types) wrote; the version is the server's, whatever wrote
/// the value.
pub fn split_trailer(payload: &[u8]) -> Result<(&[u8], u16), DumpError> {
    if payload.len() <= TRAILER {
        return Err(DumpError::TooShort);
    }
    let (signed, crc) = payload.split_at(payload.len() - 8);
    if crc64_jones(signed).to_le_bytes() != crc {
        return Err(DumpError::BadChecksum);
    }
    let (value, version) = signed.split_at(signed.len() - 2);
    Ok((value, u16::from_le_bytes([version[0], version[1]])))
}

/// [`split_trailer`] without the CRC check (a pass over the whole
/// payload): for a look at a payload that something else checks, such as
/// the server it is RESTOREd on.
pub fn unchecked_parts(payload: &[u8]) -> Option<(&[u8], u16)> {
    let at = payload.len().checked_sub(TRAILER).filter(|&at| at > 0)?;
    Some((
        &payload[..at],
        u16::from_le_bytes([payload[at], payload[at + 1]]),
    ))
}

/// The same module value in the envelope of a server of RDB version
/// `rdb_version`: the version bytes rewritten and the CRC computed again.
///
/// A server refuses a payload of any RDB version it does not read (a newer
/// one; on Valkey 9 also the versions 12 to 79 that only Redis wrote).
/// For a module value (type byte `RDB_TYPE_MODULE_2`) the version says
/// nothing about the bytes: their framing (module id, typed opcodes, EOF)
/// is the same in every version that has the type, and what is inside
/// is the module's, versioned by the module id's encoding version. Any
/// other type's encoding may differ between RDB versions (listpacks,
/// stream fields...), so it is refused: `NotAModuleValue`.
pub fn restamp(payload: &[u8], rdb_version: u16) -> Result<Vec<u8>, DumpError> {
    let (value, _) = split_trailer(payload)?;
    if value.first() != Some(&RDB_TYPE_MODULE_2) {
        return Err(DumpError::NotAModuleValue);
    }
    let mut out = Vec::with_capacity(value.len() + TRAILER);
    out.extend_from_slice(value);
    out.extend_from_slice(&rdb_version.to_le_bytes());
    let crc = crc64_jones(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Reads the fields of a DUMP payload (after checking its CRC).
pub struct DumpReader<'a> {
    body: &'a [u8],
    pos: usize,
    /// The module id found in the payload.
    pub type_id: u64,
    /// The RDB version of the trailer.
    pub rdb_version: u16,
}

impl<'a> DumpReader<'a> {
    pub fn new(payload: &'a [u8]) -> Result<Self, DumpError> {
        let (body, rdb_version) = split_trailer(payload)?;
        let mut reader = DumpReader {
            body,
            pos: 0,
            type_id: 0,
            rdb_version,
        };
        if reader.byte().ok() != Some(RDB_TYPE_MODULE_2) {
            return Err(DumpError::NotAModuleValue);
        }
        reader.type_id = reader.len().map_err(|_| DumpError::TooShort)?;
        Ok(reader)
    }

    /// The encoding version carried in the module id.
    pub fn encoding_version(&self) -> i32 {
        (self.type_id & 0x3ff) as i32
    }

    /// Whether only the EOF opcode remains.
    pub fn at_eof(&mut self) -> bool {
        let save = self.pos;
        let eof = self.len() == Ok(OPCODE_EOF) && self.pos == self.body.len();
        self.pos = save;
        eof
    }

    fn byte(&mut self) -> Result<u8, RdbError> {
        let b = *self.body.get(self.pos).ok_or(RdbError::Io)?;
        self.pos += 1;
        Ok(b)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        let end = self.pos.checked_add(n).ok_or(RdbError::Io)?;
        let slice = self.body.get(self.pos..end).ok_or(RdbError::Io)?;
        self.pos = end;
        Ok(slice)
    }

    fn len(&mut self) -> Result<u64, RdbError> {
        let first = self.byte()?;
        match first >> 6 {
            0 => Ok(u64::from(first & 0x3f)),
            1 => Ok((u64::from(first & 0x3f) << 8) | u64::from(self.byte()?)),
            2 if first == 0x80 => Ok(u64::from(u32::from_be_bytes(
                self.bytes(4)?.try_into().expect("4 bytes"),
            ))),
            2 if first == 0x81 => Ok(u64::from_be_bytes(
                self.bytes(8)?.try_into().expect("8 bytes"),
            )),
            _ => Err(RdbError::Io),
        }
    }

    fn opcode(&mut self, expected: u64) -> Result<(), RdbError> {
        if self.len()? == expected {
            Ok(())
        } else {
            Err(RdbError::Io)
        }
    }

    /// A Redis string: raw, integer-encoded or LZF-compressed.
    fn string(&mut self) -> Result<Vec<u8>, RdbError> {
        let first = *self.body.get(self.pos).ok_or(RdbError::Io)?;
        if first >> 6 == 3 {
            self.pos += 1;
            return match first & 0x3f {
                0 => Ok((self.byte()? as i8).to_string().into_bytes()),
                1 => {
                    let v = i16::from_le_bytes(self.bytes(2)?.try_into().expect("2 bytes"));
                    Ok(v.to_string().into_bytes())
                }
                2 => {
                    let v = i32::from_le_bytes(self.bytes(4)?.try_into().expect("4 bytes"));
                    Ok(v.to_string().into_bytes())
                }
                3 => {
                    let clen = self.len()? as usize;
                    let ulen = self.len()? as usize;
                    let compressed = self.bytes(clen)?;
                    lzf_decompress(compressed, ulen).ok_or(RdbError::Io)
                }
                _ => Err(RdbError::Io),
            };
        }
        let n = usize::try_from(self.len()?).map_err(|_| RdbError::Io)?;
        Ok(self.bytes(n)?.to_vec())
    }
}

impl RdbInput for DumpReader<'_> {
    fn read_unsigned(&mut self) -> Result<u64, RdbError> {
        self.opcode(OPCODE_UINT)?;
        self.len()
    }
    fn read_double(&mut self) -> Result<f64, RdbError> {
        self.opcode(OPCODE_DOUBLE)?;
        Ok(f64::from_le_bytes(
            self.bytes(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn read_bit_array(&mut self) -> Result<BitArray, RdbError> {
        self.opcode(OPCODE_STRING)?;
        let bytes = self.string()?;
        BitArray::from_bytes(&bytes).map_err(|_| RdbError::Io)
    }
}

/// LZF decompression (Redis compresses long strings with it).
pub fn lzf_decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    // A back reference of 3 input bytes yields at most 264 output bytes, so
    // a larger claimed length is a lie; refusing it bounds the allocation.
    if out_len > input.len().saturating_mul(88).saturating_add(32) {
        return None;
    }
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(out_len).ok()?;
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            out.extend_from_slice(input.get(i..i + run)?);
            i += run;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i)? as usize;
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            let start = out.len().checked_sub(back)?;
            for j in 0..len + 2 {
                let b = out[start + j];
                out.push(b);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_id_and_crc() {
        assert_eq!(module_type_id(b"MBbloom--", 4), Some(0x3016e5a289bef804));
        assert_eq!(crc64_jones(b"123456789"), 0xe9c6d914c4b8d9ca);
    }

    /// A module value moves to another RDB version with its bytes intact;
    /// anything else is refused, as are payloads that are not payloads.
    #[test]
    fn restamp_rewrites_the_version_of_module_values_only() {
        let mut w = DumpWriter::new(module_type_id(b"MBbloom--", 4).unwrap());
        w.write_unsigned(7);
        w.write_bytes(b"bits");
        let on_74 = w.finish(12);
        let on_70 = restamp(&on_74, RDB_VERSION_7_0).unwrap();
        let (value_74, v) = split_trailer(&on_74).unwrap();
        assert_eq!(v, 12);
        let (value_70, v) = split_trailer(&on_70).unwrap();
        assert_eq!(v, RDB_VERSION_7_0);
        assert_eq!(value_70, value_74);
        assert_eq!(on_70.len(), on_74.len());
        assert_ne!(on_70[on_70.len() - 8..], on_74[on_74.len() - 8..]);
        let mut r = DumpReader::new(&on_70).unwrap();
        assert_eq!(r.rdb_version, RDB_VERSION_7_0);
        assert_eq!(r.read_unsigned(), Ok(7));
        // Back to its own version: the same bytes.
        assert_eq!(restamp(&on_70, 12).unwrap(), on_74);

        // `SET probe x` dumped by Redis 7.0: a string, type byte 0.
        let string = [
            0x00, 0x01, b'x', 0x0a, 0x00, 0x22, 0x80, 0x86, 0x5f, 0xbd, 0xe8, 0x48, 0xd0,
        ];
        assert_eq!(split_trailer(&string), Ok((&string[..3], 10)));
        assert_eq!(unchecked_parts(&string), Some((&string[..3], 10)));
        assert_eq!(unchecked_parts(&string[..10]), None);
        assert_eq!(restamp(&string, 11), Err(DumpError::NotAModuleValue));
        let mut bad = on_74.clone();
        bad[3] ^= 1;
        assert_eq!(restamp(&bad, 10), Err(DumpError::BadChecksum));
        assert_eq!(restamp(&on_74[..10], 10), Err(DumpError::TooShort));
    }
}
