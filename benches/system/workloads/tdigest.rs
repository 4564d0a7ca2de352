//! Phase `tdigest`: t-digests (issue 30 "Speed") of compression 100 (the
//! default; 610 nodes), each made afresh every round and loaded with
//! `PREFILL` values (TDIGEST.ADD of 1000 per call) drawn from a seed fixed
//! per round: exponentially distributed, mean 100, as latencies are, sent
//! in Rust's shortest round-trip digits so both servers parse the same
//! doubles.
//!
//! - `TDIGEST.ADD×1000`: TDIGEST.ADD of 1000 such values (key `td:adds`);
//! - reads with no add between them (key `td:reads`): TDIGEST.QUANTILE of
//!   10 fractions (the same 10 every call, as a dashboard asks) and
//!   TDIGEST.CDF of 10 values drawn from the distribution. 2.8.2
//!   compresses the stored digest on a read, so only the first read after
//!   the load pays a compress there: this is the steady state of a digest
//!   read more often than written;
//! - a read after each TDIGEST.ADD of 1000 values (key `td:mixed`): the
//!   step sends the ADD and then the read, and the read's time alone is
//!   measured; every read then meets new points, and pays a compress in
//!   both modules.
//!
//! Run as phase `cms` is (see `paired`). The replies of the first two kinds
//! must be the same byte for byte on both servers (the doubles are printed
//! by the server: both run the same redis-server), and so must a median
//! and then the DUMP payload of `td:adds` and `td:reads` at the end of the
//! round. The reads after each add are checked (10 finite doubles,
//! quantiles in the order of their fractions, CDF values in [0, 1]) and
//! compared for the log only: where a module's reads leave the stored
//! digest as written (a replica then holds what the master holds) and
//! 2.8.2's compress it, from the second step on the two digests have
//! merged different sets of points.

use std::time::Instant;

use super::paired::{self, Compare, Measured, Op};
use super::Rng;
use crate::client::{call, expect_ok, show};
use crate::common::{decode, RawClient, Resp};
use crate::config::Config;
use crate::results::{Kind, Results};
use crate::servers::Pair;

const KEY_ADDS: &str = "td:adds";
const KEY_READS: &str = "td:reads";
const KEY_MIXED: &str = "td:mixed";
pub const COMPRESSION: u32 = 100;
/// Values loaded into each digest when it is made.
pub const PREFILL: u64 = 100_000;
/// Values per TDIGEST.ADD.
pub const BATCH: usize = 1000;
/// The fractions of every TDIGEST.QUANTILE, in increasing order.
pub const FRACTIONS: [&str; 10] = [
    "0.01", "0.05", "0.1", "0.25", "0.5", "0.75", "0.9", "0.95", "0.99", "0.999",
];
/// Values per TDIGEST.CDF.
const CDF_VALUES: usize = 10;

pub const ADD: &str = "TDIGEST.ADD×1000 c100";
pub const QUANTILE: &str = "TDIGEST.QUANTILE×10 reads only";
pub const CDF: &str = "TDIGEST.CDF×10 reads only";
pub const QUANTILE_AFTER_ADD: &str = "TDIGEST.QUANTILE×10 after each ADD";
pub const CDF_AFTER_ADD: &str = "TDIGEST.CDF×10 after each ADD";
pub const USEC: &str = "usec_per_call";

/// A value of the stream: exponential, mean 100.
fn value(rng: &mut Rng) -> String {
    let u = rng.below(1 << 53) as f64 / (1u64 << 53) as f64;
    format!("{}", -(1.0 - u).ln() * 100.0)
}

fn add(key: &str, rng: &mut Rng) -> Vec<String> {
    let mut cmd = vec!["TDIGEST.ADD".to_string(), key.to_string()];
    cmd.extend((0..BATCH).map(|_| value(rng)));
    cmd
}

#[derive(Clone, Copy, PartialEq)]
enum Read {
    Quantile,
    Cdf,
}

impl Read {
    fn stat(self) -> &'static str {
        match self {
            Read::Quantile => "tdigest.quantile",
            Read::Cdf => "tdigest.cdf",
        }
    }

    fn command(self, key: &str, rng: &mut Rng) -> Vec<String> {
        match self {
            Read::Quantile => {
                let mut cmd = vec!["TDIGEST.QUANTILE".to_string(), key.to_string()];
                cmd.extend(FRACTIONS.map(String::from));
                cmd
            }
            Read::Cdf => {
                let mut cmd = vec!["TDIGEST.CDF".to_string(), key.to_string()];
                cmd.extend((0..CDF_VALUES).map(|_| value(rng)));
                cmd
            }
        }
    }

    /// Panics unless `raw` holds one finite double per argument, quantiles
    /// not decreasing (the fractions increase), CDF values in [0, 1].
    fn check(self, cmd: &[String], raw: &[u8], what: &str) {
        let bad = || -> ! { panic!("{what}: {:?} replied {}", &cmd[..2], show(raw)) };
        let Resp::Array(v) = decode(raw) else { bad() };
        let xs: Vec<f64> = v
            .iter()
            .map(|r| {
                let x = match r {
                    Resp::Bulk(b) => String::from_utf8_lossy(b).parse().ok(),
                    Resp::Double(s) => s.parse().ok(),
                    _ => None,
                };
                x.filter(|x: &f64| x.is_finite()).unwrap_or_else(|| bad())
            })
            .collect();
        let ok = xs.len() == cmd.len() - 2
            && match self {
                Read::Quantile => xs.windows(2).all(|w| w[0] <= w[1]),
                Read::Cdf => xs.iter().all(|x| (0.0..=1.0).contains(x)),
            };
        if !ok {
            bad();
        }
    }
}

enum Work {
    Add,
    /// A read of a digest no add changes.
    Steady(Read),
    /// An ADD of `BATCH` values, then the read.
    AfterAdd(Read),
}

impl Op for Work {
    fn stat(&self) -> &'static str {
        match self {
            Work::Add => "tdigest.add",
            Work::Steady(r) | Work::AfterAdd(r) => r.stat(),
        }
    }

    fn step(&self, rng: &mut Rng) -> Vec<Vec<String>> {
        match *self {
            Work::Add => vec![add(KEY_ADDS, rng)],
            Work::Steady(r) => vec![r.command(KEY_READS, rng)],
            Work::AfterAdd(r) => vec![add(KEY_MIXED, rng), r.command(KEY_MIXED, rng)],
        }
    }

    fn check(&self, cmd: &[String], raw: &[u8], what: &str) -> Compare {
        if cmd[0] == "TDIGEST.ADD" {
            assert!(
                raw == b"+OK\r\n",
                "{what}: TDIGEST.ADD replied {}",
                show(raw)
            );
            return Compare::Must;
        }
        match *self {
            Work::Add => unreachable!("only adds"),
            Work::Steady(r) => {
                r.check(cmd, raw, what);
                Compare::Must
            }
            Work::AfterAdd(r) => {
                r.check(cmd, raw, what);
                Compare::Seen
            }
        }
    }
}

/// Makes the three digests afresh (checked with TDIGEST.INFO) and loads
/// each with `fill`.
fn build(c: &mut RawClient, fill: &[Vec<String>]) {
    for key in [KEY_ADDS, KEY_READS, KEY_MIXED] {
        call(c, &["DEL", key]);
        let compression = COMPRESSION.to_string();
        expect_ok(c, &["TDIGEST.CREATE", key, "COMPRESSION", &compression]);
        let cmds: Vec<Vec<String>> = fill
            .iter()
            .map(|cmd| {
                let mut cmd = cmd.clone();
                cmd[1] = key.to_string();
                cmd
            })
            .collect();
        paired::load(c, &cmds, |r| r == b"+OK\r\n", "prefill");
        let Resp::Array(info) = call(c, &["TDIGEST.INFO", key]) else {
            panic!("TDIGEST.INFO {key}: not an array");
        };
        let field = |name: &str| {
            info.chunks(2).find_map(|p| match p {
                [f, Resp::Int(v)] if f.as_str().as_deref() == Some(name) => Some(*v),
                _ => None,
            })
        };
        assert_eq!(
            (field("Capacity"), field("Observations")),
            (Some(6 * i64::from(COMPRESSION) + 10), Some(PREFILL as i64)),
            "TDIGEST.INFO {key}"
        );
    }
}

/// A median of, then the DUMP payload of, each digest both servers must
/// hold alike. The read comes first so that the digest saved is the one a
/// read leaves, whatever a module saves for a digest holding points not
/// yet merged (2.8.2 compresses it first; saving them as they are would be
/// a choice of the module, not a difference of content).
fn dumps(c: &mut RawClient) -> Vec<Vec<u8>> {
    [KEY_ADDS, KEY_READS]
        .iter()
        .flat_map(|k| [c.cmd(&["TDIGEST.QUANTILE", k, "0.5"]), c.cmd(&["DUMP", k])])
        .collect()
}

pub fn phase_tdigest(cfg: &Config, results: &mut Results) {
    println!("\n== t-digest: FerroBloom vs RedisBloom");
    println!("TDIGEST.CREATE key COMPRESSION {COMPRESSION}, {PREFILL} values first");
    let workloads: [(&str, Work, (u64, u64)); 5] = [
        (ADD, Work::Add, cfg.tdigest_adds),
        (QUANTILE, Work::Steady(Read::Quantile), cfg.tdigest_reads),
        (CDF, Work::Steady(Read::Cdf), cfg.tdigest_reads),
        (
            QUANTILE_AFTER_ADD,
            Work::AfterAdd(Read::Quantile),
            cfg.tdigest_adds,
        ),
        (CDF_AFTER_ADD, Work::AfterAdd(Read::Cdf), cfg.tdigest_adds),
    ];
    for round in 0..cfg.rounds {
        println!("round {}/{}", round + 1, cfg.rounds);
        // Fresh servers on one CPU every round (see phase `cms`).
        let pair = Pair::ferrobloom_vs_redisbloom(cfg);
        pair.share_one_cpu();
        let t = Instant::now();
        let mut rng = Rng(1000 * round as u64);
        let fill: Vec<Vec<String>> = (0..PREFILL / BATCH as u64)
            .map(|_| add("", &mut rng))
            .collect();
        pair.both(round, |_, s| build(&mut s.raw(), &fill));
        if round == 0 {
            println!(
                "  made and loaded 3 digests ({PREFILL} values each) on both in {:.1?}",
                t.elapsed()
            );
        }
        for (k, (name, op, calls)) in workloads.iter().enumerate() {
            let seed = 1000 * round as u64 + 100 + k as u64;
            let r: [Measured; 2] = paired::run(&pair, name, op, *calls, seed);
            assert_eq!(
                r[0].digest, r[1].digest,
                "{name}: the servers' replies differ"
            );
            paired::print_round(&pair, name, &r);
            if matches!(op, Work::AfterAdd(_)) {
                let same = r[0].seen == r[1].seen;
                println!(
                    "  {name}: the reads' replies were {} on both servers",
                    if same { "the same" } else { "not the same" }
                );
                if !same && round == 0 {
                    results.note(format!(
                        "{name}: the reads' replies differ between the servers (not required: \
                         FerroBloom's reads leave the stored digest as written, 2.8.2's compress it)"
                    ));
                }
            }
            results.record_both(name, USEC, "µs", Kind::Cost, &r, |m| m.usec_per_call);
        }
        let d = pair.both(round, |_, s| dumps(&mut s.raw()));
        assert!(
            d[0] == d[1],
            "the digests' medians or DUMP payloads differ between the servers"
        );
    }
}
