//! CF.SCANDUMP / CF.LOADCHUNK: RedisBloom's export stream of a Cuckoo
//! filter, also what the AOF rewrite writes.
//!
//! Iterator 0 gives a 38-byte header (packed little-endian, no magic):
//! items, base buckets, deletes, sub-filter count (u64 each), bucket size,
//! max iterations, expansion (u16 each). Iterators ≥ 1 address the
//! concatenated sub-filter arrays, one based; the value returned with a
//! chunk is the iterator of the next call, and LOADCHUNK takes that value
//! with the chunk (the chunk ends at byte `iterator − 1`).

use super::filter::{CreateError, CuckooFilter, Parts, SubFilter};
use super::sizing::{
    max_sub_filters, reported_size, sub_filter_buckets, MAX_BUCKETS, MAX_SUB_FILTERS,
};
use crate::alloc_guard::{AllocGuard, AllocRequest};

/// Bytes of a header.
pub const HEADER_LEN: usize = 38;
/// Largest data chunk (RedisBloom's value; clients and the AOF see it).
pub const MAX_CHUNK: u64 = 16 * 1024 * 1024;

/// A header's fields, as written or read (not yet validated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub items: u64,
    pub base_buckets: u64,
    pub deletes: u64,
    pub sub_filters: u64,
    pub bucket_size: u16,
    pub max_iterations: u16,
    pub expansion: u16,
}

/// Why a header is refused: [`HeaderError::Length`] is `Invalid header`,
/// the rest `Couldn't create filter!`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Not exactly 38 bytes.
    Length,
    /// Bucket size 0 or above 255.
    BucketSize,
    /// Base bucket count 0, not a power of two, or above 2^56 − 1.
    BaseBuckets,
    /// Sub-filter count 0 or above 65,535. (2.8.2 truncates the count to 16
    /// bits, so 65,537 is one sub-filter there; refused here.)
    SubFilters,
    /// Max iterations 0.
    MaxIterations,
    /// Expansion neither 0 nor a power of two, or 0 with more than one
    /// sub-filter. (2.8.2 accepts both; its later lookups then miss items or
    /// divide by zero.)
    Expansion,
    /// More sub-filters than a filter of this shape can reach
    /// ([`max_sub_filters`]: a sub-filter would pass 2^56 − 1 buckets, or
    /// the arrays the address space).
    TooLarge,
}

/// Why a header could not become a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderLoadError {
    Header(HeaderError),
    Create(CreateError),
}

impl Header {
    /// The header describing `f`.
    pub fn of(f: &CuckooFilter) -> Header {
        Header {
            items: f.items(),
            base_buckets: f.base_buckets(),
            deletes: f.deletes(),
            sub_filters: f.sub_filter_count(),
            bucket_size: u16::from(f.bucket_size()),
            max_iterations: f.max_iterations(),
            expansion: f.expansion(),
        }
    }

    /// The packed form, written as it is (tests build refused headers).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..8].copy_from_slice(&self.items.to_le_bytes());
        out[8..16].copy_from_slice(&self.base_buckets.to_le_bytes());
        out[16..24].copy_from_slice(&self.deletes.to_le_bytes());
        out[24..32].copy_from_slice(&self.sub_filters.to_le_bytes());
        out[32..34].copy_from_slice(&self.bucket_size.to_le_bytes());
        out[34..36].copy_from_slice(&self.max_iterations.to_le_bytes());
        out[36..38].copy_from_slice(&self.expansion.to_le_bytes());
        out
    }

    /// The fields of a packed header, unchecked but for the length.
    pub fn parse(bytes: &[u8]) -> Result<Header, HeaderError> {
        let b: &[u8; HEADER_LEN] = bytes.try_into().map_err(|_| HeaderError::Length)?;
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Ok(Header {
            items: u64_at(0),
            base_buckets: u64_at(8),
            deletes: u64_at(16),
            sub_filters: u64_at(24),
            bucket_size: u16_at(32),
            max_iterations: u16_at(34),
            expansion: u16_at(36),
        })
    }

    /// Checks the fields (2.8.2's checks, plus those of [`HeaderError`] it
    /// lacks) and returns each sub-filter's bucket count. The counters are
    /// not checked: any value is a state 2.8.2 accepts and reports.
    pub fn sub_filter_buckets(&self) -> Result<Vec<u64>, HeaderError> {
        let bs = u8::try_from(self.bucket_size)
            .ok()
            .filter(|&bs| bs > 0)
            .ok_or(HeaderError::BucketSize)?;
        let n0 = self.base_buckets;
        if !n0.is_power_of_two() || n0 > MAX_BUCKETS {
            return Err(HeaderError::BaseBuckets);
        }
        if self.sub_filters == 0 || self.sub_filters > MAX_SUB_FILTERS {
            return Err(HeaderError::SubFilters);
        }
        if self.max_iterations == 0 {
            return Err(HeaderError::MaxIterations);
        }
        let e = self.expansion;
        if !(e == 0 || e.is_power_of_two()) || (e == 0 && self.sub_filters > 1) {
            return Err(HeaderError::Expansion);
        }
        if self.sub_filters > max_sub_filters(n0, e, bs) {
            return Err(HeaderError::TooLarge);
        }
        (0..self.sub_filters as u32)
            .map(|i| sub_filter_buckets(n0, e, i).ok_or(HeaderError::TooLarge))
            .collect()
    }
}

/// CF.LOADCHUNK iterator 1: a zero-filled filter of the header's shape with
/// its counters, the allocation admitted by `guard` first.
pub fn create_from_header(
    bytes: &[u8],
    guard: &dyn AllocGuard,
) -> Result<CuckooFilter, HeaderLoadError> {
    let h = Header::parse(bytes).map_err(HeaderLoadError::Header)?;
    let sizes = h.sub_filter_buckets().map_err(HeaderLoadError::Header)?;
    let bs = h.bucket_size as u8;
    let total: u64 = sizes.iter().map(|&n| n * u64::from(bs)).sum();
    guard
        .admit(AllocRequest {
            bytes: total,
            filter_size_after: reported_size(sizes.len() as u64, total),
        })
        .map_err(|r| HeaderLoadError::Create(CreateError::Refused(r)))?;
    let subs = sizes
        .iter()
        .map(|&n| SubFilter::zeroed(n, bs))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| HeaderLoadError::Create(CreateError::Alloc(e)))?;
    Ok(CuckooFilter::from_parts(Parts {
        bucket_size: bs,
        max_iterations: h.max_iterations,
        expansion: h.expansion,
        base_buckets: h.base_buckets,
        items: h.items,
        deletes: h.deletes,
        subs,
    }))
}

/// One CF.SCANDUMP reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// `[1, header]` (iterator 0).
    Header([u8; HEADER_LEN]),
    /// `[next, data]`.
    Chunk { next: u64, data: &'a [u8] },
    /// `[0, nil]`: past the end, or a filter whose item counter is 0 (2.8.2
    /// exports nothing for those, whatever the iterator; kept, since
    /// clients stop at `[0, nil]` either way).
    Done,
}

/// CF.SCANDUMP `iterator` (≥ 0; the module refuses negative ones).
pub fn scandump(f: &CuckooFilter, iterator: u64) -> Step<'_> {
    if f.items() == 0 {
        return Step::Done;
    }
    if iterator == 0 {
        return Step::Header(Header::of(f).encode());
    }
    match data_chunk(f, iterator) {
        Some((next, data)) => Step::Chunk { next, data },
        None => Step::Done,
    }
}

/// The data chunk at `iterator` (≥ 1), with the next iterator: the
/// sub-filter holding stream byte `iterator − 1`, **whole** when it is at
/// most 16 MiB (even when the byte is in its middle: 2.8.2 does so and the
/// next iterator is `iterator + its size`), else at most 16 MiB from that
/// byte. Chunks never span two sub-filters. `None` past the end.
pub fn data_chunk(f: &CuckooFilter, iterator: u64) -> Option<(u64, &[u8])> {
    let mut p = iterator.checked_sub(1)?;
    for sub in f.sub_filters() {
        let bytes = sub.as_bytes();
        let size = bytes.len() as u64;
        if p < size {
            let data = if size <= MAX_CHUNK {
                bytes
            } else {
                let end = size.min(p + MAX_CHUNK);
                &bytes[p as usize..end as usize]
            };
            return Some((iterator + data.len() as u64, data));
        }
        p -= size;
    }
    None
}

/// Every data chunk from iterator 1, as `(iterator to load it with, data)`:
/// the AOF rewrite's `CF.LOADCHUNK key <iterator> <data>` commands after
/// the header (written also for filters with no items). The chunks of
/// calling [`data_chunk`] from iterator 1 on, found in one pass over the
/// sub-filters (asking [`data_chunk`] each time would look for the
/// sub-filter from the first one again: quadratic in sub-filters).
pub fn chunks(f: &CuckooFilter) -> impl Iterator<Item = (u64, &[u8])> {
    f.sub_filters()
        .iter()
        .flat_map(|sub| {
            let bytes = sub.as_bytes();
            // A sub-filter of at most 16 MiB is one chunk, a larger one
            // pieces of 16 MiB from its start.
            let piece = bytes.len().max(1).min(MAX_CHUNK as usize);
            bytes.chunks(piece)
        })
        .scan(1u64, |iterator, data| {
            *iterator += data.len() as u64;
            Some((*iterator, data))
        })
}

/// Why a data chunk is refused (`Couldn't load chunk!`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkError {
    /// No data.
    Empty,
    /// Iterator ≤ 0, or smaller than the data length + 1.
    BadIterator,
    /// The chunk does not fit inside one sub-filter. 2.8.2 writes an offset
    /// past the end at `offset − total` of the last sub-filter (one wrap);
    /// refused here, as nothing it exports produces one.
    OutOfRange,
}

/// CF.LOADCHUNK with an iterator other than 1: writes `data` at stream
/// offset `iterator − 1 − len`, inside one sub-filter. Content and counters
/// are not checked (2.8.2 does not either).
pub fn load_chunk(f: &mut CuckooFilter, iterator: i64, data: &[u8]) -> Result<(), ChunkError> {
    let target = chunk_target(f, iterator, data.len() as u64)?;
    let at = target.offset as usize;
    f.sub_filters_mut()[target.sub].as_bytes_mut()[at..at + data.len()].copy_from_slice(data);
    Ok(())
}

/// Where a data chunk goes: sub-filter `sub`, at byte `offset` of it, which
/// is byte `stream_offset` of the whole stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkTarget {
    pub sub: usize,
    pub offset: u64,
    pub stream_offset: u64,
}

/// The checks of [`load_chunk`], and where its chunk of `len` bytes goes.
pub fn chunk_target(f: &CuckooFilter, iterator: i64, len: u64) -> Result<ChunkTarget, ChunkError> {
    if len == 0 {
        return Err(ChunkError::Empty);
    }
    let stream_offset = u64::try_from(iterator)
        .ok()
        .filter(|&it| it > 0)
        .and_then(|it| (it - 1).checked_sub(len))
        .ok_or(ChunkError::BadIterator)?;
    let mut off = stream_offset;
    for (sub, s) in f.sub_filters().iter().enumerate() {
        let size = s.bytes();
        if off < size {
            if len > size - off {
                return Err(ChunkError::OutOfRange);
            }
            return Ok(ChunkTarget {
                sub,
                offset: off,
                stream_offset,
            });
        }
        off -= size;
    }
    Err(ChunkError::OutOfRange)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = Header {
            items: 10,
            base_buckets: 4,
            deletes: 0,
            sub_filters: 2,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 2,
        };
        assert_eq!(Header::parse(&h.encode()), Ok(h));
        assert_eq!(h.sub_filter_buckets(), Ok(vec![4, 8]));
        assert_eq!(Header::parse(&[0; 37]), Err(HeaderError::Length));
    }

    /// The AOF rewrite's chunks are those of SCANDUMP from iterator 1 on.
    #[test]
    fn chunks_follow_data_chunk() {
        use crate::alloc_guard::Unguarded;
        for (base, count, e) in [(4u64, 3u64, 1u16), (4, 4, 2), (1 << 22, 2, 2)] {
            let h = Header {
                items: 1,
                base_buckets: base,
                deletes: 0,
                sub_filters: count,
                bucket_size: 3,
                max_iterations: 20,
                expansion: e,
            };
            let f = create_from_header(&h.encode(), &Unguarded).unwrap();
            let mut want = Vec::new();
            let mut it = 1;
            while let Some((next, data)) = data_chunk(&f, it) {
                want.push((next, data.len()));
                it = next;
            }
            let got: Vec<(u64, usize)> = chunks(&f).map(|(n, d)| (n, d.len())).collect();
            assert_eq!(got, want);
            assert!(want.len() as u64 > count - 1);
        }
    }
}
