//! A filter being rebuilt by BF.LOADCHUNK: which bytes of its SCANDUMP
//! stream have arrived since its header.
//!
//! RedisBloom installs a header's filter at once, claiming all its items
//! while its bits are still zero, and a later chunk overwrites whatever an
//! add set in between. Here a filter whose chunks have not all arrived is
//! known as such (BF.STATS, `INFO bf`), and a chunk is merged into the bytes
//! it has not received yet (ORed, so the bits of adds made meanwhile stay),
//! while bytes received before are overwritten, as RedisBloom does. Without
//! adds in between the result is byte for byte RedisBloom's.

use crate::bloom::chain::Chain;
use crate::bloom::scandump::{chunk_target, LoadError};
pub use crate::received::LoadProgress;

/// Applies a data chunk to a filter whose load is in progress (see the
/// module documentation); the same checks and errors as
/// [`crate::bloom::scandump::load_chunk`].
pub fn load_chunk_in_progress(
    chain: &mut Chain,
    progress: &mut LoadProgress,
    iter: i64,
    data: &[u8],
) -> Result<(), LoadError> {
    let target = chunk_target(chain, iter, data.len() as u64)?;
    let start = target.stream_offset;
    let end = start + data.len() as u64;
    let link = &mut chain.links_mut()[target.link];
    let mut at = start;
    for (gap_start, gap_end) in progress.missing_in(start, end) {
        // Received before: overwritten. Not received yet: merged.
        let (a, b) = ((at - start) as usize, (gap_start - start) as usize);
        link.write_bytes(target.offset as usize + a, &data[a..b]);
        let (a, b) = ((gap_start - start) as usize, (gap_end - start) as usize);
        link.or_bytes(target.offset as usize + a, &data[a..b]);
        at = gap_end;
    }
    let a = (at - start) as usize;
    link.write_bytes(target.offset as usize + a, &data[a..]);
    progress.mark(start, end);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;
    use crate::bloom::chain::ChainParams;
    use crate::bloom::scandump::{data_chunk, decode_header, encode_header, load_chunk};
    use crate::bloom::sizing::Policy;

    fn filter_with_items(n: u32) -> Chain {
        let params = ChainParams {
            capacity: 1000,
            error: 0.01,
            growth: 2,
            nonscaling: false,
            policy: Policy::Exact,
        };
        let mut chain = Chain::new(&params, &Unguarded).unwrap();
        for i in 0..n {
            chain.add(chain.hash(format!("item{i}").as_bytes()), &Unguarded);
        }
        chain
    }

    /// Every chunk of a SCANDUMP stream, in order.
    fn chunks(chain: &Chain) -> Vec<(i64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut iter = 1;
        loop {
            let (next, chunk) = data_chunk(chain, iter);
            if next == 0 {
                return out;
            }
            out.push((next, chunk.to_vec()));
            iter = next;
        }
    }

    /// Cuts a chunk into pieces of `size` bytes with their iterators.
    fn pieces(iter: i64, data: &[u8], size: usize) -> Vec<(i64, Vec<u8>)> {
        let start = iter - data.len() as i64;
        data.chunks(size)
            .enumerate()
            .map(|(i, p)| (start + (i * size + p.len()) as i64, p.to_vec()))
            .collect()
    }

    #[test]
    fn without_adds_the_result_is_the_plain_load() {
        let source = filter_with_items(300);
        let header = decode_header(&encode_header(&source)).unwrap();
        let mut plain = header.instantiate(&Unguarded).unwrap();
        let mut tracked = header.instantiate(&Unguarded).unwrap();
        let mut progress = LoadProgress::new(source.data_bytes());
        let mut all: Vec<(i64, Vec<u8>)> = Vec::new();
        for (iter, data) in chunks(&source) {
            all.extend(pieces(iter, &data, 97));
        }
        // Out of order, with a piece sent twice and a stray one overwritten
        // later.
        all.reverse();
        all.push(all[3].clone());
        all.insert(0, (all[5].0, vec![0xff; all[5].1.len()]));
        for (iter, data) in &all {
            load_chunk(&mut plain, *iter, data).unwrap();
            load_chunk_in_progress(&mut tracked, &mut progress, *iter, data).unwrap();
            assert_eq!(
                plain.links()[0].data().as_bytes(),
                tracked.links()[0].data().as_bytes()
            );
        }
        assert!(progress.is_complete());
        assert_eq!(
            tracked.links()[0].data().as_bytes(),
            source.links()[0].data().as_bytes()
        );
        assert_eq!(tracked.ones(), source.ones());
    }

    #[test]
    fn adds_made_while_loading_are_kept() {
        let source = filter_with_items(300);
        let header = decode_header(&encode_header(&source)).unwrap();
        let mut chain = header.instantiate(&Unguarded).unwrap();
        let mut progress = LoadProgress::new(source.data_bytes());
        let late = chain.hash(b"added while loading");
        chain.add(late, &Unguarded);
        for (iter, data) in chunks(&source) {
            load_chunk_in_progress(&mut chain, &mut progress, iter, &data).unwrap();
        }
        assert!(progress.is_complete());
        assert!(chain.contains(late));
        for i in 0..300 {
            assert!(chain.contains(chain.hash(format!("item{i}").as_bytes())));
        }
        assert_eq!(chain.items(), source.items() + 1);
        let ones: u64 = chain.links()[0].data().count_ones();
        assert_eq!(chain.ones(), ones);
    }

    #[test]
    fn errors_are_those_of_a_plain_load() {
        let source = filter_with_items(10);
        let header = decode_header(&encode_header(&source)).unwrap();
        let mut chain = header.instantiate(&Unguarded).unwrap();
        let mut progress = LoadProgress::new(source.data_bytes());
        let bytes = source.data_bytes() as i64;
        assert_eq!(
            load_chunk_in_progress(&mut chain, &mut progress, 0, b"x"),
            Err(LoadError::BadData)
        );
        assert_eq!(
            load_chunk_in_progress(&mut chain, &mut progress, 1, b"x"),
            Err(LoadError::NoLink)
        );
        assert_eq!(
            load_chunk_in_progress(&mut chain, &mut progress, bytes + 2, b"xy"),
            Err(LoadError::TooBig)
        );
        assert_eq!(progress.received(), 0);
    }
}
