//! The bodies of the t-digest's fuzz targets: untrusted bytes decoded as
//! RESTORE decodes them and, when accepted, exercised with their
//! invariants checked. A panic is a finding.

use super::dump::{dump_payload, exact_payload, load_payload};
use super::merge::merge;
use super::TDigest;
use crate::bloom::fuzzing::SmallOnly;
use crate::dump_format;

/// A DUMP payload body plus the trailer (RDB version 10 and its CRC).
fn framed(body: &[u8]) -> Vec<u8> {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&dump_format::RDB_VERSION_7_0.to_le_bytes());
    let crc = dump_format::crc64_jones(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

fn check_shape(td: &TDigest) {
    assert!(
        td.nodes().len() as i64 <= td.capacity(),
        "nodes above capacity"
    );
    assert!(td.merged_nodes() <= td.nodes().len());
    assert!(td.merged_weight() >= 0 && td.unmerged_weight() >= 0);
}

/// Every read, on the stored digest and on a scratch copy: same answers.
fn read_all(td: &mut TDigest, seed: &[u8]) {
    let probes: Vec<f64> = seed.iter().take(6).map(|&b| f64::from(b) / 255.0).collect();
    let scratch = td
        .with_compressed(&SmallOnly, |c| {
            probes
                .iter()
                .map(|&q| {
                    (
                        c.quantile(q).to_bits(),
                        c.cdf(q * 100.0).to_bits(),
                        c.rank(q),
                        c.rev_rank(q),
                        c.by_rank((q * 10.0) as i64).to_bits(),
                        c.trimmed_mean(q / 2.0, 0.5 + q / 2.0).to_bits(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .ok();
    let Ok(c) = td.compressed() else { return };
    let direct: Vec<_> = probes
        .iter()
        .map(|&q| {
            (
                c.quantile(q).to_bits(),
                c.cdf(q * 100.0).to_bits(),
                c.rank(q),
                c.rev_rank(q),
                c.by_rank((q * 10.0) as i64).to_bits(),
                c.trimmed_mean(q / 2.0, 0.5 + q / 2.0).to_bits(),
            )
        })
        .collect();
    if let Some(s) = scratch {
        assert_eq!(s, direct, "a scratch read answers as the stored digest");
    }
    check_shape(td);
}

fn exercise(mut td: TDigest, seed: &[u8]) {
    check_shape(&td);
    round_trip(&td);
    read_all(&mut td, seed);
    for (i, &b) in seed.iter().take(16).enumerate() {
        let _ = td.add(f64::from(b) - i as f64);
        check_shape(&td);
    }
    read_all(&mut td, seed);
    if let Ok(m) = merge(td.compression(), Some(&td), &[&td], &SmallOnly) {
        check_shape(&m);
    }
    round_trip(&td);
}

/// A DUMP payload body (everything before the RDB version and CRC).
pub fn rdb(data: &[u8]) {
    if let Ok(td) = load_payload(&framed(data), &SmallOnly) {
        exercise(td, data);
    }
}

/// load → save → load gives the same bytes: for a payload the loader
/// accepts, and for a digest built from the same bytes (first byte: the
/// compression; then a value per byte pair, a read every 0xff byte).
pub fn round_trips(data: &[u8]) {
    if let Ok(td) = load_payload(&framed(data), &SmallOnly) {
        round_trip(&td);
    }
    let Some((&c, ops)) = data.split_first() else {
        return;
    };
    let mut td = TDigest::new(f64::from(1 + c % 64), &SmallOnly).expect("a small digest");
    for pair in ops.chunks(2) {
        if pair[0] == 0xff {
            let _ = td.compress();
            continue;
        }
        let v = f64::from(pair[0] as i8) * f64::from(pair.get(1).copied().unwrap_or(1));
        td.add(v).expect("weights stay small");
    }
    round_trip(&td);
    read_all(&mut td, data);
}

fn round_trip(td: &TDigest) {
    let payload = dump_payload(td, dump_format::RDB_VERSION_7_0);
    let back = load_payload(&payload, &SmallOnly).expect("a digest's own payload loads");
    assert_eq!(dump_payload(&back, dump_format::RDB_VERSION_7_0), payload);
    let answers = |t: &TDigest| {
        t.with_compressed(&SmallOnly, |c| {
            [0.0, 0.3, 0.5, 0.99, 1.0].map(|q| c.quantile(q).to_bits())
        })
        .ok()
    };
    assert_eq!(answers(&back), answers(td), "answers changed by save/load");
    assert_eq!(back.total_weight(), td.total_weight());
    // Saved as held, it loads as held.
    let exact = exact_payload(td, dump_format::RDB_VERSION_7_0);
    let back = load_payload(&exact, &SmallOnly).expect("a digest's exact payload loads");
    assert_eq!(exact_payload(&back, dump_format::RDB_VERSION_7_0), exact);
    assert_eq!(
        answers(&back),
        answers(td),
        "answers changed by an exact save/load"
    );
}
