//! BF.SCANDUMP / BF.LOADCHUNK: RedisBloom's export stream of a filter.
//!
//! Iterator 0 gives the header (packed little-endian chain and link fields);
//! iterators >= 1 address the concatenated link arrays, one based, in chunks
//! of at most 16 MiB that never span two links.

use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal};
use crate::bitarray::{AllocError, BitArray};
use crate::bloom::chain::{Chain, MAX_LINKS};
use crate::bloom::link::{max_array_bytes, modulus_of, Link};
use crate::bloom::sizing::{hash_count, reported_size};

/// Largest data chunk SCANDUMP returns (RedisBloom's value; the AOF rewrite
/// and clients see it).
pub const MAX_CHUNK: u64 = 16 * 1024 * 1024;
/// The most hash functions a loaded link may have. The strictest link
/// RedisBloom can make (error 2^-1074) has 1,075; a crafted header with
/// billions would make every lookup take seconds.
pub const MAX_HASHES: u32 = 2048;
/// Bytes of the chain part of a header.
pub const HEADER_FIXED: usize = 20;
/// Bytes per link in a header.
pub const HEADER_PER_LINK: usize = 53;

/// The fields of one link in a header.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkHeader {
    pub bytes: u64,
    pub bits: u64,
    pub items: u64,
    pub error: f64,
    pub bpe: f64,
    pub hashes: u32,
    pub entries: u64,
    pub n2: u8,
}

/// A decoded, validated header: a filter's shape without its bits.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub items: u64,
    pub options: u32,
    pub growth: u32,
    pub links: Vec<LinkHeader>,
}

/// Why a header or chunk is refused. The module maps each to RedisBloom's
/// reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// `ERR received bad data`
    BadData,
    /// `ERR invalid offset - no link found`
    NoLink,
    /// `ERR invalid chunk - Too big for current filter`
    TooBig,
    /// The guard refused the filter's memory.
    Refused(Refusal),
    /// The allocator could not provide the memory.
    Alloc(AllocError),
}

/// The header of `chain` (iterator 0).
pub fn encode_header(chain: &Chain) -> Vec<u8> {
    Header::of(chain).encode()
}

impl Header {
    /// The header describing `chain`.
    pub fn of(chain: &Chain) -> Header {
        Header {
            items: chain.items(),
            options: chain.options(),
            growth: chain.growth(),
            links: chain
                .links()
                .iter()
                .map(|l| LinkHeader {
                    bytes: l.bytes(),
                    bits: l.bits,
                    items: l.items,
                    error: l.error,
                    bpe: l.bpe,
                    hashes: l.hashes,
                    entries: l.entries,
                    n2: l.n2,
                })
                .collect(),
        }
    }

    /// The packed form (what SCANDUMP returns for iterator 0). Written as
    /// it is, unchecked: tools and tests use it to build headers that
    /// [`decode_header`] must refuse.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_FIXED + HEADER_PER_LINK * self.links.len());
        out.extend_from_slice(&self.items.to_le_bytes());
        out.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.options.to_le_bytes());
        out.extend_from_slice(&self.growth.to_le_bytes());
        for l in &self.links {
            out.extend_from_slice(&l.bytes.to_le_bytes());
            out.extend_from_slice(&l.bits.to_le_bytes());
            out.extend_from_slice(&l.items.to_le_bytes());
            out.extend_from_slice(&l.error.to_le_bytes());
            out.extend_from_slice(&l.bpe.to_le_bytes());
            out.extend_from_slice(&l.hashes.to_le_bytes());
            out.extend_from_slice(&l.entries.to_le_bytes());
            out.push(l.n2);
        }
        out
    }
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (head, rest) = self.rest.split_at(N);
        self.rest = rest;
        head.try_into().expect("length checked before reading")
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
}

/// Decodes and validates a header. RedisBloom 2.8.2's checks apply, plus
/// what it should have checked (NaN errors, hash count 0, n2 >= 64,
/// capacity 0, a modulus beyond the array, more links than a chain can
/// reach, an array far larger than its modulus), so that no header can
/// yield a filter that crashes, answers nonsense or asks for absurd
/// memory; and every link shape the RDB loader accepts is accepted here
/// too. Every check here is about the header alone: whether the memory is
/// available is decided later, by [`Header::instantiate`]'s guard.
pub fn decode_header(data: &[u8]) -> Result<Header, LoadError> {
    if data.len() < HEADER_FIXED {
        return Err(LoadError::BadData);
    }
    let mut r = Reader { rest: data };
    let items = r.u64();
    let nfilters = r.u32();
    let options = r.u32();
    let growth = r.u32();
    // Growth 0 is accepted, as by the RDB loader: RedisBloom 2.8.2 makes such
    // filters (EXPANSION 4294967296); their scale-outs fail cleanly. A link
    // count no chain can reach is refused before anything is sized by it.
    if nfilters == 0 || nfilters as usize > MAX_LINKS {
        return Err(LoadError::BadData);
    }
    if options & !crate::bloom::chain::options::ALL != 0 {
        return Err(LoadError::BadData);
    }
    let expected = (nfilters as usize)
        .checked_mul(HEADER_PER_LINK)
        .and_then(|n| n.checked_add(HEADER_FIXED));
    if expected != Some(data.len()) {
        return Err(LoadError::BadData);
    }
    // Bounded by MAX_LINKS above, and the length check guarantees the
    // bytes for every link are there.
    let mut links = Vec::with_capacity(nfilters as usize);
    let mut sum = 0u64;
    let mut total_bytes = 0u64;
    for _ in 0..nfilters {
        let link = LinkHeader {
            bytes: r.u64(),
            bits: r.u64(),
            items: r.u64(),
            error: r.f64(),
            bpe: r.f64(),
            hashes: r.u32(),
            entries: r.u64(),
            n2: r.u8(),
        };
        validate_link(&link)?;
        // A filter whose arrays add up past 2^64 bytes is no filter; its
        // size could not even be reported.
        total_bytes = total_bytes
            .checked_add(link.bytes)
            .ok_or(LoadError::BadData)?;
        // Counts are u64 and wrap, as RedisBloom's do.
        sum = sum.wrapping_add(link.items);
        links.push(link);
    }
    if sum != items {
        return Err(LoadError::BadData);
    }
    Ok(Header {
        items,
        options,
        growth,
        links,
    })
}

fn validate_link(l: &LinkHeader) -> Result<(), LoadError> {
    let sane_error = l.error > 0.0 && l.error < 1.0; // false for NaN
    let sane_bpe = l.bpe.is_finite() && l.bpe > 0.0;
    if !sane_error || !sane_bpe || l.entries == 0 {
        return Err(LoadError::BadData);
    }
    if l.hashes == 0 || l.hashes > MAX_HASHES || l.hashes != hash_count(l.bpe) {
        return Err(LoadError::BadData);
    }
    if l.n2 >= 64 {
        return Err(LoadError::BadData);
    }
    // The same rule as the RDB loader: whatever link FerroBloom can hold, it
    // can export and read back (AOF rewrite, migration). RedisBloom 2.8.2
    // additionally wants `bits == bytes * 8`, which filters loaded from its
    // pre-2.2 RDB files do not meet (bits 0 with the modulus in n2, or the
    // unrounded entries x bpe).
    // The array must also not be far larger than the modulus addresses
    // (see `max_array_bytes`): such a link is refused as bad data, not
    // weighed by the memory guard.
    let capacity_bits = l.bytes.checked_mul(8).ok_or(LoadError::BadData)?;
    match modulus_of(l.bits, l.n2) {
        Some(m) if m <= capacity_bits && l.bytes <= max_array_bytes(m) => Ok(()),
        _ => Err(LoadError::BadData),
    }
}

impl Header {
    /// Sum of the link array sizes.
    pub fn data_bytes(&self) -> Option<u64> {
        self.links
            .iter()
            .try_fold(0u64, |acc, l| acc.checked_add(l.bytes))
    }

    /// A zero-filled filter of this shape, its memory admitted by `guard`
    /// first. Nothing is kept when any allocation fails.
    pub fn instantiate(&self, guard: &dyn AllocGuard) -> Result<Chain, LoadError> {
        let total = self.data_bytes().ok_or(LoadError::BadData)?;
        guard
            .admit(AllocRequest {
                bytes: total,
                filter_size_after: reported_size(self.links.iter().map(|l| l.bytes)),
            })
            .map_err(LoadError::Refused)?;
        let mut links = Vec::new();
        links
            .try_reserve_exact(self.links.len())
            .map_err(|_| LoadError::Alloc(AllocError { bytes: total }))?;
        for l in &self.links {
            let data = BitArray::zeroed(l.bytes).map_err(LoadError::Alloc)?;
            let link = Link::from_parts(
                l.entries, l.error, l.bpe, l.hashes, l.bits, l.n2, l.items, data,
            )
            .map_err(|_| LoadError::BadData)?;
            links.push(link);
        }
        Chain::from_parts(self.items, self.options, self.growth, links)
            .map_err(|_| LoadError::BadData)
    }
}

/// Where a stream offset falls: the link index and the offset inside it.
fn locate(chain: &Chain, offset: u64) -> Option<(usize, u64)> {
    let mut start = 0u64;
    for (i, l) in chain.links().iter().enumerate() {
        let end = start + l.bytes();
        if offset < end {
            return Some((i, offset - start));
        }
        start = end;
    }
    None
}

/// One SCANDUMP step for a data iterator (`iter >= 1`): the next iterator
/// and the chunk, or `(0, [])` past the end. Iterator 0 (the header) and
/// negative iterators are the caller's.
pub fn data_chunk(chain: &Chain, iter: i64) -> (i64, &[u8]) {
    debug_assert!(iter >= 1);
    let Some((index, offset)) = locate(chain, (iter - 1) as u64) else {
        return (0, &[]);
    };
    let link = &chain.links()[index];
    let len = (link.bytes() - offset).min(MAX_CHUNK);
    let start = offset as usize;
    let chunk = &link.data().as_bytes()[start..start + len as usize];
    // iter <= stream length + 1 < 2^63 here, and len <= 16 MiB.
    (iter + len as i64, chunk)
}

/// Where a LOADCHUNK data chunk of `len` bytes with iterator `iter` goes:
/// its link, the offset inside the link, and its offset in the stream (all
/// checked in RedisBloom's order).
pub fn chunk_target(chain: &Chain, iter: i64, len: u64) -> Result<ChunkTarget, LoadError> {
    if iter <= 0 || (iter as u64) < len {
        return Err(LoadError::BadData);
    }
    let start = iter as u64 - len;
    if start == 0 {
        return Err(LoadError::NoLink);
    }
    let (link, offset) = locate(chain, start - 1).ok_or(LoadError::NoLink)?;
    if len > chain.links()[link].bytes() - offset {
        return Err(LoadError::TooBig);
    }
    Ok(ChunkTarget {
        link,
        offset,
        stream_offset: start - 1,
    })
}

/// See [`chunk_target`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkTarget {
    pub link: usize,
    pub offset: u64,
    pub stream_offset: u64,
}

/// Applies one LOADCHUNK data chunk: `iter` is the iterator SCANDUMP
/// returned with it (one past the chunk's end, one based).
pub fn load_chunk(chain: &mut Chain, iter: i64, data: &[u8]) -> Result<(), LoadError> {
    let target = chunk_target(chain, iter, data.len() as u64)?;
    chain.links_mut()[target.link].write_bytes(target.offset as usize, data);
    Ok(())
}
