//! What is measured on a server: the server-side time of a command from
//! `INFO commandstats` (reset before each measured run, so that it holds
//! that run alone), checked call counts, and client-side times.

use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::client::{expect_ok, info, info_field};
use crate::common::RawClient;

/// How long a lazy free may take before the server counts as stuck.
const LAZYFREE_TIMEOUT: Duration = Duration::from_secs(120);

/// Zeroes INFO commandstats: what follows is the measured run.
pub fn reset_stats(c: &mut RawClient) {
    expect_ok(c, &["CONFIG", "RESETSTAT"]);
}

#[derive(Clone, Copy, Debug, Default)]
pub struct CmdStat {
    pub calls: u64,
    pub usec: u64,
    pub failed: u64,
    pub rejected: u64,
}

impl CmdStat {
    pub fn usec_per_call(&self) -> f64 {
        self.usec as f64 / self.calls as f64
    }
}

/// The `cmdstat_<name>` line of INFO commandstats (zeros when absent).
pub fn cmdstat(c: &mut RawClient, name: &str) -> CmdStat {
    let text = info(c, "commandstats");
    let Some(line) = info_field(&text, &format!("cmdstat_{name}")) else {
        return CmdStat::default();
    };
    let mut s = CmdStat::default();
    for kv in line.split(',') {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let v = || v.parse::<u64>().unwrap_or(0);
        match k {
            "calls" => s.calls = v(),
            "usec" => s.usec = v(),
            "failed_calls" => s.failed = v(),
            "rejected_calls" => s.rejected = v(),
            _ => {}
        }
    }
    s
}

/// Asserts that the command ran `expected` times (up to `slack` more: a
/// pipelining redis-benchmark overshoots by up to clients × pipeline) with
/// no error reply.
pub fn check_calls(s: &CmdStat, name: &str, expected: u64, slack: u64, what: &str) {
    assert!(
        s.failed == 0 && s.rejected == 0,
        "{what}: {name} had {} failed and {} rejected calls",
        s.failed,
        s.rejected
    );
    assert!(
        s.calls >= expected && s.calls <= expected + slack,
        "{what}: {name} ran {} times, expected {expected} (+{slack})",
        s.calls
    );
    assert!(s.usec > 0, "{what}: {name} took no time");
}

/// The commandstats of `name` after a run that must have called it
/// exactly `expected` times.
pub fn checked_cmdstat(c: &mut RawClient, name: &str, expected: u64, what: &str) -> CmdStat {
    let stat = cmdstat(c, name);
    check_calls(&stat, name, expected, 0, what);
    stat
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs `f` and returns its result with the client time it took, in ms.
pub fn timed_ms<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let out = f();
    (out, ms(t.elapsed()))
}

/// Waits until the lazy-free thread has freed everything; returns how
/// long that took.
pub fn wait_lazyfree(c: &mut RawClient) -> Duration {
    let t = Instant::now();
    loop {
        let mem = info(c, "memory");
        if info_field(&mem, "lazyfree_pending_objects").as_deref() == Some("0") {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < LAZYFREE_TIMEOUT,
            "lazy free did not finish in 120 s"
        );
        sleep(Duration::from_millis(5));
    }
}
