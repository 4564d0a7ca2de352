//! The filters the workloads run on: their sizing (RedisBloom's), their
//! items, and how they are created and pre-loaded, with checks that both
//! servers hold the same filter.

use crate::client::{bf_info, call, expect_ok, show};
use crate::common::{decode, RawClient, Resp};

/// Error rate of the reserved filters; scaling filters give their first
/// link half of it, so that is what sizes the bit array.
pub const ERROR: f64 = 0.001;

/// `item:` + 12 digits, as redis-benchmark expands `item:__rand_int__`.
pub fn item(i: u64) -> String {
    format!("item:{i:012}")
}

/// Bits per item of a link at `error` (RedisBloom's sizing).
fn bits_per_item(error: f64) -> f64 {
    -error.ln() / (std::f64::consts::LN_2 * std::f64::consts::LN_2)
}

/// BF.INFO Size expected of `BF.RESERVE k 0.001 capacity` (a scaling
/// filter: its first link has half the error rate), within a word or two.
pub fn expected_size(capacity: u64) -> f64 {
    expected_size_at(ERROR, capacity)
}

/// BF.INFO Size expected of `BF.RESERVE k error capacity`.
pub fn expected_size_at(error: f64, capacity: u64) -> f64 {
    capacity as f64 * bits_per_item(error / 2.0) / 8.0
}

/// The capacity at error 0.001 whose bit array takes `bytes`.
pub fn capacity_of_bytes(bytes: u64) -> u64 {
    (bytes as f64 * 8.0 / bits_per_item(ERROR / 2.0)).floor() as u64
}

pub fn assert_size(size: i64, capacity: u64, what: &str) {
    assert_size_at(size, ERROR, capacity, what);
}

/// Checks BF.INFO Size against `BF.RESERVE k error capacity`'s.
pub fn assert_size_at(size: i64, error: f64, capacity: u64, what: &str) {
    let expected = expected_size_at(error, capacity);
    let off = (size as f64 - expected).abs() / expected;
    assert!(
        off < 0.01,
        "{what}: BF.INFO Size {size} but about {expected:.0} expected"
    );
}

/// CF.INFO Size of `CF.RESERVE k capacity BUCKETSIZE bs` (RedisBloom's
/// sizing: a power of two of buckets, one byte per slot, and the 40 + 16
/// bytes of its structures).
pub fn expected_cf_size(capacity: u64, bucket_size: u8) -> i64 {
    let buckets = (capacity / u64::from(bucket_size)).next_power_of_two();
    (40 + 16 + buckets * u64::from(bucket_size)) as i64
}

pub fn assert_cf_size(size: i64, capacity: u64, bucket_size: u8, what: &str) {
    let expected = expected_cf_size(capacity, bucket_size);
    assert_eq!(size, expected, "{what}: CF.INFO Size");
}

/// `BF.RESERVE key 0.001 capacity`.
pub fn reserve(c: &mut RawClient, key: &str, capacity: u64) {
    reserve_at(c, key, ERROR, capacity);
}

/// `BF.RESERVE key error capacity`.
pub fn reserve_at(c: &mut RawClient, key: &str, error: f64, capacity: u64) {
    expect_ok(
        c,
        &["BF.RESERVE", key, &error.to_string(), &capacity.to_string()],
    );
}

/// Adds `item(start..start + count)` with pipelined BF.MADD of 1000 items.
pub fn prefill(c: &mut RawClient, key: &str, start: u64, count: u64) {
    prefill_items(c, key, (start..start + count).map(item));
}

/// Adds `items`, in order, with pipelined BF.MADD of 1000 items.
pub fn prefill_items(c: &mut RawClient, key: &str, items: impl Iterator<Item = String>) {
    add_in_batches(c, &["BF.MADD", key], items);
}

/// Adds `item(start..start + count)` to a Cuckoo filter with pipelined
/// `CF.INSERT key NOCREATE ITEMS` of 1000 items; every one must go in.
pub fn cf_prefill(c: &mut RawClient, key: &str, start: u64, count: u64) {
    add_in_batches(
        c,
        &["CF.INSERT", key, "NOCREATE", "ITEMS"],
        (start..start + count).map(item),
    );
}

/// Sends `head` + 1000 items at a time, 16 commands per round trip; each
/// reply must be an array of 0 / 1, one per item.
fn add_in_batches(c: &mut RawClient, head: &[&str], items: impl Iterator<Item = String>) {
    const BATCH: usize = 1000;
    const DEPTH: usize = 16;
    let mut items = items.peekable();
    let mut cmds: Vec<Vec<String>> = Vec::new();
    while items.peek().is_some() {
        let mut cmd: Vec<String> = head.iter().map(|a| a.to_string()).collect();
        cmd.extend(items.by_ref().take(BATCH));
        cmds.push(cmd);
        if cmds.len() == DEPTH || items.peek().is_none() {
            for (cmd, raw) in cmds.iter().zip(c.pipeline(&cmds)) {
                match decode(&raw) {
                    Resp::Array(v)
                        if v.len() == cmd.len() - head.len()
                            && v.iter().all(|r| matches!(r, Resp::Int(0 | 1))) => {}
                    _ => panic!("{} {} (prefill) replied {}", head[0], head[1], show(&raw)),
                }
            }
            cmds.clear();
        }
    }
}

/// Reserves `key` (replacing it) and pre-loads `items`.
pub fn fresh_reserved(c: &mut RawClient, key: &str, capacity: u64, items: u64) {
    call(c, &["DEL", key]);
    reserve(c, key, capacity);
    prefill(c, key, 0, items);
    let info = bf_info(c, key);
    assert_size(info.size, capacity, key);
    assert_eq!(info.filters, 1, "{key}: scaled out during prefill");
    // Half of `item(0..2 * items)` is present: sample 100 of them.
    let step = (2 * items / 100).max(1);
    let mut cmd = vec!["BF.MEXISTS".to_string(), key.to_string()];
    cmd.extend((0..100).map(|i| item(i * step)));
    let Resp::Array(v) = call(c, &cmd) else {
        panic!("BF.MEXISTS {key}: not an array");
    };
    let present = v.iter().filter(|r| **r == Resp::Int(1)).count() as u64;
    let expected = (0..100).filter(|i| i * step < items).count() as u64;
    assert!(
        present >= expected && present <= expected + 3,
        "{key}: {present} of 100 sampled items present, {expected} expected"
    );
}
