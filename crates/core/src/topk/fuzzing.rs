//! The bodies of the Top-K fuzz targets: untrusted bytes decoded as
//! RESTORE decodes them and, when accepted, exercised with their
//! invariants checked. A panic is a finding.

use super::dump::{dump_payload, load_payload};
use super::sizing::Params;
use super::sketch::TopK;
use crate::bloom::fuzzing::SmallOnly;
use crate::dump_format;

/// Sketches above this size are refused, so fuzzing explores shapes, not
/// memory (the Bloom targets' limit).
pub const LIMIT: u64 = crate::bloom::fuzzing::LIMIT;

/// A DUMP payload body plus the trailer (RDB version 10 and its CRC).
fn framed(body: &[u8]) -> Vec<u8> {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&dump_format::RDB_VERSION_7_0.to_le_bytes());
    let crc = dump_format::crc64_jones(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

fn check_shape(s: &TopK) {
    assert!(s.k() >= 1 && s.width() >= 1 && s.depth() >= 1);
    assert!(s.decay() > 0.0 && s.decay() <= 1.0);
    assert_eq!(
        s.bucket_bytes().len() as u64,
        u64::from(s.width()) * u64::from(s.depth()) * 8
    );
    assert_eq!(s.heap().len(), s.k() as usize);
    let listed = s.list();
    assert!(listed.windows(2).all(|w| w[0].count() >= w[1].count()));
    assert!(listed.iter().all(|h| h.count() > 0));
}

fn round_trip(s: &TopK) {
    let payload = dump_payload(s, dump_format::RDB_VERSION_7_0);
    let back = load_payload(&payload).expect("a sketch's own payload loads");
    assert_eq!(back.params(), s.params());
    assert_eq!(back.heap(), s.heap(), "heap changed");
    assert_eq!(back.bucket_bytes(), s.bucket_bytes(), "buckets changed");
    assert_eq!(back.draws(), s.draws());
    assert_eq!(dump_payload(&back, dump_format::RDB_VERSION_7_0), payload);
}

/// Uses every operation of an accepted sketch.
fn exercise(mut s: TopK, seed: &[u8]) {
    check_shape(&s);
    round_trip(&s);
    for (i, chunk) in seed.chunks(3).take(16).enumerate() {
        let incr = u32::from(chunk[0]) % 5;
        let expelled = s.incrby(chunk, incr).expect("short items");
        if s.query(chunk) {
            assert!(s
                .heap()
                .iter()
                .any(|h| h.matches(super::sketch::fingerprint(chunk), chunk)));
        }
        if let Some(e) = expelled {
            assert!(e.len() <= u32::MAX as usize, "{i}");
        }
        let _ = s.count(chunk);
    }
    check_shape(&s);
    round_trip(&s);
    if let Ok(copy) = s.try_clone(&SmallOnly) {
        assert_eq!(copy.heap(), s.heap());
    }
}

fn small(s: &TopK) -> bool {
    s.bucket_bytes().len() as u64 + u64::from(s.k()) * 24 <= LIMIT
}

/// A DUMP payload body (everything before the RDB version and CRC).
pub fn rdb(data: &[u8]) {
    if let Ok(s) = load_payload(&framed(data)) {
        if small(&s) {
            exercise(s, data);
        }
    }
}

/// load → save → load gives an identical value: of a payload body the
/// loader accepts, and of a sketch built by adds from the same bytes
/// (first byte: shape and decay; then one add per byte pair).
pub fn round_trips(data: &[u8]) {
    if let Ok(s) = load_payload(&framed(data)) {
        if small(&s) {
            check_shape(&s);
            round_trip(&s);
        }
    }
    let Some((&shape, ops)) = data.split_first() else {
        return;
    };
    let params = Params {
        k: 1 + u32::from(shape & 7),
        width: 1 + u32::from(shape >> 3 & 3) * 5,
        depth: 1 + u32::from(shape >> 5 & 3),
        decay: if shape & 0x80 == 0 { 0.9 } else { 1.0 },
    };
    let mut s = TopK::new(params, &SmallOnly).expect("a small sketch");
    for pair in ops.chunks(2) {
        let incr = u32::from(pair.get(1).copied().unwrap_or(1) % 4);
        // Byte 0 adds the empty item, whose saved form is the one byte
        // an empty slot has.
        let item: &[u8] = if pair[0] == 0 { b"" } else { &pair[..1] };
        s.incrby(item, incr).expect("short items");
    }
    check_shape(&s);
    round_trip(&s);
}
