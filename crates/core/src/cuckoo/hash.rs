//! An item's hash, its one-byte fingerprint and its two buckets.
//!
//! `H = MurmurHash64A(item, seed 0)` (the Bloom filter's function with
//! another seed), `fp = H mod 255 + 1` (never 0: 0 marks an empty slot),
//! `i1 = H mod N`, `i2 = (H XOR fp × 0x5bd1e995) mod N`. Every bucket count
//! is a power of two, so `mod N` is a mask, the alternate bucket
//! `(b XOR fp × 0x5bd1e995) mod N` is an involution (the kick-out and its
//! rollback depend on it) and `(H mod N_big) mod N_small = H mod N_small`
//! (compaction depends on it).

use crate::hash::murmur64a;

/// Seed of the Cuckoo filter's item hash.
pub const SEED: u64 = 0;
/// The fingerprint multiplier of the alternate bucket.
pub const ALT_MULTIPLIER: u64 = 0x5bd1_e995;

/// One item's hash and fingerprint, computed once per command and used in
/// every sub-filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuckooHash {
    pub hash: u64,
    pub fp: u8,
}

impl CuckooHash {
    pub fn of(item: &[u8]) -> CuckooHash {
        CuckooHash::from_hash(murmur64a(item, SEED))
    }

    pub fn from_hash(hash: u64) -> CuckooHash {
        CuckooHash {
            hash,
            fp: (hash % 255 + 1) as u8,
        }
    }

    /// The first bucket in a sub-filter with `mask + 1` buckets.
    #[inline]
    pub fn i1(&self, mask: u64) -> u64 {
        self.hash & mask
    }

    /// The second bucket in a sub-filter with `mask + 1` buckets.
    #[inline]
    pub fn i2(&self, mask: u64) -> u64 {
        (self.hash ^ alt_xor(self.fp)) & mask
    }
}

/// What a bucket index is XORed with to get the fingerprint's other bucket.
#[inline]
pub fn alt_xor(fp: u8) -> u64 {
    u64::from(fp) * ALT_MULTIPLIER
}

/// The other bucket of fingerprint `fp` sitting in bucket `bucket`.
#[inline]
pub fn alt_bucket(fp: u8, bucket: u64, mask: u64) -> u64 {
    (bucket ^ alt_xor(fp)) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        let a = CuckooHash::of(b"a");
        assert_eq!(a.hash, 0x071717d2d36b6b11);
        assert_eq!((a.fp, a.i1(511), a.i2(511)), (196, 273, 261));
        let empty = CuckooHash::of(b"");
        assert_eq!((empty.hash, empty.fp), (0, 1));
        for fp in 1..=255u8 {
            for b in 0..16 {
                assert_eq!(alt_bucket(fp, alt_bucket(fp, b, 15), 15), b);
            }
        }
    }
}
