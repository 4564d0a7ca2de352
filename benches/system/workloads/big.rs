//! Phase `big`: a filter of `BENCH_BIG_MB` (1 GiB): BF.RESERVE + DEL,
//! then, with its bits half set, DEBUG RELOAD, BF.SCANDUMP and UNLINK.

use std::time::Instant;

use super::scandump::{expected_big_hash, load_big, scandump, Layout};
use super::KEY_BIG;
use crate::client::{bf_info, expect_ok, int, BfInfo};
use crate::common::{RawClient, Server};
use crate::config::Config;
use crate::filters::{assert_size, reserve, ERROR};
use crate::measurement::{checked_cmdstat, ms, reset_stats, timed_ms, wait_lazyfree};
use crate::results::{summary, Kind, Results};
use crate::servers::Pair;

/// What every round of the phase works on.
struct Big<'a> {
    cfg: &'a Config,
    pair: Pair,
    capacity: u64,
    label: String,
    /// The chunk layout of the reference, which FerroBloom must reproduce.
    layout: Layout,
    expected_hash: u64,
}

pub fn phase_big(cfg: &Config, results: &mut Results) {
    let label = cfg.big_label();
    println!("\n== a {label} filter: FerroBloom vs RedisBloom");
    let capacity = cfg.big_capacity();
    println!("BF.RESERVE {KEY_BIG} {ERROR} {capacity}");
    let pair = Pair::ferrobloom_vs_redisbloom(cfg);
    let layout = reference_layout(&pair.servers[1], capacity);
    // The first big allocation of a process maps fresh address space (about
    // 20 times the cost of reusing it). RedisBloom just made one above; the
    // same untimed RESERVE + DEL on FerroBloom starts both from the same state.
    reserve_and_delete(&mut pair.servers[0].raw(), capacity);
    let big = Big {
        cfg,
        expected_hash: expected_big_hash(&layout),
        pair,
        capacity,
        label,
        layout,
    };
    for round in 0..cfg.rounds {
        println!("round {}/{}", round + 1, cfg.rounds);
        big.reserve_del(round, results);
        // A big filter with half of its bits set, the same on both.
        let t = Instant::now();
        big.pair
            .both(round, |_, s| load_big(&mut s.raw(), capacity, &big.layout));
        println!(
            "  loaded {} of data into both in {:.1?}",
            big.label,
            t.elapsed()
        );
        let infos = big.pair.both(round, |_, s| bf_info(&mut s.raw(), KEY_BIG));
        assert_eq!(infos[0], infos[1], "the big filters differ in BF.INFO");
        big.reload(round, &infos, results);
        big.scandump(round, results);
        big.unlink(round, results);
    }
}

/// The SCANDUMP layout of a freshly reserved big filter on `server`.
fn reference_layout(server: &Server, capacity: u64) -> Layout {
    let mut c = server.raw();
    reserve(&mut c, KEY_BIG, capacity);
    let info = bf_info(&mut c, KEY_BIG);
    assert_size(info.size, capacity, "big filter");
    println!("  BF.INFO Size {} bytes", info.size);
    let layout = scandump(&mut c, KEY_BIG).layout;
    int(&mut c, &["DEL", KEY_BIG]);
    layout
}

fn reserve_and_delete(c: &mut RawClient, capacity: u64) {
    reserve(c, KEY_BIG, capacity);
    int(c, &["DEL", KEY_BIG]);
}

/// A metric of the phase: its name, unit, and where it is in a side's
/// result.
type Cost<T> = (&'static str, &'static str, fn(&T) -> f64);

/// Records one round of each metric (all times: lower is better).
fn record_costs<T>(results: &mut Results, workload: &str, sides: &[T; 2], costs: &[Cost<T>]) {
    for &(metric, unit, value) in costs {
        results.record_both(workload, metric, unit, Kind::Cost, sides, value);
    }
}

impl Big<'_> {
    fn name(&self, side: usize) -> &'static str {
        self.pair.names[side]
    }

    /// 4. BF.RESERVE then DEL, repeated.
    fn reserve_del(&self, round: usize, results: &mut Results) {
        let repeats = self.cfg.reserve_repeats;
        // Per side: (BF.RESERVE µs/call, median client latency ms, DEL µs/call).
        let r = self.pair.both(round, |i, s| {
            let mut c = s.raw();
            reset_stats(&mut c);
            let mut latencies = Vec::new();
            for rep in 0..repeats {
                let ((), latency) = timed_ms(|| reserve(&mut c, KEY_BIG, self.capacity));
                latencies.push(latency);
                if rep == 0 {
                    let info = bf_info(&mut c, KEY_BIG);
                    assert_size(info.size, self.capacity, self.name(i));
                }
                assert_eq!(int(&mut c, &["DEL", KEY_BIG]), 1, "DEL {KEY_BIG}");
            }
            let n = repeats as u64;
            let reserve = checked_cmdstat(&mut c, "bf.reserve", n, self.name(i));
            let del = checked_cmdstat(&mut c, "del", n, self.name(i));
            wait_lazyfree(&mut c);
            (
                reserve.usec_per_call(),
                summary(&latencies).1,
                del.usec_per_call(),
            )
        });
        let w = format!("BF.RESERVE + DEL {}", self.label);
        println!(
            "  {w}: BF.RESERVE {:.0} vs {:.0} µs/call, latency {:.2} vs {:.2} ms; DEL {:.0} vs {:.0} µs/call",
            r[0].0, r[1].0, r[0].1, r[1].1, r[0].2, r[1].2
        );
        record_costs(
            results,
            &w,
            &r,
            &[
                ("BF.RESERVE usec_per_call", "µs", |r| r.0),
                ("BF.RESERVE client latency", "ms", |r| r.1),
                ("DEL usec_per_call", "µs", |r| r.2),
            ],
        );
    }

    /// 6. DEBUG RELOAD: save an RDB and load it back.
    fn reload(&self, round: usize, infos: &[BfInfo; 2], results: &mut Results) {
        // Per side: (server µs, client ms).
        let r = self.pair.both(round, |i, s| {
            let mut c = s.raw();
            reset_stats(&mut c);
            let ((), client) = timed_ms(|| expect_ok(&mut c, &["DEBUG", "RELOAD"]));
            let stat = checked_cmdstat(&mut c, "debug", 1, self.name(i));
            assert_eq!(
                bf_info(&mut c, KEY_BIG),
                infos[i],
                "{}: BF.INFO changed by RELOAD",
                self.name(i)
            );
            (stat.usec as f64, client)
        });
        let w = format!("DEBUG RELOAD {}", self.label);
        println!(
            "  {w}: {:.0} vs {:.0} ms (server), {:.0} vs {:.0} ms (client)",
            r[0].0 / 1e3,
            r[1].0 / 1e3,
            r[0].1,
            r[1].1
        );
        record_costs(
            results,
            &w,
            &r,
            &[
                ("usec_per_call (debug)", "µs", |r| r.0),
                ("client time", "ms", |r| r.1),
            ],
        );
    }

    /// 5. SCANDUMP of the whole filter (also checks that RELOAD kept it).
    fn scandump(&self, round: usize, results: &mut Results) {
        // Per side: (server µs/call, client ms in calls).
        let r = self.pair.both(round, |i, s| {
            let mut c = s.raw();
            reset_stats(&mut c);
            let got = scandump(&mut c, KEY_BIG);
            let calls = got.layout.chunks.len() as u64 + 2;
            let stat = checked_cmdstat(&mut c, "bf.scandump", calls, self.name(i));
            self.check_dump(self.name(i), &got.layout, got.hash);
            (stat.usec_per_call(), ms(got.waited))
        });
        let w = format!("BF.SCANDUMP {}", self.label);
        println!(
            "  {w}: {:.0} vs {:.0} µs/call, {:.0} vs {:.0} ms in calls",
            r[0].0, r[1].0, r[0].1, r[1].1
        );
        record_costs(
            results,
            &w,
            &r,
            &[
                ("usec_per_call", "µs", |r| r.0),
                ("client time, whole stream", "ms", |r| r.1),
            ],
        );
    }

    fn check_dump(&self, name: &str, got: &Layout, hash: u64) {
        assert_eq!(
            got.chunks, self.layout.chunks,
            "{name}: SCANDUMP chunk layout"
        );
        assert_eq!(got.header, self.layout.header, "{name}: SCANDUMP header");
        assert_eq!(
            hash, self.expected_hash,
            "{name}: SCANDUMP data differ from what was loaded"
        );
    }

    /// 8. UNLINK: how long the server is blocked.
    fn unlink(&self, round: usize, results: &mut Results) {
        // Per side: (server µs, client ms, lazy free ms).
        let r = self.pair.both(round, |i, s| {
            let mut c = s.raw();
            reset_stats(&mut c);
            let (unlinked, client) = timed_ms(|| int(&mut c, &["UNLINK", KEY_BIG]));
            assert_eq!(unlinked, 1, "UNLINK {KEY_BIG}");
            let background = wait_lazyfree(&mut c);
            let stat = checked_cmdstat(&mut c, "unlink", 1, self.name(i));
            (stat.usec as f64, client, ms(background))
        });
        let w = format!("UNLINK {}", self.label);
        println!(
            "  {w}: {:.0} vs {:.0} µs (server), {:.2} vs {:.2} ms (client); lazy free done {:.0} vs {:.0} ms later",
            r[0].0, r[1].0, r[0].1, r[1].1, r[0].2, r[1].2
        );
        record_costs(
            results,
            &w,
            &r,
            &[
                ("usec_per_call", "µs", |r| r.0),
                ("client latency", "ms", |r| r.1),
            ],
        );
    }
}
