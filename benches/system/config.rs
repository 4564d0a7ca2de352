//! What a run measures and where it writes, from the environment:
//!
//! - `BENCH_ROUNDS` (default 5: on a 2-core VM single calls move by
//!   10-15 % from round to round), `BENCH_QUICK=1` (fewer requests, a 64 MiB
//!   filter instead of 1 GiB, a window of 1M items instead of 15M; output
//!   to target/bench-system/ unless `BENCH_OUT` says otherwise),
//!   `BENCH_ONLY=small,cuckoo,cms,topk,tdigest,big,tracking,window`, `BENCH_REQUESTS`
//!   (non-pipelined requests of the item commands), `BENCH_BIG_MB`,
//!   `BENCH_TRACKING_ROUNDS` (default: BENCH_ROUNDS, at least 5 in a full
//!   run), `BENCH_WINDOW_ITEMS` (items per window of phase `window`),
//!   `BENCH_OUT` (output directory);
//! - `BENCH_REDIS_SERVER` (the one server binary of both modules, default
//!   /usr/bin/redis-server; `REDIS_SERVER` is ignored), `REDIS_BENCHMARK`,
//!   `FERROBLOOM_MODULE`, `REDISBLOOM_SO` (read by the test harness that
//!   starts the servers), `FERROBLOOM_UNTRACKED_MODULE` (default
//!   target/untracked/release/libferrobloom.so).

use std::path::{Path, PathBuf};

use crate::filters;

/// The repository: default outputs and module paths are relative to it.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The phases in the order they run (see `main`).
pub const PHASES: [&str; 8] = [
    "small", "cuckoo", "cms", "topk", "tdigest", "big", "tracking", "window",
];

pub struct Config {
    pub rounds: usize,
    /// Rounds of the fill-tracking comparison (its effect is a few percent).
    pub tracking_rounds: usize,
    pub quick: bool,
    pub phases: Vec<String>,
    /// Requests of BF.ADD/BF.EXISTS, without and with pipelining.
    pub single: (u64, u64),
    /// Calls of BF.MADD/BF.MEXISTS (100 items each), without and with pipelining.
    pub multi: (u64, u64),
    /// Items pre-loaded into the 10M and 100M filters.
    pub prefill: (u64, u64),
    /// Items pre-loaded into the 1M and 100M Cuckoo filters.
    pub cf_prefill: (u64, u64),
    /// Deterministic items of the default filter measured for memory per item.
    pub memory_items: u64,
    pub big_bytes: u64,
    /// Timed BF.RESERVE + DEL pairs per round. A few calls of a round may
    /// meet the allocator returning or mapping memory (tens of µs, on both
    /// modules); with 50 pairs they decided a round's mean (3.8-11.8 µs
    /// per round for one module, 2.8-8.8 for the other, 2.5 µs typical).
    pub reserve_repeats: usize,
    /// Items per window (N) of phase `window`: the capacity of its windowed
    /// and plain filters; each daily filter gets N / 30.
    pub window_items: u64,
    /// Lookups, and adds, per approach and round in phase `window`: one
    /// per round trip, and in round trips of 32.
    pub window_calls: (u64, u64),
    /// Calls per round of the Count-Min INCRBY and QUERY workloads: one
    /// per round trip, and in round trips of 32 (phase `cms`).
    pub cms_calls: (u64, u64),
    /// The same for the CMS.MERGE workloads.
    pub cms_merges: (u64, u64),
    /// Calls per round of TOPK.ADD of 1 item: one per round trip, and in
    /// round trips of 32 (phase `topk`).
    pub topk_calls: (u64, u64),
    /// The same for TOPK.ADD of 100 items and TOPK.LIST WITHCOUNT.
    pub topk_batches: (u64, u64),
    /// Calls per round of TDIGEST.ADD of 1000 values, and steps (an ADD,
    /// then a read) of the reads after each add (phase `tdigest`).
    pub tdigest_adds: (u64, u64),
    /// Calls per round of the reads with no add between them.
    pub tdigest_reads: (u64, u64),
    pub out_dir: PathBuf,
    pub csv: PathBuf,
    pub redis_server: PathBuf,
    pub redis_benchmark: PathBuf,
    pub untracked_module: PathBuf,
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok().filter(|v| !v.trim().is_empty())?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
    )
}

fn env_path(name: &str, default: impl Into<PathBuf>) -> PathBuf {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| default.into())
}

fn phases_from_env() -> Vec<String> {
    let phases: Vec<String> = std::env::var("BENCH_ONLY")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_else(|| PHASES.iter().map(|p| p.to_string()).collect());
    for p in &phases {
        assert!(
            PHASES.contains(&p.as_str()),
            "BENCH_ONLY: unknown phase {p:?} (small, cuckoo, cms, topk, tdigest, big, tracking, window)"
        );
    }
    phases
}

/// The full run's value, or the quick run's.
fn pick<T>(quick: bool, full: T, short: T) -> T {
    if quick {
        short
    } else {
        full
    }
}

impl Config {
    pub fn from_env() -> Config {
        let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
        let rounds = env_u64("BENCH_ROUNDS").unwrap_or(5) as usize;
        assert!(rounds >= 1, "BENCH_ROUNDS must be at least 1");
        let single = env_u64("BENCH_REQUESTS").unwrap_or(pick(quick, 200_000, 20_000));
        let big_mb = env_u64("BENCH_BIG_MB").unwrap_or(pick(quick, 1024, 64));
        let root = Path::new(ROOT);
        let out_dir = env_path(
            "BENCH_OUT",
            root.join(pick(quick, "docs", "target/bench-system")),
        );
        let tracking_rounds = env_u64("BENCH_TRACKING_ROUNDS")
            .map(|n| n as usize)
            .unwrap_or(pick(quick, rounds.max(5), rounds));
        Config {
            rounds,
            tracking_rounds,
            quick,
            phases: phases_from_env(),
            single: (single, single * 5),
            multi: pick(quick, (20_000, 40_000), (1_000, 2_000)),
            prefill: pick(quick, (1_000_000, 10_000_000), (200_000, 1_000_000)),
            cf_prefill: pick(quick, (100_000, 40_000_000), (100_000, 4_000_000)),
            memory_items: pick(quick, 100_000, 20_000),
            big_bytes: big_mb << 20,
            reserve_repeats: pick(quick, 200, 10),
            window_items: env_u64("BENCH_WINDOW_ITEMS")
                .unwrap_or(pick(quick, 15_000_000, 1_000_000)),
            window_calls: pick(quick, (20_000, 100_000), (2_000, 10_000)),
            cms_calls: pick(quick, (20_000, 100_000), (2_000, 10_000)),
            cms_merges: pick(quick, (2_000, 10_000), (200, 1_000)),
            topk_calls: pick(quick, (20_000, 100_000), (2_000, 10_000)),
            topk_batches: pick(quick, (2_000, 10_000), (200, 1_000)),
            tdigest_adds: pick(quick, (1_000, 4_000), (100, 400)),
            tdigest_reads: pick(quick, (10_000, 50_000), (1_000, 5_000)),
            out_dir,
            csv: root.join("target/bench-system/rounds.csv"),
            redis_server: env_path("BENCH_REDIS_SERVER", "/usr/bin/redis-server"),
            redis_benchmark: env_path("REDIS_BENCHMARK", "/usr/bin/redis-benchmark"),
            untracked_module: env_path(
                "FERROBLOOM_UNTRACKED_MODULE",
                root.join("target/untracked/release/libferrobloom.so"),
            ),
        }
    }

    pub fn runs(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }

    pub fn big_label(&self) -> String {
        if self.big_bytes % (1 << 30) == 0 {
            format!("{} GiB", self.big_bytes >> 30)
        } else {
            format!("{} MiB", self.big_bytes >> 20)
        }
    }

    /// The capacity of the big filter: what fills `big_bytes` of bits.
    pub fn big_capacity(&self) -> u64 {
        filters::capacity_of_bytes(self.big_bytes)
    }
}
