//! Property tests of Top-K: random shapes and streams over a small item
//! set, so that buckets collide and decay coins are drawn.
//!
//! (a) RDB save → load and DUMP → RESTORE give identical values (heap,
//!     buckets, draw counter), saved again byte for byte;
//! (b) determinism: two sketches fed the same adds (decay below 1,
//!     collisions) answer and hold exactly the same;
//! (c) a reload half-way (save, load, then the rest of the stream) ends
//!     exactly where the uninterrupted sketch does;
//! (d) without collisions the heap is a min-heap after every add and
//!     lists exactly the true top counts; with collisions, LIST is sorted
//!     and the heap never holds an item twice. (2.8.2 never sifts up, so
//!     after a found item's count falls the min-heap property may fail:
//!     that layout is observable and kept.)
//! (e) issue 29's shape (k 10, width 12, depth 3, decay 0.9, 30,000 Zipf
//!     adds): a reload half-way changes no reply nor byte; and with room
//!     to spare the coin still finds the five heaviest items.

use std::collections::{HashMap, HashSet};

use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::hash::murmur2;
use ferrobloom_core::topk::dump::{dump_payload, load_payload};
use ferrobloom_core::topk::heap::is_min_heap;
use ferrobloom_core::topk::rdb::{self, RdbError, RdbInput, RdbOutput};
use ferrobloom_core::topk::sketch::fingerprint;
use ferrobloom_core::topk::{Params, TopK};
use ferrobloom_core::BitArray;
use proptest::prelude::*;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn item(i: u8) -> [u8; 2] {
    [b'i', i]
}

/// (item, increment) pairs over 24 items; increment 0 included.
fn stream(max: u32) -> impl Strategy<Value = Vec<(u8, u32)>> {
    prop::collection::vec((0u8..24, 0..=max), 0..200)
}

fn params() -> impl Strategy<Value = Params> {
    (
        1u32..8,
        1u32..12,
        1u32..5,
        prop::sample::select(vec![0.5, 0.9, 0.99, 1.0]),
    )
        .prop_map(|(k, width, depth, decay)| Params {
            k,
            width,
            depth,
            decay,
        })
}

fn new(p: Params) -> TopK {
    TopK::new(p, &Unguarded).expect("a small sketch")
}

type Reply = Option<Vec<u8>>;

fn feed(s: &mut TopK, ops: &[(u8, u32)]) -> Vec<Reply> {
    ops.iter()
        .map(|&(i, n)| s.incrby(&item(i), n).unwrap().map(|b| b.to_vec()))
        .collect()
}

fn same(a: &TopK, b: &TopK) {
    assert_eq!(a.params(), b.params());
    assert_eq!(a.heap(), b.heap());
    assert_eq!(a.bucket_bytes(), b.bucket_bytes());
    assert_eq!(a.draws(), b.draws());
}

/// The values an RDB save writes, read back in order (the module API's
/// typed calls without Redis' framing).
#[derive(Default)]
struct Fields {
    unsigned: Vec<u64>,
    doubles: Vec<f64>,
    strings: Vec<Vec<u8>>,
}

impl RdbOutput for Fields {
    fn write_unsigned(&mut self, v: u64) {
        self.unsigned.push(v);
    }
    fn write_double(&mut self, v: f64) {
        self.doubles.push(v);
    }
    fn write_bytes(&mut self, b: &[u8]) {
        self.strings.push(b.to_vec());
    }
}

impl RdbInput for Fields {
    fn read_unsigned(&mut self) -> Result<u64, RdbError> {
        if self.unsigned.is_empty() {
            return Err(RdbError::Io);
        }
        Ok(self.unsigned.remove(0))
    }
    fn read_double(&mut self) -> Result<f64, RdbError> {
        if self.doubles.is_empty() {
            return Err(RdbError::Io);
        }
        Ok(self.doubles.remove(0))
    }
    fn read_bit_array(&mut self) -> Result<BitArray, RdbError> {
        if self.strings.is_empty() {
            return Err(RdbError::Io);
        }
        BitArray::from_bytes(&self.strings.remove(0)).map_err(|_| RdbError::Io)
    }
}

/// Whether the first `n` items have distinct fingerprints and, in every
/// row, distinct columns: then no bucket is ever shared.
fn collision_free(p: Params, n: u8) -> bool {
    let fps: HashSet<u32> = (0..n).map(|i| fingerprint(&item(i))).collect();
    fps.len() == n as usize
        && (0..p.depth).all(|r| {
            let cols: HashSet<u32> = (0..n).map(|i| murmur2(&item(i), r) % p.width).collect();
            cols.len() == n as usize
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn save_load_and_dump_restore_are_identical(p in params(), ops in stream(6)) {
        let mut s = new(p);
        feed(&mut s, &ops);
        let mut fields = Fields::default();
        prop_assert_eq!(rdb::save(&s, &mut fields), 0);
        let loaded = rdb::load(&mut fields, 0).unwrap();
        prop_assert!(fields.strings.is_empty() && fields.unsigned.is_empty());
        same(&s, &loaded);
        let payload = dump_payload(&s, RDB_VERSION_7_0);
        let restored = load_payload(&payload).unwrap();
        same(&s, &restored);
        prop_assert_eq!(dump_payload(&restored, RDB_VERSION_7_0), payload);
    }

    #[test]
    fn same_adds_same_sketch(p in params(), ops in stream(6)) {
        let (mut a, mut b) = (new(p), new(p));
        let (ra, rb) = (feed(&mut a, &ops), feed(&mut b, &ops));
        prop_assert_eq!(ra, rb);
        same(&a, &b);
        for i in 0..24 {
            prop_assert_eq!(a.count(&item(i)), b.count(&item(i)));
        }
    }

    #[test]
    fn reload_half_way_changes_nothing(p in params(), ops in stream(6), cut in 0usize..200) {
        let cut = cut.min(ops.len());
        let mut straight = new(p);
        let replies = feed(&mut straight, &ops);
        let mut first = new(p);
        let mut replies_reloaded = feed(&mut first, &ops[..cut]);
        let mut reloaded = load_payload(&dump_payload(&first, RDB_VERSION_7_0)).unwrap();
        replies_reloaded.extend(feed(&mut reloaded, &ops[cut..]));
        prop_assert_eq!(replies, replies_reloaded);
        same(&straight, &reloaded);
    }

    #[test]
    fn heap_invariants(p in params(), ops in stream(6)) {
        let mut s = new(p);
        for &(i, n) in &ops {
            s.incrby(&item(i), n).unwrap();
            let listed = s.list();
            prop_assert!(listed.windows(2).all(|w| w[0].count() >= w[1].count()));
            let complete: Vec<&[u8]> = s.heap().iter().filter_map(|h| h.item()).collect();
            let distinct: HashSet<&[u8]> = complete.iter().copied().collect();
            prop_assert_eq!(distinct.len(), complete.len(), "an item twice in the heap");
            prop_assert!(s.query(&item(i)) || s.heap()[0].count() > 0);
        }
    }

    /// Wide sketches: no shared bucket, so HeavyKeeper counts exactly and
    /// the heap holds the true top counts.
    #[test]
    fn collision_free_heap_is_exact(
        k in 1u32..8,
        depth in 1u32..4,
        decay in prop::sample::select(vec![0.9, 1.0]),
        ops in prop::collection::vec((0u8..12, 0u32..5), 0..150),
    ) {
        let p = Params { k, width: 4096, depth, decay };
        prop_assume!(collision_free(p, 12));
        let mut s = new(p);
        let mut truth: HashMap<u8, u32> = HashMap::new();
        for &(i, n) in &ops {
            s.incrby(&item(i), n).unwrap();
            *truth.entry(i).or_default() += n;
            prop_assert!(is_min_heap(s.heap()));
            prop_assert_eq!(s.count(&item(i)), truth[&i]);
        }
        prop_assert_eq!(s.draws(), 0);
        // Every listed count is the item's true count, and no unlisted
        // item counts more than the smallest listed one of a full heap.
        let listed = s.list();
        for h in &listed {
            let i = h.item().unwrap()[1];
            prop_assert_eq!(h.count(), truth[&i]);
        }
        if listed.len() == k as usize {
            let floor = listed.last().unwrap().count();
            let names: HashSet<u8> = listed.iter().map(|h| h.item().unwrap()[1]).collect();
            for (i, &c) in &truth {
                prop_assert!(names.contains(i) || c <= floor);
            }
        }
    }
}

/// A Zipf(1) stream of `n` adds over `items` ranks from a fixed linear
/// congruential generator: rank r with probability ∝ 1/r.
fn zipf(n: usize, items: u32) -> Vec<u32> {
    let weights: Vec<f64> = (1..=items).map(|r| 1.0 / f64::from(r)).collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(weights.len());
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            cdf.partition_point(|&c| c < u).min(items as usize - 1) as u32
        })
        .collect()
}

fn name(rank: u32) -> Vec<u8> {
    format!("item-{rank}").into_bytes()
}

/// Issue 29's acceptance shape: k 10, width 12, depth 3, decay 0.9, 30,000
/// Zipf adds; a sketch reloaded half-way lists the same items with the
/// same counts as one that was not.
#[test]
fn zipf_reload_half_way() {
    let p = Params {
        k: 10,
        width: 12,
        depth: 3,
        decay: 0.9,
    };
    let stream = zipf(30_000, 2_000);
    let mut straight = new(p);
    let mut halves = new(p);
    for (i, &r) in stream.iter().enumerate() {
        if i == stream.len() / 2 {
            halves = load_payload(&dump_payload(&halves, RDB_VERSION_7_0)).unwrap();
        }
        let a = straight.add(&name(r)).unwrap();
        let b = halves.add(&name(r)).unwrap();
        assert_eq!(a, b, "add {i}");
    }
    same(&straight, &halves);
    assert!(straight.draws() > 10_000, "collisions drew coins");
    let listed: Vec<(Vec<u8>, u32)> = straight
        .list()
        .iter()
        .map(|h| (h.item().unwrap().to_vec(), h.count()))
        .collect();
    assert_eq!(listed.len(), 10);
    for (item, _) in &listed {
        assert_eq!(straight.count(item), halves.count(item));
    }
}

/// The deterministic coin still finds the heavy hitters: on a Zipf
/// stream with room to spare, the five most frequent items are listed,
/// their counts never above the truth (HeavyKeeper only underestimates).
#[test]
fn zipf_heavy_hitters_are_found() {
    let p = Params {
        k: 10,
        width: 500,
        depth: 4,
        decay: 0.9,
    };
    let stream = zipf(30_000, 2_000);
    let mut truth: HashMap<u32, u32> = HashMap::new();
    let mut s = new(p);
    for &r in &stream {
        s.add(&name(r)).unwrap();
        *truth.entry(r).or_default() += 1;
    }
    assert!(s.draws() > 0);
    let listed: HashMap<Vec<u8>, u32> = s
        .list()
        .iter()
        .map(|h| (h.item().unwrap().to_vec(), h.count()))
        .collect();
    let mut ranked: Vec<(u32, u32)> = truth.iter().map(|(&r, &c)| (r, c)).collect();
    ranked.sort_by_key(|&(r, c)| (std::cmp::Reverse(c), r));
    for &(r, c) in &ranked[..5] {
        let got = listed.get(&name(r)).copied();
        assert!(got.is_some(), "rank {r} (count {c}) missing: {listed:?}");
        assert!(
            got.unwrap() <= c && got.unwrap() * 10 >= c * 9,
            "rank {r}: {got:?} of {c}"
        );
    }
}
