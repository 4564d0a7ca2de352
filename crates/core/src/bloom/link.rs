//! One Bloom filter of a scalable chain ("link" here, "SBLink" in
//! RedisBloom): its parameters, its bit array, its item count, and the number
//! of bits set, kept up to date as bits flip so fill is known in O(1).

use crate::bitarray::{AllocError, BitArray};
use crate::bloom::sizing::LinkSpec;
use crate::hash::HashPair;
use crate::modulus::Modulus;

#[derive(Debug)]
pub struct Link {
    /// Capacity: the link is full when `items` reaches it.
    pub entries: u64,
    pub error: f64,
    pub bpe: f64,
    pub hashes: u32,
    /// Bit count as stored in RDB and SCANDUMP headers. Legacy data may
    /// hold 0 (power-of-two links) or a value that is not `bytes * 8`.
    pub bits: u64,
    /// log2 of the modulus of a power-of-two link, else 0.
    pub n2: u8,
    /// Items added to this link (new inserts only).
    pub items: u64,
    /// The capacity this link was asked for, before pow2 inflation (not
    /// persisted: reconstructed on load where the chain allows).
    pub requested: u64,
    data: BitArray,
    modulus: Modulus,
    ones: u64,
}

/// Why stored link fields cannot describe a usable link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkError {
    /// The modulus is 0 or addresses bits beyond the array.
    BadModulus,
}

impl Link {
    /// A new empty link sized by `spec`.
    pub fn new(spec: &LinkSpec) -> Result<Link, AllocError> {
        let data = BitArray::zeroed(spec.bytes)?;
        let modulus = Modulus::new(spec.modulus()).ok_or(AllocError { bytes: spec.bytes })?;
        Ok(Link {
            entries: spec.entries,
            error: spec.error,
            bpe: spec.bpe,
            hashes: spec.hashes,
            bits: spec.bits,
            n2: spec.n2,
            items: 0,
            requested: spec.requested,
            data,
            modulus,
            ones: 0,
        })
    }

    /// A link from stored fields and its bit array (RDB load, LOADCHUNK
    /// header). The modulus must stay inside the array.
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        entries: u64,
        error: f64,
        bpe: f64,
        hashes: u32,
        bits: u64,
        n2: u8,
        items: u64,
        data: BitArray,
    ) -> Result<Link, LinkError> {
        let divisor = modulus_of(bits, n2).ok_or(LinkError::BadModulus)?;
        if divisor > data.bit_len() {
            return Err(LinkError::BadModulus);
        }
        let modulus = Modulus::new(divisor).ok_or(LinkError::BadModulus)?;
        let ones = data.count_ones();
        Ok(Link {
            entries,
            error,
            bpe,
            hashes,
            bits,
            n2,
            items,
            requested: entries,
            data,
            modulus,
            ones,
        })
    }

    /// The size of the bit array in bytes.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.data.len() as u64
    }

    /// The modulus of bit positions (2^n2, or the stored bit count).
    #[inline]
    pub fn modulus(&self) -> u64 {
        self.modulus.divisor()
    }

    /// The number of bits set, maintained incrementally.
    #[inline]
    pub fn ones(&self) -> u64 {
        self.ones
    }

    /// The bit count BF.DEBUG shows: stored bits, else 2^n2, else 1.
    pub fn display_bits(&self) -> u64 {
        if self.bits != 0 {
            self.bits
        } else if self.n2 > 0 && self.n2 < 64 {
            1u64 << self.n2
        } else {
            1
        }
    }

    /// Whether the link has reached its capacity.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.items >= self.entries
    }

    #[inline]
    pub fn data(&self) -> &BitArray {
        &self.data
    }

    /// Overwrites `bytes.len()` bytes at `offset` (a LOADCHUNK data chunk),
    /// keeping the set-bit count exact. The range must be inside the array.
    pub fn write_bytes(&mut self, offset: usize, bytes: &[u8]) {
        let region = &mut self.data.as_bytes_mut()[offset..offset + bytes.len()];
        let before = crate::bitarray::count_ones(region);
        region.copy_from_slice(bytes);
        let after = crate::bitarray::count_ones(bytes);
        self.ones = self.ones - before + after;
    }

    /// ORs `bytes.len()` bytes into the array at `offset`, keeping the
    /// set-bit count exact: a chunk of a filter still being loaded, merged
    /// with the bits that adds set meanwhile. The range must be inside the
    /// array.
    pub fn or_bytes(&mut self, offset: usize, bytes: &[u8]) {
        let region = &mut self.data.as_bytes_mut()[offset..offset + bytes.len()];
        let before = crate::bitarray::count_ones(region);
        for (dst, src) in region.iter_mut().zip(bytes) {
            *dst |= src;
        }
        let after = crate::bitarray::count_ones(region);
        self.ones = self.ones - before + after;
    }

    /// Bit position `i` of an item.
    #[inline(always)]
    fn position(&self, h: HashPair, i: u64) -> u64 {
        self.modulus.reduce(h.a.wrapping_add(i.wrapping_mul(h.b)))
    }

    /// Sets all of the item's bits, computing each position as it is set;
    /// true when at least one was clear. For items with more positions
    /// than the engines buffer, and for the first add into a new link.
    #[inline]
    pub fn insert(&mut self, h: HashPair) -> bool {
        let mut steps = self.modulus.steps(h.a, h.b);
        let mut flipped = 0u64;
        self.data.prepare_writes();
        for _ in 0..self.hashes {
            flipped += u64::from(self.data.set(steps.next_position()));
        }
        self.count_flipped(flipped);
        flipped > 0
    }

    /// Prefetches the cache lines of `positions`.
    #[inline(always)]
    pub fn prefetch_positions(&self, positions: &[u64]) {
        for &p in positions {
            self.data.prefetch(p);
        }
    }

    /// Prefetches the cache lines of `positions` for writing.
    #[inline(always)]
    pub fn prefetch_positions_write(&self, positions: &[u64]) {
        self.data.prefetch_many_write(positions);
    }

    /// Whether every bit at `positions` is set (stops at the first clear one).
    #[inline(always)]
    pub fn all_set(&self, positions: &[u64]) -> bool {
        positions.iter().all(|&p| self.data.get(p))
    }

    /// Sets the bits at `positions`; true when at least one was clear.
    #[inline(always)]
    pub fn set_all(&mut self, positions: &[u64]) -> bool {
        let mut flipped = 0u64;
        self.data.prepare_writes();
        for &p in positions {
            flipped += u64::from(self.data.set(p));
        }
        self.count_flipped(flipped);
        flipped > 0
    }

    #[inline(always)]
    fn count_flipped(&mut self, flipped: u64) {
        #[cfg(not(feature = "untracked-fill"))]
        {
            self.ones += flipped;
        }
        #[cfg(feature = "untracked-fill")]
        let _ = flipped;
    }

    /// Writes the item's first `min(hashes, out.len())` bit positions into
    /// `out` and returns how many were written: the engines compute an
    /// item's positions once, prefetch their lines, then test or set them
    /// ([`Link::all_set`], [`Link::set_all`]).
    #[inline]
    pub fn positions_into(&self, h: HashPair, out: &mut [u64]) -> usize {
        let n = (self.hashes as usize).min(out.len());
        let mut steps = self.modulus.steps(h.a, h.b);
        for slot in out.iter_mut().take(n) {
            *slot = steps.next_position();
        }
        n
    }

    /// The item's first two positions (the second only matters when the
    /// link has more than one hash function): a lookup of an absent item in
    /// a full link stops after about two probes, so these are the lines
    /// that older links of a chain prefetch, and where their tests start.
    #[inline(always)]
    pub fn head(&self, h: HashPair) -> [u64; 2] {
        [self.position(h, 0), self.position(h, 1)]
    }

    /// Prefetches the lines of `head`.
    #[inline(always)]
    pub fn prefetch_head(&self, head: [u64; 2]) {
        self.data.prefetch(head[0]);
        if self.hashes > 1 {
            self.data.prefetch(head[1]);
        }
    }

    /// Whether all of the item's bits are set, given its [`Link::head`]:
    /// the probe of one item in one link (positions past the head are
    /// computed as they are tested, and the test stops at the first clear
    /// bit).
    #[inline]
    pub fn contains_from_head(&self, h: HashPair, head: [u64; 2]) -> bool {
        if self.hashes == 0 {
            return true;
        }
        if !self.data.get(head[0]) {
            return false;
        }
        if self.hashes == 1 {
            return true;
        }
        if !self.data.get(head[1]) {
            return false;
        }
        // Positions 2, 3, ...: the sums a + i*b go on from a + 2b.
        let mut steps = self
            .modulus
            .steps(h.a.wrapping_add(h.b.wrapping_mul(2)), h.b);
        for _ in 2..self.hashes {
            if !self.data.get(steps.next_position()) {
                return false;
            }
        }
        true
    }

    /// Whether all of the item's bits are set.
    #[inline]
    pub fn contains(&self, h: HashPair) -> bool {
        self.contains_from_head(h, self.head(h))
    }

    /// Clears the bytes in `range` (a retired window generation, a piece at
    /// a time), keeping the set-bit count exact. The range must be inside
    /// the array.
    pub fn clear_bytes(&mut self, range: std::ops::Range<usize>) {
        let region = &mut self.data.as_bytes_mut()[range];
        self.ones -= crate::bitarray::count_ones(region);
        region.fill(0);
    }

    /// Clears every byte from `offset` on, when the bytes before it are
    /// clear already (a retired window generation whose clearing ends):
    /// the array is then all zeros.
    pub fn clear_from(&mut self, offset: usize) {
        self.data.zero_from(offset);
        self.ones = 0;
    }

    /// Keeps the bit array on ordinary pages (see
    /// [`BitArray::skip_huge_pages`]).
    pub fn skip_huge_pages(&mut self) {
        self.data.skip_huge_pages();
    }

    /// A deep copy.
    pub fn try_clone(&self) -> Result<Link, AllocError> {
        Ok(Link {
            entries: self.entries,
            error: self.error,
            bpe: self.bpe,
            hashes: self.hashes,
            bits: self.bits,
            n2: self.n2,
            items: self.items,
            requested: self.requested,
            data: self.data.try_clone()?,
            modulus: self.modulus,
            ones: self.ones,
        })
    }

    /// Lets `relocate` move the bit array (defragmentation): it gets the
    /// array and must return one of the same length and content.
    pub fn relocate_data(&mut self, relocate: impl FnOnce(BitArray) -> BitArray) {
        let len = self.data.len();
        let empty = BitArray::zeroed(0).expect("an empty array needs no memory");
        let moved = relocate(std::mem::replace(&mut self.data, empty));
        assert_eq!(moved.len(), len, "relocation must keep the size");
        self.data = moved;
    }
}

/// The modulus a link's stored fields imply: 2^n2 when n2 > 0, else bits.
pub fn modulus_of(bits: u64, n2: u8) -> Option<u64> {
    match n2 {
        0 if bits == 0 => None,
        0 => Some(bits),
        1..=63 => Some(1u64 << n2),
        _ => None,
    }
}

/// Bytes an array may have past the 64-bit words its modulus addresses.
pub const ARRAY_SLACK_BYTES: u64 = 4096;

/// The largest bit array a link with modulus `modulus` may have: the whole
/// 64-bit words the modulus addresses, plus one 4 KiB page. Bits past the
/// modulus are never used, so a larger array only costs memory. Every shape
/// RedisBloom ever wrote fits (a power-of-two link of 2^5 bits in one 8-byte
/// word, an encoding-0 link of 28 bits in 4 bytes, exact links of exactly
/// `ceil(M / 64) * 8` bytes), and so does every header RedisBloom 2.8.2
/// accepts with a few spare words (n2 10 over a 144-byte array). Loaders
/// refuse more, so that a crafted header cannot make FerroBloom allocate (or
/// a memory limit weigh) petabytes for a link of a few bits, and every
/// filter held can be exported and loaded back under the same rule.
pub fn max_array_bytes(modulus: u64) -> u64 {
    // At most 2^58 * 8 + 4096: cannot overflow.
    modulus.div_ceil(64) * 8 + ARRAY_SLACK_BYTES
}
