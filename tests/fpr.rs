//! Measured false positive rates: a NONSCALING filter (so its only link
//! has exactly the target error rate) sized for 1,000,000 items is given
//! 1,000,000 distinct items, then asked about 200,000 items never added.
//! The measured rate must be within 20% of the target, and BF.STATS'
//! estimate (from the set bits) within 20% of the measured rate.

mod common;

use std::time::Instant;

use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};

const CAPACITY: u64 = 1_000_000;
const PROBES: u64 = 200_000;
const BATCH: u64 = 1_000;

/// Commands of `BATCH` items each: `{verb} key {prefix}{i}` for i in range.
fn batches(verb: &str, key: &str, prefix: &str, count: u64) -> Vec<Vec<String>> {
    (0..count.div_ceil(BATCH))
        .map(|b| {
            let mut args = vec![verb.to_string(), key.to_string()];
            let end = ((b + 1) * BATCH).min(count);
            args.extend((b * BATCH..end).map(|i| format!("{prefix}{i}")));
            args
        })
        .collect()
}

/// Counts the `:1` elements of integer-array replies, checking that every
/// element is `:0` or `:1`.
fn count_ones(replies: &[Vec<u8>], per_reply: u64) -> u64 {
    let mut ones = 0;
    for reply in replies {
        let header = format!("*{per_reply}\r\n");
        let body = reply.strip_prefix(header.as_bytes()).unwrap_or_else(|| {
            panic!(
                "reply {}",
                String::from_utf8_lossy(&reply[..reply.len().min(100)])
            )
        });
        assert_eq!(body.len() as u64, 4 * per_reply, "only :0 and :1 elements");
        for element in body.chunks(4) {
            match element {
                b":1\r\n" => ones += 1,
                b":0\r\n" => {}
                other => panic!("element {:?}", String::from_utf8_lossy(other)),
            }
        }
    }
    ones
}

fn stats_field(raw: &mut RawClient, key: &str, name: &str) -> Resp {
    let Resp::Array(items) = decode(&raw.cmd(&["BF.STATS", key])) else {
        panic!("BF.STATS {key}")
    };
    items
        .chunks(2)
        .find(|p| p[0] == Resp::Simple(name.into()))
        .map(|p| p[1].clone())
        .unwrap_or_else(|| panic!("BF.STATS has no {name}"))
}

fn measure(error: f64) {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut raw = server.raw();
    let key = "f";
    let reply = raw.cmd(&[
        "BF.RESERVE",
        key,
        &error.to_string(),
        &CAPACITY.to_string(),
        "NONSCALING",
    ]);
    assert_eq!(reply, b"+OK\r\n");

    let start = Instant::now();
    let replies = raw.pipeline(&batches("BF.MADD", key, "member:", CAPACITY));
    let added = count_ones(&replies, BATCH);
    // Items that were false positives while adding are not counted.
    let card = decode(&raw.cmd(&["BF.CARD", key]));
    assert_eq!(card, Resp::Int(added as i64));
    assert!(
        added > CAPACITY - CAPACITY / 50,
        "{added} of {CAPACITY} added"
    );

    let replies = raw.pipeline(&batches("BF.MEXISTS", key, "probe:", PROBES));
    let positives = count_ones(&replies, BATCH);
    let measured = positives as f64 / PROBES as f64;
    let elapsed = start.elapsed();

    let estimated = match stats_field(&mut raw, key, "estimated_fpr") {
        Resp::Bulk(b) => String::from_utf8(b).unwrap().parse::<f64>().unwrap(),
        other => panic!("estimated_fpr {other:?}"),
    };
    let target = match stats_field(&mut raw, key, "target_error") {
        Resp::Bulk(b) => String::from_utf8(b).unwrap().parse::<f64>().unwrap(),
        other => panic!("target_error {other:?}"),
    };
    assert_eq!(target, error);
    eprintln!(
        "error {error}: {added} items added, {positives} of {PROBES} probes positive: \
         measured {measured:.6}, estimated {estimated:.6} ({elapsed:.1?})"
    );
    assert!(
        (measured - error).abs() <= 0.2 * error,
        "measured FPR {measured} not within 20% of the target {error}"
    );
    assert!(
        (estimated - measured).abs() <= 0.2 * measured,
        "estimated FPR {estimated} not within 20% of the measured {measured}"
    );
}

#[test]
fn measured_fpr_at_capacity_one_percent() {
    measure(0.01);
}

#[test]
fn measured_fpr_at_capacity_one_per_thousand() {
    measure(0.001);
}
