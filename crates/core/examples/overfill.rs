//! What happens to a Bloom filter past its capacity: one link sized for
//! 100,000 items at a 1% error rate is fed 1x, 2x and 3x its capacity, and
//! probed with 200,000 items never added after each step. For each step it
//! prints the measured false positive rate next to the textbook formula
//! `(1 - e^(-k n / m))^k` and the estimate BF.STATS gives from the set bits,
//! `(ones / m)^k`.
//!
//! Run with `cargo run --release -p ferrobloom-core --example overfill`
//! (optionally `-- <capacity> <error> <probes>`).

use ferrobloom_core::bloom::link::Link;
use ferrobloom_core::{HashPair, HashWidth, LinkSpec, Policy};

fn main() {
    let mut args = std::env::args().skip(1);
    let capacity: u64 = args
        .next()
        .map_or(100_000, |a| a.parse().expect("capacity"));
    let error: f64 = args.next().map_or(0.01, |a| a.parse().expect("error rate"));
    let probes: u64 = args.next().map_or(200_000, |a| a.parse().expect("probes"));

    println!("capacity {capacity}, error rate {error}, {probes} probes per step\n");
    println!(
        "| policy | items | fill | bits set | measured FPR | formula (1 - e^(-kn/m))^k | BF.STATS estimate (ones/m)^k |"
    );
    println!("|---|---|---|---|---|---|---|");
    for policy in [Policy::Exact, Policy::Pow2] {
        let spec = LinkSpec::new(capacity, error, policy).expect("a valid link");
        let mut link = Link::new(&spec).expect("memory for the link");
        let (k, m) = (spec.hashes, spec.modulus());
        let mut added = 0u64;
        for multiple in 1..=3u64 {
            let target = capacity * multiple;
            while added < target {
                link.insert(HashPair::of(
                    format!("member:{added}").as_bytes(),
                    HashWidth::Bits64,
                ));
                added += 1;
            }
            let positives = (0..probes)
                .filter(|i| {
                    let h = HashPair::of(format!("probe:{i}").as_bytes(), HashWidth::Bits64);
                    link.contains_from_head(h, link.head(h))
                })
                .count() as u64;
            let measured = positives as f64 / probes as f64;
            let formula = (1.0 - (-(f64::from(k)) * added as f64 / m as f64).exp()).powi(k as i32);
            let set = link.ones() as f64 / m as f64;
            let estimate = set.powi(k as i32);
            println!(
                "| {} (k {k}, m {m}) | {added} | {multiple}x | {:.1}% | {:.4}% | {:.4}% | {:.4}% |",
                policy.name(),
                100.0 * set,
                100.0 * measured,
                100.0 * formula,
                100.0 * estimate
            );
        }
    }
}
