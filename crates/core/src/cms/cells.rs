//! Cell sizes and the typed access to a row-major array of little-endian
//! counters. The cells live in one byte buffer (a [`BitArray`]) whatever
//! their size, so a loaded value adopts the buffer Redis read and a saved
//! one writes it as it is: on disk and in memory the bytes are the same.
//!
//! [`BitArray`]: crate::bitarray::BitArray

/// Bytes per counter: 4 is RedisBloom 2.8.2's layout (and the default);
/// 1, 2 and 8 are RedisBloom 8.12's `CELL_SIZE` choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CellSize {
    One,
    Two,
    Four,
    Eight,
}

impl CellSize {
    /// Every size, smallest first.
    pub const ALL: [CellSize; 4] = [
        CellSize::One,
        CellSize::Two,
        CellSize::Four,
        CellSize::Eight,
    ];

    /// The size of a sketch created without `CELL_SIZE` (2.8.2's).
    pub const DEFAULT: CellSize = CellSize::Four;

    /// The size of `n` bytes, if it is one.
    pub fn from_bytes(n: u64) -> Option<CellSize> {
        match n {
            1 => Some(CellSize::One),
            2 => Some(CellSize::Two),
            4 => Some(CellSize::Four),
            8 => Some(CellSize::Eight),
            _ => None,
        }
    }

    /// The `CELL_SIZE` argument. Redis' integer parser accepts exactly the
    /// texts `1`, `2`, `4` and `8` for these values (no sign, no leading
    /// zero, no spaces), so this is an exact comparison; anything else is
    /// `CMS: CELL_SIZE must be 1, 2, 4 or 8` ([`CELL_SIZE_ERROR`]).
    pub fn parse(arg: &[u8]) -> Option<CellSize> {
        match arg {
            b"1" => Some(CellSize::One),
            b"2" => Some(CellSize::Two),
            b"4" => Some(CellSize::Four),
            b"8" => Some(CellSize::Eight),
            _ => None,
        }
    }

    /// Bytes per cell.
    pub fn bytes(self) -> u64 {
        match self {
            CellSize::One => 1,
            CellSize::Two => 2,
            CellSize::Four => 4,
            CellSize::Eight => 8,
        }
    }

    /// The largest count a cell holds: 255, 65535, 4294967295, and
    /// 2^63 − 1 for 8-byte cells (the largest RESP integer, so every
    /// count can be replied as it is).
    pub fn max_count(self) -> u64 {
        match self {
            CellSize::One => u64::from(u8::MAX),
            CellSize::Two => u64::from(u16::MAX),
            CellSize::Four => u64::from(u32::MAX),
            CellSize::Eight => i64::MAX as u64,
        }
    }
}

/// The error text of a `CELL_SIZE` value that is not a size.
pub const CELL_SIZE_ERROR: &str = "CMS: CELL_SIZE must be 1, 2, 4 or 8";

/// Reads and writes counters of one width in a byte slice. Implemented by
/// zero-sized markers so every loop is compiled once per cell size.
pub(crate) trait Cell {
    const BYTES: usize;
    const MAX: u64;
    fn get(cells: &[u8], index: usize) -> u64;
    /// `value` is at most [`Cell::MAX`].
    fn set(cells: &mut [u8], index: usize, value: u64);
    /// Replaces cell `index` by `change(cell)`, which must stay within
    /// `[0, MAX]`: one bounds check for the read and the write.
    fn update(cells: &mut [u8], index: usize, change: impl FnOnce(u64) -> u64);
    /// The cell of a `BYTES`-long chunk (loops over `chunks_exact` need
    /// no bounds check per cell).
    fn read(chunk: &[u8]) -> u64;
    fn write(chunk: &mut [u8], value: u64);
}

macro_rules! cell {
    ($name:ident, $int:ty, $max:expr) => {
        pub(crate) struct $name;

        impl Cell for $name {
            const BYTES: usize = std::mem::size_of::<$int>();
            const MAX: u64 = $max;

            #[inline(always)]
            fn get(cells: &[u8], index: usize) -> u64 {
                let at = index * Self::BYTES;
                let raw: [u8; std::mem::size_of::<$int>()] = cells[at..at + Self::BYTES]
                    .try_into()
                    .expect("a cell's bytes");
                <$int>::from_le_bytes(raw) as u64
            }

            #[inline(always)]
            fn read(chunk: &[u8]) -> u64 {
                <$int>::from_le_bytes(chunk.try_into().expect("a cell's bytes")) as u64
            }

            #[inline(always)]
            fn write(chunk: &mut [u8], value: u64) {
                chunk.copy_from_slice(&(value as $int).to_le_bytes());
            }

            #[inline(always)]
            fn update(cells: &mut [u8], index: usize, change: impl FnOnce(u64) -> u64) {
                let at = index * Self::BYTES;
                let cell: &mut [u8; std::mem::size_of::<$int>()] = (&mut cells
                    [at..at + Self::BYTES])
                    .try_into()
                    .expect("a cell's bytes");
                let value = change(<$int>::from_le_bytes(*cell) as u64);
                debug_assert!(value <= Self::MAX);
                *cell = (value as $int).to_le_bytes();
            }

            #[inline(always)]
            fn set(cells: &mut [u8], index: usize, value: u64) {
                debug_assert!(value <= Self::MAX);
                let at = index * Self::BYTES;
                cells[at..at + Self::BYTES].copy_from_slice(&(value as $int).to_le_bytes());
            }
        }
    };
}

cell!(U8, u8, u8::MAX as u64);
cell!(U16, u16, u16::MAX as u64);
cell!(U32, u32, u32::MAX as u64);
cell!(U64, u64, i64::MAX as u64);

/// Runs `$body` with `$c` bound to the cell marker of `$size`.
macro_rules! with_cell {
    ($size:expr, $c:ident => $body:expr) => {
        match $size {
            $crate::cms::cells::CellSize::One => {
                type $c = $crate::cms::cells::U8;
                $body
            }
            $crate::cms::cells::CellSize::Two => {
                type $c = $crate::cms::cells::U16;
                $body
            }
            $crate::cms::cells::CellSize::Four => {
                type $c = $crate::cms::cells::U32;
                $body
            }
            $crate::cms::cells::CellSize::Eight => {
                type $c = $crate::cms::cells::U64;
                $body
            }
        }
    };
}
pub(crate) use with_cell;

/// The largest cell of a buffer of `size` cells: O(cells).
pub(crate) fn fullest(size: CellSize, cells: &[u8]) -> u64 {
    with_cell!(size, C => {
        (0..cells.len() / C::BYTES).map(|i| C::get(cells, i)).max().unwrap_or(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_exactly() {
        for (text, size) in [("1", 1), ("2", 2), ("4", 4), ("8", 8)] {
            assert_eq!(
                CellSize::parse(text.as_bytes()).map(CellSize::bytes),
                Some(size)
            );
        }
        for bad in ["0", "3", "16", "-1", "blah", "", "4.5", "+4", "04", " 4"] {
            assert_eq!(CellSize::parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(CellSize::from_bytes(3), None);
        assert_eq!(
            CellSize::ALL.map(CellSize::max_count),
            [255, 65535, 4294967295, 9223372036854775807]
        );
    }

    #[test]
    fn cells_are_little_endian() {
        let mut b = [0u8; 8];
        U16::set(&mut b, 1, 0x0102);
        assert_eq!(b, [0, 0, 2, 1, 0, 0, 0, 0]);
        assert_eq!(U16::get(&b, 1), 0x0102);
        U32::set(&mut b, 1, 0xdeadbeef);
        assert_eq!(U32::get(&b, 1), 0xdeadbeef);
        assert_eq!(fullest(CellSize::Two, &b), 0xdead);
    }
}
