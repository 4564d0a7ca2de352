//! Item commands (BF.ADD, BF.EXISTS, BF.MADD, BF.MEXISTS, BF.CARD; CF.ADD,
//! CF.EXISTS, CF.DEL, CF.MEXISTS, CF.INSERT) driven by redis-benchmark,
//! without and with pipelining, and what each run records: server-side
//! usec_per_call over both runs, and client ops/s.

use std::time::{Duration, Instant};

use super::{Reserved, KEY_DEFAULT, RANGE};
use crate::client::{bf_info, call, cf_info, items_held};
use crate::common::{RawClient, Resp, Server};
use crate::config::Config;
use crate::filters::{assert_cf_size, assert_size, fresh_reserved};
use crate::measurement::{check_calls, cmdstat, reset_stats, CmdStat};
use crate::redis_benchmark::{self, CLIENTS, PIPELINE};
use crate::results::{Kind, Results};
use crate::servers::Pair;

/// The kind of filter a workload runs on: what its INFO command says and
/// how a reserved one's size is checked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// BF.*: reserved at error 0.001.
    Bloom,
    /// CF.*: reserved with this bucket size.
    Cuckoo { bucket_size: u8 },
}

/// What a run checks before and after: items held and sub-filters.
struct Held {
    items: i64,
    filters: i64,
    size: i64,
}

impl Family {
    fn held(self, c: &mut RawClient, key: &str) -> Held {
        match self {
            Family::Bloom => {
                let i = bf_info(c, key);
                Held {
                    items: i.items,
                    filters: i.filters,
                    size: i.size,
                }
            }
            Family::Cuckoo { .. } => {
                let i = cf_info(c, key);
                Held {
                    items: i.items,
                    filters: i.filters,
                    size: i.size,
                }
            }
        }
    }

    fn assert_size(self, size: i64, capacity: u64, what: &str) {
        match self {
            Family::Bloom => assert_size(size, capacity, what),
            Family::Cuckoo { bucket_size } => assert_cf_size(size, capacity, bucket_size, what),
        }
    }
}

pub struct ItemWorkload {
    pub name: String,
    pub key: &'static str,
    pub family: Family,
    pub command: &'static str,
    /// Arguments between the key and the items (CF.INSERT's `ITEMS`).
    pub prefix: &'static [&'static str],
    /// Items per call.
    pub items: usize,
    /// `__rand_int__` range.
    pub range: u64,
    /// Calls without and with pipelining.
    pub calls: (u64, u64),
    pub adds: bool,
    /// A reserved filter that must not scale out.
    pub reserved: Option<u64>,
}

fn is_add(command: &str) -> bool {
    matches!(command, "BF.ADD" | "BF.MADD" | "CF.ADD" | "CF.INSERT")
}

impl ItemWorkload {
    /// Single items on the default filter (created by the first BF.ADD).
    pub fn on_default(command: &'static str, calls: (u64, u64)) -> ItemWorkload {
        ItemWorkload {
            name: format!("{command} default"),
            key: KEY_DEFAULT,
            family: Family::Bloom,
            command,
            prefix: &[],
            items: 1,
            range: RANGE,
            calls,
            adds: is_add(command),
            reserved: None,
        }
    }

    /// `items` items per call on a reserved filter. Lookups draw from
    /// item(0..2 × prefill): half present, half absent.
    pub fn on_reserved(
        filter: &Reserved,
        command: &'static str,
        items: usize,
        calls: (u64, u64),
    ) -> ItemWorkload {
        let adds = is_add(command);
        let batch = if items > 1 {
            format!("×{items}")
        } else {
            String::new()
        };
        ItemWorkload {
            name: format!("{command}{batch} {}", filter.label),
            key: filter.key,
            family: Family::Bloom,
            command,
            prefix: &[],
            items,
            range: if adds { RANGE } else { 2 * filter.prefill },
            calls,
            adds,
            reserved: Some(filter.capacity),
        }
    }

    /// The redis-benchmark command. redis-benchmark seeds its generator
    /// with `time(NULL) ^ getpid()`, so two runs a second and a PID apart
    /// can draw the same sequence: adds carry a `tag` unique to the run
    /// (the same length on both sides), so that they always add new items.
    /// Lookups draw `item:` + 12 digits, as preloaded.
    fn args(&self, tag: &str) -> Vec<String> {
        let item = if self.adds {
            format!("item:{tag}:__rand_int__")
        } else {
            "item:__rand_int__".to_string()
        };
        let mut args = vec![self.command.to_string(), self.key.to_string()];
        args.extend(self.prefix.iter().map(|p| p.to_string()));
        args.extend((0..self.items).map(|_| item.clone()));
        args
    }

    fn stat(&self) -> String {
        self.command.to_ascii_lowercase()
    }

    /// Items one round adds at most (redis-benchmark overshoots `-n`).
    pub fn items_per_round(&self) -> u64 {
        (self.calls.0 + self.calls.1 + CLIENTS * PIPELINE) * self.items as u64
    }
}

pub struct ItemResult {
    usec_per_call: f64,
    rps: (f64, f64),
}

/// One call with fixed items: integers 0/1, one per item (BF.CARD: a
/// count).
fn check_reply_shape(c: &mut RawClient, w: &ItemWorkload, round: usize, what: &str) {
    let mut probe = vec![w.command.to_string(), w.key.to_string()];
    probe.extend(w.prefix.iter().map(|p| p.to_string()));
    probe.extend((0..w.items).map(|i| format!("probe:{round}:{i}")));
    match (w.items, call(c, &probe)) {
        (0, Resp::Int(n)) if n >= 0 => {}
        (1, Resp::Int(0 | 1)) => {}
        (n, Resp::Array(v))
            if n > 1 && v.len() == n && v.iter().all(|r| matches!(r, Resp::Int(0 | 1))) => {}
        (_, other) => panic!("{what}: unexpected reply {other:?}"),
    }
}

/// Checks one call's reply shape, then runs redis-benchmark without and
/// with pipelining, each after CONFIG RESETSTAT.
pub fn run_items(
    cfg: &Config,
    server: &Server,
    side: &str,
    side_index: usize,
    w: &ItemWorkload,
    round: usize,
) -> ItemResult {
    let what = format!("{side} {}", w.name);
    let mut c = server.raw();
    check_reply_shape(&mut c, w, round, &what);
    let before = w.family.held(&mut c, w.key);
    let stat = w.stat();
    let mut total = CmdStat::default();
    let mut rps = [0.0; 2];
    for (i, (pipeline, n)) in [(1, w.calls.0), (PIPELINE, w.calls.1)]
        .into_iter()
        .enumerate()
    {
        let args = w.args(&format!("r{round}{side_index}{i}"));
        let run = redis_benchmark::Run {
            port: server.port(),
            requests: n,
            range: w.range,
            pipeline,
            args: &args,
        };
        reset_stats(&mut c);
        rps[i] = redis_benchmark::requests_per_second(cfg, &run);
        let s = cmdstat(&mut c, &stat);
        check_calls(&s, &stat, n, CLIENTS * pipeline, &what);
        total.calls += s.calls;
        total.usec += s.usec;
    }
    let after = w.family.held(&mut c, w.key);
    if w.adds {
        // New items, but a run draws a few numbers twice (n² / 2 range)
        // and a few are false positives.
        let expected = (w.calls.0 + w.calls.1) * w.items as u64;
        let added = (after.items - before.items) as u64;
        assert!(
            added as f64 >= 0.9 * expected as f64,
            "{what}: {added} items added by {expected} adds of new random items"
        );
    }
    if let Some(capacity) = w.reserved {
        assert_eq!(after.filters, 1, "{what}: the filter scaled out");
        w.family.assert_size(after.size, capacity, &what);
    }
    ItemResult {
        usec_per_call: total.usec_per_call(),
        rps: (rps[0], rps[1]),
    }
}

/// Runs the workload on both servers of the pair, prints and records
/// the round.
pub fn measure_round(
    cfg: &Config,
    pair: &Pair,
    w: &ItemWorkload,
    round: usize,
    results: &mut Results,
) {
    let r = pair.both(round, |i, s| run_items(cfg, s, pair.names[i], i, w, round));
    print_round(pair, &w.name, &r);
    record_items(results, w, &r);
}

fn record_items(results: &mut Results, w: &ItemWorkload, r: &[ItemResult; 2]) {
    let name = &w.name;
    results.record_both(name, "usec_per_call", "µs", Kind::Cost, r, |r| {
        r.usec_per_call
    });
    let ops = "ops/s";
    results.record_both(
        name,
        "ops/s, no pipelining",
        ops,
        Kind::Throughput,
        r,
        |r| r.rps.0,
    );
    results.record_both(name, "ops/s, -P 32", ops, Kind::Throughput, r, |r| r.rps.1);
}

fn print_round(pair: &Pair, name: &str, r: &[ItemResult; 2]) {
    println!(
        "  {name:<22} {}: {:>7.3} µs/call {:>9.0} {:>9.0} ops/s | {}: {:>7.3} µs/call {:>9.0} {:>9.0} ops/s | ratio {:.3}",
        pair.names[0],
        r[0].usec_per_call,
        r[0].rps.0,
        r[0].rps.1,
        pair.names[1],
        r[1].usec_per_call,
        r[1].rps.0,
        r[1].rps.1,
        r[0].usec_per_call / r[1].usec_per_call
    );
}

/// Rebuilds the filter on both servers (reserved afresh, pre-loaded) when
/// it is missing on either or when `adds` more items could push it past
/// 90% of its capacity; returns how long the rebuild took, if it ran.
pub fn rebuild_if_near_full(
    pair: &Pair,
    round: usize,
    filter: &Reserved,
    adds: u64,
) -> Option<Duration> {
    let held = pair.both(round, |_, s| items_held(&mut s.raw(), filter.key));
    let near_full = |n: i64| n as u64 + adds > filter.capacity * 9 / 10;
    if !held.iter().any(|h| h.is_none_or(near_full)) {
        return None;
    }
    let t = Instant::now();
    pair.both(round, |_, s| {
        fresh_reserved(&mut s.raw(), filter.key, filter.capacity, filter.prefill)
    });
    Some(t.elapsed())
}
