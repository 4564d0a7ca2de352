//! System benchmark: FerroBloom against RedisBloom 2.8.2, each loaded into
//! the same `redis-server` binary, running the same workloads alternately
//! (round 1: FerroBloom then RedisBloom, round 2: RedisBloom then
//! FerroBloom, ...), so that drifting machine load hits both alike.
//!
//! Per workload it records the server-side `usec_per_call` of the command
//! (`INFO commandstats`, reset with `CONFIG RESETSTAT` before each measured
//! run) and, for the item commands, client throughput from `redis-benchmark`
//! without and with pipelining. Each round gives a FerroBloom/RedisBloom
//! ratio; the report shows min/median/max over rounds.
//!
//! Phases (servers are started per phase and killed by PID afterwards):
//! - `small`: BF.ADD/BF.EXISTS on a default auto-created filter and on
//!   10M and 100M filters at 0.001, BF.MADD/BF.MEXISTS of 100 items,
//!   BF.CARD (the floor of any call) and memory per item;
//! - `big`: BF.RESERVE + DEL, DEBUG RELOAD, BF.SCANDUMP and UNLINK of a
//!   1 GiB filter whose bits are half set (as at capacity);
//! - `tracking`: BF.ADD on the 10M filter with fill tracking against a
//!   build without it (`--features untracked-fill`).
//!
//! Writes `performance.md` and `performance.png` (docs/ by default) and the
//! raw rounds as `target/bench-system/rounds.csv`. `make bench` runs it.
//!
//! Environment:
//! - `BENCH_ROUNDS` (default 5: on a 2-core VM single calls move by
//!   10-15 % from round to round), `BENCH_QUICK=1` (fewer requests, a 64 MiB
//!   filter instead of 1 GiB; output to target/bench-system/ unless
//!   `BENCH_OUT` says otherwise), `BENCH_ONLY=small,big,tracking`,
//!   `BENCH_REQUESTS` (non-pipelined requests of the item commands),
//!   `BENCH_BIG_MB`, `BENCH_TRACKING_ROUNDS` (default: BENCH_ROUNDS, at
//!   least 5 in a full run), `BENCH_OUT` (output directory);
//! - `BENCH_REDIS_SERVER` (the one server binary of both modules, default
//!   /usr/bin/redis-server; `REDIS_SERVER` is ignored), `REDIS_BENCHMARK`,
//!   `FERROBLOOM_MODULE`, `REDISBLOOM_SO`, `FERROBLOOM_UNTRACKED_MODULE`
//!   (default target/untracked/release/libferrobloom.so).

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};

const FONT: &[u8] = include_bytes!("assets/DejaVuSans.ttf");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// Error rate of the reserved filters; scaling filters give their first
/// link half of it, so that is what sizes the bit array.
const ERROR: f64 = 0.001;
const CLIENTS: u64 = 4;
const PIPELINE: u64 = 32;
/// `__rand_int__` range of the single adds (redis-benchmark pads to 12 digits).
const RANGE: u64 = 100_000_000;
const BENCHMARK_TIMEOUT: Duration = Duration::from_secs(900);

// ---------------------------------------------------------------------------
// Configuration

struct Config {
    rounds: usize,
    /// Rounds of the fill-tracking comparison (its effect is a few percent).
    tracking_rounds: usize,
    quick: bool,
    phases: Vec<String>,
    /// Requests of BF.ADD/BF.EXISTS, without and with pipelining.
    single: (u64, u64),
    /// Calls of BF.MADD/BF.MEXISTS (100 items each), without and with pipelining.
    multi: (u64, u64),
    /// Items pre-loaded into the 10M and 100M filters.
    prefill: (u64, u64),
    /// Deterministic items of the default filter measured for memory per item.
    memory_items: u64,
    big_bytes: u64,
    /// Timed BF.RESERVE + DEL pairs per round. A few calls of a round may
    /// meet the allocator returning or mapping memory (tens of µs, on both
    /// modules); with 50 pairs they decided a round's mean (3.8-11.8 µs
    /// per round for one module, 2.8-8.8 for the other, 2.5 µs typical).
    reserve_repeats: usize,
    out_dir: PathBuf,
    csv: PathBuf,
    redis_server: PathBuf,
    redis_benchmark: PathBuf,
    untracked_module: PathBuf,
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

impl Config {
    fn from_env() -> Config {
        let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
        let rounds = env_u64("BENCH_ROUNDS").unwrap_or(5) as usize;
        assert!(rounds >= 1, "BENCH_ROUNDS must be at least 1");
        let phases = std::env::var("BENCH_ONLY")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_else(|| vec!["small".into(), "big".into(), "tracking".into()]);
        for p in &phases {
            assert!(
                ["small", "big", "tracking"].contains(&p.as_str()),
                "BENCH_ONLY: unknown phase {p:?} (small, big, tracking)"
            );
        }
        let single_default = if quick { 20_000 } else { 200_000 };
        let single = env_u64("BENCH_REQUESTS").unwrap_or(single_default);
        let big_mb = env_u64("BENCH_BIG_MB").unwrap_or(if quick { 64 } else { 1024 });
        let root = Path::new(ROOT);
        let out_dir = env_path(
            "BENCH_OUT",
            if quick {
                root.join("target/bench-system")
            } else {
                root.join("docs")
            },
        );
        let tracking_rounds = env_u64("BENCH_TRACKING_ROUNDS")
            .map(|n| n as usize)
            .unwrap_or(if quick { rounds } else { rounds.max(5) });
        Config {
            rounds,
            tracking_rounds,
            quick,
            phases,
            single: (single, single * 5),
            multi: if quick {
                (1_000, 2_000)
            } else {
                (20_000, 40_000)
            },
            prefill: if quick {
                (200_000, 1_000_000)
            } else {
                (1_000_000, 10_000_000)
            },
            memory_items: if quick { 20_000 } else { 100_000 },
            big_bytes: big_mb << 20,
            reserve_repeats: if quick { 10 } else { 200 },
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

    fn runs(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }

    fn big_label(&self) -> String {
        if self.big_bytes % (1 << 30) == 0 {
            format!("{} GiB", self.big_bytes >> 30)
        } else {
            format!("{} MiB", self.big_bytes >> 20)
        }
    }
}

// ---------------------------------------------------------------------------
// Results

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Lower is better (microseconds, milliseconds, bytes).
    Cost,
    /// Higher is better (operations per second).
    Throughput,
}

struct Metric {
    workload: String,
    metric: String,
    unit: &'static str,
    kind: Kind,
    /// Per round: (A, B) = (FerroBloom, RedisBloom) or (tracked, untracked).
    rounds: Vec<(f64, f64)>,
}

impl Metric {
    fn ratios(&self) -> Vec<f64> {
        self.rounds.iter().map(|(a, b)| a / b).collect()
    }

    fn ratio_summary(&self) -> (f64, f64, f64) {
        summary(&self.ratios())
    }

    fn medians(&self) -> (f64, f64) {
        let a: Vec<f64> = self.rounds.iter().map(|r| r.0).collect();
        let b: Vec<f64> = self.rounds.iter().map(|r| r.1).collect();
        (summary(&a).1, summary(&b).1)
    }

    /// Whether the median ratio favours A.
    fn a_not_worse(&self) -> bool {
        let (_, med, _) = self.ratio_summary();
        match self.kind {
            Kind::Cost => med <= 1.0,
            Kind::Throughput => med >= 1.0,
        }
    }
}

/// (min, median, max); the median of an even count is the mean of the
/// middle two.
fn summary(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    assert!(n > 0, "no values");
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (v[0], median, v[n - 1])
}

#[derive(Default)]
struct Results {
    metrics: Vec<Metric>,
    notes: Vec<String>,
}

impl Results {
    fn record(
        &mut self,
        workload: &str,
        metric: &str,
        unit: &'static str,
        kind: Kind,
        values: (f64, f64),
    ) {
        assert!(
            values.0.is_finite() && values.1.is_finite() && values.0 > 0.0 && values.1 > 0.0,
            "{workload} / {metric}: unusable measurement {values:?}"
        );
        match self
            .metrics
            .iter_mut()
            .find(|m| m.workload == workload && m.metric == metric)
        {
            Some(m) => m.rounds.push(values),
            None => self.metrics.push(Metric {
                workload: workload.into(),
                metric: metric.into(),
                unit,
                kind,
                rounds: vec![values],
            }),
        }
    }

    fn get(&self, workload: &str, metric: &str) -> Option<&Metric> {
        self.metrics
            .iter()
            .find(|m| m.workload == workload && m.metric == metric)
    }

    fn note(&mut self, text: String) {
        println!("note: {text}");
        self.notes.push(text);
    }
}

// ---------------------------------------------------------------------------
// Talking to the servers

fn show(reply: &[u8]) -> String {
    let end = reply.len().min(200);
    String::from_utf8_lossy(&reply[..end]).into_owned()
}

/// Runs a command and decodes its reply; panics on an error reply.
fn call<A: AsRef<[u8]>>(c: &mut RawClient, args: &[A]) -> Resp {
    let raw = c.cmd(args);
    let reply = decode(&raw);
    if reply.is_error() {
        let shown: Vec<String> = args
            .iter()
            .take(4)
            .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
            .collect();
        panic!("{shown:?} failed: {}", show(&raw));
    }
    reply
}

fn expect_ok<A: AsRef<[u8]>>(c: &mut RawClient, args: &[A]) {
    let raw = c.cmd(args);
    assert!(
        raw == b"+OK\r\n",
        "{:?}: expected +OK, got {}",
        String::from_utf8_lossy(args[0].as_ref()),
        show(&raw)
    );
}

fn int<A: AsRef<[u8]>>(c: &mut RawClient, args: &[A]) -> i64 {
    match call(c, args) {
        Resp::Int(n) => n,
        other => panic!(
            "{:?}: expected an integer, got {other:?}",
            String::from_utf8_lossy(args[0].as_ref())
        ),
    }
}

fn info(c: &mut RawClient, section: &str) -> String {
    call(c, &["INFO", section])
        .as_str()
        .unwrap_or_else(|| panic!("INFO {section}: not a string"))
}

fn info_field(text: &str, field: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

fn reset_stats(c: &mut RawClient) {
    expect_ok(c, &["CONFIG", "RESETSTAT"]);
}

#[derive(Clone, Copy, Debug, Default)]
struct CmdStat {
    calls: u64,
    usec: u64,
    failed: u64,
    rejected: u64,
}

/// The `cmdstat_<name>` line of INFO commandstats (zeros when absent).
fn cmdstat(c: &mut RawClient, name: &str) -> CmdStat {
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
fn check_calls(s: &CmdStat, name: &str, expected: u64, slack: u64, what: &str) {
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

#[derive(Clone, Copy, Debug, PartialEq)]
struct BfInfo {
    capacity: i64,
    size: i64,
    filters: i64,
    items: i64,
}

fn bf_info(c: &mut RawClient, key: &str) -> BfInfo {
    let Resp::Array(fields) = call(c, &["BF.INFO", key]) else {
        panic!("BF.INFO {key}: not an array");
    };
    let mut map = BTreeMap::new();
    for pair in fields.chunks(2) {
        if let [name, Resp::Int(v)] = pair {
            map.insert(name.as_str().unwrap_or_default(), *v);
        }
    }
    let get = |k: &str| {
        *map.get(k)
            .unwrap_or_else(|| panic!("BF.INFO {key}: no {k:?}"))
    };
    BfInfo {
        capacity: get("Capacity"),
        size: get("Size"),
        filters: get("Number of filters"),
        items: get("Number of items inserted"),
    }
}

fn memory_usage(c: &mut RawClient, key: &str) -> i64 {
    int(c, &["MEMORY", "USAGE", key])
}

/// `item:` + 12 digits, as redis-benchmark expands `item:__rand_int__`.
fn item(i: u64) -> String {
    format!("item:{i:012}")
}

/// Bits per item of a link at `error` (RedisBloom's sizing).
fn bits_per_item(error: f64) -> f64 {
    -error.ln() / (std::f64::consts::LN_2 * std::f64::consts::LN_2)
}

/// BF.INFO Size expected of `BF.RESERVE k 0.001 capacity` (a scaling
/// filter: its first link has half the error rate), within a word or two.
fn expected_size(capacity: u64) -> f64 {
    capacity as f64 * bits_per_item(ERROR / 2.0) / 8.0
}

fn assert_size(info: &BfInfo, capacity: u64, what: &str) {
    let expected = expected_size(capacity);
    let off = (info.size as f64 - expected).abs() / expected;
    assert!(
        off < 0.01,
        "{what}: BF.INFO Size {} but about {expected:.0} expected",
        info.size
    );
}

/// Adds `item(start..start + count)` with pipelined BF.MADD of 1000 items.
fn prefill(c: &mut RawClient, key: &str, start: u64, count: u64) {
    const BATCH: u64 = 1000;
    const DEPTH: usize = 16;
    let mut cmds: Vec<Vec<String>> = Vec::new();
    let mut next = start;
    let end = start + count;
    while next < end {
        let n = BATCH.min(end - next);
        let mut cmd = vec!["BF.MADD".to_string(), key.to_string()];
        cmd.extend((next..next + n).map(item));
        cmds.push(cmd);
        next += n;
        if cmds.len() == DEPTH || next == end {
            for (cmd, raw) in cmds.iter().zip(c.pipeline(&cmds)) {
                match decode(&raw) {
                    Resp::Array(v)
                        if v.len() == cmd.len() - 2
                            && v.iter().all(|r| matches!(r, Resp::Int(0 | 1))) => {}
                    _ => panic!("BF.MADD {key} (prefill) replied {}", show(&raw)),
                }
            }
            cmds.clear();
        }
    }
}

// ---------------------------------------------------------------------------
// redis-benchmark

/// Runs redis-benchmark against 127.0.0.1:port and returns requests/s.
/// Fails loudly when it exits non-zero (it stops at the first error reply).
fn redis_benchmark(
    cfg: &Config,
    port: u16,
    n: u64,
    range: u64,
    pipeline: u64,
    args: &[String],
) -> f64 {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let out_path = dir.join(format!("redis-benchmark-{}.out", std::process::id()));
    let out = fs::File::create(&out_path).expect("redis-benchmark output file");
    let err = out.try_clone().expect("clone output file");
    let mut child = Command::new(&cfg.redis_benchmark)
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-n", &n.to_string(), "-r", &range.to_string()])
        .args(["-c", &CLIENTS.to_string(), "-P", &pipeline.to_string()])
        .arg("--csv")
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {}: {e}; run `make deps`",
                cfg.redis_benchmark.display()
            )
        });
    let deadline = Instant::now() + BENCHMARK_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for redis-benchmark") {
            break status;
        }
        if Instant::now() > deadline {
            // Our own child, by PID.
            let _ = child.kill();
            let _ = child.wait();
            panic!("redis-benchmark {args:?} did not finish in {BENCHMARK_TIMEOUT:?}");
        }
        sleep(Duration::from_millis(20));
    };
    let text = fs::read_to_string(&out_path).unwrap_or_default();
    let _ = fs::remove_file(&out_path);
    assert!(
        status.success(),
        "redis-benchmark {args:?} failed ({status}):\n{text}"
    );
    // "test","rps",...\n"<command>","12345.67",...
    let rps = text
        .lines()
        .filter(|l| !l.starts_with("\"test\""))
        .find_map(|l| l.split(',').nth(1)?.trim_matches('"').parse::<f64>().ok());
    rps.unwrap_or_else(|| panic!("redis-benchmark {args:?}: no requests/s in:\n{text}"))
}

// ---------------------------------------------------------------------------
// Server pairs

/// Two servers measured alternately; index 0 is the one in the numerator.
struct Pair {
    names: [&'static str; 2],
    servers: [Server; 2],
}

impl Pair {
    fn start(cfg: &Config, names: [&'static str; 2], modules: [ModuleKind; 2]) -> Pair {
        let [m0, m1] = modules;
        let start = |m: ModuleKind| {
            Server::start(ServerOpts::new(m).server_binary(cfg.redis_server.clone()))
        };
        let servers = [start(m0), start(m1)];
        for (name, s) in names.iter().zip(&servers) {
            println!(
                "{name}: redis-server pid {} on 127.0.0.1:{}",
                s.pid(),
                s.port()
            );
        }
        Pair { names, servers }
    }

    /// Runs `f` on both servers, first index 0 in even rounds and index 1
    /// in odd ones; returns the results by index.
    fn both<T>(&self, round: usize, mut f: impl FnMut(usize, &Server) -> T) -> [T; 2] {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut out: [Option<T>; 2] = [None, None];
        for i in order {
            out[i] = Some(f(i, &self.servers[i]));
        }
        out.map(|v| v.expect("both sides ran"))
    }
}

// ---------------------------------------------------------------------------
// Item-command workloads (redis-benchmark)

struct ItemWorkload {
    name: String,
    key: &'static str,
    command: &'static str,
    /// Items per call.
    items: usize,
    /// `__rand_int__` range.
    range: u64,
    /// Calls without and with pipelining.
    calls: (u64, u64),
    adds: bool,
    /// A reserved filter that must not scale out.
    reserved: Option<u64>,
}

impl ItemWorkload {
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
        args.extend((0..self.items).map(|_| item.clone()));
        args
    }

    fn stat(&self) -> String {
        self.command.to_ascii_lowercase()
    }

    fn items_per_round(&self) -> u64 {
        (self.calls.0 + self.calls.1 + CLIENTS * PIPELINE) * self.items as u64
    }
}

struct ItemResult {
    usec_per_call: f64,
    rps: (f64, f64),
}

/// Checks one call's reply shape, then runs redis-benchmark without and
/// with pipelining, each after CONFIG RESETSTAT.
fn run_items(
    cfg: &Config,
    server: &Server,
    side: &str,
    side_index: usize,
    w: &ItemWorkload,
    round: usize,
) -> ItemResult {
    let what = format!("{side} {}", w.name);
    let mut c = server.raw();
    // One call with fixed items: integers 0/1, one per item (BF.CARD: a
    // count).
    let mut probe = vec![w.command.to_string(), w.key.to_string()];
    probe.extend((0..w.items).map(|i| format!("probe:{round}:{i}")));
    match (w.items, call(&mut c, &probe)) {
        (0, Resp::Int(n)) if n >= 0 => {}
        (1, Resp::Int(0 | 1)) => {}
        (n, Resp::Array(v))
            if n > 1 && v.len() == n && v.iter().all(|r| matches!(r, Resp::Int(0 | 1))) => {}
        (_, other) => panic!("{what}: unexpected reply {other:?}"),
    }
    let before = bf_info(&mut c, w.key);
    let stat = w.stat();
    let mut total = CmdStat::default();
    let mut rps = [0.0; 2];
    for (i, (pipeline, n)) in [(1, w.calls.0), (PIPELINE, w.calls.1)]
        .into_iter()
        .enumerate()
    {
        let args = w.args(&format!("r{round}{side_index}{i}"));
        reset_stats(&mut c);
        rps[i] = redis_benchmark(cfg, server.port(), n, w.range, pipeline, &args);
        let s = cmdstat(&mut c, &stat);
        check_calls(&s, &stat, n, CLIENTS * pipeline, &what);
        total.calls += s.calls;
        total.usec += s.usec;
    }
    let after = bf_info(&mut c, w.key);
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
        assert_size(&after, capacity, &what);
    }
    ItemResult {
        usec_per_call: total.usec as f64 / total.calls as f64,
        rps: (rps[0], rps[1]),
    }
}

fn record_items(results: &mut Results, w: &ItemWorkload, r: &[ItemResult; 2]) {
    results.record(
        &w.name,
        "usec_per_call",
        "µs",
        Kind::Cost,
        (r[0].usec_per_call, r[1].usec_per_call),
    );
    results.record(
        &w.name,
        "ops/s, no pipelining",
        "ops/s",
        Kind::Throughput,
        (r[0].rps.0, r[1].rps.0),
    );
    results.record(
        &w.name,
        "ops/s, -P 32",
        "ops/s",
        Kind::Throughput,
        (r[0].rps.1, r[1].rps.1),
    );
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

/// Reserves `key` (replacing it) and pre-loads `items`.
fn fresh_reserved(c: &mut RawClient, key: &str, capacity: u64, items: u64) {
    call(c, &["DEL", key]);
    expect_ok(
        c,
        &["BF.RESERVE", key, &ERROR.to_string(), &capacity.to_string()],
    );
    prefill(c, key, 0, items);
    let info = bf_info(c, key);
    assert_size(&info, capacity, key);
    assert_eq!(info.filters, 1, "{key}: scaled out during prefill");
    // Half of `item(0..2 * items)` is present: sample 100 of them.
    let step = (2 * items / 100).max(1);
    let mut cmd = vec!["BF.MEXISTS".to_string(), key.to_string()];
    cmd.extend((0..100).map(|i| item(i * step)));
    let Resp::Array(v) = call(c, &cmd) else {
        panic!("BF.MEXISTS {key}: not an array");
    };
    let present = v.iter().filter(|r| **r == Resp::Int(1)).count() as u64;
    let expected = (0..100).filter(|i| i * step < items).count() as u64;
    assert!(
        present >= expected && present <= expected + 3,
        "{key}: {present} of 100 sampled items present, {expected} expected"
    );
}

// ---------------------------------------------------------------------------
// Phase: item commands and memory

const KEY_DEFAULT: &str = "bf:default";
const KEY_10M: &str = "bf:10m";
const KEY_100M: &str = "bf:100m";
const KEY_MEMORY: &str = "bf:memory";
const CAP_10M: u64 = 10_000_000;
const CAP_100M: u64 = 100_000_000;

fn phase_small(cfg: &Config, results: &mut Results) {
    println!("\n== item commands: FerroBloom vs RedisBloom");
    let pair = Pair::start(
        cfg,
        ["FerroBloom", "RedisBloom"],
        [ModuleKind::FerroBloom, ModuleKind::RedisBloom],
    );
    let (p10, p100) = cfg.prefill;
    let single = |name: &str, key, command, range, adds, reserved| ItemWorkload {
        name: name.into(),
        key,
        command,
        items: 1,
        range,
        calls: cfg.single,
        adds,
        reserved,
    };
    let multi = |name: &str, key, command, range, adds, reserved| ItemWorkload {
        name: name.into(),
        key,
        command,
        items: 100,
        range,
        calls: cfg.multi,
        adds,
        reserved,
    };
    let default_add = single("BF.ADD default", KEY_DEFAULT, "BF.ADD", RANGE, true, None);
    let default_exists = single(
        "BF.EXISTS default",
        KEY_DEFAULT,
        "BF.EXISTS",
        RANGE,
        false,
        None,
    );
    // Lookups draw from item(0..2 × prefill): half present, half absent.
    let sized = vec![
        single("BF.ADD 10M", KEY_10M, "BF.ADD", RANGE, true, Some(CAP_10M)),
        single(
            "BF.EXISTS 10M",
            KEY_10M,
            "BF.EXISTS",
            2 * p10,
            false,
            Some(CAP_10M),
        ),
        single(
            "BF.ADD 100M",
            KEY_100M,
            "BF.ADD",
            RANGE,
            true,
            Some(CAP_100M),
        ),
        single(
            "BF.EXISTS 100M",
            KEY_100M,
            "BF.EXISTS",
            2 * p100,
            false,
            Some(CAP_100M),
        ),
        multi(
            "BF.MADD×100 10M",
            KEY_10M,
            "BF.MADD",
            RANGE,
            true,
            Some(CAP_10M),
        ),
        multi(
            "BF.MEXISTS×100 10M",
            KEY_10M,
            "BF.MEXISTS",
            2 * p10,
            false,
            Some(CAP_10M),
        ),
        multi(
            "BF.MADD×100 100M",
            KEY_100M,
            "BF.MADD",
            RANGE,
            true,
            Some(CAP_100M),
        ),
        multi(
            "BF.MEXISTS×100 100M",
            KEY_100M,
            "BF.MEXISTS",
            2 * p100,
            false,
            Some(CAP_100M),
        ),
        // The floor of any call: dispatch, key lookup, an integer reply.
        ItemWorkload {
            items: 0,
            ..single(
                "BF.CARD 100M (baseline)",
                KEY_100M,
                "BF.CARD",
                RANGE,
                false,
                Some(CAP_100M),
            )
        },
    ];
    let adds_per_round = |key: &str| -> u64 {
        sized
            .iter()
            .filter(|w| w.adds && w.key == key)
            .map(ItemWorkload::items_per_round)
            .sum()
    };

    for round in 0..cfg.rounds {
        println!("round {}/{}", round + 1, cfg.rounds);
        // The sized filters are kept across rounds, and rebuilt when this
        // round's adds could push them past 90% of their capacity.
        for (key, capacity, items) in [(KEY_10M, CAP_10M, p10), (KEY_100M, CAP_100M, p100)] {
            let fill = pair.servers.iter().map(|s| {
                let mut c = s.raw();
                (int(&mut c, &["EXISTS", key]) == 1).then(|| bf_info(&mut c, key).items)
            });
            let fill: Vec<Option<i64>> = fill.collect();
            let rebuild = fill.iter().any(|f| match f {
                None => true,
                Some(n) => *n as u64 + adds_per_round(key) > capacity * 9 / 10,
            });
            if rebuild {
                let t = Instant::now();
                pair.both(round, |_, s| {
                    fresh_reserved(&mut s.raw(), key, capacity, items)
                });
                println!(
                    "  {key}: reserved and loaded {items} items in {:.1?}",
                    t.elapsed()
                );
            }
        }
        let sizes = pair.both(round, |_, s| {
            let mut c = s.raw();
            (
                bf_info(&mut c, KEY_10M).size,
                bf_info(&mut c, KEY_100M).size,
            )
        });
        assert_eq!(
            sizes[0], sizes[1],
            "filter sizes differ between the servers"
        );

        // 1. The default filter, created by the first BF.ADD, scaling out.
        pair.both(round, |_, s| call(&mut s.raw(), &["DEL", KEY_DEFAULT]));
        let r = pair.both(round, |i, s| {
            run_items(cfg, s, pair.names[i], i, &default_add, round)
        });
        print_round(&pair, &default_add.name, &r);
        record_items(results, &default_add, &r);
        let infos = pair.both(round, |_, s| bf_info(&mut s.raw(), KEY_DEFAULT));
        assert!(infos[0].filters > 1, "the default filter did not scale out");
        if round == 0 {
            println!(
                "  {KEY_DEFAULT}: {} sub-filters, {} items, {} bytes",
                infos[1].filters, infos[1].items, infos[1].size
            );
        }
        let r = pair.both(round, |i, s| {
            run_items(cfg, s, pair.names[i], i, &default_exists, round)
        });
        print_round(&pair, &default_exists.name, &r);
        record_items(results, &default_exists, &r);

        // 2, 3. Reserved filters, single items and batches of 100.
        for w in &sized {
            let r = pair.both(round, |i, s| run_items(cfg, s, pair.names[i], i, w, round));
            print_round(&pair, &w.name, &r);
            record_items(results, w, &r);
        }

        // 7. Memory per item: a default filter loaded with the same items
        // on both (per item held), and the reserved filters (per item of
        // capacity: their random adds differ slightly between the servers,
        // as redis-benchmark overshoots -n by up to clients × pipeline).
        let mem = pair.both(round, |_, s| {
            let mut c = s.raw();
            call(&mut c, &["DEL", KEY_MEMORY]);
            prefill(&mut c, KEY_MEMORY, 0, cfg.memory_items);
            // At error 0.01 about 1% of new items are taken for present.
            let items = bf_info(&mut c, KEY_MEMORY).items;
            assert!(
                items as u64 >= cfg.memory_items * 95 / 100,
                "{KEY_MEMORY}: {items} of {} items added",
                cfg.memory_items
            );
            [
                (memory_usage(&mut c, KEY_MEMORY), items as u64),
                (memory_usage(&mut c, KEY_10M), CAP_10M),
                (memory_usage(&mut c, KEY_100M), CAP_100M),
            ]
        });
        let labels = [
            format!("default filter holding {} items", cfg.memory_items),
            "10M filter, per item of capacity".to_string(),
            "100M filter, per item of capacity".to_string(),
        ];
        for (k, label) in labels.iter().enumerate() {
            let per_item = |side: usize| mem[side][k].0 as f64 / mem[side][k].1 as f64;
            results.record(
                "Memory per item",
                label,
                "bytes",
                Kind::Cost,
                (per_item(0), per_item(1)),
            );
            println!(
                "  memory per item, {label}: {:.3} vs {:.3} bytes (MEMORY USAGE {} vs {})",
                per_item(0),
                per_item(1),
                mem[0][k].0,
                mem[1][k].0
            );
            if round == 0 && mem[0][k] != mem[1][k] {
                results.note(format!(
                    "MEMORY USAGE differs ({label}): FerroBloom {} bytes for {} items, \
                     RedisBloom {} bytes for {} items",
                    mem[0][k].0, mem[0][k].1, mem[1][k].0, mem[1][k].1
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Phase: a big filter (RESERVE, RELOAD, SCANDUMP, UNLINK)

const KEY_BIG: &str = "bf:big";

/// The SCANDUMP stream of a freshly reserved big filter: its header and
/// the (iterator, length) of each data chunk.
struct Layout {
    header: Vec<u8>,
    chunks: Vec<(i64, usize)>,
}

/// One SCANDUMP reply: `*2 :iter $len data` (data `$-1` or empty at the end).
fn parse_scandump(raw: &[u8]) -> (i64, &[u8]) {
    let bad = || -> ! { panic!("BF.SCANDUMP replied {}", show(raw)) };
    let line = |at: usize| -> (&[u8], usize) {
        let end = at
            + raw[at..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .unwrap_or_else(|| bad());
        (&raw[at..end], end + 2)
    };
    let num = |b: &[u8]| -> i64 {
        std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| bad())
    };
    if !raw.starts_with(b"*2\r\n:") {
        bad();
    }
    let (it, at) = line(5);
    let iter = num(it);
    let (len, at) = line(at);
    if len.first() != Some(&b'$') {
        bad();
    }
    let n = num(&len[1..]);
    if n < 0 {
        return (iter, &[]);
    }
    let n = n as usize;
    if raw.len() != at + n + 2 {
        bad();
    }
    (iter, &raw[at..at + n])
}

/// Streams the whole SCANDUMP of `key`; returns the header, the chunk
/// layout, a hash of the data chunks and the time spent in calls.
fn scandump(c: &mut RawClient, key: &str) -> (Layout, u64, Duration) {
    let mut layout = Layout {
        header: Vec::new(),
        chunks: Vec::new(),
    };
    let mut hash = HASH_SEED;
    let mut waited = Duration::ZERO;
    let mut iter = 0i64;
    loop {
        let it = iter.to_string();
        let t = Instant::now();
        let raw = c.cmd(&["BF.SCANDUMP", key, &it]);
        waited += t.elapsed();
        let (next, data) = parse_scandump(&raw);
        if next == 0 {
            break;
        }
        if iter == 0 {
            layout.header = data.to_vec();
        } else {
            layout.chunks.push((next, data.len()));
            hash = hash_bytes(hash, data);
        }
        iter = next;
    }
    assert!(!layout.header.is_empty(), "{key}: SCANDUMP gave no header");
    (layout, hash, waited)
}

const HASH_SEED: u64 = 0xcbf2_9ce4_8422_2325;

fn hash_bytes(mut h: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Chunk `index`'s content: pseudo-random bytes with half of the bits set,
/// like a filter at capacity (so that RDB compression does not flatter).
fn chunk_data(index: usize, buf: &mut [u8]) {
    let mut x = 0x2545_f491_4f6c_dd1du64 ^ ((index as u64 + 1) * 0x9e37_79b9_7f4a_7c15);
    for w in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        w.copy_from_slice(&bytes[..w.len()]);
    }
}

/// `BF.RESERVE` of the big filter.
fn reserve_big(c: &mut RawClient, capacity: u64) {
    expect_ok(
        c,
        &[
            "BF.RESERVE",
            KEY_BIG,
            &ERROR.to_string(),
            &capacity.to_string(),
        ],
    );
}

/// Reserves the big filter and writes every chunk with LOADCHUNK.
fn load_big(c: &mut RawClient, capacity: u64, layout: &Layout) {
    reserve_big(c, capacity);
    let max = layout.chunks.iter().map(|c| c.1).max().unwrap_or(0);
    let mut buf = vec![0u8; max];
    for (i, &(iter, len)) in layout.chunks.iter().enumerate() {
        chunk_data(i, &mut buf[..len]);
        let it = iter.to_string();
        let args: [&[u8]; 4] = [
            b"BF.LOADCHUNK",
            KEY_BIG.as_bytes(),
            it.as_bytes(),
            &buf[..len],
        ];
        expect_ok(c, &args);
    }
}

fn expected_big_hash(layout: &Layout) -> u64 {
    let max = layout.chunks.iter().map(|c| c.1).max().unwrap_or(0);
    let mut buf = vec![0u8; max];
    let mut hash = HASH_SEED;
    for (i, &(_, len)) in layout.chunks.iter().enumerate() {
        chunk_data(i, &mut buf[..len]);
        hash = hash_bytes(hash, &buf[..len]);
    }
    hash
}

fn wait_lazyfree(c: &mut RawClient) -> Duration {
    let t = Instant::now();
    loop {
        let mem = info(c, "memory");
        if info_field(&mem, "lazyfree_pending_objects").as_deref() == Some("0") {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "lazy free did not finish in 120 s"
        );
        sleep(Duration::from_millis(5));
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn phase_big(cfg: &Config, results: &mut Results) {
    let label = cfg.big_label();
    println!("\n== a {label} filter: FerroBloom vs RedisBloom");
    let capacity = (cfg.big_bytes as f64 * 8.0 / bits_per_item(ERROR / 2.0)).floor() as u64;
    println!("BF.RESERVE {KEY_BIG} {ERROR} {capacity}");
    let pair = Pair::start(
        cfg,
        ["FerroBloom", "RedisBloom"],
        [ModuleKind::FerroBloom, ModuleKind::RedisBloom],
    );
    // The chunk layout of the reference, which FerroBloom must reproduce.
    let layout = {
        let mut c = pair.servers[1].raw();
        reserve_big(&mut c, capacity);
        let info = bf_info(&mut c, KEY_BIG);
        assert_size(&info, capacity, "big filter");
        println!("  BF.INFO Size {} bytes", info.size);
        let (layout, _, _) = scandump(&mut c, KEY_BIG);
        int(&mut c, &["DEL", KEY_BIG]);
        layout
    };
    // The first big allocation of a process maps fresh address space (about
    // 20 times the cost of reusing it). RedisBloom just made one above; the
    // same untimed RESERVE + DEL on FerroBloom starts both from the same state.
    {
        let mut c = pair.servers[0].raw();
        reserve_big(&mut c, capacity);
        int(&mut c, &["DEL", KEY_BIG]);
    }
    let expected_hash = expected_big_hash(&layout);
    let w_reserve = format!("BF.RESERVE + DEL {label}");
    let w_reload = format!("DEBUG RELOAD {label}");
    let w_scandump = format!("BF.SCANDUMP {label}");
    let w_unlink = format!("UNLINK {label}");

    for round in 0..cfg.rounds {
        println!("round {}/{}", round + 1, cfg.rounds);
        // 4. BF.RESERVE then DEL, repeated.
        let r = pair.both(round, |i, s| {
            let mut c = s.raw();
            reset_stats(&mut c);
            let mut latencies = Vec::new();
            for rep in 0..cfg.reserve_repeats {
                let t = Instant::now();
                reserve_big(&mut c, capacity);
                latencies.push(ms(t.elapsed()));
                if rep == 0 {
                    let info = bf_info(&mut c, KEY_BIG);
                    assert_size(&info, capacity, pair.names[i]);
                }
                assert_eq!(int(&mut c, &["DEL", KEY_BIG]), 1, "DEL {KEY_BIG}");
            }
            let reserve = cmdstat(&mut c, "bf.reserve");
            let del = cmdstat(&mut c, "del");
            let n = cfg.reserve_repeats as u64;
            check_calls(&reserve, "bf.reserve", n, 0, pair.names[i]);
            check_calls(&del, "del", n, 0, pair.names[i]);
            wait_lazyfree(&mut c);
            (
                reserve.usec as f64 / n as f64,
                summary(&latencies).1,
                del.usec as f64 / n as f64,
            )
        });
        println!(
            "  {w_reserve}: BF.RESERVE {:.0} vs {:.0} µs/call, latency {:.2} vs {:.2} ms; DEL {:.0} vs {:.0} µs/call",
            r[0].0, r[1].0, r[0].1, r[1].1, r[0].2, r[1].2
        );
        results.record(
            &w_reserve,
            "BF.RESERVE usec_per_call",
            "µs",
            Kind::Cost,
            (r[0].0, r[1].0),
        );
        results.record(
            &w_reserve,
            "BF.RESERVE client latency",
            "ms",
            Kind::Cost,
            (r[0].1, r[1].1),
        );
        results.record(
            &w_reserve,
            "DEL usec_per_call",
            "µs",
            Kind::Cost,
            (r[0].2, r[1].2),
        );

        // A big filter with half of its bits set, the same on both.
        let t = Instant::now();
        pair.both(round, |_, s| load_big(&mut s.raw(), capacity, &layout));
        println!("  loaded {label} of data into both in {:.1?}", t.elapsed());
        let infos = pair.both(round, |_, s| bf_info(&mut s.raw(), KEY_BIG));
        assert_eq!(infos[0], infos[1], "the big filters differ in BF.INFO");

        // 6. DEBUG RELOAD: save an RDB and load it back.
        let r = pair.both(round, |i, s| {
            let mut c = s.raw();
            reset_stats(&mut c);
            let t = Instant::now();
            expect_ok(&mut c, &["DEBUG", "RELOAD"]);
            let client = ms(t.elapsed());
            let stat = cmdstat(&mut c, "debug");
            check_calls(&stat, "debug", 1, 0, pair.names[i]);
            assert_eq!(
                bf_info(&mut c, KEY_BIG),
                infos[i],
                "{}: BF.INFO changed by RELOAD",
                pair.names[i]
            );
            (stat.usec as f64, client)
        });
        println!(
            "  {w_reload}: {:.0} vs {:.0} ms (server), {:.0} vs {:.0} ms (client)",
            r[0].0 / 1e3,
            r[1].0 / 1e3,
            r[0].1,
            r[1].1
        );
        results.record(
            &w_reload,
            "usec_per_call (debug)",
            "µs",
            Kind::Cost,
            (r[0].0, r[1].0),
        );
        results.record(&w_reload, "client time", "ms", Kind::Cost, (r[0].1, r[1].1));

        // 5. SCANDUMP of the whole filter (also checks that RELOAD kept it).
        let r = pair.both(round, |i, s| {
            let mut c = s.raw();
            reset_stats(&mut c);
            let t = Instant::now();
            let (got, hash, waited) = scandump(&mut c, KEY_BIG);
            let total = t.elapsed();
            let stat = cmdstat(&mut c, "bf.scandump");
            let calls = got.chunks.len() as u64 + 2;
            check_calls(&stat, "bf.scandump", calls, 0, pair.names[i]);
            let name = pair.names[i];
            assert_eq!(got.chunks, layout.chunks, "{name}: SCANDUMP chunk layout");
            assert_eq!(got.header, layout.header, "{name}: SCANDUMP header");
            assert_eq!(
                hash, expected_hash,
                "{name}: SCANDUMP data differ from what was loaded"
            );
            (stat.usec as f64 / stat.calls as f64, ms(waited), ms(total))
        });
        println!(
            "  {w_scandump}: {:.0} vs {:.0} µs/call, {:.0} vs {:.0} ms in calls",
            r[0].0, r[1].0, r[0].1, r[1].1
        );
        results.record(
            &w_scandump,
            "usec_per_call",
            "µs",
            Kind::Cost,
            (r[0].0, r[1].0),
        );
        results.record(
            &w_scandump,
            "client time, whole stream",
            "ms",
            Kind::Cost,
            (r[0].1, r[1].1),
        );

        // 8. UNLINK: how long the server is blocked.
        let r = pair.both(round, |i, s| {
            let mut c = s.raw();
            reset_stats(&mut c);
            let t = Instant::now();
            assert_eq!(int(&mut c, &["UNLINK", KEY_BIG]), 1, "UNLINK {KEY_BIG}");
            let client = ms(t.elapsed());
            let background = wait_lazyfree(&mut c);
            let stat = cmdstat(&mut c, "unlink");
            check_calls(&stat, "unlink", 1, 0, pair.names[i]);
            (stat.usec as f64, client, ms(background))
        });
        println!(
            "  {w_unlink}: {:.0} vs {:.0} µs (server), {:.2} vs {:.2} ms (client); lazy free done {:.0} vs {:.0} ms later",
            r[0].0, r[1].0, r[0].1, r[1].1, r[0].2, r[1].2
        );
        results.record(
            &w_unlink,
            "usec_per_call",
            "µs",
            Kind::Cost,
            (r[0].0, r[1].0),
        );
        results.record(
            &w_unlink,
            "client latency",
            "ms",
            Kind::Cost,
            (r[0].1, r[1].1),
        );
    }
}

// ---------------------------------------------------------------------------
// Phase: what fill tracking costs

/// The first `set_fraction` in BF.STATS (a FerroBloom command: the share
/// of set bits of the first link, from the tracked count), if it answers.
fn set_fraction(c: &mut RawClient, key: &str) -> Option<f64> {
    fn find(r: &Resp) -> Option<f64> {
        let items: Vec<&Resp> = match r {
            Resp::Array(v) => v.iter().collect(),
            Resp::Map(m) => m.iter().flat_map(|(k, v)| [k, v]).collect(),
            _ => return None,
        };
        for (i, f) in items.iter().enumerate() {
            if f.as_str().as_deref() == Some("set_fraction") {
                return match items.get(i + 1)? {
                    Resp::Double(s) => s.parse().ok(),
                    other => other.as_str()?.parse().ok(),
                };
            }
            if let Some(v) = find(f) {
                return Some(v);
            }
        }
        None
    }
    find(&decode(&c.cmd(&["BF.STATS", key])))
}

fn phase_tracking(cfg: &Config, tracking: &mut Results) {
    println!("\n== fill tracking: FerroBloom vs FerroBloom --features untracked-fill");
    if !cfg.untracked_module.is_file() {
        tracking.note(format!(
            "fill tracking not measured: {} is missing (build it with \
             `cargo build --release -p ferrobloom --features untracked-fill --target-dir target/untracked`, \
             as `make bench` does)",
            cfg.untracked_module.display()
        ));
        return;
    }
    let pair = Pair::start(
        cfg,
        ["tracked", "untracked"],
        [
            ModuleKind::FerroBloom,
            ModuleKind::Path(cfg.untracked_module.clone()),
        ],
    );
    let p10 = cfg.prefill.0;
    let w = ItemWorkload {
        name: "BF.ADD 10M".into(),
        key: KEY_10M,
        command: "BF.ADD",
        items: 1,
        range: RANGE,
        calls: cfg.single,
        adds: true,
        reserved: Some(CAP_10M),
    };
    for round in 0..cfg.tracking_rounds {
        println!("round {}/{}", round + 1, cfg.tracking_rounds);
        let fill = pair.both(round, |_, s| {
            let mut c = s.raw();
            (int(&mut c, &["EXISTS", KEY_10M]) == 1).then(|| bf_info(&mut c, KEY_10M).items)
        });
        if fill
            .iter()
            .any(|f| f.is_none_or(|n| n as u64 + w.items_per_round() > CAP_10M * 9 / 10))
        {
            pair.both(round, |_, s| {
                fresh_reserved(&mut s.raw(), KEY_10M, CAP_10M, p10)
            });
            // The untracked build must really not count: its share of set
            // bits stays 0 however many items it holds.
            match pair.both(round, |_, s| set_fraction(&mut s.raw(), KEY_10M)) {
                [Some(tracked), Some(untracked)] => {
                    assert!(
                        tracked > 0.0,
                        "the tracked build counts no set bits after adds"
                    );
                    assert!(
                        untracked == 0.0,
                        "{} counts set bits (set_fraction {untracked}): not an untracked-fill build",
                        cfg.untracked_module.display()
                    );
                }
                _ => tracking.note(
                    "BF.STATS did not answer: could not check that the untracked build \
                     does not count set bits"
                        .into(),
                ),
            }
        }
        let r = pair.both(round, |i, s| run_items(cfg, s, pair.names[i], i, &w, round));
        print_round(&pair, &w.name, &r);
        record_items(tracking, &w, &r);
    }
}

// ---------------------------------------------------------------------------
// Environment description

struct Environment {
    cpu: String,
    cores: usize,
    ram: String,
    kernel: String,
    os: String,
    redis: String,
    redisbloom: String,
    ferrobloom: String,
    date: String,
    load_start: String,
    load_end: String,
}

fn read(path: &str) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(ROOT)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn loadavg() -> String {
    read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `ver` of the `bf` module in MODULE LIST, as x.y.z.
fn module_version(c: &mut RawClient) -> String {
    let Resp::Array(modules) = call(c, &["MODULE", "LIST"]) else {
        return "?".into();
    };
    for m in modules {
        let Resp::Array(fields) = m else { continue };
        let get = |k: &str| {
            fields
                .chunks(2)
                .find(|p| p[0].as_str().as_deref() == Some(k))
                .map(|p| p[1].clone())
        };
        if let (Some(Resp::Bulk(name)), Some(Resp::Int(v))) = (get("name"), get("ver")) {
            if name == b"bf" {
                return format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
            }
        }
    }
    "?".into()
}

/// The module file, relative to the repository when inside it.
fn module_path(kind: ModuleKind) -> String {
    let path = kind.path().unwrap_or_default();
    let shown = path.strip_prefix(ROOT).unwrap_or(&path);
    format!("`{}`", shown.display())
}

fn environment(cfg: &Config) -> Environment {
    let cpuinfo = read("/proc/cpuinfo");
    let cpu =
        info_field(&cpuinfo.replace('\t', ""), "model name").unwrap_or_else(|| "unknown".into());
    let ram = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0))
        .unwrap_or_else(|| "unknown".into());
    let os = read("/etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_default();
    let commit = command_output("git", &["rev-parse", "--short=12", "HEAD"])
        .unwrap_or_else(|| "unknown".into());
    let dirty = command_output("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    let (redis, redisbloom, fb_version) = {
        let server = Server::start(
            ServerOpts::new(ModuleKind::RedisBloom).server_binary(cfg.redis_server.clone()),
        );
        let mut c = server.raw();
        let redis = info_field(&info(&mut c, "server"), "redis_version").unwrap_or_default();
        let rb = module_version(&mut c);
        drop(c);
        let fb = Server::start(
            ServerOpts::new(ModuleKind::FerroBloom).server_binary(cfg.redis_server.clone()),
        );
        let fb_version = module_version(&mut fb.raw());
        (redis, rb, fb_version)
    };
    Environment {
        cpu,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        ram,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        os,
        redis: format!("{redis} ({})", cfg.redis_server.display()),
        redisbloom: format!(
            "{redisbloom} (MODULE LIST ver), {}",
            module_path(ModuleKind::RedisBloom)
        ),
        ferrobloom: format!(
            "{} {commit}{} (reports ver {fb_version}), {}",
            env!("CARGO_PKG_VERSION"),
            if dirty {
                " with uncommitted changes"
            } else {
                ""
            },
            module_path(ModuleKind::FerroBloom)
        ),
        date: command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_default(),
        load_start: loadavg(),
        load_end: String::new(),
    }
}

// ---------------------------------------------------------------------------
// Report

struct Target {
    label: &'static str,
    /// (workload, metric) pairs that must all meet it.
    metrics: Vec<(&'static str, &'static str)>,
    max_ratio: f64,
}

fn targets() -> Vec<Target> {
    let usec = "usec_per_call";
    vec![
        Target {
            label: "BF.ADD on the 100M filter ≤ 0.5",
            metrics: vec![("BF.ADD 100M", usec)],
            max_ratio: 0.5,
        },
        Target {
            label: "BF.EXISTS on the 100M filter ≤ 0.6",
            metrics: vec![("BF.EXISTS 100M", usec)],
            max_ratio: 0.6,
        },
        Target {
            label: "BF.MADD of 100 items ≤ 0.4",
            metrics: vec![("BF.MADD×100 10M", usec), ("BF.MADD×100 100M", usec)],
            max_ratio: 0.4,
        },
        Target {
            label: "BF.MEXISTS of 100 items ≤ 0.4",
            metrics: vec![("BF.MEXISTS×100 10M", usec), ("BF.MEXISTS×100 100M", usec)],
            max_ratio: 0.4,
        },
        Target {
            label: "default (small, scaling) filter ≤ 0.8",
            metrics: vec![("BF.ADD default", usec), ("BF.EXISTS default", usec)],
            max_ratio: 0.8,
        },
    ]
}

fn target_of(workload: &str, metric: &str) -> Option<f64> {
    targets()
        .into_iter()
        .find(|t| t.metrics.iter().any(|&(w, m)| w == workload && m == metric))
        .map(|t| t.max_ratio)
}

fn fmt_value(v: f64, unit: &str) -> String {
    let unit = if unit == "ops/s" { "/s" } else { unit };
    if v >= 10_000.0 {
        let digits = format!("{v:.0}");
        let mut grouped = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(ch);
        }
        return format!("{grouped} {unit}");
    }
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else if v >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$} {unit}")
}

fn fmt_ratio(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

fn markdown(
    cfg: &Config,
    env: &Environment,
    results: &Results,
    tracking: &Results,
    chart: Option<&str>,
) -> String {
    let mut md = String::new();
    let w = &mut md;
    let _ = writeln!(w, "# Performance: FerroBloom vs RedisBloom 2.8.2\n");
    let _ = writeln!(
        w,
        "Generated by `cargo bench --bench system` (`make bench`): {} round(s){}. \
         Ratios are FerroBloom / RedisBloom per round, shown as min / median / max over the rounds. \
         For times (µs, ms) and bytes, **lower is better** (a ratio below 1 means FerroBloom is faster); \
         for throughput (ops/s), **higher is better** (above 1 means FerroBloom serves more).\n",
        cfg.rounds,
        if cfg.quick {
            ", **quick run** (BENCH_QUICK=1: fewer requests, smaller filters), not a reference measurement"
        } else {
            ""
        }
    );
    if let Some(png) = chart {
        let _ = writeln!(w, "![FerroBloom / RedisBloom ratios]({png})\n");
    }
    let _ = writeln!(w, "## Machine and versions\n");
    let _ = writeln!(w, "| | |\n|---|---|");
    let _ = writeln!(w, "| Date | {} |", env.date);
    let _ = writeln!(w, "| CPU | {} ({} cores) |", env.cpu, env.cores);
    let _ = writeln!(w, "| RAM | {} |", env.ram);
    let _ = writeln!(w, "| OS, kernel | {}, Linux {} |", env.os, env.kernel);
    let _ = writeln!(
        w,
        "| Load average (1, 5, 15 min) | at start {}; at end {} |",
        env.load_start, env.load_end
    );
    let _ = writeln!(w, "| redis-server | {} |", env.redis);
    let _ = writeln!(w, "| RedisBloom | {} |", env.redisbloom);
    let _ = writeln!(w, "| FerroBloom | {} |", env.ferrobloom);
    let _ = writeln!(w);

    let _ = writeln!(w, "## Targets\n");
    let _ = writeln!(
        w,
        "Judged on the median ratio of server-side `usec_per_call` (the worst round is shown too).\n"
    );
    let _ = writeln!(
        w,
        "| Target | Measured (median; worst round) | Result |\n|---|---|---|"
    );
    for t in targets() {
        let found: Vec<&Metric> = t
            .metrics
            .iter()
            .filter_map(|&(wl, m)| results.get(wl, m))
            .collect();
        if found.len() < t.metrics.len() {
            let _ = writeln!(w, "| {} | not measured | — |", t.label);
            continue;
        }
        let measured: Vec<String> = found
            .iter()
            .map(|m| {
                let (_, med, max) = m.ratio_summary();
                format!("{}: {}; {}", m.workload, fmt_ratio(med), fmt_ratio(max))
            })
            .collect();
        let pass = found.iter().all(|m| m.ratio_summary().1 <= t.max_ratio);
        let _ = writeln!(
            w,
            "| {} | {} | {} |",
            t.label,
            measured.join("<br>"),
            if pass { "PASS" } else { "**FAIL**" }
        );
    }
    if !results.metrics.is_empty() {
        let offenders: Vec<String> = results
            .metrics
            .iter()
            .filter(|m| !m.a_not_worse())
            .map(|m| {
                format!(
                    "{} / {}: {}",
                    m.workload,
                    m.metric,
                    fmt_ratio(m.ratio_summary().1)
                )
            })
            .collect();
        let _ = writeln!(
            w,
            "| Nothing worse than RedisBloom: every time and memory ratio ≤ 1.0, every throughput ratio ≥ 1.0 (pipelined included) | {} | {} |",
            if offenders.is_empty() {
                format!("all {} metrics", results.metrics.len())
            } else {
                offenders.join("<br>")
            },
            if offenders.is_empty() { "PASS" } else { "**FAIL**" }
        );
    }
    let _ = writeln!(
        w,
        "\nWhere the time of a BF.ADD or BF.EXISTS goes, the floor this machine's memory puts under \
         it, and why some targets cannot be met here: [profile.md](profile.md).\n"
    );

    let _ = writeln!(w, "## Results\n");
    let _ = writeln!(
        w,
        "FerroBloom and RedisBloom columns are medians over the rounds.\n"
    );
    let _ = writeln!(
        w,
        "| Workload | Metric | FerroBloom | RedisBloom | Ratio min | Ratio median | Ratio max |\n|---|---|---:|---:|---:|---:|---:|"
    );
    for m in &results.metrics {
        let (a, b) = m.medians();
        let (lo, med, hi) = m.ratio_summary();
        let better = match m.kind {
            Kind::Cost => "lower is better",
            Kind::Throughput => "higher is better",
        };
        let _ = writeln!(
            w,
            "| {} | {} ({better}) | {} | {} | {} | {} | {} |",
            m.workload,
            m.metric,
            fmt_value(a, m.unit),
            fmt_value(b, m.unit),
            fmt_ratio(lo),
            fmt_ratio(med),
            fmt_ratio(hi)
        );
    }
    let _ = writeln!(w);

    let _ = writeln!(w, "## Cost of fill tracking\n");
    let _ = writeln!(
        w,
        "FerroBloom counts the bits each add sets, so that fill and the estimated false positive rate \
         are known without scanning. Measured against a build without the counting \
         (`--features untracked-fill`, which enables `ferrobloom-core/untracked-fill`), alternately, \
         BF.ADD on the 10M filter. Ratio = tracked / untracked (above 1: what tracking costs).\n"
    );
    if tracking.metrics.is_empty() {
        let _ = writeln!(w, "Not measured.\n");
    } else {
        let _ = writeln!(
            w,
            "| Workload | Metric | Tracked | Untracked | Ratio min | Ratio median | Ratio max |\n|---|---|---:|---:|---:|---:|---:|"
        );
        for m in &tracking.metrics {
            let (a, b) = m.medians();
            let (lo, med, hi) = m.ratio_summary();
            let _ = writeln!(
                w,
                "| {} | {} | {} | {} | {} | {} | {} |",
                m.workload,
                m.metric,
                fmt_value(a, m.unit),
                fmt_value(b, m.unit),
                fmt_ratio(lo),
                fmt_ratio(med),
                fmt_ratio(hi)
            );
        }
        if let Some(m) = tracking.get("BF.ADD 10M", "usec_per_call") {
            let (_, med, _) = m.ratio_summary();
            let _ = writeln!(
                w,
                "\nMedian: fill tracking changes BF.ADD's server time by {:+.1}% \
                 (noise on this scale is a few percent; look at min and max too).",
                (med - 1.0) * 100.0
            );
        }
        let _ = writeln!(w);
    }

    let notes: Vec<&String> = results.notes.iter().chain(&tracking.notes).collect();
    if !notes.is_empty() {
        let _ = writeln!(w, "## Notes from this run\n");
        for n in notes {
            let _ = writeln!(w, "- {n}");
        }
        let _ = writeln!(w);
    }

    let (s0, s1) = cfg.single;
    let (m0, m1) = cfg.multi;
    let _ = writeln!(w, "## Method\n");
    let _ = writeln!(
        w,
        "- Both modules run in the same `redis-server` binary (`--save ''`, `--appendonly no`, \
         127.0.0.1, a fresh directory each), started by the benchmark and stopped by PID. \
         Each workload runs on one server and then on the other, the order swapped every round; \
         `CONFIG RESETSTAT` precedes each measured run.\n\
         - **usec_per_call**: server-side, `usec / calls` of the command in `INFO commandstats`, over the \
         unpipelined and pipelined runs together. It includes what Redis does around the module \
         (dispatch, key lookup, reply): *BF.CARD 100M (baseline)*, an O(1) call, shows that floor. \
         **ops/s**: `redis-benchmark -c {CLIENTS} -r <range>` with `__rand_int__` in the items, \
         without pipelining ({s0} requests; BF.MADD/BF.MEXISTS {m0} calls of 100 items) and with \
         `-P {PIPELINE}` ({s1} requests; {m1} calls). Every run's call count and `failed_calls = 0` are checked.\n\
         - **default**: the key is created by BF.ADD (capacity 100, error 0.01, expansion 2) and gets \
         new random items, so it scales out many times. **10M / 100M**: `BF.RESERVE k 0.001 10000000` \
         (about {:.0} MB) and `BF.RESERVE k 0.001 100000000` (about {:.0} MB), preloaded with \
         `item:000000000000`… ({} and {} items; rebuilt so when a round could fill them past 90%). \
         Adds draw new items (a tag per run, then 12 random digits from 10^8); lookups draw \
         `item:` + 12 digits from twice the preloaded range, so about half are present. \
         The filters never scale out (checked).\n\
         - **{big}**: `BF.RESERVE k 0.001 {cap}`. *BF.RESERVE + DEL*: {reps} times per round, after one untimed pair on each server (a process's first big allocation maps new address space). \
         Then the filter's bits are written with BF.LOADCHUNK (pseudo-random, half set, as at capacity) \
         and the same filter is reloaded (`DEBUG RELOAD`: RDB save and load, with Redis' default \
         `rdbcompression yes`), dumped whole (`BF.SCANDUMP`, 16 MiB chunks; the data are checked \
         against what was loaded) and deleted (`UNLINK`; the client latency is the time the server \
         is blocked: RedisBloom frees synchronously, FerroBloom on the lazy-free thread).\n\
         - **Memory per item**: `MEMORY USAGE` divided by the items held, for a default filter that got \
         the same {} items on both servers, and by the capacity for the 10M and 100M filters.\n\
         - **Fill tracking**: {} rounds.\n",
        expected_size(CAP_10M) / 1e6,
        expected_size(CAP_100M) / 1e6,
        cfg.prefill.0,
        cfg.prefill.1,
        cfg.memory_items,
        cfg.tracking_rounds,
        big = cfg.big_label(),
        cap = (cfg.big_bytes as f64 * 8.0 / bits_per_item(ERROR / 2.0)).floor() as u64,
        reps = cfg.reserve_repeats,
    );
    let _ = writeln!(w, "## How to rerun\n");
    let _ = writeln!(
        w,
        "```sh\nmake bench                     # deps, oracle, release builds, then the core and system benchmarks\n\
         BENCH_ROUNDS=9 make bench      # more rounds\n\
         BENCH_QUICK=1 make bench       # a short run (the system benchmark writes to target/bench-system/)\n\
         cargo bench --bench system     # the system benchmark alone, with the modules already built\n```\n\n\
         Other knobs: `BENCH_ONLY=small,big,tracking`, `BENCH_REQUESTS`, `BENCH_BIG_MB`, \
         `BENCH_TRACKING_ROUNDS`, `BENCH_OUT` (see `benches/system.rs`). \
         The raw rounds of the last run are in `target/bench-system/rounds.csv`. \
         Run on an otherwise idle machine: with 2 cores, the server, redis-benchmark and anything \
         else share them."
    );
    md
}

fn write_csv(cfg: &Config, results: &Results, tracking: &Results) {
    // Text fields quoted (metric names hold commas); `first`: the side
    // measured first in that round (see `Pair::both`).
    let quote = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    let mut csv = String::from("comparison,workload,metric,unit,round,first,a,b,ratio\n");
    for (name, res) in [
        ("ferrobloom/redisbloom", results),
        ("tracked/untracked", tracking),
    ] {
        for m in &res.metrics {
            for (i, (a, b)) in m.rounds.iter().enumerate() {
                let _ = writeln!(
                    csv,
                    "{name},{},{},{},{},{},{a},{b},{}",
                    quote(&m.workload),
                    quote(&m.metric),
                    quote(m.unit),
                    i + 1,
                    if i % 2 == 0 { "a" } else { "b" },
                    a / b
                );
            }
        }
    }
    if let Some(dir) = cfg.csv.parent() {
        fs::create_dir_all(dir).expect("create target/bench-system");
    }
    fs::write(&cfg.csv, csv).expect("write rounds.csv");
}

// ---------------------------------------------------------------------------
// Chart

mod chart {
    use super::{fmt_ratio, target_of, Kind, Metric};
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    use std::error::Error;
    use std::path::Path;

    const GOOD: RGBColor = RGBColor(46, 160, 67);
    const BAD: RGBColor = RGBColor(214, 39, 40);
    const TARGET: RGBColor = RGBColor(31, 119, 180);
    const ROW: u32 = 30;
    const WIDTH: u32 = 1800;

    struct Bar {
        label: String,
        min: f64,
        median: f64,
        max: f64,
        good: bool,
        target: Option<f64>,
    }

    /// The axis shows ratios from AXIS_MIN to AXIS_MAX at most; bars
    /// beyond are cut at the edge and their label says "off scale".
    const AXIS_MIN: f64 = 0.03;
    const AXIS_MAX: f64 = 30.0;

    /// 1, 2 and 5 times the powers of ten within the range.
    fn key_points(lo: f64, hi: f64) -> Vec<f64> {
        let mut points = Vec::new();
        let mut decade = 10f64.powi(lo.log10().floor() as i32);
        while decade <= hi {
            for m in [1.0, 2.0, 5.0] {
                let v = decade * m;
                if v >= lo && v <= hi {
                    points.push(v);
                }
            }
            decade *= 10.0;
        }
        points
    }

    fn axis_label(v: f64) -> String {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }

    fn bars(metrics: &[Metric], kind: Kind) -> Vec<Bar> {
        metrics
            .iter()
            .filter(|m| m.kind == kind)
            .map(|m| {
                let (min, median, max) = m.ratio_summary();
                Bar {
                    label: format!("{} · {}", m.workload, m.metric),
                    min,
                    median,
                    max,
                    good: m.a_not_worse(),
                    target: target_of(&m.workload, &m.metric),
                }
            })
            .collect()
    }

    pub fn draw(path: &Path, title: &str, metrics: &[Metric]) -> Result<(), Box<dyn Error>> {
        plotters::style::register_font("sans-serif", FontStyle::Normal, super::FONT)
            .map_err(|_| "the bundled font does not load")?;
        let cost = bars(metrics, Kind::Cost);
        let throughput = bars(metrics, Kind::Throughput);
        let rows = cost.len().max(throughput.len()).max(1) as u32;
        let height = 120 + rows * ROW;
        let full = BitMapBackend::new(path, (WIDTH, height)).into_drawing_area();
        full.fill(&WHITE)?;
        let body = full.titled(title, ("sans-serif", 24))?;
        let (body, legend) = body.split_vertically(height - 75);
        let (left, right) = body.split_horizontally(WIDTH / 2);
        panel(
            &full,
            &left,
            "Time and memory: FerroBloom / RedisBloom (lower is better)",
            &cost,
        )?;
        panel(
            &full,
            &right,
            "Throughput: FerroBloom / RedisBloom ops/s (higher is better)",
            &throughput,
        )?;
        legend.draw(&Text::new(
            "Bars run from 1.0 to the median ratio over the rounds; whiskers span min to max; \
             green: FerroBloom better or equal, red: worse; blue ticks: targets. Log scale.",
            (20, 8),
            ("sans-serif", 15),
        ))?;
        full.present()?;
        Ok(())
    }

    fn panel(
        full: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
        area: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
        caption: &str,
        bars: &[Bar],
    ) -> Result<(), Box<dyn Error>> {
        if bars.is_empty() {
            area.draw(&Text::new(
                format!("{caption}: not measured"),
                (20, 20),
                ("sans-serif", 16),
            ))?;
            return Ok(());
        }
        let n = bars.len();
        let targets = bars.iter().filter_map(|b| b.target);
        let lo = bars
            .iter()
            .map(|b| b.min)
            .chain(targets.clone())
            .fold(0.5, f64::min)
            .max(AXIS_MIN)
            / 1.4;
        let hi = bars
            .iter()
            .map(|b| b.max)
            .chain(targets)
            .fold(2.0, f64::max)
            .min(AXIS_MAX)
            * 1.6;
        let clip = |v: f64| v.clamp(lo, hi);
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 17))
            .margin(12)
            .margin_right(24)
            .x_label_area_size(36)
            .y_label_area_size(330)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(key_points(lo, hi)),
                -0.5f64..(n as f64 - 0.5),
            )?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .y_label_formatter(&|_| String::new())
            .light_line_style(TRANSPARENT)
            .bold_line_style(BLACK.mix(0.15))
            .x_label_formatter(&|v| axis_label(*v))
            .x_label_style(("sans-serif", 13))
            .draw()?;
        let top = n as f64 - 0.5;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(1.0, -0.5), (1.0, top)],
            BLACK.stroke_width(2),
        )))?;
        for (i, b) in bars.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let color = if b.good { GOOD } else { BAD };
            chart.draw_series(std::iter::once(Rectangle::new(
                [(1.0, y - 0.3), (clip(b.median), y + 0.3)],
                color.mix(0.85).filled(),
            )))?;
            let whisker = BLACK.stroke_width(1);
            let (min, max) = (clip(b.min), clip(b.max));
            chart.draw_series([
                PathElement::new(vec![(min, y), (max, y)], whisker),
                PathElement::new(vec![(min, y - 0.18), (min, y + 0.18)], whisker),
                PathElement::new(vec![(max, y - 0.18), (max, y + 0.18)], whisker),
            ])?;
            // Targets are ratios of time: a throughput bar has none.
            if let Some(t) = b.target {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(t, y - 0.42), (t, y + 0.42)],
                    TARGET.stroke_width(3),
                )))?;
            }
            let right_end = max.max(clip(b.median)).max(1.0);
            let off_scale = clip(b.median) != b.median;
            chart.draw_series(std::iter::once(Text::new(
                format!(
                    "{}{}",
                    fmt_ratio(b.median),
                    if off_scale { " (off scale)" } else { "" }
                ),
                (right_end * 1.06, y),
                ("sans-serif", 13)
                    .into_font()
                    .into_text_style(area)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            )))?;
            let (px, py) = chart.backend_coord(&(lo, y));
            full.draw(&Text::new(
                b.label.clone(),
                (px - 8, py),
                ("sans-serif", 13)
                    .into_font()
                    .into_text_style(full)
                    .pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not, and
    // must not start a 20-minute run.
    if !std::env::args().any(|a| a == "--bench") {
        println!("system benchmark: skipped (run it with `cargo bench --bench system`)");
        return;
    }
    let started = Instant::now();
    let cfg = Config::from_env();
    println!(
        "system benchmark: {} round(s){}, phases {:?}, output {}",
        cfg.rounds,
        if cfg.quick { ", quick" } else { "" },
        cfg.phases,
        cfg.out_dir.display()
    );
    assert!(
        cfg.redis_benchmark.is_file(),
        "{} not found; run `make deps`",
        cfg.redis_benchmark.display()
    );
    let mut env = environment(&cfg);
    let mut results = Results::default();
    let mut tracking = Results::default();
    if cfg.runs("small") {
        phase_small(&cfg, &mut results);
    }
    if cfg.runs("big") {
        phase_big(&cfg, &mut results);
    }
    if cfg.runs("tracking") {
        phase_tracking(&cfg, &mut tracking);
    }
    env.load_end = loadavg();

    write_csv(&cfg, &results, &tracking);
    fs::create_dir_all(&cfg.out_dir).expect("create the output directory");
    let png = cfg.out_dir.join("performance.png");
    let chart_ok = match chart::draw(
        &png,
        &format!(
            "FerroBloom vs RedisBloom {}, {} round(s){}",
            env.redisbloom.split(' ').next().unwrap_or(""),
            cfg.rounds,
            if cfg.quick { ", quick run" } else { "" }
        ),
        &results.metrics,
    ) {
        Ok(()) => true,
        Err(e) => {
            results.note(format!("chart not drawn: {e}"));
            false
        }
    };
    let md = markdown(
        &cfg,
        &env,
        &results,
        &tracking,
        chart_ok.then_some("performance.png"),
    );
    let md_path = cfg.out_dir.join("performance.md");
    fs::write(&md_path, &md).expect("write performance.md");
    println!("\n{md}");
    println!(
        "wrote {}, {} and {} in {:.1?}",
        md_path.display(),
        png.display(),
        cfg.csv.display(),
        started.elapsed()
    );
}
