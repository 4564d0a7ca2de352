//! The Count-Min sketch: `depth` rows of `width` counters, row-major, and
//! the counter N of all increments. Row `r` of an item uses column
//! `MurmurHash2(item, r) mod width` (RedisBloom's placement, so cells match
//! 2.8.2's byte for byte).
//!
//! Increments follow RedisBloom 8.12: signed, and atomic per item. An
//! increment that would take one of the item's cells above its cell size's
//! maximum, or N above 2^63 − 1, is an overflow; a decrement larger than
//! one of the item's cells is an underflow; either way nothing changes.
//! A decrement larger than N is an underflow too: a counter never goes
//! below zero, even in a value whose N does not match its cells (2.8.2
//! loads such values as they are).

use super::cells::{with_cell, Cell, CellSize};
use super::rows;
use super::sizing::{check_dims, InitError};
use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal};
use crate::bitarray::{AllocError, BitArray};
use crate::hash::murmur2;
use crate::modulus::Modulus;

/// Rows whose columns are computed together ([`rows::indexes`]) and kept
/// on the stack; deeper sketches hash row by row, and an increment hashes
/// twice (check, then apply) instead of allocating.
const STACK_ROWS: usize = 32;

/// Why a sketch could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateError {
    /// The dimensions' limits (spec §3.3 rows 5 and 6).
    Init(InitError),
    /// The allocation guard said no.
    Refused(Refusal),
    /// The allocator said no.
    Alloc(AllocError),
}

impl CreateError {
    /// RedisBloom's reply: a refused or failed allocation is 2.8.2's
    /// `Insufficient memory` (what it answers on Redis 7.4).
    pub fn message(self) -> &'static str {
        match self {
            CreateError::Init(e) => e.message(),
            CreateError::Refused(_) | CreateError::Alloc(_) => {
                InitError::InsufficientMemory.message()
            }
        }
    }
}

/// Why an increment was not applied (the element of CMS.INCRBY's reply).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncrError {
    Overflow,
    Underflow,
}

impl IncrError {
    pub fn message(self) -> &'static str {
        match self {
            IncrError::Overflow => "CMS: INCRBY overflow",
            IncrError::Underflow => "CMS: INCRBY underflow",
        }
    }
}

/// What an increment left in the item's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Incremented {
    /// The item's new estimate: the smallest of its cells.
    pub estimate: u64,
    /// The largest of its cells.
    pub largest: u64,
}

/// A Count-Min sketch.
#[derive(Debug)]
pub struct CountMinSketch {
    width: u64,
    depth: u64,
    /// N: the sum of all increments. 2.8.2 lets it wrap past 2^64; such
    /// values load and save as they are (see [`CountMinSketch::count`]).
    count: u64,
    cell_size: CellSize,
    modulus: Modulus,
    cells: BitArray,
}

impl CountMinSketch {
    /// A zeroed sketch, the guard asked first. The memory asked for is
    /// [`CountMinSketch::memory_usage`] of the new sketch.
    pub fn new(
        width: u64,
        depth: u64,
        cell_size: CellSize,
        guard: &dyn AllocGuard,
    ) -> Result<CountMinSketch, CreateError> {
        let bytes = check_dims(width, depth, cell_size).map_err(CreateError::Init)?;
        guard
            .admit(AllocRequest {
                bytes,
                filter_size_after: memory_usage(width, depth, cell_size),
            })
            .map_err(CreateError::Refused)?;
        let cells = BitArray::zeroed(bytes).map_err(CreateError::Alloc)?;
        Ok(Self::from_parts(width, depth, 0, cell_size, cells))
    }

    /// A sketch over `cells` (`width·depth·cell size` bytes, checked by
    /// the caller: the RDB loader).
    pub(crate) fn from_parts(
        width: u64,
        depth: u64,
        count: u64,
        cell_size: CellSize,
        cells: BitArray,
    ) -> CountMinSketch {
        debug_assert_eq!(cells.len() as u64, width * depth * cell_size.bytes());
        CountMinSketch {
            width,
            depth,
            count,
            cell_size,
            modulus: Modulus::new(width).expect("width >= 1"),
            cells,
        }
    }

    pub fn width(&self) -> u64 {
        self.width
    }

    pub fn depth(&self) -> u64 {
        self.depth
    }

    pub fn cell_size(&self) -> CellSize {
        self.cell_size
    }

    /// N as stored: the sum of all increments (u64; a value 2.8.2 wrapped
    /// may exceed 2^63 − 1). 2.8.2's CMS.INFO prints it as a signed
    /// integer (`self.count() as i64`); 8.12's caps it
    /// ([`CountMinSketch::reported_count`]).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// N as RedisBloom 8.12's CMS.INFO reports it: never negative,
    /// capped at 2^63 − 1.
    pub fn reported_count(&self) -> i64 {
        i64::try_from(self.count).unwrap_or(i64::MAX)
    }

    /// Hands the cell array to `relocate` (active defragmentation), which
    /// may move it but must keep its size and content.
    pub fn relocate_cells(&mut self, relocate: impl FnOnce(BitArray) -> BitArray) {
        let len = self.cells.len();
        let empty = BitArray::zeroed(0).expect("an empty array needs no memory");
        let moved = relocate(std::mem::replace(&mut self.cells, empty));
        assert_eq!(moved.len(), len, "relocation must keep the size");
        self.cells = moved;
    }

    /// The cells, row-major, little-endian, as saved.
    pub fn cell_bytes(&self) -> &[u8] {
        self.cells.as_bytes()
    }

    /// Cell `index` (row-major: `row·width + column`); panics past
    /// `width·depth`.
    pub fn cell(&self, index: u64) -> u64 {
        let bytes = self.cells.as_bytes();
        with_cell!(self.cell_size, C => C::get(bytes, index as usize))
    }

    /// The largest count a cell of this sketch holds.
    pub fn max_count(&self) -> u64 {
        self.cell_size.max_count()
    }

    /// What MEMORY USAGE reports for the value (see [`memory_usage`]).
    pub fn memory_usage(&self) -> u64 {
        memory_usage(self.width, self.depth, self.cell_size)
    }

    /// The flat index of `item`'s cell in `row`.
    #[inline]
    pub fn cell_index(&self, item: &[u8], row: u64) -> u64 {
        index(self.width, self.modulus, item, row) as u64
    }

    /// The estimate of `item`: the smallest of its cells. A shallow
    /// sketch's rows are hashed together first, so that the cells' loads
    /// are issued back to back.
    pub fn query(&self, item: &[u8]) -> u64 {
        let bytes = self.cells.as_bytes();
        let depth = self.depth as usize;
        if depth <= STACK_ROWS {
            let mut stack = [0usize; STACK_ROWS];
            let kept = &mut stack[..depth];
            rows::indexes(self.width, self.modulus, item, kept);
            return with_cell!(self.cell_size, C => {
                kept.iter().map(|&i| C::get(bytes, i)).min().unwrap_or(0)
            });
        }
        with_cell!(self.cell_size, C => {
            (0..self.depth)
                .map(|r| C::get(bytes, index(self.width, self.modulus, item, r)))
                .min()
                .unwrap_or(0)
        })
    }

    /// Adds `incr` (any sign) to every cell of `item` and to N, or
    /// nothing at all (see the module doc). Returns the new estimate.
    /// An increment of 0 changes nothing and returns the estimate.
    /// `i64::MIN` is an underflow here (CMS.INCRBY refuses it while
    /// parsing: `CMS: invalid increment`).
    pub fn incrby(&mut self, item: &[u8], incr: i64) -> Result<u64, IncrError> {
        self.incrby_cells(item, incr).map(|c| c.estimate)
    }

    /// [`CountMinSketch::incrby`], with the largest of the item's cells
    /// after the change too (what a sketch's fullest cell may have risen
    /// to), at no extra hashing.
    #[inline]
    pub fn incrby_cells(&mut self, item: &[u8], incr: i64) -> Result<Incremented, IncrError> {
        if incr == 0 {
            let estimate = self.query(item);
            return Ok(Incremented {
                estimate,
                largest: estimate,
            });
        }
        let amount = incr.unsigned_abs();
        let count = if incr > 0 {
            self.count
                .checked_add(amount)
                .filter(|&n| n <= i64::MAX as u64)
                .ok_or(IncrError::Overflow)?
        } else {
            self.count.checked_sub(amount).ok_or(IncrError::Underflow)?
        };
        let changed = with_cell!(self.cell_size, C => self.apply::<C>(item, incr > 0, amount))?;
        self.count = count;
        Ok(changed)
    }

    /// The item's cells, checked then changed: their indexes kept on the
    /// stack when the sketch is shallow, computed again when it is not.
    /// Hashed by the scalar lanes, which an update runs faster than the
    /// vector ones ([`rows::indexes_exact`]).
    #[inline]
    fn apply<C: Cell>(
        &mut self,
        item: &[u8],
        up: bool,
        amount: u64,
    ) -> Result<Incremented, IncrError> {
        let (width, modulus, depth) = (self.width, self.modulus, self.depth);
        let cells = self.cells.as_bytes_mut();
        if depth as usize <= STACK_ROWS {
            let mut stack = [0usize; STACK_ROWS];
            let kept = &mut stack[..depth as usize];
            rows::indexes_exact(width, modulus, item, kept);
            change::<C>(cells, kept.iter().copied(), up, amount)
        } else {
            let rows = (0..depth).map(|r| index(width, modulus, item, r));
            change::<C>(cells, rows, up, amount)
        }
    }

    /// Every cell and N, from a merge that already checked them.
    pub(crate) fn cells_mut(&mut self) -> &mut [u8] {
        self.cells.as_bytes_mut()
    }

    pub(crate) fn set_count(&mut self, count: u64) {
        self.count = count;
    }

    /// An identical copy (COPY), the guard asked first.
    pub fn try_clone(&self, guard: &dyn AllocGuard) -> Result<CountMinSketch, CreateError> {
        guard
            .admit(AllocRequest {
                bytes: self.cells.len() as u64,
                filter_size_after: self.memory_usage(),
            })
            .map_err(CreateError::Refused)?;
        let cells = self.cells.try_clone().map_err(CreateError::Alloc)?;
        Ok(Self::from_parts(
            self.width,
            self.depth,
            self.count,
            self.cell_size,
            cells,
        ))
    }
}

/// The flat index of `item`'s cell in `row` of a sketch `width` wide.
#[inline(always)]
fn index(width: u64, modulus: Modulus, item: &[u8], row: u64) -> usize {
    // 2.8.2 passes the row as a 32-bit seed; only a sketch of width 1 can
    // have 2^32 rows, and there every column is 0.
    let hash = murmur2(item, row as u32);
    (row * width + modulus.reduce(u64::from(hash))) as usize
}

/// Adds `amount` to (`up`) or takes it from every cell of `rows`, or
/// changes nothing if one of them would leave `[0, C::MAX]`. Returns the
/// smallest and the largest new value.
///
/// Every cell moves by the same amount, so the smallest and the largest
/// old value decide whether all fit, and give the new ones: the cells
/// are read once to check, then each is changed in place.
#[inline(always)]
fn change<C: Cell>(
    cells: &mut [u8],
    rows: impl Iterator<Item = usize> + Clone,
    up: bool,
    amount: u64,
) -> Result<Incremented, IncrError> {
    let (mut min, mut max) = (u64::MAX, 0);
    for i in rows.clone() {
        let old = C::get(cells, i);
        min = min.min(old);
        max = max.max(old);
    }
    if up {
        if amount > C::MAX || max > C::MAX - amount {
            return Err(IncrError::Overflow);
        }
        for i in rows {
            C::update(cells, i, |old| old + amount);
        }
        Ok(Incremented {
            estimate: min + amount,
            largest: max + amount,
        })
    } else {
        if min < amount {
            return Err(IncrError::Underflow);
        }
        for i in rows {
            C::update(cells, i, |old| old - amount);
        }
        Ok(Incremented {
            estimate: min - amount,
            largest: max - amount,
        })
    }
}

/// What MEMORY USAGE reports for a sketch's value (the key's own overhead
/// is Redis'): for 4-byte cells 2.8.2's formula, `8 + width·depth·8` (it
/// counts 8 bytes a cell, spec §7.5), so the replies match; for the other
/// sizes the bytes held, the value's header and its cells.
pub fn memory_usage(width: u64, depth: u64, cell_size: CellSize) -> u64 {
    let cells = width.saturating_mul(depth);
    match cell_size {
        CellSize::Four => cells.saturating_mul(8).saturating_add(8),
        _ => cells
            .saturating_mul(cell_size.bytes())
            .saturating_add(std::mem::size_of::<CountMinSketch>() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;

    fn sketch(w: u64, d: u64, size: CellSize) -> CountMinSketch {
        CountMinSketch::new(w, d, size, &Unguarded).unwrap()
    }

    /// §3.8: foo → columns 1, 0; bar → 1, 1.
    #[test]
    fn worked_cells() {
        let mut s = sketch(2, 2, CellSize::Four);
        assert_eq!(s.incrby(b"foo", 3), Ok(3));
        assert_eq!(s.incrby(b"bar", 5), Ok(5));
        assert_eq!((0..4).map(|i| s.cell(i)).collect::<Vec<_>>(), [0, 8, 3, 5]);
        assert_eq!(
            [b"foo" as &[u8], b"bar", b"baz"].map(|i| s.query(i)),
            [3, 5, 3]
        );
        assert_eq!(s.count(), 8);
    }

    /// §3.9: a count that reaches the maximum exactly is not an error.
    #[test]
    fn exact_maximum_then_overflow() {
        let mut s = sketch(1, 1, CellSize::One);
        assert_eq!(s.incrby(b"a", 255), Ok(255));
        assert_eq!(s.incrby(b"a", 1), Err(IncrError::Overflow));
        assert_eq!(s.query(b"a"), 255);
        assert_eq!(s.count(), 255);
        assert_eq!(s.incrby(b"a", 0), Ok(255));
        assert_eq!(s.incrby(b"a", 300), Err(IncrError::Overflow));
        assert_eq!(s.incrby(b"a", i64::MAX), Err(IncrError::Overflow));
    }

    /// §3.9: `a -100 b 3 a -4` on a=10 → [underflow, 3, 6].
    #[test]
    fn underflow_leaves_the_next_pairs() {
        let mut s = sketch(100, 5, CellSize::Four);
        s.incrby(b"a", 10).unwrap();
        assert_eq!(s.incrby(b"a", -100), Err(IncrError::Underflow));
        assert_eq!(s.incrby(b"b", 3), Ok(3));
        assert_eq!(s.incrby(b"a", -4), Ok(6));
        assert_eq!(s.count(), 9);
        assert_eq!(s.incrby(b"a", i64::MIN), Err(IncrError::Underflow));
    }

    /// §3.9's test: a 5×2 sketch, `a 2147483647 b 10 c 7 d 5` three times.
    #[test]
    fn upstream_overflow_sequence() {
        let mut s = sketch(5, 2, CellSize::Four);
        let round = |s: &mut CountMinSketch| {
            [(b"a", 2147483647), (b"b", 10), (b"c", 7), (b"d", 5)].map(|(i, n)| s.incrby(i, n))
        };
        let _ = round(&mut s);
        assert_eq!(round(&mut s), [Ok(4294967294), Ok(27), Ok(34), Ok(10)]);
        assert_eq!(
            round(&mut s),
            [Err(IncrError::Overflow), Ok(44), Ok(51), Ok(15)]
        );
        assert_eq!(s.count(), 2 * (2147483647 + 22) + 22);
    }

    #[test]
    fn counter_is_capped_at_i64_max() {
        let mut s = sketch(1, 1, CellSize::Eight);
        assert_eq!(s.incrby(b"x", i64::MAX), Ok(i64::MAX as u64));
        assert_eq!(s.incrby(b"y", 1), Err(IncrError::Overflow));
        assert_eq!(s.reported_count(), i64::MAX);
        assert_eq!(s.incrby(b"x", -i64::MAX), Ok(0));
    }

    #[test]
    fn deep_sketches_are_atomic_too() {
        let mut s = sketch(3, 100, CellSize::Two);
        assert_eq!(s.incrby(b"x", 65535), Ok(65535));
        let before = s.cell_bytes().to_vec();
        assert_eq!(s.incrby(b"y", 1), Err(IncrError::Overflow));
        assert_eq!(s.cell_bytes(), &before[..]);
        assert_eq!(s.incrby(b"x", -65535), Ok(0));
        assert!(s.cell_bytes().iter().all(|&b| b == 0));
    }

    #[test]
    fn memory_usage_matches_2_8_2_for_four_byte_cells() {
        assert_eq!(memory_usage(2000, 7, CellSize::Four), 112008);
        assert_eq!(memory_usage(20, 5, CellSize::Four), 808);
        let sizes = CellSize::ALL.map(|c| memory_usage(1000, 5, c));
        assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{sizes:?}");
    }
}
