//! Properties of the t-digest core: the fast sort leaves exactly the order
//! of a literal transcription of 2.8.2's quicksort (spec §5.3), save/load
//! round trips, quantiles are monotone in q, CDF stays in [0, 1], and a
//! read on a scratch copy answers as a read that compresses the digest.

use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::tdigest::dump::{dump_payload, load_payload};
use ferrobloom_core::tdigest::sort::sort_nodes;
use ferrobloom_core::tdigest::{Node, TDigest};
use proptest::prelude::*;

/// §5.3's quicksort as written there: inclusive unsigned bounds, middle
/// pivot, strictly-less Lomuto partition, recursion on both sides.
fn literal_quicksort(n: &mut [Node], lo: usize, hi: usize) {
    if lo >= hi {
        return;
    }
    if hi - lo == 1 {
        if n[lo].mean > n[hi].mean {
            n.swap(lo, hi);
        }
        return;
    }
    let p = (lo + hi) / 2;
    let v = n[p].mean;
    n.swap(p, hi);
    let mut i = lo.wrapping_sub(1);
    for j in lo..hi {
        if n[j].mean < v {
            i = i.wrapping_add(1);
            n.swap(i, j);
        }
    }
    n.swap(i.wrapping_add(1), hi);
    let q = i.wrapping_add(1);
    if q > lo {
        literal_quicksort(n, lo, q - 1);
    }
    literal_quicksort(n, q + 1, hi);
}

/// Means from a few distinct values (ties everywhere), with weights that
/// name each node's starting position so any difference in order shows.
fn tied_nodes() -> impl Strategy<Value = Vec<Node>> {
    (1usize..6, prop::collection::vec(0u8..255, 0..400)).prop_map(|(distinct, raw)| {
        raw.iter()
            .enumerate()
            .map(|(i, &b)| Node {
                mean: match b % distinct as u8 {
                    0 => -0.0,
                    1 => 0.0,
                    k => f64::from(k) * 1.5,
                },
                weight: i as i64,
            })
            .collect()
    })
}

fn digest(c: u8, values: &[f64], reads_every: usize) -> TDigest {
    let mut td = TDigest::new(f64::from(c), &Unguarded).unwrap();
    for (i, &v) in values.iter().enumerate() {
        td.add(v).unwrap();
        if reads_every > 0 && i % reads_every == 0 {
            td.compress().unwrap();
        }
    }
    td
}

fn values() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(
        prop_oneof![
            (-50i32..50).prop_map(f64::from),
            -1e6f64..1e6,
            Just(1e300),
            Just(-1e300),
        ],
        0..600,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn fast_sort_is_the_literal_quicksort(nodes in tied_nodes()) {
        let mut fast = nodes.clone();
        sort_nodes(&mut fast);
        let mut literal = nodes;
        if !literal.is_empty() {
            let hi = literal.len() - 1;
            literal_quicksort(&mut literal, 0, hi);
        }
        let bits = |v: &[Node]| v.iter().map(|n| (n.mean.to_bits(), n.weight)).collect::<Vec<_>>();
        prop_assert_eq!(bits(&fast), bits(&literal));
    }

    #[test]
    fn fast_sort_on_random_doubles(raw in prop::collection::vec(any::<f64>(), 0..200)) {
        // NaN and infinities included: the literal path must agree too.
        let nodes: Vec<Node> = raw.iter().enumerate()
            .map(|(i, &mean)| Node { mean, weight: i as i64 }).collect();
        let mut fast = nodes.clone();
        sort_nodes(&mut fast);
        let mut literal = nodes;
        if !literal.is_empty() {
            let hi = literal.len() - 1;
            literal_quicksort(&mut literal, 0, hi);
        }
        let w = |v: &[Node]| v.iter().map(|n| n.weight).collect::<Vec<_>>();
        prop_assert_eq!(w(&fast), w(&literal));
    }

    #[test]
    fn save_load_round_trips(c in 1u8..120, v in values(), every in 0usize..50) {
        let td = digest(c, &v, every);
        let p = dump_payload(&td, RDB_VERSION_7_0);
        let back = load_payload(&p, &Unguarded).unwrap();
        prop_assert_eq!(dump_payload(&back, RDB_VERSION_7_0), p);
        prop_assert_eq!(back.total_weight(), td.total_weight());
        let qs = [0.0, 0.01, 0.25, 0.5, 0.75, 0.99, 1.0];
        let a = td.with_compressed(&Unguarded, |c| c.quantiles(&qs)).unwrap();
        let b = back.with_compressed(&Unguarded, |c| c.quantiles(&qs)).unwrap();
        let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
        prop_assert_eq!(bits(a), bits(b));
    }

    #[test]
    fn quantiles_are_monotone_and_cdf_bounded(
        c in 1u8..120,
        v in prop::collection::vec(-1e6f64..1e6, 2..600),
        every in 0usize..50,
        probes in prop::collection::vec(-2e6f64..2e6, 1..20),
    ) {
        let mut td = digest(c, &v, every);
        let scratch = td.with_compressed(&Unguarded, |c| {
            (c.quantiles(&[0.0, 0.5, 1.0]), probes.iter().map(|&x| c.cdf(x)).collect::<Vec<_>>())
        }).unwrap();
        let c = td.compressed().unwrap();
        let qs: Vec<f64> = (0..=100).map(|i| f64::from(i) / 100.0).collect();
        let q = c.quantiles(&qs);
        for w in q.windows(2) {
            prop_assert!(w[0] <= w[1], "{:?}", w);
        }
        let (lo, hi) = (v.iter().cloned().fold(f64::MAX, f64::min), v.iter().cloned().fold(f64::MIN, f64::max));
        prop_assert_eq!((q[0], q[100]), (lo, hi));
        let cdfs: Vec<f64> = probes.iter().map(|&x| c.cdf(x)).collect();
        for &p in &cdfs {
            prop_assert!((0.0..=1.0).contains(&p), "{}", p);
        }
        prop_assert_eq!(scratch, (c.quantiles(&[0.0, 0.5, 1.0]), cdfs));
    }
}
