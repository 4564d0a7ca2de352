//! The first bit array of every generation, interleaved: position `p` of
//! all `S` slots sits in one `S`-bit *cell*, so an item's `k` positions
//! cost `k` memory accesses however many generations are looked up (a
//! generation per array would cost up to `k + 2G`). A lookup ANDs the
//! cells of its positions and stops as soon as no live generation is
//! left; an add sets its slot's bit in each cell in the same pass.
//!
//! Memory is the same as `S` separate arrays: cell `p` takes bits
//! `p*S .. p*S + S` of one array of `S` times a generation's bytes.
//!
//! # Retiring without a pause
//!
//! A retired generation's bits are spread over every cell, so clearing
//! them at once would rewrite the whole array. Instead, retiring marks the
//! slot *stale* in every block of [`BLOCK_CELLS`] cells (16 bytes per
//! block: 0.3 % of a block of 10-slot cells): its bits there read as 0.
//! A block's stale bits are cleared for real the first time an add writes
//! to it, or when the sweep that every add advances a little reaches it
//! ([`Cells::sweep`]), in whole 64-bit words (a mask per word of a group
//! of 64 cells). While no block is stale, reads skip the marks.

use crate::bitarray::{AllocError, BitArray};
use crate::hash::HashPair;
use crate::modulus::Modulus;

/// The most slots a cell holds: `G + 2` for 64 generations.
pub const MAX_WIDTH: u32 = 66;

/// A cell's bits, one per slot (bit `s` for slot `s`).
pub type Mask = u128;

/// Cells per block of stale marks (64 groups of 64 cells).
pub const BLOCK_CELLS: u64 = 4096;

/// What marks a block's stale slots occupy, in bytes.
pub const MARK_BYTES: u64 = 16;

#[derive(Debug)]
pub struct Cells {
    /// Slots per cell.
    width: u32,
    /// Cells (a generation's bit count, the modulus of its positions).
    modulus: Modulus,
    hashes: u32,
    data: BitArray,
    /// Per block of [`BLOCK_CELLS`] cells, the slots whose bits there are
    /// left over from a retired generation: they read as 0.
    stale: Vec<Mask>,
    /// Blocks with a stale slot (0: reads skip `stale`).
    stale_blocks: u64,
    /// The next block the sweep looks at, and the cells of sweeping work
    /// the adds have paid for and it has not done yet.
    sweep_at: u64,
    sweep_credit: u64,
}

/// Where a sweep is: what [`Cells::sweep_state`] saves and
/// [`Cells::with_stale`] restores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepState {
    pub stale: Vec<Mask>,
    pub sweep_at: u64,
    pub sweep_credit: u64,
}

impl Cells {
    /// Zeroed cells of `width` slots for positions below `modulus`, in
    /// `bytes` bytes (at least `modulus * width` bits).
    pub fn new(width: u32, modulus: u64, hashes: u32, bytes: u64) -> Result<Cells, AllocError> {
        let data = BitArray::zeroed(bytes)?;
        Cells::from_data(width, modulus, hashes, data).ok_or(AllocError { bytes })
    }

    /// Cells over a stored array; None when the shape does not fit it.
    pub fn from_data(width: u32, modulus: u64, hashes: u32, data: BitArray) -> Option<Cells> {
        if !(1..=MAX_WIDTH).contains(&width) {
            return None;
        }
        let needed = modulus.checked_mul(u64::from(width))?.div_ceil(8);
        // Whole 64-bit words: a cell is read a word at a time.
        if needed > data.len() as u64 || data.len() % 8 != 0 {
            return None;
        }
        let blocks = usize::try_from(modulus.div_ceil(BLOCK_CELLS)).ok()?;
        let mut stale = Vec::new();
        stale.try_reserve_exact(blocks).ok()?;
        stale.resize(blocks, 0);
        Some(Cells {
            width,
            modulus: Modulus::new(modulus)?,
            hashes,
            data,
            stale,
            stale_blocks: 0,
            sweep_at: 0,
            sweep_credit: 0,
        })
    }

    /// Restores saved stale marks and sweep position; None when they do
    /// not fit these cells.
    pub fn with_stale(mut self, saved: SweepState) -> Option<Cells> {
        let all = self.all();
        if saved.stale.len() != self.stale.len()
            || saved.stale.iter().any(|&m| m & !all != 0)
            || (saved.sweep_at >= self.blocks() && self.blocks() > 0)
            || saved.sweep_credit >= BLOCK_CELLS
        {
            return None;
        }
        self.stale_blocks = saved.stale.iter().filter(|&&m| m != 0).count() as u64;
        self.stale = saved.stale;
        self.sweep_at = saved.sweep_at;
        self.sweep_credit = saved.sweep_credit;
        Some(self)
    }

    /// The stale marks and the sweep's position, for saving.
    pub fn sweep_state(&self) -> SweepState {
        SweepState {
            stale: self.stale.clone(),
            sweep_at: self.sweep_at,
            sweep_credit: self.sweep_credit,
        }
    }

    /// Blocks of stale marks.
    pub fn blocks(&self) -> u64 {
        self.stale.len() as u64
    }

    /// Bytes of the stale marks (besides [`Cells::bytes`]).
    pub fn mark_bytes(&self) -> u64 {
        self.blocks() * MARK_BYTES
    }

    /// Bytes of cells that still hold bits of retired generations.
    pub fn stale_bytes(&self) -> u64 {
        self.stale_blocks * BLOCK_CELLS * u64::from(self.width) / 8
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    /// Cells, which is each generation's bit count.
    pub fn cells(&self) -> u64 {
        self.modulus.divisor()
    }

    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    pub fn bytes(&self) -> u64 {
        self.data.len() as u64
    }

    pub fn data(&self) -> &BitArray {
        &self.data
    }

    /// The mask of all slots.
    pub fn all(&self) -> Mask {
        Mask::MAX >> (128 - self.width)
    }

    /// Writes the item's first `min(hashes, out.len())` positions into
    /// `out`; returns how many.
    #[inline]
    pub fn positions_into(&self, h: HashPair, out: &mut [u64]) -> usize {
        let n = (self.hashes as usize).min(out.len());
        let mut steps = self.modulus.steps(h.a, h.b);
        for slot in out.iter_mut().take(n) {
            *slot = steps.next_position();
        }
        n
    }

    /// Position `i` of an item.
    #[inline(always)]
    pub fn position(&self, h: HashPair, i: u64) -> u64 {
        self.modulus.reduce(h.a.wrapping_add(i.wrapping_mul(h.b)))
    }

    #[inline(always)]
    fn first_bit(&self, p: u64) -> u64 {
        p * u64::from(self.width)
    }

    /// The cell at position `p` (below [`Cells::cells`]). Reads the 64-bit
    /// words that hold it and no more: an unaligned 16-byte read would
    /// cross into the next cache line for one cell in four.
    #[inline(always)]
    pub fn cell(&self, p: u64) -> Mask {
        let bit = self.first_bit(p);
        let word = (bit >> 6) as usize;
        let shift = (bit & 63) as u32;
        let bytes = self.data.as_bytes();
        let read = |w: usize| -> u64 {
            let at = w * 8;
            match bytes.get(at..at + 8) {
                Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
                None => 0,
            }
        };
        let mut raw = Mask::from(read(word) >> shift);
        let mut have = 64 - shift;
        while have < self.width {
            raw |= Mask::from(read(word + ((have + shift) / 64) as usize)) << have;
            have += 64;
        }
        let live = if self.stale_blocks == 0 {
            self.all()
        } else {
            self.all() & !self.stale[(p / BLOCK_CELLS) as usize]
        };
        raw & live
    }

    /// Sets slot `slot`'s bit of the cell at `p`; true when it was clear.
    /// A block with stale slots is cleared first, so no bit left over from
    /// a retired generation is taken for the new one's.
    #[inline(always)]
    pub fn set(&mut self, p: u64, slot: u32) -> bool {
        if self.stale_blocks != 0 {
            let block = p / BLOCK_CELLS;
            if self.stale[block as usize] != 0 {
                self.clean_block(block);
            }
        }
        self.data.set(self.first_bit(p) + u64::from(slot))
    }

    /// Whether slot `slot`'s bit of the cell at `p` is set (a stale slot's
    /// reads as clear).
    #[inline(always)]
    pub fn get(&self, p: u64, slot: u32) -> bool {
        self.cell(p) >> slot & 1 == 1
    }

    /// Marks the slots of `slots` stale in every block: their bits read as
    /// 0 from now on, and are cleared as blocks are written or swept.
    pub fn retire(&mut self, slots: Mask) {
        if slots == 0 {
            return;
        }
        for m in &mut self.stale {
            *m |= slots;
        }
        self.stale_blocks = self.blocks();
    }

    /// Clears the stale slots' bits in block `block`.
    fn clean_block(&mut self, block: u64) {
        let stale = std::mem::take(&mut self.stale[block as usize]);
        if stale == 0 {
            return;
        }
        self.stale_blocks -= 1;
        let start = block * BLOCK_CELLS;
        let end = (start + BLOCK_CELLS).min(self.cells());
        self.clear_raw(stale, start..end);
    }

    /// Sweeps on: `budget` more cells' worth of clearing, done a block at
    /// a time from where the last sweep stopped (a clean block passed over
    /// costs 1/64 of one). Returns the cells of the blocks cleared.
    pub fn sweep(&mut self, budget: u64) -> u64 {
        if self.stale_blocks == 0 {
            self.sweep_credit = 0;
            return 0;
        }
        let mut credit = self.sweep_credit.saturating_add(budget);
        let mut cleared = 0;
        while self.stale_blocks > 0 && credit >= BLOCK_CELLS / 64 {
            let block = self.sweep_at;
            if self.stale[block as usize] != 0 {
                if credit < BLOCK_CELLS {
                    break;
                }
                self.clean_block(block);
                credit -= BLOCK_CELLS;
                cleared += BLOCK_CELLS;
            } else {
                credit -= BLOCK_CELLS / 64;
            }
            self.sweep_at = (block + 1) % self.blocks();
        }
        self.sweep_credit = if self.stale_blocks == 0 {
            0
        } else {
            credit.min(BLOCK_CELLS - 1)
        };
        cleared
    }

    /// Hints the CPU to bring the cells of `positions` closer.
    #[inline(always)]
    pub fn prefetch(&self, positions: &[u64]) {
        for &p in positions {
            self.data.prefetch(self.first_bit(p));
        }
    }

    /// Like [`Cells::prefetch`], for cells about to be written.
    #[inline(always)]
    pub fn prefetch_write(&self, positions: &[u64]) {
        let mut bits = [0u64; 64];
        let n = positions.len().min(bits.len());
        for (b, &p) in bits.iter_mut().zip(positions) {
            *b = self.first_bit(p);
        }
        self.data.prefetch_many_write(&bits[..n]);
    }

    /// Before a run of [`Cells::set`].
    #[inline(always)]
    pub fn prepare_writes(&mut self) {
        self.data.prepare_writes();
    }

    /// The AND of the cells at every position of the item, starting from
    /// `mask`; stops at the first position where it becomes 0.
    #[inline]
    pub fn and_over(&self, h: HashPair, mut mask: Mask) -> Mask {
        let mut steps = self.modulus.steps(h.a, h.b);
        for _ in 0..self.hashes {
            if mask == 0 {
                break;
            }
            mask &= self.cell(steps.next_position());
        }
        mask
    }

    /// The 64-bit words of a group of 64 cells that hold the bits of the
    /// slots in `slots`: cells `64g .. 64g + 64` are words `g*W .. g*W + W`.
    fn group_masks(&self, slots: Mask) -> Vec<u64> {
        let w = self.width as usize;
        let mut masks = vec![0u64; w];
        for slot in (0..self.width).filter(|&s| slots >> s & 1 == 1) {
            for c in 0..64 {
                let bit = c * w + slot as usize;
                masks[bit / 64] |= 1 << (bit % 64);
            }
        }
        masks
    }

    /// Slot `slot`'s bits set in cells `range`, as reads see them (none
    /// in blocks where it is stale).
    pub fn count_slot(&self, slot: u32, range: std::ops::Range<u64>) -> u64 {
        let mut count = 0;
        let mut p = range.start;
        while p < range.end {
            let block = p / BLOCK_CELLS;
            let end = ((block + 1) * BLOCK_CELLS).min(range.end);
            if self.stale[block as usize] >> slot & 1 == 0 {
                count += self.count_raw(1 << slot, p..end);
            }
            p = end;
        }
        count
    }

    /// The bits of the slots in `slots` set in cells `range`, stale or not.
    fn count_raw(&self, slots: Mask, range: std::ops::Range<u64>) -> u64 {
        let masks = self.group_masks(slots);
        let w = u64::from(self.width);
        let bytes = self.data.as_bytes();
        let (mut count, mut p) = (0, range.start);
        while p < range.end {
            if p % 64 == 0 && p + 64 <= range.end {
                let first = ((p / 64) * w * 8) as usize;
                for (j, mask) in masks.iter().enumerate() {
                    let at = first + j * 8;
                    let word = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
                    count += u64::from((word & mask).count_ones());
                }
                p += 64;
            } else {
                let bit = self.first_bit(p);
                for s in (0..self.width).filter(|&s| slots >> s & 1 == 1) {
                    count += u64::from(self.data.get(bit + u64::from(s)));
                }
                p += 1;
            }
        }
        count
    }

    /// Clears the bits of the slots in `slots` in cells `range`, in whole
    /// words where the range covers whole groups of 64 cells.
    fn clear_raw(&mut self, slots: Mask, range: std::ops::Range<u64>) {
        let masks = self.group_masks(slots);
        let w = u64::from(self.width);
        let mut p = range.start;
        while p < range.end {
            if p % 64 == 0 && p + 64 <= range.end {
                let first = ((p / 64) * w * 8) as usize;
                let bytes = self.data.as_bytes_mut();
                for (j, mask) in masks.iter().enumerate() {
                    let at = first + j * 8;
                    let chunk: &mut [u8; 8] = (&mut bytes[at..at + 8]).try_into().expect("8 bytes");
                    let word = u64::from_le_bytes(*chunk);
                    if word & mask != 0 {
                        *chunk = (word & !mask).to_le_bytes();
                    }
                }
                p += 64;
            } else {
                let bit = self.first_bit(p);
                for s in (0..self.width).filter(|&s| slots >> s & 1 == 1) {
                    let at = bit + u64::from(s);
                    self.data.as_bytes_mut()[(at >> 3) as usize] &= !(1u8 << (at & 7));
                }
                p += 1;
            }
        }
    }

    /// Whether any bit past the last cell is set (never, in cells this
    /// code wrote).
    pub fn padding_is_clear(&self) -> bool {
        let end = self.first_bit(self.cells());
        let bytes = self.data.as_bytes();
        let first_full = end.div_ceil(8) as usize;
        let partial_ok = end % 8 == 0 || bytes[(end / 8) as usize] >> (end % 8) == 0;
        partial_ok && bytes[first_full..].iter().all(|&b| b == 0)
    }

    pub fn try_clone(&self) -> Result<Cells, AllocError> {
        let mut stale = Vec::new();
        stale
            .try_reserve_exact(self.stale.len())
            .map_err(|_| AllocError {
                bytes: self.mark_bytes(),
            })?;
        stale.extend_from_slice(&self.stale);
        Ok(Cells {
            data: self.data.try_clone()?,
            stale,
            ..*self
        })
    }

    pub fn skip_huge_pages(&mut self) {
        self.data.skip_huge_pages();
    }

    /// Hands the array to `relocate` (defragmentation: it may move the
    /// memory, never the content).
    pub fn relocate_data(&mut self, relocate: impl FnOnce(BitArray) -> BitArray) {
        let len = self.data.len();
        let empty = BitArray::zeroed(0).expect("an empty array needs no memory");
        let moved = relocate(std::mem::replace(&mut self.data, empty));
        assert_eq!(moved.len(), len, "relocation kept the size");
        self.data = moved;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_count(c: &Cells, slot: u32, range: std::ops::Range<u64>) -> u64 {
        range.filter(|&p| c.get(p, slot)).count() as u64
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Cells for `modulus` positions of `width` slots, with random bits set
    /// in each slot; the bits each slot should read.
    fn random_cells(width: u32, modulus: u64, rng: &mut Rng) -> (Cells, Vec<Vec<bool>>) {
        let bytes = (modulus * u64::from(width)).div_ceil(64) * 8;
        let mut c = Cells::new(width, modulus, 5, bytes).unwrap();
        let mut expect = vec![vec![false; modulus as usize]; width as usize];
        for _ in 0..modulus * 2 {
            let x = rng.next();
            let p = x % modulus;
            let s = ((x >> 32) % u64::from(width)) as u32;
            let was_clear = !expect[s as usize][p as usize];
            assert_eq!(c.set(p, s), was_clear);
            expect[s as usize][p as usize] = true;
        }
        (c, expect)
    }

    fn check(c: &Cells, expect: &[Vec<bool>]) {
        for (s, bits) in expect.iter().enumerate() {
            for (p, &bit) in bits.iter().enumerate() {
                assert_eq!(c.get(p as u64, s as u32), bit, "slot {s} cell {p}");
            }
            let n = bits.iter().filter(|&&b| b).count() as u64;
            assert_eq!(c.count_slot(s as u32, 0..c.cells()), n);
            assert_eq!(
                c.count_slot(s as u32, 3..700),
                naive_count(c, s as u32, 3..700)
            );
        }
    }

    #[test]
    fn cells_hold_one_bit_per_slot() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for width in [1, 3, 10, 17, 64, 66] {
            let (c, expect) = random_cells(width, 1000, &mut rng);
            check(&c, &expect);
            assert!(c.padding_is_clear());
        }
    }

    /// A retired slot reads as empty at once; its bits are cleared by the
    /// next write to their block or by the sweep, never anyone else's.
    #[test]
    fn retired_slots_read_empty_and_are_cleared_lazily() {
        let mut rng = Rng(0x1234_5678_9ABC_DEF1);
        for width in [3, 10, 66] {
            let modulus = 3 * BLOCK_CELLS + 1000;
            let (mut c, mut expect) = random_cells(width, modulus, &mut rng);
            let retired = width / 2;
            c.retire(1 << retired);
            expect[retired as usize].iter_mut().for_each(|b| *b = false);
            assert_eq!(
                c.stale_bytes(),
                c.blocks() * BLOCK_CELLS * u64::from(width) / 8
            );
            check(&c, &expect);
            // A write into block 1 clears that block; the slot starts over.
            let p = BLOCK_CELLS + 17;
            assert!(c.set(p, retired));
            expect[retired as usize][p as usize] = true;
            check(&c, &expect);
            assert_eq!(c.count_raw(1 << retired, BLOCK_CELLS..2 * BLOCK_CELLS), 1);
            // The sweep clears the rest, a block per BLOCK_CELLS of budget.
            let mut cleared = 0;
            while c.stale_bytes() > 0 {
                cleared += c.sweep(BLOCK_CELLS / 3);
            }
            assert_eq!(cleared, 3 * BLOCK_CELLS);
            check(&c, &expect);
            let stray = c.count_raw(1 << retired, 0..modulus);
            assert_eq!(stray, 1, "only the bit set after retiring is left");
            // Saved and restored marks read the same.
            c.retire(1 << (retired + 1));
            expect[retired as usize + 1]
                .iter_mut()
                .for_each(|b| *b = false);
            let saved = c.sweep_state();
            let data = BitArray::from_bytes(c.data().as_bytes()).unwrap();
            let d = Cells::from_data(width, modulus, 5, data)
                .unwrap()
                .with_stale(saved)
                .unwrap();
            check(&d, &expect);
        }
    }
}
