//! Phase `cuckoo`: the CF.* item commands on a cache-sized filter with
//! the default options and on a filter far larger than the caches.
//!
//! - `1M`: `CF.RESERVE cf:1m 1000000` (bucket size 2, expansion 1, the
//!   defaults: 512Ki buckets, 1 MiB). A filter CF.ADD creates by itself
//!   (capacity 1024) stops at `cf-max-expansions` (32) sub-filters of 1 KiB,
//!   far fewer than a run's adds: this is the default-option filter that
//!   holds them. Reserved and pre-loaded afresh before every workload that
//!   writes, and each such workload is cut to `SMALL_WRITES` items, so that
//!   it never holds more than a fifth of its slots: with 2 slots per bucket
//!   and 20 kick-out steps, such a filter typically expands at 44-49% of its
//!   slots (measured), and now and then, after an unlucky kick-out, at a
//!   third;
//! - `100M`: `CF.RESERVE cf:100m 100000000 BUCKETSIZE 4` (32Mi buckets,
//!   128 MiB), pre-loaded once and kept across rounds, rebuilt when a
//!   round's adds could take it past 90% of its capacity.
//!
//! Lookups and deletes draw `item:` + 12 digits from twice the pre-loaded
//! range (about half present), adds draw new items; CF.MEXISTS and
//! CF.INSERT take 100 items per call (`CF.INSERT key ITEMS ...`).

use std::time::Instant;

use super::items::{measure_round, Family, ItemWorkload};
use crate::client::{call, cf_info, expect_ok, int};
use crate::common::{RawClient, Resp};
use crate::config::Config;
use crate::filters::{assert_cf_size, cf_prefill, item};
use crate::results::Results;
use crate::servers::Pair;

pub const KEY_CF_SMALL: &str = "cf:1m";
pub const KEY_CF_BIG: &str = "cf:100m";
pub const CAP_CF_SMALL: u64 = 1_000_000;
pub const CAP_CF_BIG: u64 = 100_000_000;
/// Items one workload may add to (or delete from) the 1M filter.
pub const SMALL_WRITES: u64 = 100_000;

/// A reserved Cuckoo filter of the phase.
#[derive(Clone, Copy)]
pub struct CfFilter {
    pub label: &'static str,
    pub key: &'static str,
    pub capacity: u64,
    pub bucket_size: u8,
    /// Items loaded when it is (re)built: `item(0..prefill)`.
    pub prefill: u64,
    /// Rebuilt before every workload that writes (else: when near full).
    pub fresh_for_writes: bool,
}

pub fn cf_small(cfg: &Config) -> CfFilter {
    CfFilter {
        label: "1M",
        key: KEY_CF_SMALL,
        capacity: CAP_CF_SMALL,
        bucket_size: 2,
        prefill: cfg.cf_prefill.0,
        fresh_for_writes: true,
    }
}

pub fn cf_big(cfg: &Config) -> CfFilter {
    CfFilter {
        label: "100M",
        key: KEY_CF_BIG,
        capacity: CAP_CF_BIG,
        bucket_size: 4,
        prefill: cfg.cf_prefill.1,
        fresh_for_writes: false,
    }
}

impl CfFilter {
    fn family(&self) -> Family {
        Family::Cuckoo {
            bucket_size: self.bucket_size,
        }
    }

    /// `CF.RESERVE` with the filter's options (the default bucket size is
    /// left out, as a user would).
    fn reserve_args(&self) -> Vec<String> {
        let mut args = vec![
            "CF.RESERVE".to_string(),
            self.key.to_string(),
            self.capacity.to_string(),
        ];
        if self.bucket_size != 2 {
            args.extend(["BUCKETSIZE".to_string(), self.bucket_size.to_string()]);
        }
        args
    }

    /// Reserves the filter afresh and pre-loads it, with checks.
    fn rebuild(&self, c: &mut RawClient) {
        call(c, &["DEL", self.key]);
        expect_ok(c, &self.reserve_args());
        cf_prefill(c, self.key, 0, self.prefill);
        let info = cf_info(c, self.key);
        assert_cf_size(info.size, self.capacity, self.bucket_size, self.key);
        assert_eq!(
            info.bucket_size,
            i64::from(self.bucket_size),
            "{}",
            self.key
        );
        assert_eq!(info.filters, 1, "{}: expanded during prefill", self.key);
        assert_eq!(info.items as u64, self.prefill, "{}: items", self.key);
        // Half of `item(0..2 * prefill)` is present: sample 100 of them
        // (a Cuckoo filter has no false negatives).
        let step = (2 * self.prefill / 100).max(1);
        let mut cmd = vec!["CF.MEXISTS".to_string(), self.key.to_string()];
        cmd.extend((0..100).map(|i| item(i * step)));
        let Resp::Array(v) = call(c, &cmd) else {
            panic!("CF.MEXISTS {}: not an array", self.key);
        };
        let present = v.iter().filter(|r| **r == Resp::Int(1)).count() as u64;
        let expected = (0..100).filter(|i| i * step < self.prefill).count() as u64;
        assert!(
            present >= expected && present <= expected + 6,
            "{}: {present} of 100 sampled items present, {expected} expected",
            self.key
        );
    }

    /// Rebuilds the filter on both servers; says how long it took.
    fn rebuild_both(&self, pair: &Pair, round: usize, say: bool) {
        let t = Instant::now();
        pair.both(round, |_, s| self.rebuild(&mut s.raw()));
        if say {
            println!(
                "  {}: reserved and loaded {} items in {:.1?}",
                self.key,
                self.prefill,
                t.elapsed()
            );
        }
    }

    /// Rebuilds when the filter is missing on either server or `adds`
    /// more items could take it past 90% of its capacity.
    fn rebuild_if_near_full(&self, pair: &Pair, round: usize, adds: u64) {
        let held = pair.both(round, |_, s| {
            let mut c = s.raw();
            (int(&mut c, &["EXISTS", self.key]) == 1).then(|| cf_info(&mut c, self.key).items)
        });
        let near_full = |n: i64| n as u64 + adds > self.capacity * 9 / 10;
        if held.iter().any(|h| h.is_none_or(near_full)) {
            self.rebuild_both(pair, round, true);
        }
    }

    /// `items` items per call of `command`; writes to the 1M filter are
    /// cut to `SMALL_WRITES` items (both runs alike).
    fn workload(
        &self,
        command: &'static str,
        items: usize,
        calls: (u64, u64),
        writes: bool,
    ) -> ItemWorkload {
        let calls = if writes && self.fresh_for_writes {
            fit_calls(calls, items as u64, SMALL_WRITES)
        } else {
            calls
        };
        let batch = if items > 1 {
            format!("×{items}")
        } else {
            String::new()
        };
        let adds = matches!(command, "CF.ADD" | "CF.INSERT");
        ItemWorkload {
            name: format!("{command}{batch} {}", self.label),
            key: self.key,
            family: self.family(),
            command,
            prefix: if command == "CF.INSERT" {
                &["ITEMS"]
            } else {
                &[]
            },
            items,
            range: if adds { super::RANGE } else { 2 * self.prefill },
            calls,
            adds,
            reserved: Some(self.capacity),
        }
    }
}

/// Scales both call counts down so that they carry at most `budget` items.
fn fit_calls(calls: (u64, u64), items: u64, budget: u64) -> (u64, u64) {
    let total = (calls.0 + calls.1) * items;
    if total <= budget {
        return calls;
    }
    let scale = |n: u64| (n * budget / total).max(1);
    (scale(calls.0), scale(calls.1))
}

/// One filter's workloads, in the order they run: the lookups on the
/// pre-loaded filter, then the writes.
fn workloads(cfg: &Config, f: &CfFilter) -> Vec<ItemWorkload> {
    vec![
        f.workload("CF.EXISTS", 1, cfg.single, false),
        f.workload("CF.MEXISTS", 100, cfg.multi, false),
        f.workload("CF.DEL", 1, cfg.single, true),
        f.workload("CF.ADD", 1, cfg.single, true),
        f.workload("CF.INSERT", 100, cfg.multi, true),
    ]
}

pub fn phase_cuckoo(cfg: &Config, results: &mut Results) {
    println!("\n== Cuckoo filter commands: FerroBloom vs RedisBloom");
    let pair = Pair::ferrobloom_vs_redisbloom(cfg);
    let filters = [cf_small(cfg), cf_big(cfg)];
    for f in &filters {
        println!("{}", f.reserve_args().join(" "));
    }
    let all: Vec<(CfFilter, Vec<ItemWorkload>)> =
        filters.iter().map(|f| (*f, workloads(cfg, f))).collect();
    for round in 0..cfg.rounds {
        println!("round {}/{}", round + 1, cfg.rounds);
        for (f, ws) in &all {
            if f.fresh_for_writes {
                f.rebuild_both(&pair, round, round == 0);
            } else {
                let adds = ws.iter().filter(|w| w.adds).map(|w| w.items_per_round());
                f.rebuild_if_near_full(&pair, round, adds.sum());
            }
            let mut written = false;
            for w in ws {
                let writes = w.command != "CF.EXISTS" && w.command != "CF.MEXISTS";
                if writes && written && f.fresh_for_writes {
                    f.rebuild_both(&pair, round, false);
                }
                written |= writes;
                measure_round(cfg, &pair, w, round, results);
            }
        }
    }
}
