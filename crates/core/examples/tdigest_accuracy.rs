//! How far a t-digest's quantiles are off, in rank, against the guidance
//! of `ferrobloom_core::tdigest::plan`. For each compression, distribution
//! and number of observations, digests are filled (in random order, and in
//! ascending order, often named the hard order for a merging digest) with
//! seeded values, and each quantile estimate `x = QUANTILE(q)` is placed in
//! the sorted data: its rank error is `|rank(x)/n − q|`, as a fraction of
//! the observations (what TDIGEST.PLAN's `median_error_bound` and
//! `tail_error_bound` bound).
//! Prints a Markdown table of the largest errors over the seeds: around
//! the median (q in 0.25..0.75), at the 1% / 99% tails and at the 0.1% /
//! 99.9% ones, beside the plan's bound for each, and the largest ratio of
//! an error to the bound at its own quantile; then the same, worst over
//! the distributions and orders, per compression and n. Exits with status
//! 1 if any measured error is above its bound.
//!
//! ```text
//! cargo run --release -p ferrobloom-core --example tdigest_accuracy
//! cargo run --release -p ferrobloom-core --example tdigest_accuracy -- COMPRESSION N [SEEDS]
//! ```

use ferrobloom_core::tdigest::plan;
use ferrobloom_core::tdigest::TDigest;
use ferrobloom_core::Unguarded;

const COMPRESSIONS: [f64; 5] = [20.0, 50.0, 100.0, 200.0, 500.0];
const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];
const SEEDS: u64 = 3;

/// Quantiles read around the median, at the 1% tails, at the 0.1% tails.
const MIDDLE: [f64; 5] = [0.25, 0.4, 0.5, 0.6, 0.75];
const TAILS: [f64; 2] = [0.01, 0.99];
const FAR_TAILS: [f64; 2] = [0.001, 0.999];

/// SplitMix64: enough for test data, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

#[derive(Clone, Copy)]
enum Dist {
    Uniform,
    Normal,
    Exponential,
    LogNormal,
}

impl Dist {
    const ALL: [Dist; 4] = [
        Dist::Uniform,
        Dist::Normal,
        Dist::Exponential,
        Dist::LogNormal,
    ];

    fn name(self) -> &'static str {
        match self {
            Dist::Uniform => "uniform",
            Dist::Normal => "normal",
            Dist::Exponential => "exponential",
            Dist::LogNormal => "lognormal (σ 2)",
        }
    }

    fn draw(self, rng: &mut Rng) -> f64 {
        match self {
            Dist::Uniform => rng.unit(),
            Dist::Normal => rng.normal(),
            Dist::Exponential => -rng.unit().ln(),
            Dist::LogNormal => (2.0 * rng.normal()).exp(),
        }
    }
}

/// The largest rank errors of one digest at the three groups of
/// quantiles, and the largest ratio of an error to the bound at its
/// quantile.
#[derive(Clone, Copy, Default)]
struct Errors {
    middle: f64,
    tail: f64,
    far_tail: f64,
    ratio: f64,
}

impl Errors {
    fn max(self, o: Errors) -> Errors {
        Errors {
            middle: self.middle.max(o.middle),
            tail: self.tail.max(o.tail),
            far_tail: self.far_tail.max(o.far_tail),
            ratio: self.ratio.max(o.ratio),
        }
    }
}

/// Where `x` falls in `sorted`, as a fraction: the middle of the run of
/// values equal to it (its mid-rank), over n.
fn rank(sorted: &[f64], x: f64) -> f64 {
    let below = sorted.partition_point(|&v| v < x);
    let upto = sorted.partition_point(|&v| v <= x);
    (below + upto) as f64 / 2.0 / sorted.len() as f64
}

fn measure(compression: f64, values: &[f64], sorted: &[f64]) -> Errors {
    let mut td = TDigest::new(compression, &Unguarded).expect("a digest");
    for &v in values {
        td.add(v).expect("added");
    }
    let c = td.compressed().expect("compressed");
    let n = sorted.len() as u64;
    let error = |q: f64| (rank(sorted, c.quantile(q)) - q).abs();
    let worst = |qs: &[f64]| qs.iter().map(|&q| error(q)).fold(0.0, f64::max);
    let ratio = MIDDLE
        .iter()
        .chain(&TAILS)
        .chain(&FAR_TAILS)
        .map(|&q| error(q) / plan::rank_error(compression, n, q))
        .fold(0.0, f64::max);
    Errors {
        middle: worst(&MIDDLE),
        tail: worst(&TAILS),
        far_tail: worst(&FAR_TAILS),
        ratio,
    }
}

fn pct(x: f64) -> String {
    format!("{:.3}%", 100.0 * x)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (compressions, sizes, seeds) = match &args[..] {
        [] => (COMPRESSIONS.to_vec(), SIZES.to_vec(), SEEDS),
        [c, n] => (vec![c.parse().unwrap()], vec![n.parse().unwrap()], SEEDS),
        [c, n, s] => (
            vec![c.parse().unwrap()],
            vec![n.parse().unwrap()],
            s.parse().unwrap(),
        ),
        _ => panic!("arguments: [COMPRESSION N [SEEDS]]"),
    };
    println!(
        "| compression | n | distribution | order | 25-75% | bound at 50% | 1% / 99% | bound | 0.1% / 99.9% | bound | worst error / bound |"
    );
    println!("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut above = 0;
    let mut summary = Vec::new();
    for &n in &sizes {
        // The same data for every compression.
        let data: Vec<(Dist, Vec<Vec<f64>>)> = Dist::ALL
            .iter()
            .map(|&d| {
                let sets = (1..=seeds)
                    .map(|seed| {
                        let mut rng = Rng(seed.wrapping_mul(0x5851_F42D_4C95_7F2D) ^ n as u64);
                        (0..n).map(|_| d.draw(&mut rng)).collect()
                    })
                    .collect();
                (d, sets)
            })
            .collect();
        for &compression in &compressions {
            let p = plan::plan(compression, n as u64).expect("a plan");
            let far_bound = plan::rank_error(compression, n as u64, FAR_TAILS[0]);
            let mut overall = Errors::default();
            for (d, sets) in &data {
                for ascending in [false, true] {
                    let mut worst = Errors::default();
                    for values in sets {
                        let mut sorted = values.clone();
                        sorted.sort_by(f64::total_cmp);
                        let input = if ascending { &sorted } else { values };
                        worst = worst.max(measure(compression, input, &sorted));
                    }
                    overall = overall.max(worst);
                    if worst.ratio > 1.0 {
                        above += 1;
                    }
                    println!(
                        "| {compression} | {n} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                        d.name(),
                        if ascending { "ascending" } else { "random" },
                        pct(worst.middle),
                        pct(p.rank_error_median),
                        pct(worst.tail),
                        pct(p.rank_error_tail),
                        pct(worst.far_tail),
                        pct(far_bound),
                        worst.ratio,
                    );
                }
            }
            summary.push(format!(
                "| {compression} | {n} | {} | {} | {} | {} | {} | {} | {:.2} |",
                pct(overall.middle),
                pct(p.rank_error_median),
                pct(overall.tail),
                pct(p.rank_error_tail),
                pct(overall.far_tail),
                pct(far_bound),
                overall.ratio,
            ));
        }
    }
    println!();
    println!(
        "| compression | n | 25-75% | bound at 50% | 1% / 99% | bound | 0.1% / 99.9% | bound | worst error / bound |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    summary.sort_by_key(|row| {
        let c: f64 = row[2..].split(' ').next().unwrap().parse().unwrap();
        c as u64
    });
    for row in summary {
        println!("{row}");
    }
    if above > 0 {
        eprintln!("{above} rows with an error above its bound");
        std::process::exit(1);
    }
}
