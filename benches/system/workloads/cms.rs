//! Phase `cms`: Count-Min sketches (issue 28 §5), all of 2000×7 cells of 4
//! bytes, made by `CMS.INITBYPROB key 0.001 0.01` (width 2/0.001, depth
//! ⌈log₂ 100⌉; checked with CMS.INFO):
//!
//! - `cms:2000x7`: CMS.INCRBY of 1 and of 10 items, then CMS.QUERY of 1 and
//!   of 10 items. Items are `item:` + 12 digits from `0..UNIVERSE`, each
//!   increment 1..=10, drawn from a seed fixed per round and workload, so
//!   both servers get the same sequence. The sketch is made afresh and
//!   loaded with `PREFILL` such increments at the start of every round, so
//!   every round starts from the same sketch;
//! - `cms:a`, `cms:b` (each loaded likewise, from their own seeds) merged
//!   into `cms:dest`: `CMS.MERGE cms:dest 2 cms:a cms:b`, and the same with
//!   `WEIGHTS 2 3`.
//!
//! Each workload runs its calls one per round trip, then `PER_TRIP` per
//! round trip, on one connection per server, in chunks sent to one server
//! and then the other (see `run`). The metric is server-side usec_per_call
//! from INFO commandstats (what issue 28 holds against RedisBloom), taken
//! robustly over the chunks. Servers are started afresh every round. Every
//! reply is checked, and since both modules place items alike (MurmurHash2
//! columns), the two servers' replies must be the same byte for byte, and
//! so must the sketches' DUMP payloads at the end of the round: a number
//! measured on a diverging module would mean nothing.

use std::time::Instant;

use super::Rng;
use crate::client::{call, expect_ok, show};
use crate::common::{RawClient, Resp};
use crate::config::Config;
use crate::measurement::{check_calls, cmdstat, reset_stats};
use crate::results::{summary, Kind, Results};
use crate::servers::Pair;

const KEY: &str = "cms:2000x7";
const KEY_A: &str = "cms:a";
const KEY_B: &str = "cms:b";
const KEY_DEST: &str = "cms:dest";
/// CMS.INITBYPROB's error and probability: 2000 columns, 7 rows.
const ERROR: &str = "0.001";
const PROBABILITY: &str = "0.01";
const WIDTH: i64 = 2000;
const DEPTH: i64 = 7;
/// Distinct items the workloads draw from.
const UNIVERSE: u64 = 100_000;
/// Increments loaded into each sketch when it is made.
const PREFILL: u64 = 100_000;
/// Item/increment pairs per CMS.INCRBY while loading.
const PREFILL_PER_CALL: u64 = 100;
/// Calls per round trip in the second run of each workload.
pub const PER_TRIP: usize = 32;
/// Chunks per run, sent to the two servers in turn (see `run`).
pub const CHUNKS: usize = 40;
/// The merge's weights in the WEIGHTS row.
const WEIGHTS: [&str; 2] = ["2", "3"];

pub const INCRBY_1: &str = "CMS.INCRBY 2000×7";
pub const INCRBY_10: &str = "CMS.INCRBY×10 2000×7";
pub const QUERY_1: &str = "CMS.QUERY 2000×7";
pub const QUERY_10: &str = "CMS.QUERY×10 2000×7";
pub const MERGE: &str = "CMS.MERGE of 2 2000×7";
pub const MERGE_WEIGHTS: &str = "CMS.MERGE WEIGHTS of 2 2000×7";
pub const USEC: &str = "usec_per_call";

/// What one workload sends.
#[derive(Clone, Copy)]
enum Op {
    /// CMS.INCRBY of this many items, random increments 1..=10.
    Incrby(usize),
    /// CMS.QUERY of this many items.
    Query(usize),
    /// CMS.MERGE of `cms:a` and `cms:b` into `cms:dest`, with or without
    /// WEIGHTS.
    Merge { weights: bool },
}

struct Workload {
    name: &'static str,
    op: Op,
    /// Calls one per round trip, then `PER_TRIP` per round trip.
    calls: (u64, u64),
}

/// The workloads in the order they run (the INCRBYs before the QUERYs, so
/// these read a sketch that took every increment of the round).
fn workloads(cfg: &Config) -> [Workload; 6] {
    let w = |name, op, calls| Workload { name, op, calls };
    [
        w(INCRBY_1, Op::Incrby(1), cfg.cms_calls),
        w(INCRBY_10, Op::Incrby(10), cfg.cms_calls),
        w(QUERY_1, Op::Query(1), cfg.cms_calls),
        w(QUERY_10, Op::Query(10), cfg.cms_calls),
        w(MERGE, Op::Merge { weights: false }, cfg.cms_merges),
        w(MERGE_WEIGHTS, Op::Merge { weights: true }, cfg.cms_merges),
    ]
}

fn random_item(rng: &mut Rng) -> String {
    crate::filters::item(rng.below(UNIVERSE))
}

fn random_increment(rng: &mut Rng) -> String {
    (1 + rng.below(10)).to_string()
}

impl Op {
    fn stat(self) -> &'static str {
        match self {
            Op::Incrby(_) => "cms.incrby",
            Op::Query(_) => "cms.query",
            Op::Merge { .. } => "cms.merge",
        }
    }

    /// One call, its items and increments drawn from `rng`.
    fn command(self, rng: &mut Rng) -> Vec<String> {
        match self {
            Op::Incrby(n) => {
                let mut cmd = vec!["CMS.INCRBY".to_string(), KEY.to_string()];
                for _ in 0..n {
                    cmd.push(random_item(rng));
                    cmd.push(random_increment(rng));
                }
                cmd
            }
            Op::Query(n) => {
                let mut cmd = vec!["CMS.QUERY".to_string(), KEY.to_string()];
                cmd.extend((0..n).map(|_| random_item(rng)));
                cmd
            }
            Op::Merge { weights } => {
                let mut cmd: Vec<String> = ["CMS.MERGE", KEY_DEST, "2", KEY_A, KEY_B]
                    .map(String::from)
                    .into();
                if weights {
                    cmd.push("WEIGHTS".into());
                    cmd.extend(WEIGHTS.map(String::from));
                }
                cmd
            }
        }
    }

    /// Panics unless `raw` is the reply `cmd` must get: for CMS.INCRBY one
    /// estimate per item, at least its increment (a Count-Min sketch never
    /// underestimates); for CMS.QUERY one count per item; for CMS.MERGE OK.
    fn check(self, cmd: &[String], raw: &[u8], what: &str) {
        let bad = || -> ! { panic!("{what}: {:?} replied {}", &cmd[..3], show(raw)) };
        let counts = |n: usize| -> Vec<i64> {
            match crate::common::decode(raw) {
                Resp::Array(v) if v.len() == n => v
                    .into_iter()
                    .map(|r| match r {
                        Resp::Int(x) if x >= 0 => x,
                        _ => bad(),
                    })
                    .collect(),
                _ => bad(),
            }
        };
        match self {
            Op::Incrby(n) => {
                for (k, estimate) in counts(n).into_iter().enumerate() {
                    let incr: i64 = cmd[3 + 2 * k].parse().expect("an increment");
                    if estimate < incr {
                        bad();
                    }
                }
            }
            Op::Query(n) => {
                counts(n);
            }
            Op::Merge { .. } => {
                if raw != b"+OK\r\n" {
                    bad();
                }
            }
        }
    }
}

/// One side's result of a workload.
struct Measured {
    /// The robust server time per call (see `run`).
    usec_per_call: f64,
    /// Plain `usec / calls` over both runs, for the log.
    mean_usec: f64,
    /// FNV-1a over every reply, in order: the same on both servers.
    digest: u64,
}

const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One side's tally of a run: per chunk, its server µs per call.
#[derive(Default)]
struct Tally {
    chunk_means: Vec<f64>,
    usec: u64,
    calls: u64,
    digest: u64,
}

/// Sends `cmds` to one server, `per_trip` per round trip, checking every
/// reply, and adds the chunk's server time (the change of the command's
/// commandstats) to `tally`.
fn send_chunk(
    c: &mut RawClient,
    op: Op,
    cmds: &[Vec<String>],
    per_trip: usize,
    tally: &mut Tally,
    what: &str,
) {
    let before = cmdstat(c, op.stat());
    for trip in cmds.chunks(per_trip) {
        for (cmd, raw) in trip.iter().zip(c.pipeline(trip)) {
            op.check(cmd, &raw, what);
            tally.digest = fnv(tally.digest, &raw);
        }
    }
    let after = cmdstat(c, op.stat());
    let (usec, calls) = (after.usec - before.usec, after.calls - before.calls);
    assert_eq!(calls, cmds.len() as u64, "{what}: calls counted");
    tally.chunk_means.push(usec as f64 / calls as f64);
    tally.usec += usec;
    tally.calls += calls;
}

/// Runs `w` on both servers at once: its calls one per round trip, then
/// `PER_TRIP` per round trip, each run cut into `CHUNKS` chunks sent to one
/// server then the other (the order swapped every chunk), so that a change
/// of the machine's load hits both alike. The same commands go to both,
/// drawn before the run from `seed`.
///
/// A call of a few hundred nanoseconds that the scheduler preempts (the
/// machine is shared, and has 2 cores) is counted at the milliseconds it
/// waited, enough to move a run's mean by 10%: so each run's time per call
/// is the median over its chunks of the chunk's µs per call, and the
/// workload's is their mean weighted by calls. The plain mean is printed
/// too.
fn run(pair: &Pair, w: &Workload, seed: u64) -> [Measured; 2] {
    let mut clients = pair.servers.each_ref().map(|s| s.raw());
    let what = pair.names.map(|n| format!("{n} {}", w.name));
    let stat = w.op.stat();
    let mut rng = Rng(seed);
    let mut digests = [FNV_BASIS; 2];
    let mut totals = [(0u64, 0u64); 2];
    let mut robust = [0.0; 2];
    for (n, per_trip) in [(w.calls.0, 1), (w.calls.1, PER_TRIP)] {
        let cmds: Vec<Vec<String>> = (0..n).map(|_| w.op.command(&mut rng)).collect();
        for c in &mut clients {
            reset_stats(c);
        }
        let mut runs = digests.map(|digest| Tally {
            digest,
            ..Tally::default()
        });
        let chunk = (n as usize).div_ceil(CHUNKS).max(1);
        for (k, part) in cmds.chunks(chunk).enumerate() {
            let order = if k % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                send_chunk(
                    &mut clients[i],
                    w.op,
                    part,
                    per_trip,
                    &mut runs[i],
                    &what[i],
                );
            }
        }
        for (i, r) in runs.iter().enumerate() {
            check_calls(&cmdstat(&mut clients[i], stat), stat, n, 0, &what[i]);
            robust[i] += n as f64 * summary(&r.chunk_means).1;
            totals[i].0 += r.usec;
            totals[i].1 += r.calls;
            digests[i] = r.digest;
        }
    }
    let calls = (w.calls.0 + w.calls.1) as f64;
    [0, 1].map(|i| Measured {
        usec_per_call: robust[i] / calls,
        mean_usec: totals[i].0 as f64 / totals[i].1 as f64,
        digest: digests[i],
    })
}

/// Makes `key` afresh as a 2000×7 sketch (checked with CMS.INFO) and
/// loads it with `PREFILL` random increments drawn from `seed`.
fn build(c: &mut RawClient, key: &str, seed: u64) {
    call(c, &["DEL", key]);
    expect_ok(c, &["CMS.INITBYPROB", key, ERROR, PROBABILITY]);
    let Resp::Array(info) = call(c, &["CMS.INFO", key]) else {
        panic!("CMS.INFO {key}: not an array");
    };
    let field = |name: &str| {
        info.chunks(2).find_map(|p| match p {
            [k, Resp::Int(v)] if k.as_str().as_deref() == Some(name) => Some(*v),
            _ => None,
        })
    };
    assert_eq!(
        (field("width"), field("depth"), field("count")),
        (Some(WIDTH), Some(DEPTH), Some(0)),
        "CMS.INFO {key}"
    );
    let mut rng = Rng(seed);
    let cmds: Vec<Vec<String>> = (0..PREFILL / PREFILL_PER_CALL)
        .map(|_| {
            let mut cmd = vec!["CMS.INCRBY".to_string(), key.to_string()];
            for _ in 0..PREFILL_PER_CALL {
                cmd.push(random_item(&mut rng));
                cmd.push(random_increment(&mut rng));
            }
            cmd
        })
        .collect();
    for raw in c.pipeline(&cmds) {
        assert!(raw.starts_with(b"*"), "prefill of {key}: {}", show(&raw));
    }
}

/// The DUMP payloads of the phase's keys.
fn dumps(c: &mut RawClient) -> Vec<Vec<u8>> {
    [KEY, KEY_A, KEY_B, KEY_DEST]
        .iter()
        .map(|k| c.cmd(&["DUMP", k]))
        .collect()
}

pub fn phase_cms(cfg: &Config, results: &mut Results) {
    println!("\n== Count-Min sketches: FerroBloom vs RedisBloom");
    println!("CMS.INITBYPROB key {ERROR} {PROBABILITY} ({WIDTH}×{DEPTH})");
    let all = workloads(cfg);
    for round in 0..cfg.rounds {
        println!("round {}/{}", round + 1, cfg.rounds);
        // Fresh servers every round, on one CPU: two servers running the
        // same module (RedisBloom on both sides) were measured up to 15%
        // apart on CMS.QUERY, the same way round after round, and a
        // round's ratios spread from 0.83 to 1.40: where each process ran,
        // not the module. Sharing a CPU (they run in turn) and new
        // processes every round brought that to ±4% on CMS.MERGE and
        // ±13% on the sub-microsecond calls, noise that the median over the
        // rounds absorbs.
        let pair = Pair::ferrobloom_vs_redisbloom(cfg);
        pair.share_one_cpu();
        let t = Instant::now();
        pair.both(round, |_, s| {
            let mut c = s.raw();
            let seed = 1000 * round as u64;
            for (k, key) in [KEY, KEY_A, KEY_B, KEY_DEST].into_iter().enumerate() {
                if key == KEY_DEST {
                    call(&mut c, &["DEL", key]);
                    expect_ok(&mut c, &["CMS.INITBYPROB", key, ERROR, PROBABILITY]);
                } else {
                    build(&mut c, key, seed + k as u64);
                }
            }
        });
        if round == 0 {
            println!(
                "  made and loaded 3 sketches ({PREFILL} increments each) on both in {:.1?}",
                t.elapsed()
            );
        }
        for (k, w) in all.iter().enumerate() {
            let seed = 1000 * round as u64 + 100 + k as u64;
            let r = run(&pair, w, seed);
            assert_eq!(
                r[0].digest, r[1].digest,
                "{}: the servers' replies differ",
                w.name
            );
            print_round(&pair, w.name, &r);
            results.record_both(w.name, USEC, "µs", Kind::Cost, &r, |m| m.usec_per_call);
        }
        let d = pair.both(round, |_, s| dumps(&mut s.raw()));
        assert!(
            d[0] == d[1],
            "the sketches' DUMP payloads differ between the servers"
        );
    }
}

fn print_round(pair: &Pair, name: &str, r: &[Measured; 2]) {
    println!(
        "  {name:<30} {}: {:>7.3} µs/call (mean {:>7.3}) | {}: {:>7.3} µs/call (mean {:>7.3}) | ratio {:.3} (of means {:.3})",
        pair.names[0],
        r[0].usec_per_call,
        r[0].mean_usec,
        pair.names[1],
        r[1].usec_per_call,
        r[1].mean_usec,
        r[0].usec_per_call / r[1].usec_per_call,
        r[0].mean_usec / r[1].mean_usec
    );
}
