//! The two item hashes RedisBloom has used, and the (a, b) pair every bit
//! position is derived from.
//!
//! Both functions read their input as little-endian explicitly, so the result
//! does not depend on the host byte order.

/// Multiplier and default seed of MurmurHash64A.
pub const MURMUR64_M: u64 = 0xc6a4a7935bd1e995;
/// Seed of the first 64-bit hash of an item.
pub const SEED64: u64 = MURMUR64_M;
/// Seed of the first 32-bit (legacy) hash of an item.
pub const SEED32: u32 = 0x9747b28c;

/// MurmurHash64A of `data` with `seed`.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const R: u32 = 47;
    let m = MURMUR64_M;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(m);

    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("8-byte block"));
        k = k.wrapping_mul(m);
        k ^= k >> R;
        k = k.wrapping_mul(m);
        h ^= k;
        h = h.wrapping_mul(m);
    }

    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut t = 0u64;
        for (j, &byte) in tail.iter().enumerate() {
            t |= u64::from(byte) << (8 * j);
        }
        h ^= t;
        h = h.wrapping_mul(m);
    }

    h ^= h >> R;
    h = h.wrapping_mul(m);
    h ^= h >> R;
    h
}

/// MurmurHash2 (32-bit) of `data` with `seed`: the hash of filters created
/// before RedisBloom 2.0, whose options lack the 64-bit flag.
pub fn murmur2(data: &[u8], seed: u32) -> u32 {
    const M: u32 = 0x5bd1e995;
    let mut h = seed ^ (data.len() as u32);

    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let mut k = u32::from_le_bytes(block.try_into().expect("4-byte block"));
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }

    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut t = 0u32;
        for (j, &byte) in tail.iter().enumerate() {
            t |= u32::from(byte) << (8 * j);
        }
        h ^= t;
        h = h.wrapping_mul(M);
    }

    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

/// Which hash a filter uses; fixed per chain by its options word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashWidth {
    /// MurmurHash64A (options carry FORCE64).
    Bits64,
    /// Legacy MurmurHash2, zero-extended to 64 bits.
    Bits32,
}

/// The two hashes of one item. Bit position `i` of a link with modulus `M`
/// is `(a + i * b) mod 2^64 mod M`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashPair {
    pub a: u64,
    pub b: u64,
}

impl HashPair {
    /// Hashes `item` once; the pair then serves every link of the chain.
    #[inline]
    pub fn of(item: &[u8], width: HashWidth) -> Self {
        match width {
            HashWidth::Bits64 => {
                let a = murmur64a(item, SEED64);
                HashPair {
                    a,
                    b: murmur64a(item, a),
                }
            }
            HashWidth::Bits32 => {
                let a = murmur2(item, SEED32);
                HashPair {
                    a: u64::from(a),
                    b: u64::from(murmur2(item, a)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_table_vectors() {
        let cases: [(&[u8], u64, u64, u32, u32); 4] = [
            (
                b"",
                0x1ab11ea5a7b2c56e,
                0xbbddcb5ab56dd547,
                0x106e08d9,
                0x456d9087,
            ),
            (
                b"foo",
                0x822b4f99b121f10d,
                0x9d63d52a557f61c2,
                0x23a256d0,
                0x9fbc0655,
            ),
            (
                b"hello",
                0x5ba5b8a59803e699,
                0xa7d451d588a0c2a4,
                0x7f1ddbbd,
                0xed999d2d,
            ),
            (
                b"item",
                0x369c43a971e0ac3f,
                0x013d6bb18d1a6a54,
                0x4e0a2235,
                0x33dddbe4,
            ),
        ];
        for (item, a64, b64, a32, b32) in cases {
            assert_eq!(
                HashPair::of(item, HashWidth::Bits64),
                HashPair { a: a64, b: b64 }
            );
            assert_eq!(
                HashPair::of(item, HashWidth::Bits32),
                HashPair {
                    a: u64::from(a32),
                    b: u64::from(b32)
                }
            );
        }
    }
}
