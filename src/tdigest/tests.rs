use ferrobloom_core::tdigest::TDigest;
use ferrobloom_core::Unguarded;

use super::TDigestValue;
use crate::datatype::{AofRecord, DataType, DigestSink};

/// Collects what DEBUG DIGEST would be fed.
#[derive(Default, PartialEq, Debug)]
struct Collected(Vec<u8>);

impl DigestSink for Collected {
    fn add_int(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    fn add_bytes(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn end_sequence(&mut self) {
        self.0.push(0xff);
    }
}

fn value(compression: f64, points: &[f64]) -> Box<TDigestValue> {
    let mut td = TDigest::new(compression, &Unguarded).unwrap();
    for &p in points {
        td.add(p).unwrap();
    }
    TDigestValue::new(td)
}

fn digest_of(v: &TDigestValue) -> Collected {
    let mut c = Collected::default();
    DataType::digest(v, &mut c);
    c
}

#[test]
fn debug_digest_differs_per_content_and_matches_a_copy() {
    let a = value(100.0, &[1.0, 2.0, 3.0]);
    let b = value(100.0, &[1.0, 2.0, 4.0]);
    let empty = value(100.0, &[]);
    let other_compression = value(50.0, &[1.0, 2.0, 3.0]);
    assert_ne!(digest_of(&a), digest_of(&b));
    assert_ne!(digest_of(&a), digest_of(&empty));
    assert_ne!(digest_of(&a), digest_of(&other_compression));
    let copy = a.deep_copy().unwrap();
    assert_eq!(digest_of(&a), digest_of(&copy));
}

#[test]
fn memory_usage_is_2_8_2s_formula() {
    // Compression 100: capacity 6·100 + 10 = 610 nodes of 16 bytes, plus 8.
    assert_eq!(value(100.0, &[]).mem_usage(), 16 * 610 + 8);
    assert_eq!(value(5.0, &[1.0]).footprint().bytes, 16 * 40);
}

#[test]
fn aof_rewrite_is_one_restore_of_the_dump_payload() {
    let v = value(5.0, &[1.0, 2.0, 2.5]);
    let mut records = Vec::new();
    v.aof_rewrite(&mut |r| {
        if let AofRecord::Restore(p) = r {
            records.push(p.to_vec());
        } else {
            panic!("not a RESTORE: {r:?}");
        }
    });
    assert_eq!(records.len(), 1);
    let back = ferrobloom_core::tdigest::dump::load_payload(&records[0], &Unguarded).unwrap();
    assert_eq!(back.total_weight(), 3);
    assert_eq!((back.min(), back.max()), (1.0, 2.5));
}
