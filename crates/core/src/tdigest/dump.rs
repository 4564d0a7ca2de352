//! The DUMP payload of a t-digest: its RDB value ([`super::rdb`]) framed as
//! Redis frames a module value of type `TDIS-TYPE`. The value holds only
//! doubles and integers (no strings to compress), so these bytes are
//! Redis' byte for byte.

use super::digest::TDigest;
use super::rdb;
use crate::alloc_guard::AllocGuard;
use crate::dump_format::{module_type_id, DumpReader, DumpWriter};
use crate::rdb_io::RdbError;

/// The module id of `TDIS-TYPE` at encoding version `encver`
/// (0x4c3212f9360f1000 for 0).
pub fn type_id(encver: u16) -> u64 {
    module_type_id(rdb::TYPE_NAME, encver).expect("a valid type name")
}

/// The payload (compressed as 2.8.2's DUMP is).
pub fn dump_payload(td: &TDigest, rdb_version: u16) -> Vec<u8> {
    let mut w = DumpWriter::new(type_id(rdb::ENCODING_VERSION as u16));
    rdb::save(td, &mut w);
    w.finish(rdb_version)
}

/// The payload of the digest as it is held ([`rdb::save_exact`]): 2.8.2's
/// bytes when it is compressed.
pub fn exact_payload(td: &TDigest, rdb_version: u16) -> Vec<u8> {
    let mut w = DumpWriter::new(type_id(rdb::ENCODING_VERSION as u16));
    rdb::save_exact(td, &mut w);
    w.finish(rdb_version)
}

/// RESTORE: the checksum, the type, the fields and nothing after them.
pub fn load_payload(payload: &[u8], guard: &dyn AllocGuard) -> Result<TDigest, RdbError> {
    let mut r = DumpReader::new(payload).map_err(|_| RdbError::Io)?;
    if r.type_id & !0x3ff != type_id(0) {
        return Err(RdbError::Invalid("not a TDIS-TYPE value"));
    }
    let encver = r.encoding_version();
    let td = rdb::load(&mut r, encver, guard)?;
    if !r.at_eof() {
        return Err(RdbError::Invalid("trailing data"));
    }
    Ok(td)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;
    use crate::dump_format::RDB_VERSION_7_0;

    #[test]
    fn spec_example() {
        // §6.3: CREATE d COMPRESSION 5; ADD d 1 2 2.5; DUMP d.
        let mut td = TDigest::new(5.0, &Unguarded).unwrap();
        for v in [1.0, 2.0, 2.5] {
            td.add(v).unwrap();
        }
        let p = dump_payload(&td, RDB_VERSION_7_0);
        assert_eq!(
            &p[..10],
            &[0x07, 0x81, 0x4c, 0x32, 0x12, 0xf9, 0x36, 0x0f, 0x10, 0x00]
        );
        assert_eq!(
            &p[p.len() - 10..],
            &[0x0a, 0x00, 0x8d, 0x79, 0x35, 0xca, 0x1d, 0x94, 0x52, 0x23]
        );
        assert!(
            !td.is_compressed(),
            "saving does not compress the digest itself"
        );
        let back = load_payload(&p, &Unguarded).unwrap();
        assert_eq!(back.merged_nodes(), 3);
        assert_eq!(dump_payload(&back, RDB_VERSION_7_0), p);
    }

    #[test]
    fn exact_payloads_keep_the_points() {
        let mut td = TDigest::new(5.0, &Unguarded).unwrap();
        for v in [1.0, 2.0, 2.5] {
            td.add(v).unwrap();
        }
        let exact = exact_payload(&td, RDB_VERSION_7_0);
        assert_ne!(exact, dump_payload(&td, RDB_VERSION_7_0));
        let back = load_payload(&exact, &Unguarded).unwrap();
        assert_eq!(back, td);
        assert_eq!(exact_payload(&back, RDB_VERSION_7_0), exact);
        // Compressed, the exact payload is 2.8.2's.
        let mut more = back.clone();
        more.compress().unwrap();
        more.add(7.0).unwrap();
        more.add(-1.0).unwrap();
        let back = load_payload(&exact_payload(&more, RDB_VERSION_7_0), &Unguarded).unwrap();
        assert_eq!(back, more);
        td.compress().unwrap();
        assert_eq!(
            exact_payload(&td, RDB_VERSION_7_0),
            dump_payload(&td, RDB_VERSION_7_0)
        );
        // One point is a point, not 2.8.2's single-observation shape.
        let mut one = TDigest::new(5.0, &Unguarded).unwrap();
        one.add(4.0).unwrap();
        let back = load_payload(&exact_payload(&one, RDB_VERSION_7_0), &Unguarded).unwrap();
        assert_eq!(back, one);
    }

    #[test]
    fn exact_payloads_are_checked() {
        let mut td = TDigest::new(5.0, &Unguarded).unwrap();
        for v in [1.0, 2.0, 2.5] {
            td.add(v).unwrap();
        }
        let good = exact_payload(&td, RDB_VERSION_7_0);
        // The last point's weight (before the EOF opcode and the 10-byte
        // trailer) made 2, the checksum made again.
        let mut bad = good.clone();
        let at = bad.len() - 10 - 1 - 8;
        assert_eq!(bad[at..at + 8], 1.0f64.to_le_bytes());
        bad[at..at + 8].copy_from_slice(&2.0f64.to_le_bytes());
        let body = bad.len() - 8;
        let crc = crate::dump_format::crc64_jones(&bad[..body]);
        bad[body..].copy_from_slice(&crc.to_le_bytes());
        assert!(load_payload(&bad, &Unguarded).is_err());
        bad[at..at + 8].copy_from_slice(&1.0f64.to_le_bytes());
        let crc = crate::dump_format::crc64_jones(&bad[..body]);
        bad[body..].copy_from_slice(&crc.to_le_bytes());
        assert!(load_payload(&bad, &Unguarded).is_ok());
        assert!(load_payload(&good[..good.len() - 20], &Unguarded).is_err());
    }

    #[test]
    fn single_observation_survives_a_2_8_2_payload() {
        let mut td = TDigest::new(100.0, &Unguarded).unwrap();
        td.set_single_observation(crate::tdigest::SingleObservation::Lost282);
        td.add(5.0).unwrap();
        let p = dump_payload(&td, RDB_VERSION_7_0);
        let mut back = load_payload(&p, &Unguarded).unwrap();
        assert_eq!((back.merged_nodes(), back.unmerged_nodes()), (0, 1));
        assert_eq!(back.compressed().unwrap().quantile(0.5), 5.0);
    }
}
