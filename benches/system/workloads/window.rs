//! Phase `window`: the seed crawler's deduplication, N items per window
//! (`BENCH_WINDOW_ITEMS`, 15M by default: 500,000 new URLs a day over 30
//! days) at error 0.001, kept three ways:
//!
//! - a FerroBloom windowed filter, `BF.RESERVE k 0.001 N WINDOW N`: an item
//!   window fed two windows of items beforehand, so that it holds a full
//!   window after generations have left it: the steady state of a 30-day
//!   window, which takes the same memory (checked against
//!   `BF.PLAN N 0.001 WINDOW 30d`). Lookups go to it; adds go to a copy
//!   that takes one generation of new items per round (see `add_calls`);
//! - one plain filter sized for a window, `BF.RESERVE k 0.001 N`, on both
//!   modules: what a window would cost if nothing had to be forgotten;
//! - what users do today, on both modules: 30 daily plain filters,
//!   `BF.RESERVE day e N/30` with `e = 1 - (1 - 0.001)^(1/30)` so that the
//!   union of the 30 stays at 0.001; an add goes to today's filter, a lookup
//!   checks all 30, as a pipeline of 30 BF.EXISTS or as one Lua script
//!   (`EVAL`) that looks at the days newest first and stops at the first hit.
//!
//! The filters hold the tail of one stream of items: N older items (only the
//! windowed filter gets them), then `N - M` fillers, then `item(0..M)`,
//! `M = 0.8 N`, which every filter holds. Lookups draw `item(0..2M)`, the
//! same sequence on every approach: half present everywhere (a miss stops
//! the benchmark: no false negatives), half never added (a hit is a false
//! positive; they are counted). Adds are new items. The plain filter holds
//! 0.9 N items and takes 0.1 N adds before it would scale out; the past
//! days are full and today's filter is half full, and is rebuilt so (a new
//! day) when a round could fill it past 90%. The windowed filter looked up
//! takes no adds, so `item(0..M)` never leaves it.
//!
//! Per approach and round: memory (`MEMORY USAGE` of its keys), server µs
//! per add (BF.ADD) and per lookup (`INFO commandstats`: BF.EXISTS, 30 of
//! them per lookup in the pipeline; EVAL, with the calls it makes), and
//! client lookups/s on one connection, one lookup per round trip and 32 per
//! round trip. Every ratio is to RedisBloom's 30 daily filters looked up by
//! pipeline (the baseline row).

use std::ops::Range;
use std::time::Instant;

use crate::client::{bf_info, call, expect_ok, int, memory_usage, show};
use crate::common::{RawClient, Resp};
use crate::config::Config;
use crate::filters::{assert_size, assert_size_at, item, prefill_items, reserve, reserve_at};
use crate::filters::{expected_size, expected_size_at, ERROR};
use crate::measurement::{check_calls, cmdstat, reset_stats};
use crate::results::{Kind, Results};
use crate::servers::Pair;

use super::Rng;

/// Daily filters: today's and the 29 days before.
pub const DAYS: u64 = 30;
/// Lookups, or adds, per round trip in the batched runs.
pub const BATCH: u64 = 32;
const KEY_WINDOWED: &str = "win:windowed";
/// A copy of the windowed filter that takes its adds (see `add_calls`).
const KEY_WINDOWED_ADDS: &str = "win:windowed:adds";
const KEY_PLAIN: &str = "win:plain";
/// A lookup on the daily filters as a user writes it: keys newest first,
/// the first hit ends it.
const SCRIPT: &str = "for i = 1, #KEYS do \
     if redis.call('BF.EXISTS', KEYS[i], ARGV[1]) == 1 then return 1 end \
     end return 0";

/// The metrics of each approach, in the report's order: (name, unit, kind).
pub const METRICS: [(&str, &str, Kind); 5] = [
    (MEMORY, "MB", Kind::Cost),
    (ADD, "µs", Kind::Cost),
    (LOOKUP, "µs", Kind::Cost),
    (RATE_1, "ops/s", Kind::Throughput),
    (RATE_32, "ops/s", Kind::Throughput),
];
pub const MEMORY: &str = "memory";
pub const ADD: &str = "µs per add";
pub const LOOKUP: &str = "µs per lookup";
pub const RATE_1: &str = "lookups/s, 1 per round trip";
pub const RATE_32: &str = "lookups/s, 32 per round trip";

/// The error rate of each daily filter: 30 of them give 0.001 at most.
pub fn day_error() -> f64 {
    1.0 - (1.0 - ERROR).powf(1.0 / DAYS as f64)
}

/// What each approach holds: positions in the stream of items.
#[derive(Clone, Copy)]
struct Shape {
    /// Items per window (N).
    n: u64,
    /// Items every filter holds, `item(0..m)`.
    m: u64,
}

impl Shape {
    fn new(n: u64) -> Shape {
        Shape { n, m: n / 10 * 8 }
    }

    /// Capacity of a daily filter.
    fn day(&self) -> u64 {
        self.n / DAYS
    }

    fn len(&self) -> u64 {
        2 * self.n
    }

    /// The stream's item at `i`: older items, fillers, then `item(0..m)`
    /// (all of the same length).
    fn at(&self, i: u64) -> String {
        let present_from = self.len() - self.m;
        if i < self.n {
            format!("old:{i:013}")
        } else if i < present_from {
            format!("fil:{:013}", i - self.n)
        } else {
            item(i - present_from)
        }
    }

    fn items(&self, range: Range<u64>) -> impl Iterator<Item = String> + '_ {
        range.map(|i| self.at(i))
    }

    /// Items held by the plain filter: the stream's last 0.9 N.
    fn plain_items(&self) -> u64 {
        self.n / 10 * 9
    }

    /// The stream positions of daily filter `d` (0: the oldest, 29: today):
    /// full past days, today half full, ending with the stream.
    fn day_range(&self, d: u64) -> Range<u64> {
        let first = self.len() - (DAYS - 1) * self.day() - self.day() / 2;
        let from = first + d * self.day();
        let len = if d == DAYS - 1 {
            self.day() / 2
        } else {
            self.day()
        };
        from..from + len
    }

    /// Items per generation of the windowed filter (8 generations).
    fn span(&self) -> u64 {
        self.n.div_ceil(8)
    }

    /// Adds each kind of filter takes before it has to be rebuilt: the
    /// windowed filter's lookups go to a key that takes none (never), the
    /// plain filter scales out at its capacity, today's filter is rebuilt
    /// at 90% of its capacity.
    fn budgets(&self) -> [Option<u64>; 3] {
        [
            None,
            Some(self.n - self.plain_items()),
            Some(self.day() * 9 / 10 - self.day() / 2),
        ]
    }
}

/// The filters of an approach.
#[derive(Clone, Copy, PartialEq)]
enum Filters {
    Windowed,
    Plain,
    Daily,
}

fn day_key(d: u64) -> String {
    format!("win:day:{d:02}")
}

impl Filters {
    const ALL: [Filters; 3] = [Filters::Windowed, Filters::Plain, Filters::Daily];

    /// Its keys; the daily filters newest first, as lookups take them.
    fn keys(self) -> Vec<String> {
        match self {
            Filters::Windowed => vec![KEY_WINDOWED.into()],
            Filters::Plain => vec![KEY_PLAIN.into()],
            Filters::Daily => (0..DAYS).rev().map(day_key).collect(),
        }
    }

    /// Where an add goes.
    fn add_key(self) -> String {
        match self {
            Filters::Windowed => KEY_WINDOWED_ADDS.into(),
            Filters::Daily => day_key(DAYS - 1),
            Filters::Plain => KEY_PLAIN.into(),
        }
    }

    /// Adds per round, one per round trip and BATCH per round trip. The
    /// windowed filter's cost changes within a generation: after a
    /// generation change, each add clears one cache line of the retired
    /// generation until it is clean. Its copy takes exactly one generation
    /// of new items per round, so each round holds one generation change
    /// and all of its clearing: the mean over a round is the steady state's.
    fn add_calls(self, shape: &Shape, calls: (u64, u64)) -> (u64, u64) {
        match self {
            Filters::Windowed => (calls.0, shape.span() - calls.0),
            _ => calls,
        }
    }

    /// Creates the filters afresh and loads them.
    fn build(self, c: &mut RawClient, shape: &Shape) {
        match self {
            Filters::Windowed => {
                call(c, &["DEL", KEY_WINDOWED]);
                let n = shape.n.to_string();
                expect_ok(
                    c,
                    &[
                        "BF.RESERVE",
                        KEY_WINDOWED,
                        &ERROR.to_string(),
                        &n,
                        "WINDOW",
                        &n,
                    ],
                );
                prefill_items(c, KEY_WINDOWED, shape.items(0..shape.len()));
                call(c, &["DEL", KEY_WINDOWED_ADDS]);
                assert_eq!(
                    int(c, &["COPY", KEY_WINDOWED, KEY_WINDOWED_ADDS]),
                    1,
                    "COPY"
                );
            }
            Filters::Plain => {
                call(c, &["DEL", KEY_PLAIN]);
                reserve(c, KEY_PLAIN, shape.n);
                let from = shape.len() - shape.plain_items();
                prefill_items(c, KEY_PLAIN, shape.items(from..shape.len()));
            }
            Filters::Daily => (0..DAYS).for_each(|d| build_day(c, shape, d)),
        }
    }

    /// Sizes as expected, and no plain filter scaled out.
    fn check(self, c: &mut RawClient, shape: &Shape, what: &str) {
        match self {
            Filters::Windowed => {
                let planned = plan_bytes(c, shape.n);
                for key in [KEY_WINDOWED, KEY_WINDOWED_ADDS] {
                    assert_eq!(
                        bf_info(c, key).size,
                        planned,
                        "{what}: {key}'s size differs from BF.PLAN ... WINDOW 30d"
                    );
                }
            }
            Filters::Plain => {
                let info = bf_info(c, KEY_PLAIN);
                assert_eq!(info.filters, 1, "{what}: the plain filter scaled out");
                assert_size(info.size, shape.n, what);
            }
            Filters::Daily => {
                for key in self.keys() {
                    let info = bf_info(c, &key);
                    assert_eq!(info.filters, 1, "{what}: {key} scaled out");
                    assert_size_at(info.size, day_error(), shape.day(), what);
                }
            }
        }
    }
}

/// Daily filter `d`, created afresh and loaded with its day's items.
fn build_day(c: &mut RawClient, shape: &Shape, d: u64) {
    let key = day_key(d);
    call(c, &["DEL", &key]);
    reserve_at(c, &key, day_error(), shape.day());
    prefill_items(c, &key, shape.items(shape.day_range(d)));
}

/// An integer field of a reply given as a flat list or a map (BF.PLAN).
fn field(reply: &Resp, name: &str) -> Option<i64> {
    let pairs: Vec<(&Resp, &Resp)> = match reply {
        Resp::Array(v) => v
            .chunks(2)
            .filter_map(|p| Some((p.first()?, p.get(1)?)))
            .collect(),
        Resp::Map(m) => m.iter().map(|(k, v)| (k, v)).collect(),
        _ => return None,
    };
    pairs.into_iter().find_map(|(k, v)| match v {
        Resp::Int(n) if k.as_str().as_deref() == Some(name) => Some(*n),
        _ => None,
    })
}

/// The bytes BF.PLAN gives a 30-day window of `n` items at 0.001: what
/// the crawler reserves.
fn plan_bytes(c: &mut RawClient, n: u64) -> i64 {
    let reply = call(
        c,
        &[
            "BF.PLAN",
            &n.to_string(),
            &ERROR.to_string(),
            "WINDOW",
            "30d",
        ],
    );
    field(&reply, "bytes").unwrap_or_else(|| panic!("BF.PLAN: no bytes in {reply:?}"))
}

/// `BF.INFO key ROTATIONS`: generations that left the window.
fn rotations(c: &mut RawClient, key: &str) -> i64 {
    match call(c, &["BF.INFO", key, "ROTATIONS"]) {
        Resp::Int(n) => n,
        Resp::Array(v) if matches!(v.as_slice(), [Resp::Int(_)]) => match v[0] {
            Resp::Int(n) => n,
            _ => unreachable!(),
        },
        other => panic!("BF.INFO {key} ROTATIONS: {other:?}"),
    }
}

/// How a lookup is sent.
#[derive(Clone, Copy, PartialEq)]
enum Lookup {
    /// One BF.EXISTS on the approach's one key.
    One,
    /// 30 BF.EXISTS, one per daily filter, in one round trip.
    Pipeline,
    /// One EVAL of `SCRIPT` over the 30 daily filters.
    Script,
}

/// A row of the report: an approach on one server.
struct Row {
    label: &'static str,
    /// 0: FerroBloom, 1: RedisBloom (the pair's order).
    side: usize,
    filters: Filters,
    lookup: Lookup,
    /// Whether its memory and adds are its own, or the row above's (the
    /// same daily filters, looked up otherwise).
    own_filters: bool,
}

/// The windowed filter's row.
pub const WINDOWED: &str = "windowed filter (FerroBloom)";

const ROWS: [Row; 7] = [
    Row {
        label: WINDOWED,
        side: 0,
        filters: Filters::Windowed,
        lookup: Lookup::One,
        own_filters: true,
    },
    Row {
        label: "plain filter (FerroBloom)",
        side: 0,
        filters: Filters::Plain,
        lookup: Lookup::One,
        own_filters: true,
    },
    Row {
        label: "plain filter (RedisBloom)",
        side: 1,
        filters: Filters::Plain,
        lookup: Lookup::One,
        own_filters: true,
    },
    Row {
        label: "30 daily filters, pipeline (FerroBloom)",
        side: 0,
        filters: Filters::Daily,
        lookup: Lookup::Pipeline,
        own_filters: true,
    },
    Row {
        label: "30 daily filters, Lua (FerroBloom)",
        side: 0,
        filters: Filters::Daily,
        lookup: Lookup::Script,
        own_filters: false,
    },
    Row {
        label: BASELINE,
        side: 1,
        filters: Filters::Daily,
        lookup: Lookup::Pipeline,
        own_filters: true,
    },
    Row {
        label: "30 daily filters, Lua (RedisBloom)",
        side: 1,
        filters: Filters::Daily,
        lookup: Lookup::Script,
        own_filters: false,
    },
];

/// The row every ratio is taken to.
pub const BASELINE: &str = "30 daily filters, pipeline (RedisBloom)";

/// What the lookups of a row saw (summed over runs and rounds).
#[derive(Clone, Copy, Default)]
struct Tally {
    lookups: u64,
    absent: u64,
    false_positives: u64,
    /// BF.EXISTS calls the server ran for them.
    exists_calls: u64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.lookups += other.lookups;
        self.absent += other.absent;
        self.false_positives += other.false_positives;
        self.exists_calls += other.exists_calls;
    }
}

/// One round of a row.
#[derive(Clone, Copy)]
struct Measured {
    memory_mb: f64,
    add_usec: f64,
    lookup_usec: f64,
    /// Client lookups/s: one per round trip, BATCH per round trip.
    rates: [f64; 2],
    tally: Tally,
}

/// A 0/1 integer reply.
fn hit(raw: &[u8], what: &str) -> bool {
    match raw {
        b":1\r\n" => true,
        b":0\r\n" => false,
        _ => panic!("{what}: unexpected reply {}", show(raw)),
    }
}

/// The commands of one lookup of `it`.
fn lookup_commands(lookup: Lookup, keys: &[String], it: &str, cmds: &mut Vec<Vec<String>>) {
    let exists = |key: &String| vec!["BF.EXISTS".to_string(), key.clone(), it.to_string()];
    match lookup {
        Lookup::One => cmds.push(exists(&keys[0])),
        Lookup::Pipeline => cmds.extend(keys.iter().map(exists)),
        Lookup::Script => {
            let mut cmd = vec!["EVAL".to_string(), SCRIPT.into(), keys.len().to_string()];
            cmd.extend(keys.iter().cloned());
            cmd.push(it.to_string());
            cmds.push(cmd);
        }
    }
}

/// Runs `count` lookups, `per_trip` of them per round trip, checking every
/// answer: an item of `item(0..m)` must be found. Returns the seconds
/// taken.
#[allow(clippy::too_many_arguments)]
fn lookup_run(
    c: &mut RawClient,
    lookup: Lookup,
    keys: &[String],
    shape: &Shape,
    (count, per_trip): (u64, u64),
    rng: &mut Rng,
    tally: &mut Tally,
    what: &str,
) -> f64 {
    let replies_per_lookup = if lookup == Lookup::Pipeline {
        keys.len()
    } else {
        1
    };
    let started = Instant::now();
    let mut cmds = Vec::new();
    let mut present = Vec::new();
    let mut done = 0;
    while done < count {
        let n = per_trip.min(count - done);
        cmds.clear();
        present.clear();
        for _ in 0..n {
            let x = rng.below(2 * shape.m);
            present.push(x < shape.m);
            lookup_commands(lookup, keys, &item(x), &mut cmds);
        }
        let replies = c.pipeline(&cmds);
        for (answers, &held) in replies.chunks(replies_per_lookup).zip(&present) {
            let found = answers.iter().fold(false, |f, r| hit(r, what) | f);
            if held {
                assert!(found, "{what}: a held item was not found");
            } else {
                tally.absent += 1;
                tally.false_positives += found as u64;
            }
        }
        done += n;
    }
    tally.lookups += count;
    started.elapsed().as_secs_f64()
}

/// Lookups one per round trip, then BATCH per round trip, each run after
/// CONFIG RESETSTAT: (server µs per lookup over both, client lookups/s of
/// each, what they saw).
fn lookups(
    c: &mut RawClient,
    lookup: Lookup,
    keys: &[String],
    shape: &Shape,
    calls: (u64, u64),
    seed: u64,
    what: &str,
) -> (f64, [f64; 2], Tally) {
    // The lookups' items: the same sequence on every approach.
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    let mut usec = 0;
    let mut rates = [0.0; 2];
    for (k, run) in [(calls.0, 1), (calls.1, BATCH)].into_iter().enumerate() {
        reset_stats(c);
        let secs = lookup_run(c, lookup, keys, shape, run, &mut rng, &mut tally, what);
        rates[k] = run.0 as f64 / secs;
        let exists = cmdstat(c, "bf.exists");
        let keys_n = keys.len() as u64;
        let timed = match lookup {
            Lookup::One | Lookup::Pipeline => {
                let per_lookup = if lookup == Lookup::One { 1 } else { keys_n };
                check_calls(&exists, "bf.exists", run.0 * per_lookup, 0, what);
                exists
            }
            Lookup::Script => {
                // The script's own calls: one to 30 per lookup.
                check_calls(&exists, "bf.exists", run.0, run.0 * (keys_n - 1), what);
                let eval = cmdstat(c, "eval");
                check_calls(&eval, "eval", run.0, 0, what);
                eval
            }
        };
        usec += timed.usec;
        tally.exists_calls += exists.calls;
    }
    let per_lookup = usec as f64 / (calls.0 + calls.1) as f64;
    (per_lookup, rates, tally)
}

/// New items added one per round trip, then BATCH per round trip, each run
/// after CONFIG RESETSTAT: server µs per add over both.
fn adds(c: &mut RawClient, key: &str, calls: (u64, u64), tag: &str, what: &str) -> f64 {
    let mut usec = 0;
    let mut next = 0u64;
    let mut old = 0u64;
    for (count, per_trip) in [(calls.0, 1), (calls.1, BATCH)] {
        reset_stats(c);
        let mut done = 0;
        while done < count {
            let n = per_trip.min(count - done);
            let cmds: Vec<Vec<String>> = (next..next + n)
                .map(|i| vec!["BF.ADD".into(), key.into(), format!("add:{tag}:{i:012}")])
                .collect();
            for raw in c.pipeline(&cmds) {
                old += !hit(&raw, what) as u64;
            }
            next += n;
            done += n;
        }
        let stat = cmdstat(c, "bf.add");
        check_calls(&stat, "bf.add", count, 0, what);
        usec += stat.usec;
    }
    // New items: only a false positive answers 0.
    assert!(
        old * 100 <= next,
        "{what}: {old} of {next} new items were taken for present"
    );
    usec as f64 / next as f64
}

/// Rows of `side` on `filters`.
fn rows_of(side: usize, filters: Filters) -> impl Iterator<Item = usize> {
    (0..ROWS.len()).filter(move |&r| ROWS[r].side == side && ROWS[r].filters == filters)
}

/// One round on one server: every approach it runs, its rows measured.
fn measure_side(
    cfg: &Config,
    c: &mut RawClient,
    shape: &Shape,
    side: usize,
    round: usize,
    name: &str,
) -> Vec<(usize, Measured)> {
    let mut out = Vec::new();
    for (f, filters) in Filters::ALL.into_iter().enumerate() {
        let rows: Vec<usize> = rows_of(side, filters).collect();
        if rows.is_empty() {
            continue;
        }
        let keys = filters.keys();
        let what = format!("{name} {}", ROWS[rows[0]].label);
        let memory: i64 = keys.iter().map(|k| memory_usage(c, k)).sum();
        let mut looked = Vec::new();
        for &r in &rows {
            let what = format!("{name} {}", ROWS[r].label);
            let seed = round as u64 + 1;
            let l = lookups(
                c,
                ROWS[r].lookup,
                &keys,
                shape,
                cfg.window_calls,
                seed,
                &what,
            );
            looked.push((r, l));
        }
        let tag = format!("{round:02}{f}");
        let calls = filters.add_calls(shape, cfg.window_calls);
        let add_usec = adds(c, &filters.add_key(), calls, &tag, &what);
        filters.check(c, shape, &what);
        for (r, (lookup_usec, rates, tally)) in looked {
            let m = Measured {
                memory_mb: memory as f64 / 1e6,
                add_usec,
                lookup_usec,
                rates,
                tally,
            };
            out.push((r, m));
        }
    }
    out
}

/// Rebuilds `filters` on the servers that run them: all of it, or only
/// today's daily filter (a new day).
fn rebuild(pair: &Pair, round: usize, shape: &Shape, filters: Filters, today_only: bool) {
    let t = Instant::now();
    pair.both(round, |i, s| {
        if rows_of(i, filters).next().is_none() {
            return;
        }
        let mut c = s.raw();
        if today_only {
            build_day(&mut c, shape, DAYS - 1);
        } else {
            filters.build(&mut c, shape);
        }
        filters.check(&mut c, shape, pair.names[i]);
    });
    let what = match (filters, today_only) {
        (Filters::Windowed, _) => format!("windowed filter, {} items fed", shape.len()),
        (Filters::Plain, _) => format!("plain filter, {} items", shape.plain_items()),
        (Filters::Daily, false) => format!("{DAYS} daily filters"),
        (Filters::Daily, true) => "today's daily filter".into(),
    };
    println!("  built {what} in {:.1?}", t.elapsed());
}

pub fn phase_window(cfg: &Config, window: &mut Results) {
    let shape = Shape::new(cfg.window_items);
    let (single, batched) = cfg.window_calls;
    let per_round = single + batched;
    let span = shape.span();
    println!(
        "\n== a window of {} items: windowed filter, plain filter, {DAYS} daily filters",
        shape.n
    );
    assert!(
        shape.day() >= 1000,
        "BENCH_WINDOW_ITEMS={} is too small (at least {} items)",
        shape.n,
        1000 * DAYS
    );
    let budgets = shape.budgets();
    assert!(
        budgets.iter().flatten().all(|&b| per_round <= b) && single < span,
        "{per_round} adds per round are more than a window of {} items takes \
         between rebuilds ({budgets:?}), or {single} more than a generation ({span}): \
         raise BENCH_WINDOW_ITEMS",
        shape.n
    );
    println!(
        "BF.RESERVE {KEY_WINDOWED} {ERROR} {n} WINDOW {n}; BF.RESERVE {KEY_PLAIN} {ERROR} {n}; \
         BF.RESERVE win:day:00..29 {} {}",
        day_error(),
        shape.day(),
        n = shape.n
    );
    let pair = Pair::ferrobloom_vs_redisbloom(cfg);
    // Adds since each was built: windowed, plain, today's daily filter.
    let mut added: [Option<u64>; 3] = [None; 3];
    let mut tallies = [Tally::default(); ROWS.len()];
    let mut rotations_during = 0;
    for round in 0..cfg.rounds {
        println!("round {}/{}", round + 1, cfg.rounds);
        for (k, filters) in Filters::ALL.into_iter().enumerate() {
            match (added[k], budgets[k]) {
                (Some(_), None) => continue,
                (Some(a), Some(b)) if a + per_round <= b => continue,
                (Some(_), _) if filters == Filters::Daily => {
                    rebuild(&pair, round, &shape, filters, true)
                }
                _ => rebuild(&pair, round, &shape, filters, false),
            }
            added[k] = Some(0);
        }
        let rotated = rotations(&mut pair.servers[0].raw(), KEY_WINDOWED_ADDS);
        if round == 0 {
            println!("  windowed filter: {rotated} generations left the window while it was fed");
            assert!(
                rotated > 0,
                "the windowed filter has not changed generation"
            );
        }
        let sides = pair.both(round, |i, s| {
            measure_side(cfg, &mut s.raw(), &shape, i, round, pair.names[i])
        });
        for a in added.iter_mut().flatten() {
            *a += per_round;
        }
        let mut rows: [Option<Measured>; ROWS.len()] = [None; ROWS.len()];
        for (r, m) in sides.into_iter().flatten() {
            rows[r] = Some(m);
        }
        let rows = rows.map(|m| m.expect("every row measured"));
        for (tally, m) in tallies.iter_mut().zip(&rows) {
            tally.add(&m.tally);
        }
        print_round(&rows);
        record_round(window, &rows);
        let now = rotations(&mut pair.servers[0].raw(), KEY_WINDOWED_ADDS);
        assert!(
            now > rotated,
            "no generation change during the windowed filter's adds"
        );
        rotations_during += (now - rotated) as u64;
    }
    window.note(format!(
        "Generation changes during the windowed filter's measured adds: {rotations_during} in \
         {} rounds (one per {span} adds; each round adds {span} new items).",
        cfg.rounds
    ));
    note_tallies(window, &tallies);
    note_sizes(window, &shape);
}

fn print_round(rows: &[Measured; ROWS.len()]) {
    for (row, m) in ROWS.iter().zip(rows) {
        println!(
            "  {:<40} {:>6.1} MB  add {:>6.3} µs  lookup {:>7.3} µs  {:>7.0} {:>8.0} lookups/s",
            row.label, m.memory_mb, m.add_usec, m.lookup_usec, m.rates[0], m.rates[1]
        );
    }
}

fn record_round(window: &mut Results, rows: &[Measured; ROWS.len()]) {
    let base = ROWS
        .iter()
        .position(|r| r.label == BASELINE)
        .map(|b| rows[b])
        .expect("the baseline row");
    for (row, m) in ROWS.iter().zip(rows) {
        let values = [
            (m.memory_mb, base.memory_mb),
            (m.add_usec, base.add_usec),
            (m.lookup_usec, base.lookup_usec),
            (m.rates[0], base.rates[0]),
            (m.rates[1], base.rates[1]),
        ];
        for (&(metric, unit, kind), v) in METRICS.iter().zip(values) {
            if !row.own_filters && matches!(metric, MEMORY | ADD) {
                continue;
            }
            window.record(row.label, metric, unit, kind, v);
        }
    }
}

/// False positives among the absent items looked up, and the BF.EXISTS
/// calls per lookup of the Lua script.
fn note_tallies(window: &mut Results, tallies: &[Tally; ROWS.len()]) {
    let fps: Vec<String> = ROWS
        .iter()
        .zip(tallies)
        .map(|(row, t)| {
            format!(
                "{}: {} of {} ({:.5})",
                row.label,
                t.false_positives,
                t.absent,
                t.false_positives as f64 / t.absent as f64
            )
        })
        .collect();
    window.note(format!(
        "False positives among the absent items looked up (half of the lookups): {}.",
        fps.join("; ")
    ));
    let lua: Vec<String> = ROWS
        .iter()
        .zip(tallies)
        .filter(|(row, _)| row.lookup == Lookup::Script)
        .map(|(row, t)| {
            format!(
                "{}: {:.1}",
                row.label,
                t.exists_calls as f64 / t.lookups as f64
            )
        })
        .collect();
    window.note(format!(
        "BF.EXISTS calls per Lua lookup (it stops at the first hit; an absent item costs 30): {}.",
        lua.join("; ")
    ));
}

/// The expected sizes, for the reader to check MEMORY USAGE against.
fn note_sizes(window: &mut Results, shape: &Shape) {
    window.note(format!(
        "Bit arrays as sized: plain filter {:.1} MB, {DAYS} daily filters {:.1} MB \
         (error {:.3e} each, as reserved; both modules give a scaling filter's first link \
         half of the error rate, so the plain filter is at 0.0005 and the union of the daily \
         ones at about 0.0005 too, where the windowed filter is at 0.001).",
        expected_size(shape.n) / 1e6,
        DAYS as f64 * expected_size_at(day_error(), shape.day()) / 1e6,
        day_error()
    ));
}
