//! The RDB value of a Count-Min sketch (type `CMSk-TYPE`), over the module
//! API's typed calls ([`crate::rdb_io`]) so it runs without a server.
//!
//! Written: encoding 0, the version the type is registered with (Redis
//! writes one encoding version per type, never per value). A sketch with
//! 4-byte cells is written exactly as RedisBloom 2.8.2 writes it (spec
//! §6.1), so its DUMP is byte-identical and both RedisBloom versions load
//! it:
//! ```text
//! unsigned  width
//! unsigned  depth
//! unsigned  counter N
//! string    width·depth u32 little-endian cells, row-major
//! ```
//! A sketch with 1-, 2- or 8-byte cells adds one field after the cells:
//! ```text
//! unsigned  width, unsigned depth, unsigned counter N
//! string    width·depth·n bytes, little-endian cells, row-major
//! unsigned  n (the cell size)
//! ```
//! RedisBloom 2.8.2 refuses such a value cleanly (a field left before the
//! end: `ERR Bad data format`), and 8.12 too (its encoding-0 loader wants
//! width·depth·4 bytes of cells), rather than misreading its cells.
//!
//! Read: encoding 0 in both forms (the cell size is the string's length
//! over width·depth, and the trailing field must repeat it), and encoding
//! 1, RedisBloom 8.12's layout (spec §3.9), so its DUMP payloads RESTORE:
//! ```text
//! unsigned  width, unsigned depth, unsigned counter N, unsigned cell size
//! string    width·depth·cell size bytes, little-endian cells, row-major
//! ```
//!
//! 2.8.2 loads anything (a width of 0 then divides by zero, a short array
//! is written out of bounds). Here every field is checked, and the cell
//! array's length against the dimensions after it was read (the string is
//! what the payload holds, so nothing larger than the payload is allocated
//! before the check): refused are a width or depth of 0, dimensions over
//! 2.8.2's creation limits ([`check_dims`]), a string of another length,
//! a cell size not 1, 2, 4 or 8, and for cell sizes other than 4 an N
//! above 2^63 − 1 or an 8-byte cell above 2^63 − 1 (values 8.12 never
//! writes). Everything 2.8.2 writes loads, including saturated cells and
//! an N it wrapped.

use super::cells::{with_cell, Cell, CellSize};
use super::sizing::check_dims;
use super::sketch::CountMinSketch;
pub use crate::rdb_io::{RdbError, RdbInput, RdbOutput};

/// The highest encoding version read (8.12's layout).
pub const ENCODING_VERSION: i32 = 1;
/// The encoding written, and the one the type is registered with:
/// RedisBloom 2.8.2's.
pub const ENCODING_2_8_2: i32 = 0;
/// The module type's name.
pub const TYPE_NAME: &[u8; 9] = b"CMSk-TYPE";

fn invalid(why: &'static str) -> RdbError {
    RdbError::Invalid(why)
}

/// Writes `s` as encoding 0 (4-byte cells in RedisBloom's order of calls,
/// other sizes with their trailing cell size) and returns that encoding
/// version.
pub fn save(s: &CountMinSketch, out: &mut dyn RdbOutput) -> i32 {
    out.write_unsigned(s.width());
    out.write_unsigned(s.depth());
    out.write_unsigned(s.count());
    out.write_bytes(s.cell_bytes());
    if s.cell_size() != CellSize::Four {
        out.write_unsigned(s.cell_size().bytes());
    }
    ENCODING_2_8_2
}

/// Reads a value of encoding version `encver` (0 or 1).
pub fn load(input: &mut dyn RdbInput, encver: i32) -> Result<CountMinSketch, RdbError> {
    if !(0..=ENCODING_VERSION).contains(&encver) {
        return Err(invalid("unknown encoding version of a Count-Min sketch"));
    }
    let width = input.read_unsigned()?;
    let depth = input.read_unsigned()?;
    let count = input.read_unsigned()?;
    let (cell_size, cells) = if encver == ENCODING_2_8_2 {
        let cells = input.read_bit_array()?;
        let per_cell = width
            .checked_mul(depth)
            .filter(|&n| n > 0 && cells.len() as u64 % n == 0)
            .map(|n| cells.len() as u64 / n)
            .ok_or(invalid(
                "width or depth 0, or a cell array not a whole number of cells",
            ))?;
        let size = CellSize::from_bytes(per_cell).ok_or(invalid(
            "cell array length is not width x depth x 1, 2, 4 or 8",
        ))?;
        if size != CellSize::Four && input.read_unsigned()? != per_cell {
            return Err(invalid("trailing cell size does not match the cell array"));
        }
        (size, cells)
    } else {
        let size = CellSize::from_bytes(input.read_unsigned()?)
            .ok_or(invalid("cell size not 1, 2, 4 or 8"))?;
        (size, input.read_bit_array()?)
    };
    if cell_size != CellSize::Four && count > i64::MAX as u64 {
        return Err(invalid("counter above 2^63 - 1"));
    }
    let bytes = check_dims(width, depth, cell_size)
        .map_err(|_| invalid("width or depth 0, or more cells than a sketch can have"))?;
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

    /// A payload of `fields` unsigned values, then `cells` as the string,
    /// then the `after` unsigned values.
    fn framed(encver: u16, fields: &[u64], cells: &[u8], after: &[u64]) -> Vec<u8> {
        let mut w = DumpWriter::new(type_id(encver));
        for &f in fields {
            w.write_unsigned(f);
        }
        w.write_bytes(cells);
        for &f in after {
            w.write_unsigned(f);
        }
        w.finish(RDB_VERSION_7_0)
    }

    fn payload(encver: u16, fields: &[u64], cells: &[u8]) -> Vec<u8> {
        framed(encver, fields, cells, &[])
    }

    #[test]
    fn encoding_0_carries_other_cell_sizes_after_the_cells() {
        let s = load_payload(&framed(0, &[2, 2, 10], &[1, 2, 3, 4], &[1])).unwrap();
        assert_eq!(
            (s.cell_size(), s.count(), s.cell(3)),
            (CellSize::One, 10, 4)
        );
        let s = load_payload(&framed(0, &[1, 1, 7], &[7, 0, 0, 0, 0, 0, 0, 0], &[8])).unwrap();
        assert_eq!((s.cell_size(), s.query(b"x")), (CellSize::Eight, 7));
        let s = load_payload(&framed(0, &[1, 2, 3], &[0; 4], &[2])).unwrap();
        assert_eq!(s.cell_size(), CellSize::Two);
        let refused = |fields: &[u64], cells: &[u8], after: &[u64], why: &str| {
            assert!(
                load_payload(&framed(0, fields, cells, after)).is_err(),
                "{why}"
            );
        };
        refused(&[2, 2, 10], &[0; 4], &[], "1-byte cells without their size");
        refused(&[2, 2, 10], &[0; 4], &[2], "a size that does not match");
        refused(&[2, 2, 10], &[0; 12], &[3], "3-byte cells");
        refused(&[2, 2, 10], &[0; 6], &[], "not a whole number of cells");
        refused(
            &[2, 2, 10],
            &[0; 16],
            &[4],
            "4-byte cells with a trailing field",
        );
        refused(
            &[1, 1, 1 << 63],
            &[0],
            &[1],
            "N above 2^63 - 1 in 1-byte cells",
        );
        refused(&[1, 1, 0], &[0xff; 8], &[8], "8-byte cell above 2^63 - 1");
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
            assert_eq!(p[9] as i32 & 0x3ff, ENCODING_2_8_2, "{size:?}");
            let back = load_payload(&p).unwrap();
            assert_eq!(back.cell_size(), size);
            assert_eq!(back.cell_bytes(), s.cell_bytes());
            assert_eq!(back.count(), 207);
            assert_eq!(dump_payload(&back, RDB_VERSION_7_0), p);
        }
    }
}
