//! How small a count a Top-K sketch tracks reliably, measured against
//! `ferrobloom_core::topk::plan::min_reliable_count` (docs/sizing.md,
//! "Top-K").
//!
//! Each run streams TOTAL adds into a fresh sketch, each add an item drawn
//! from ITEMS items with Zipf weights `1/rank^skew` (seeded; the item
//! names change with the seed, so their buckets do too). An item is
//! *tracked* when TOPK.LIST lists it with a count within 10% of its true
//! count. A run's threshold is one more than the largest true count of an
//! item that is not tracked: every item counted at least that often was
//! tracked. Per configuration the table gives the largest threshold over
//! the runs (*all runs*), the median run's, the
//! true count of the k-th item (no threshold can be below the (k+1)-th
//! count: the list holds k items), how many runs tracked no item at all
//! (their threshold is the largest true count plus one), and
//! `min_reliable_count` at ε 0.1, δ 0.01 for that total.
//!
//! Run with `cargo run --release -p ferrobloom-core --example
//! topk_reliability` (the table in docs/sizing.md), or `-- K WIDTH DEPTH
//! DECAY SKEW TOTAL ITEMS RUNS` for one row.

use ferrobloom_core::topk::plan::{min_reliable_count, RELIABLE_DELTA, RELIABLE_ERROR};
use ferrobloom_core::topk::{Params, TopK};
use ferrobloom_core::Unguarded;

/// SplitMix64: a seeded stream of 64-bit values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The cumulative Zipf weights of ranks 1..=items, normalised.
fn zipf_cdf(items: usize, skew: f64) -> Vec<f64> {
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = (1..=items)
        .map(|r| {
            acc += 1.0 / (r as f64).powf(skew);
            acc
        })
        .collect();
    for c in &mut cdf {
        *c /= acc;
    }
    cdf
}

#[derive(Clone, Copy)]
struct Row {
    k: u32,
    width: u32,
    depth: u32,
    decay: f64,
    skew: f64,
    total: u64,
    items: usize,
    runs: u64,
}

/// One run: its threshold, the k-th largest true count and the largest.
fn run(row: Row, cdf: &[f64], seed: u64) -> (u64, u64, u64) {
    let params = Params {
        k: row.k,
        width: row.width,
        depth: row.depth,
        decay: row.decay,
    };
    let mut sketch = TopK::new(params, &Unguarded).expect("a sketch");
    let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x5bd1_e995);
    let names: Vec<Vec<u8>> = (0..row.items)
        .map(|r| format!("s{seed}-item{r}").into_bytes())
        .collect();
    let mut truth = vec![0u64; row.items];
    for _ in 0..row.total {
        let u = rng.unit();
        let rank = cdf.partition_point(|&c| c <= u).min(row.items - 1);
        truth[rank] += 1;
        sketch.add(&names[rank]).expect("short items");
    }
    let mut listed = vec![None; row.items];
    for slot in sketch.list() {
        if let Some(item) = slot.item() {
            if let Some(rank) = names.iter().position(|n| n == item) {
                listed[rank] = Some(u64::from(slot.count()));
            }
        }
    }
    let threshold = truth
        .iter()
        .zip(&listed)
        .filter(|(&n, est)| {
            n > 0
                && !matches!(est, Some(e) if (*e as f64 - n as f64).abs() <= RELIABLE_ERROR * n as f64)
        })
        .map(|(&n, _)| n + 1)
        .max()
        .unwrap_or(1);
    let mut sorted = truth.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    (threshold, sorted[row.k as usize - 1], sorted[0])
}

fn measure(row: Row) {
    let cdf = zipf_cdf(row.items, row.skew);
    let mut thresholds = Vec::new();
    let mut kth = Vec::new();
    let mut untracked_runs = 0;
    for seed in 0..row.runs {
        let (t, k, top) = run(row, &cdf, seed + 1);
        thresholds.push(t);
        kth.push(k);
        untracked_runs += u64::from(t > top);
    }
    thresholds.sort_unstable();
    kth.sort_unstable();
    let all = *thresholds.last().expect("runs");
    let median = thresholds[thresholds.len() / 2];
    let formula = min_reliable_count(
        row.width,
        row.depth,
        row.decay,
        row.total,
        RELIABLE_ERROR,
        RELIABLE_DELTA,
    );
    let pct = |n: u64| 100.0 * n as f64 / row.total as f64;
    println!(
        "| {} | {} × {} | {} | {} | {} | {} | {} ({:.2}%) | {} ({:.2}%) | {} | {} | {} ({:.2}%) | {:.1} |",
        row.k,
        row.width,
        row.depth,
        row.decay,
        row.skew,
        row.total,
        row.runs,
        all,
        pct(all),
        median,
        pct(median),
        kth[kth.len() / 2],
        untracked_runs,
        formula,
        pct(formula),
        formula as f64 / all as f64,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rows: Vec<Row> = if args.len() == 8 {
        let num = |i: usize| args[i].parse::<f64>().expect("a number");
        vec![Row {
            k: num(0) as u32,
            width: num(1) as u32,
            depth: num(2) as u32,
            decay: num(3),
            skew: num(4),
            total: num(5) as u64,
            items: num(6) as usize,
            runs: num(7) as u64,
        }]
    } else if args.is_empty() {
        let mut rows = Vec::new();
        for (width, depth) in [(8, 7), (100, 3), (100, 7), (1000, 5)] {
            for decay in [0.9, 0.95, 1.0] {
                for skew in [0.8, 1.0, 1.2] {
                    rows.push(Row {
                        // Enough slots that the list does not decide.
                        k: if width >= 1000 { 200 } else { 50 },
                        width,
                        depth,
                        decay,
                        skew,
                        total: 100_000,
                        items: 100_000,
                        runs: 40,
                    });
                }
            }
        }
        // Ten times the stream: the threshold should grow about √10-fold.
        for decay in [0.9, 1.0] {
            rows.push(Row {
                k: 50,
                width: 100,
                depth: 7,
                decay,
                skew: 1.0,
                total: 1_000_000,
                items: 100_000,
                runs: 10,
            });
        }
        rows
    } else {
        panic!("arguments: K WIDTH DEPTH DECAY SKEW TOTAL ITEMS RUNS");
    };
    println!(
        "| k | width × depth | decay | skew | adds | runs | tracked from, all runs | median run | k-th true count | runs tracking nothing | min_reliable_count | formula / measured |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        measure(row);
    }
}
