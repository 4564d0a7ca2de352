//! A Cuckoo filter being rebuilt by CF.LOADCHUNK: its data chunks combined
//! with the fingerprints that adds stored since the header.
//!
//! RedisBloom installs a header's filter at once, zero-filled but claiming
//! its items, and a later chunk overwrites whatever an add stored in
//! between (the item then answers 0 to CF.EXISTS). Here, while a filter's
//! chunks have not all arrived ([`LoadProgress`]), a chunk's bytes not
//! received before are combined: the fingerprints found there (stored by
//! adds, or moved there by their kick-outs) are lifted, the chunk is
//! written, and each is put back as an insert would place it, in one of its
//! two buckets of that sub-filter or an older one, else by a kick-out in
//! that sub-filter. Bytes received before are overwritten, as RedisBloom
//! does. Without adds in between, the result is byte for byte RedisBloom's.

use super::filter::CuckooFilter;
use super::hash::{alt_xor, CuckooHash};
use super::scandump::{chunk_target, ChunkError};
pub use crate::received::LoadProgress;

/// The progress of a new filter made from a header: nothing received of
/// its `total_bytes()`.
pub fn start(f: &CuckooFilter) -> LoadProgress {
    LoadProgress::new(f.total_bytes())
}

/// After a change to the filter: stream bytes it no longer has (a
/// compaction freed their sub-filter) can no longer arrive, so they count
/// as received, and the load completes with the bytes that remain.
pub fn clip(f: &CuckooFilter, progress: &mut LoadProgress) {
    let bytes = f.total_bytes();
    if bytes < progress.total() {
        progress.mark(bytes, progress.total());
    }
}

/// Applies a data chunk to a filter whose load is in progress (see the
/// module documentation); the same checks and errors as
/// [`super::scandump::load_chunk`]. Returns how many lifted fingerprints
/// found no slot again (0 unless the filter is nearly full where they
/// belong).
pub fn load_chunk_in_progress(
    f: &mut CuckooFilter,
    progress: &mut LoadProgress,
    iterator: i64,
    data: &[u8],
) -> Result<u64, ChunkError> {
    let target = chunk_target(f, iterator, data.len() as u64)?;
    let bs = f.bs() as u64;
    let start = target.stream_offset;
    let end = start + data.len() as u64;
    let base = target.offset;
    let mut lifted: Vec<(u64, u8)> = Vec::new();
    {
        let bytes = f.sub_filters_mut()[target.sub].as_bytes_mut();
        for (gap_start, gap_end) in progress.missing_in(start, end) {
            let (a, b) = (base + gap_start - start, base + gap_end - start);
            for at in a..b {
                let fp = bytes[at as usize];
                if fp != 0 {
                    lifted.push((at / bs, fp));
                }
            }
        }
        bytes[base as usize..base as usize + data.len()].copy_from_slice(data);
    }
    progress.mark(start, end);
    let lost = lifted
        .into_iter()
        .filter(|&(bucket, fp)| {
            !reinsert(f, target.sub, bucket, fp) && !grow_for(f, target.sub, bucket, fp)
        })
        .count();
    Ok(lost as u64)
}

/// The last resort for a lifted fingerprint that found no slot: a new
/// sub-filter, when it would have as many buckets as the one it was lifted
/// from (expansion 1, RedisBloom's default), so that its bucket there is
/// known. Adds that filled the header's zeroed filter made it grow; the
/// chunk's bytes then need that room again. Not asked of the memory guard:
/// the growth is bounded by the sub-filters the adds already filled, and a
/// replica or an AOF replay must grow exactly as the master did.
fn grow_for(f: &mut CuckooFilter, sub: usize, bucket: u64, fp: u8) -> bool {
    let limit = f.sub_filters()[sub].buckets();
    if f.expansion() == 0 || f.next_sub_filter_buckets() != Ok(limit) {
        return false;
    }
    if f.grow(&crate::alloc_guard::Unguarded).is_err() {
        return false;
    }
    let newest = f.sub_filters().len() - 1;
    reinsert(f, newest, bucket, fp)
}

/// Puts fingerprint `fp`, lifted from bucket `bucket` of sub-filter `sub`,
/// back where a lookup finds it: any sub-filter with no more buckets than
/// that one (the same bucket indexes, masked, as compaction places them;
/// newer sub-filters of the same size included), that sub-filter first,
/// then the newest; a free slot in either bucket first, else a kick-out. A
/// sub-filter with more buckets cannot take it: its bucket there depends on
/// hash bits the fingerprint does not keep.
fn reinsert(f: &mut CuckooFilter, sub: usize, bucket: u64, fp: u8) -> bool {
    let bs = f.bs();
    let max_iterations = f.max_iterations();
    let x = alt_xor(fp);
    let subs = f.sub_filters_mut();
    let limit = subs[sub].buckets();
    let mut order: Vec<usize> = vec![sub];
    order.extend(
        (0..subs.len())
            .rev()
            .filter(|&i| i != sub && subs[i].buckets() <= limit),
    );
    let placed = order.iter().any(|&i| {
        let s = &mut subs[i];
        s.place(bucket & s.mask(), bs, fp) || s.place((bucket ^ x) & s.mask(), bs, fp)
    });
    placed
        || order.iter().any(|&i| {
            let s = &mut subs[i];
            let h = CuckooHash {
                hash: bucket & s.mask(),
                fp,
            };
            s.kick_out(h, bs, max_iterations)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;
    use crate::cuckoo::scandump::{chunks, create_from_header, load_chunk, Header};
    use crate::cuckoo::sizing::CuckooParams;

    fn filled(capacity: u64, expansion: u16, n: u32) -> CuckooFilter {
        let params = CuckooParams {
            capacity,
            bucket_size: 2,
            max_iterations: 20,
            expansion,
        };
        let mut f = CuckooFilter::new(&params, &Unguarded).unwrap();
        for i in 0..n {
            f.insert(CuckooHash::of(format!("item{i}").as_bytes()), &Unguarded);
        }
        f
    }

    fn empty_copy(f: &CuckooFilter) -> CuckooFilter {
        create_from_header(&Header::of(f).encode(), &Unguarded).unwrap()
    }

    /// Cuts a chunk into pieces of `size` bytes with their iterators.
    fn pieces(next: u64, data: &[u8], size: usize) -> Vec<(i64, Vec<u8>)> {
        let start = next - 1 - data.len() as u64;
        data.chunks(size)
            .enumerate()
            .map(|(i, p)| ((start + 1 + (i * size + p.len()) as u64) as i64, p.to_vec()))
            .collect()
    }

    fn all_bytes(f: &CuckooFilter) -> Vec<u8> {
        f.sub_filters()
            .iter()
            .flat_map(|s| s.as_bytes().to_vec())
            .collect()
    }

    #[test]
    fn without_adds_the_result_is_the_plain_load() {
        let source = filled(64, 2, 150);
        assert!(source.sub_filter_count() > 1);
        let mut plain = empty_copy(&source);
        let mut tracked = empty_copy(&source);
        let mut progress = start(&tracked);
        let mut all: Vec<(i64, Vec<u8>)> = Vec::new();
        for (next, data) in chunks(&source) {
            all.extend(pieces(next, data, 7));
        }
        all.reverse();
        all.push(all[3].clone());
        all.insert(0, (all[5].0, vec![0x11; all[5].1.len()]));
        for (iter, data) in &all {
            load_chunk(&mut plain, *iter, data).unwrap();
            let lost = load_chunk_in_progress(&mut tracked, &mut progress, *iter, data).unwrap();
            assert_eq!(lost, 0);
            assert_eq!(all_bytes(&plain), all_bytes(&tracked));
        }
        assert!(progress.is_complete());
        assert_eq!(all_bytes(&tracked), all_bytes(&source));
    }

    #[test]
    fn adds_made_while_loading_are_kept() {
        let source = filled(64, 2, 150);
        let mut f = empty_copy(&source);
        let mut progress = start(&f);
        let late: Vec<CuckooHash> = (0..20)
            .map(|i| CuckooHash::of(format!("late{i}").as_bytes()))
            .collect();
        for &h in &late {
            f.insert(h, &Unguarded);
        }
        let mut lost = 0;
        for (next, data) in chunks(&source) {
            lost += load_chunk_in_progress(&mut f, &mut progress, next as i64, data).unwrap();
        }
        assert_eq!(lost, 0);
        assert!(progress.is_complete());
        for &h in &late {
            assert!(f.contains(h));
        }
        for i in 0..150 {
            assert!(f.contains(CuckooHash::of(format!("item{i}").as_bytes())));
        }
        let stored: u64 = all_bytes(&f).iter().filter(|&&b| b != 0).count() as u64;
        let before: u64 = all_bytes(&source).iter().filter(|&&b| b != 0).count() as u64;
        assert_eq!(stored, before + 20);
        assert_eq!(f.items(), source.items() + 20);
    }

    #[test]
    fn errors_are_those_of_a_plain_load() {
        let source = filled(64, 1, 10);
        let mut f = empty_copy(&source);
        let mut progress = start(&f);
        let total = f.total_bytes() as i64;
        assert_eq!(
            load_chunk_in_progress(&mut f, &mut progress, 0, b"x"),
            Err(ChunkError::BadIterator)
        );
        assert_eq!(
            load_chunk_in_progress(&mut f, &mut progress, 5, b""),
            Err(ChunkError::Empty)
        );
        assert_eq!(
            load_chunk_in_progress(&mut f, &mut progress, total + 3, b"xy"),
            Err(ChunkError::OutOfRange)
        );
        assert_eq!(progress.received(), 0);
    }

    #[test]
    fn loading_state_round_trips_and_complete_filters_are_unchanged() {
        use crate::cuckoo::dump::{
            dump_payload, dump_payload_with_progress, load_payload_with_progress,
        };
        use crate::dump_format::RDB_VERSION_7_0;
        let f = filled(64, 2, 150);
        let plain = dump_payload(&f, RDB_VERSION_7_0);
        assert_eq!(dump_payload_with_progress(&f, None, RDB_VERSION_7_0), plain);
        assert_eq!(load_payload_with_progress(&plain).unwrap().1, None);
        let mut progress = start(&f);
        progress.mark(1, 5);
        let payload = dump_payload_with_progress(&f, Some(&progress), RDB_VERSION_7_0);
        let (back, loaded) = load_payload_with_progress(&payload).unwrap();
        assert_eq!(loaded, Some(progress));
        assert_eq!(dump_payload(&back, RDB_VERSION_7_0), plain);
        let wrong = LoadProgress::new(f.total_bytes() + 1);
        let payload = dump_payload_with_progress(&f, Some(&wrong), RDB_VERSION_7_0);
        assert!(load_payload_with_progress(&payload).is_err());
    }

    #[test]
    fn a_filter_that_grows_or_shrinks_while_loading_stays_loadable() {
        let source = filled(8, 1, 5);
        let mut f = empty_copy(&source);
        let mut progress = start(&f);
        let stream = progress.total();
        // Adds past its room grow a sub-filter past the stream (of the
        // same size: expansion 1), which takes back what the chunk lifts.
        for i in 0..10 {
            f.insert(CuckooHash::of(format!("late{i}").as_bytes()), &Unguarded);
        }
        assert!(f.total_bytes() > stream);
        let payload = crate::cuckoo::dump::dump_payload_with_progress(
            &f,
            Some(&progress),
            crate::dump_format::RDB_VERSION_7_0,
        );
        let (_, loaded) = crate::cuckoo::dump::load_payload_with_progress(&payload).unwrap();
        assert_eq!(loaded.as_ref(), Some(&progress));
        // The source's chunks still complete the load; the adds stay.
        for (next, data) in chunks(&source) {
            let lost = load_chunk_in_progress(&mut f, &mut progress, next as i64, data).unwrap();
            assert_eq!(lost, 0);
        }
        assert!(progress.is_complete());
        for i in 0..10 {
            assert!(f.contains(CuckooHash::of(format!("late{i}").as_bytes())));
        }
        for i in 0..5 {
            assert!(f.contains(CuckooHash::of(format!("item{i}").as_bytes())));
        }
        // A stream longer than what the filter still holds: the bytes it
        // lost count as received.
        let small = filled(8, 1, 1);
        let mut p = LoadProgress::new(small.total_bytes() * 3);
        clip(&small, &mut p);
        assert_eq!(p.received(), small.total_bytes() * 2);
        assert_eq!(
            p.missing_in(0, small.total_bytes()),
            vec![(0, small.total_bytes())]
        );
    }
}
