//! Phase `topk`: Top-K (issue 29 "Speed") on `TOPK.RESERVE key 100 2000 7
//! 1`: the top 100 of a stream, 2000×7 buckets (RedisBloom's own example
//! of TOPK.RESERVE uses width 2000 and depth 7; width well above k·ln k,
//! about 460 here, and depth 7, the default, keep the heavy hitters'
//! buckets apart: the defaults 8×7 would make 56 buckets hold a top 100,
//! which nobody runs), decay 1 so that no decay coin is drawn and both
//! modules must give the same replies (2.8.2 draws its coin from `rand()`).
//!
//! The stream is Zipf (exponent 1) over `item:` + 12 digits of a rank in
//! `0..UNIVERSE`, as the traffic a top-k tracks is: a few items make most
//! of it. Every round the sketch is made afresh and loaded with `PREFILL`
//! items (TOPK.ADD of 100 per call) drawn from a seed fixed per round, so
//! every round starts from the same sketch, with its top 100 settled.
//!
//! - `TOPK.ADD 2000×7`: TOPK.ADD of 1 item;
//! - `TOPK.ADD×100 2000×7`: TOPK.ADD of 100 items;
//! - `TOPK.LIST WITHCOUNT k 100`: the 100 items and their counts.
//!
//! Run as phase `cms` is (see `paired`). Every reply (the expelled items,
//! the lists) must be the same byte for byte on both servers, and at the
//! end of the round so must the sketches' saved content (DUMP decoded,
//! buckets, heap records and items compared; the heap records' item
//! pointers, process addresses that 2.8.2 writes and FerroBloom zeroes,
//! left out).

use std::time::Instant;

use ferrobloom_core::topk::{dump, rdb, TopK};

use super::paired::{self, Compare, Measured, Op};
use super::Rng;
use crate::client::{call, expect_ok, show};
use crate::common::{decode, RawClient, Resp};
use crate::config::Config;
use crate::results::{Kind, Results};
use crate::servers::Pair;

const KEY: &str = "topk:2000x7";
pub const K: u32 = 100;
pub const WIDTH: u32 = 2000;
pub const DEPTH: u32 = 7;
/// Distinct items of the stream.
pub const UNIVERSE: u64 = 100_000;
/// Items added when the sketch is made.
pub const PREFILL: u64 = 200_000;
/// Items per TOPK.ADD while loading, and in the batch row.
const BATCH: usize = 100;

pub const ADD_1: &str = "TOPK.ADD 2000×7";
pub const ADD_100: &str = "TOPK.ADD×100 2000×7";
pub const LIST: &str = "TOPK.LIST WITHCOUNT k 100";
pub const USEC: &str = "usec_per_call";

/// The Zipf stream: the cumulative weights 1/r of ranks 1..=UNIVERSE.
pub struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    pub fn new() -> Zipf {
        let mut total = 0.0;
        let cumulative = (1..=UNIVERSE)
            .map(|r| {
                total += 1.0 / r as f64;
                total
            })
            .collect();
        Zipf { cumulative }
    }

    /// The next item of the stream.
    fn item(&self, rng: &mut Rng) -> String {
        let total = *self.cumulative.last().expect("a universe");
        let u = rng.below(1 << 53) as f64 / (1u64 << 53) as f64 * total;
        let rank = self.cumulative.partition_point(|&c| c <= u) as u64;
        crate::filters::item(rank.min(UNIVERSE - 1))
    }

    fn add(&self, rng: &mut Rng, n: usize) -> Vec<String> {
        let mut cmd = vec!["TOPK.ADD".to_string(), KEY.to_string()];
        cmd.extend((0..n).map(|_| self.item(rng)));
        cmd
    }
}

enum Work<'z> {
    Add(&'z Zipf, usize),
    List,
}

impl Op for Work<'_> {
    fn stat(&self) -> &'static str {
        match self {
            Work::Add(..) => "topk.add",
            Work::List => "topk.list",
        }
    }

    fn step(&self, rng: &mut Rng) -> Vec<Vec<String>> {
        vec![match *self {
            Work::Add(z, n) => z.add(rng, n),
            Work::List => ["TOPK.LIST", KEY, "WITHCOUNT"].map(String::from).into(),
        }]
    }

    /// ADD: one null or expelled item per item added; LIST WITHCOUNT: up to
    /// k items with counts, largest first. Both must agree byte for byte.
    fn check(&self, cmd: &[String], raw: &[u8], what: &str) -> Compare {
        let bad = || -> ! { panic!("{what}: {:?} replied {}", &cmd[..2], show(raw)) };
        let Resp::Array(v) = decode(raw) else { bad() };
        match self {
            Work::Add(_, n) => {
                if v.len() != *n || !v.iter().all(|r| matches!(r, Resp::Nil | Resp::Bulk(_))) {
                    bad();
                }
            }
            Work::List => {
                if v.len() != 2 * K as usize {
                    bad();
                }
                let counts: Vec<i64> = v
                    .chunks(2)
                    .map(|p| match p {
                        [Resp::Bulk(_), Resp::Int(c)] if *c > 0 => *c,
                        _ => bad(),
                    })
                    .collect();
                if counts.windows(2).any(|w| w[0] < w[1]) {
                    bad();
                }
            }
        }
        Compare::Must
    }
}

/// Makes the sketch afresh (checked with TOPK.INFO) and loads it with
/// `PREFILL` items of the stream drawn from `seed`.
fn build(c: &mut RawClient, zipf: &Zipf, seed: u64) {
    call(c, &["DEL", KEY]);
    let (k, w, d) = (K.to_string(), WIDTH.to_string(), DEPTH.to_string());
    expect_ok(c, &["TOPK.RESERVE", KEY, &k, &w, &d, "1"]);
    let Resp::Array(info) = call(c, &["TOPK.INFO", KEY]) else {
        panic!("TOPK.INFO {KEY}: not an array");
    };
    let field = |name: &str| {
        info.chunks(2).find_map(|p| match p {
            [f, Resp::Int(v)] if f.as_str().as_deref() == Some(name) => Some(*v),
            _ => None,
        })
    };
    assert_eq!(
        (field("k"), field("width"), field("depth")),
        (
            Some(i64::from(K)),
            Some(i64::from(WIDTH)),
            Some(i64::from(DEPTH))
        ),
        "TOPK.INFO {KEY}"
    );
    let mut rng = Rng(seed);
    let cmds: Vec<Vec<String>> = (0..PREFILL / BATCH as u64)
        .map(|_| zipf.add(&mut rng, BATCH))
        .collect();
    paired::load(c, &cmds, |r| r.starts_with(b"*"), "prefill");
}

/// The sketch as saved, decoded; the heap records' item pointers are not
/// in it (the decoder does not keep them).
fn saved(c: &mut RawClient) -> TopK {
    let Resp::Bulk(payload) = decode(&c.cmd(&["DUMP", KEY])) else {
        panic!("DUMP {KEY}: not a bulk string");
    };
    dump::load_payload(&payload).expect("a Top-K DUMP payload decodes")
}

fn same_content(a: &TopK, b: &TopK) -> bool {
    a.params() == b.params()
        && a.bucket_bytes() == b.bucket_bytes()
        && rdb::heap_image(a) == rdb::heap_image(b)
        && a.heap()
            .iter()
            .map(rdb::item_string)
            .eq(b.heap().iter().map(rdb::item_string))
}

pub fn phase_topk(cfg: &Config, results: &mut Results) {
    println!("\n== Top-K: FerroBloom vs RedisBloom");
    println!("TOPK.RESERVE key {K} {WIDTH} {DEPTH} 1, {PREFILL} Zipf items first");
    let zipf = Zipf::new();
    let workloads: [(&str, Work, (u64, u64)); 3] = [
        (ADD_1, Work::Add(&zipf, 1), cfg.topk_calls),
        (ADD_100, Work::Add(&zipf, BATCH), cfg.topk_batches),
        (LIST, Work::List, cfg.topk_batches),
    ];
    for round in 0..cfg.rounds {
        println!("round {}/{}", round + 1, cfg.rounds);
        // Fresh servers on one CPU every round (see phase `cms`).
        let pair = Pair::ferrobloom_vs_redisbloom(cfg);
        pair.share_one_cpu();
        let t = Instant::now();
        pair.both(round, |_, s| {
            build(&mut s.raw(), &zipf, 1000 * round as u64)
        });
        if round == 0 {
            println!(
                "  made and loaded the sketch ({PREFILL} items) on both in {:.1?}",
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
            results.record_both(name, USEC, "µs", Kind::Cost, &r, |m| m.usec_per_call);
        }
        let s = pair.both(round, |_, s| saved(&mut s.raw()));
        assert!(
            same_content(&s[0], &s[1]),
            "the sketches' saved content differs between the servers"
        );
    }
}
