//! The bodies of the Count-Min sketch's fuzz targets: untrusted bytes
//! decoded as RESTORE decodes them and, when accepted, exercised with
//! their invariants checked. A panic is a finding.

use super::cells::CellSize;
use super::dump::{dump_payload, load_payload};
use super::merge::{merge, Operand};
use super::sketch::{CountMinSketch, IncrError};
use crate::dump_format;

/// Sketches above this size are refused, so fuzzing explores shapes, not
/// memory (the Bloom targets' limit).
pub const LIMIT: u64 = crate::bloom::fuzzing::LIMIT;

use crate::bloom::fuzzing::SmallOnly;

/// A DUMP payload body plus the trailer (RDB version 10 and its CRC).
fn framed(body: &[u8]) -> Vec<u8> {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&dump_format::RDB_VERSION_7_0.to_le_bytes());
    let crc = dump_format::crc64_jones(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

fn check_shape(s: &CountMinSketch) {
    assert!(s.width() >= 1 && s.depth() >= 1, "a zero dimension");
    assert_eq!(
        s.cell_bytes().len() as u64,
        s.width() * s.depth() * s.cell_size().bytes(),
        "cell array length"
    );
    for i in 0..s.width() * s.depth() {
        assert!(s.cell(i) <= s.max_count(), "cell {i} above its maximum");
    }
}

/// Uses every operation of an accepted sketch, checking atomicity.
fn exercise(mut s: CountMinSketch, seed: &[u8]) {
    check_shape(&s);
    let payload = dump_payload(&s, dump_format::RDB_VERSION_7_0);
    let back = load_payload(&payload).expect("a sketch's own payload loads");
    assert_eq!(dump_payload(&back, dump_format::RDB_VERSION_7_0), payload);
    for (k, item) in seed.chunks(3).take(8).enumerate() {
        let incr = i64::from(item[0] as i8) << (k * 7);
        let before = s.cell_bytes().to_vec();
        let (count, estimate) = (s.count(), s.query(item));
        match s.incrby(item, incr) {
            Ok(now) => {
                assert_eq!(now, s.query(item));
                assert_eq!(
                    i128::from(s.count()) - i128::from(count),
                    i128::from(incr),
                    "N moved by the increment"
                );
                if incr >= 0 {
                    assert!(now >= estimate);
                }
            }
            Err(e) => {
                assert_eq!(s.cell_bytes(), &before[..], "{e:?} changed cells");
                assert_eq!(s.count(), count, "{e:?} changed N");
                assert_eq!(e == IncrError::Overflow, incr > 0);
            }
        }
    }
    check_shape(&s);
    let w = i64::from(seed.first().copied().unwrap_or(1) as i8);
    let before = (s.cell_bytes().to_vec(), s.count());
    if let Ok(copy) = s.try_clone(&SmallOnly) {
        match merge(&mut s, &[(Operand::Dest, w), (Operand::Other(&copy), 1)]) {
            Ok(()) => check_shape(&s),
            Err(_) => assert_eq!((s.cell_bytes().to_vec(), s.count()), before),
        }
    }
}

/// A DUMP payload body (everything before the RDB version and CRC).
pub fn rdb(data: &[u8]) {
    if let Ok(s) = load_payload(&framed(data)) {
        if s.cell_bytes().len() as u64 <= LIMIT {
            exercise(s, data);
        }
    }
}

/// load → save → load gives an identical value: of a payload body the
/// loader accepts, and of a sketch built by increments from the same bytes
/// (first byte: shape and cell size; then one signed increment per byte).
pub fn round_trips(data: &[u8]) {
    if let Ok(s) = load_payload(&framed(data)) {
        if s.cell_bytes().len() as u64 <= LIMIT / 4 {
            round_trip(&s);
        }
    }
    let Some((&shape, ops)) = data.split_first() else {
        return;
    };
    let size = CellSize::ALL[usize::from(shape & 3)];
    let width = 1 + u64::from(shape >> 2 & 7) * 3;
    let depth = 1 + u64::from(shape >> 5);
    let mut s = CountMinSketch::new(width, depth, size, &SmallOnly).expect("a small sketch");
    for pair in ops.chunks(2) {
        let incr = i64::from(pair[0] as i8) << (pair.get(1).copied().unwrap_or(0) & 63);
        let _ = s.incrby(&pair[..1], incr);
    }
    round_trip(&s);
}

fn round_trip(s: &CountMinSketch) {
    check_shape(s);
    let payload = dump_payload(s, dump_format::RDB_VERSION_7_0);
    let back = load_payload(&payload).expect("a sketch's own payload loads");
    assert_eq!(
        (back.width(), back.depth(), back.count(), back.cell_size()),
        (s.width(), s.depth(), s.count(), s.cell_size())
    );
    assert_eq!(back.cell_bytes(), s.cell_bytes(), "cells changed");
    assert_eq!(dump_payload(&back, dump_format::RDB_VERSION_7_0), payload);
}
