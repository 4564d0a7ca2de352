//! The RDB value of a Count-Min sketch (type `CMSk-TYPE`), over the module
//! API's typed calls ([`crate::rdb_io`]) so it runs without a server.
//!
//! Encoding 0, RedisBloom 2.8.2's (spec §6.1), for 4-byte cells:
//! ```text
//! unsigned  width
//! unsigned  depth
//! unsigned  counter N
//! string    width·depth u32 little-endian cells, row-major
//! ```
//! Encoding 1, RedisBloom 8.12's (spec §3.9), for any cell size:
//! ```text
//! unsigned  width, unsigned depth, unsigned counter N, unsigned cell size
//! string    width·depth·cell size bytes, little-endian cells, row-major
//! ```
//! [`save`] writes encoding 0 for 4-byte cells (byte-identical to 2.8.2, so
//! 2.8.2 and 8.12 load it) and encoding 1 otherwise, and returns which.
//! Redis writes a value's encoding version from the type's registration,
//! not per value: [`encoding_for`] says which one a sketch needs.
//!
//! 2.8.2 loads anything (a width of 0 then divides by zero, a short array
//! is written out of bounds). Here every field is checked, and the cell
//! array's length against the dimensions after it was read (the string is
//! what the payload holds, so nothing larger than the payload is allocated
//! before the check): refused are a width or depth of 0, dimensions over
//! 2.8.2's creation limits ([`check_dims`]), a string of another length,
//! a cell size not 1, 2, 4 or 8, and in encoding 1 an N above 2^63 − 1 or
//! an 8-byte cell above 2^63 − 1 (values 8.12 never writes). Everything
//! 2.8.2 writes loads, including saturated cells and an N it wrapped.

use super::cells::{with_cell, Cell, CellSize};
use super::sizing::check_dims;
use super::sketch::CountMinSketch;
pub use crate::rdb_io::{RdbError, RdbInput, RdbOutput};

/// The highest encoding version read.
pub const ENCODING_VERSION: i32 = 1;
/// RedisBloom 2.8.2's encoding (4-byte cells).
pub const ENCODING_2_8_2: i32 = 0;
/// The module type's name.
pub const TYPE_NAME: &[u8; 9] = b"CMSk-TYPE";

fn invalid(why: &'static str) -> RdbError {
    RdbError::Invalid(why)
}

/// The encoding version [`save`] writes for a sketch of `cell_size`.
pub fn encoding_for(cell_size: CellSize) -> i32 {
    if cell_size == CellSize::Four {
        ENCODING_2_8_2
    } else {
        ENCODING_VERSION
    }
}

/// Writes `s` in [`encoding_for`] its cell size, in RedisBloom's order of
/// calls, and returns that encoding version.
pub fn save(s: &CountMinSketch, out: &mut dyn RdbOutput) -> i32 {
    let encver = encoding_for(s.cell_size());
    out.write_unsigned(s.width());
    out.write_unsigned(s.depth());
    out.write_unsigned(s.count());
    if encver != ENCODING_2_8_2 {
        out.write_unsigned(s.cell_size().bytes());
    }
    out.write_bytes(s.cell_bytes());
    encver
}

/// Reads a value of encoding version `encver` (0 or 1).
pub fn load(input: &mut dyn RdbInput, encver: i32) -> Result<CountMinSketch, RdbError> {
    if !(0..=ENCODING_VERSION).contains(&encver) {
        return Err(invalid("unknown encoding version of a Count-Min sketch"));
    }
    let width = input.read_unsigned()?;
    let depth = input.read_unsigned()?;
    let count = input.read_unsigned()?;
    let cell_size = if encver == ENCODING_2_8_2 {
        CellSize::Four
    } else {
        if count > i64::MAX as u64 {
            return Err(invalid("counter above 2^63 - 1"));
        }
        CellSize::from_bytes(input.read_unsigned()?).ok_or(invalid("cell size not 1, 2, 4 or 8"))?
    };
    let bytes = check_dims(width, depth, cell_size)
        .map_err(|_| invalid("width or depth 0, or more cells than a sketch can have"))?;
    let cells = input.read_bit_array()?;
    if cells.len() as u64 != bytes {
        return Err(invalid(
            "cell array length is not width x depth x cell size",
        ));
    }
    let over = with_cell!(cell_size, C => {
        // Only 8-byte cells can hold more than their maximum.
        C::MAX < u64::MAX >> (64 - 8 * C::BYTES)
            && (0..bytes as usize / C::BYTES).any(|i| C::get(cells.as_bytes(), i) > C::MAX)
    });
    if over {
        return Err(invalid("a cell above its cell size's maximum"));
    }
    Ok(CountMinSketch::from_parts(
        width, depth, count, cell_size, cells,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;
    use crate::cms::dump::{dump_payload, load_payload, type_id};
    use crate::dump_format::{DumpWriter, RDB_VERSION_7_0};

    /// A payload of `fields` unsigned values, then `cells` as the string.
    fn payload(encver: u16, fields: &[u64], cells: &[u8]) -> Vec<u8> {
        let mut w = DumpWriter::new(type_id(encver));
        for &f in fields {
            w.write_unsigned(f);
        }
        w.write_bytes(cells);
        w.finish(RDB_VERSION_7_0)
    }

    #[test]
    fn fields_are_validated() {
        assert!(load_payload(&payload(0, &[2, 2, 10], &[0; 16])).is_ok());
        assert!(load_payload(&payload(1, &[2, 2, 10, 1], &[0; 4])).is_ok());
        let refused = |encver, fields: &[u64], cells: &[u8], why: &str| {
            assert!(
                load_payload(&payload(encver, fields, cells)).is_err(),
                "{why}"
            );
        };
        refused(0, &[2, 2, 10], &[0; 15], "short array");
        refused(0, &[1000, 10, 0], &[0; 16], "1000x10 with 16 bytes");
        refused(0, &[0, 2, 0], &[], "width 0");
        refused(0, &[2, 0, 0], &[], "depth 0");
        refused(0, &[1 << 33, 1 << 33, 0], &[], "absurd dims");
        refused(0, &[1 << 62, 1, 0], &[], "2^62 cells");
        refused(1, &[2, 2, 0, 3], &[0; 12], "cell size 3");
        refused(1, &[2, 2, 0, 0], &[], "cell size 0");
        refused(1, &[1, 1, 1 << 63, 1], &[0], "N above 2^63 - 1");
        refused(1, &[1, 1, 0, 8], &[0xff; 8], "cell above 2^63 - 1");
        refused(2, &[2, 2, 10], &[0; 16], "encoding 2");
        // 2.8.2 wraps N and saturates cells: both load.
        let s = load_payload(&payload(0, &[1, 1, u64::MAX - 1], &[0xff; 4])).unwrap();
        assert_eq!((s.count(), s.query(b"x")), (u64::MAX - 1, 4294967295));
        assert_eq!(s.count() as i64, -2);
        let s = load_payload(&payload(
            1,
            &[1, 1, 5, 8],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
        ))
        .unwrap();
        assert_eq!(s.query(b"x"), i64::MAX as u64);
    }

    #[test]
    fn every_cell_size_round_trips() {
        for size in CellSize::ALL {
            let mut s = CountMinSketch::new(7, 3, size, &Unguarded).unwrap();
            s.incrby(b"a", 200).unwrap();
            s.incrby(b"b", 7).unwrap();
            let p = dump_payload(&s, RDB_VERSION_7_0);
            assert_eq!(p[9] as i32 & 0x3ff, encoding_for(size), "{size:?}");
            let back = load_payload(&p).unwrap();
            assert_eq!(back.cell_size(), size);
            assert_eq!(back.cell_bytes(), s.cell_bytes());
            assert_eq!(back.count(), 207);
            assert_eq!(dump_payload(&back, RDB_VERSION_7_0), p);
        }
    }
}
