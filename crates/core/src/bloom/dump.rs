//! The DUMP payload of a Bloom filter: its RDB value (see [`super::rdb`])
//! framed as Redis frames a module value of type `MBbloom--`.

use super::chain::Chain;
use super::rdb;
use crate::dump_format::{DumpReader, DumpWriter};
use crate::rdb_io::RdbError;
use crate::received::LoadProgress;

/// The module id of type `MBbloom--` with encoding version 0; the low 10
/// bits carry the encoding version.
pub const TYPE_ID_BASE: u64 = 0x3016_e5a2_89be_f800;

/// The DUMP payload of `chain` as a Redis 7.0 server would produce it,
/// minus string compression.
pub fn dump_payload(chain: &Chain, rdb_version: u16) -> Vec<u8> {
    dump_payload_with_progress(chain, None, rdb_version)
}

/// [`dump_payload`] of a filter whose LOADCHUNK sequence may be incomplete
/// (what DUMP returns for it, and what an AOF rewrite restores it from).
pub fn dump_payload_with_progress(
    chain: &Chain,
    loading: Option<&LoadProgress>,
    rdb_version: u16,
) -> Vec<u8> {
    let mut w = DumpWriter::new(TYPE_ID_BASE | rdb::ENCODING_VERSION as u64);
    rdb::save_with_progress(chain, loading, &mut w);
    w.finish(rdb_version)
}

/// Parses a DUMP payload of a filter (any encoding version 0 to 4).
pub fn load_payload(payload: &[u8]) -> Result<Chain, RdbError> {
    load_payload_with_progress(payload).map(|(chain, _)| chain)
}

/// [`load_payload`], with the progress of a LOADCHUNK sequence.
pub fn load_payload_with_progress(
    payload: &[u8],
) -> Result<(Chain, Option<LoadProgress>), RdbError> {
    let mut r = DumpReader::new(payload).map_err(|_| RdbError::Io)?;
    if r.type_id & !0x3ff != TYPE_ID_BASE {
        return Err(RdbError::Invalid("not a MBbloom-- value"));
    }
    let encver = r.encoding_version();
    let loaded = rdb::load_with_progress(&mut r, encver)?;
    if !r.at_eof() {
        return Err(RdbError::Invalid("trailing data"));
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;
    use crate::bloom::chain::ChainParams;
    use crate::bloom::sizing::Policy;
    use crate::dump_format::RDB_VERSION_7_0;

    #[test]
    fn loading_state_round_trips_and_complete_filters_are_unchanged() {
        let params = ChainParams {
            capacity: 100,
            error: 0.01,
            growth: 2,
            nonscaling: false,
            policy: Policy::Exact,
        };
        let mut chain = Chain::new(&params, &Unguarded).unwrap();
        chain.add(chain.hash(b"x"), &Unguarded);
        let plain = dump_payload(&chain, RDB_VERSION_7_0);
        assert_eq!(
            dump_payload_with_progress(&chain, None, RDB_VERSION_7_0),
            plain
        );
        let (_, none) = load_payload_with_progress(&plain).unwrap();
        assert_eq!(none, None);

        let mut progress = LoadProgress::new(chain.data_bytes());
        progress.mark(3, 9);
        progress.mark(20, 30);
        let payload = dump_payload_with_progress(&chain, Some(&progress), RDB_VERSION_7_0);
        assert_ne!(payload, plain);
        let (back, loaded) = load_payload_with_progress(&payload).unwrap();
        assert_eq!(loaded, Some(progress));
        assert_eq!(dump_payload(&back, RDB_VERSION_7_0), plain);

        // Nothing received yet: an empty range list.
        let fresh = LoadProgress::new(chain.data_bytes());
        let payload = dump_payload_with_progress(&chain, Some(&fresh), RDB_VERSION_7_0);
        assert_eq!(load_payload_with_progress(&payload).unwrap().1, Some(fresh));

        // Progress of a larger stream than the filter is refused.
        let wrong = LoadProgress::new(chain.data_bytes() + 1);
        let payload = dump_payload_with_progress(&chain, Some(&wrong), RDB_VERSION_7_0);
        assert!(load_payload_with_progress(&payload).is_err());

        // Adds made while loading scaled the chain out: the stream is the
        // first link's bytes, the filter larger, and the value still loads.
        let stream = LoadProgress::new(chain.data_bytes());
        for i in 0..500 {
            chain.add(chain.hash(format!("more{i}").as_bytes()), &Unguarded);
        }
        assert!(chain.links().len() > 1);
        let payload = dump_payload_with_progress(&chain, Some(&stream), RDB_VERSION_7_0);
        assert_eq!(
            load_payload_with_progress(&payload).unwrap().1,
            Some(stream)
        );
    }
}
