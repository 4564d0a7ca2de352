//! The measured run shared by phases `topk` and `tdigest`: the same
//! commands sent to two servers in alternating chunks, each reply checked,
//! the replies that must agree hashed and compared between the servers, and
//! the measured command's server time taken robustly from INFO
//! commandstats (the method of phase `cms`, see `cms::run`).
//!
//! A workload is a sequence of steps drawn from a seed. A step is one or
//! more commands, exactly one of which is the measured command (the
//! commandstats name of [`Op::stat`]): a read after each add sends
//! `[ADD, read]` and measures the read alone.

use super::Rng;
use crate::common::RawClient;
use crate::measurement::{check_calls, cmdstat, reset_stats};
use crate::results::summary;
use crate::servers::Pair;

/// Steps per round trip in the second run of each workload.
pub const PER_TRIP: usize = 32;
/// Chunks per run, sent to the two servers in turn.
pub const CHUNKS: usize = 40;

/// What one workload sends and how its replies are judged.
pub trait Op {
    /// The commandstats name of the measured command.
    fn stat(&self) -> &'static str;
    /// One step, drawn from `rng`: the commands in order, the measured one
    /// exactly once.
    fn step(&self, rng: &mut Rng) -> Vec<Vec<String>>;
    /// Panics unless `raw` is a well-formed reply to `cmd`; says how the
    /// two servers' replies are compared.
    fn check(&self, cmd: &[String], raw: &[u8], what: &str) -> Compare;
}

/// How a reply is compared between the servers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Both must send it byte for byte ([`Measured::digest`]).
    Must,
    /// Compared for the log only ([`Measured::seen`]): replies that the
    /// modules may give differently, by design.
    Seen,
}

/// One side's result of a workload.
pub struct Measured {
    /// The robust server time per call: per run, the median over its chunks
    /// of the chunk's µs per call; the two runs weighted by calls.
    pub usec_per_call: f64,
    /// Plain `usec / calls` over both runs, for the log.
    pub mean_usec: f64,
    /// FNV-1a over every reply that must agree, in order.
    pub digest: u64,
    /// FNV-1a over the replies compared for the log only.
    pub seen: u64,
}

const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[derive(Default)]
struct Tally {
    chunk_means: Vec<f64>,
    usec: u64,
    calls: u64,
    digest: u64,
    seen: u64,
}

/// Sends `steps` to one server, `per_trip` steps per round trip, checking
/// every reply, and adds the chunk's server time of the measured command
/// to `tally`.
fn send_chunk(
    c: &mut RawClient,
    op: &dyn Op,
    steps: &[Vec<Vec<String>>],
    per_trip: usize,
    tally: &mut Tally,
    what: &str,
) {
    let before = cmdstat(c, op.stat());
    for trip in steps.chunks(per_trip) {
        let cmds: Vec<&Vec<String>> = trip.iter().flatten().collect();
        for (cmd, raw) in cmds.iter().zip(c.pipeline(&cmds)) {
            match op.check(cmd, &raw, what) {
                Compare::Must => tally.digest = fnv(tally.digest, &raw),
                Compare::Seen => tally.seen = fnv(tally.seen, &raw),
            }
        }
    }
    let after = cmdstat(c, op.stat());
    let (usec, calls) = (after.usec - before.usec, after.calls - before.calls);
    assert_eq!(calls, steps.len() as u64, "{what}: calls counted");
    tally.chunk_means.push(usec as f64 / calls as f64);
    tally.usec += usec;
    tally.calls += calls;
}

/// Runs `calls.0` steps one per round trip, then `calls.1` steps
/// `PER_TRIP` per round trip, on both servers, each run cut into `CHUNKS`
/// chunks sent to one server then the other (the order swapped every
/// chunk), so that a change of the machine's load hits both alike. The
/// same steps go to both, drawn before the run from `seed`.
pub fn run(pair: &Pair, name: &str, op: &dyn Op, calls: (u64, u64), seed: u64) -> [Measured; 2] {
    let mut clients = pair.servers.each_ref().map(|s| s.raw());
    let what = pair.names.map(|n| format!("{n} {name}"));
    let stat = op.stat();
    let mut rng = Rng(seed);
    let mut digests = [(FNV_BASIS, FNV_BASIS); 2];
    let mut totals = [(0u64, 0u64); 2];
    let mut robust = [0.0; 2];
    for (n, per_trip) in [(calls.0, 1), (calls.1, PER_TRIP)] {
        let steps: Vec<Vec<Vec<String>>> = (0..n).map(|_| op.step(&mut rng)).collect();
        for c in &mut clients {
            reset_stats(c);
        }
        let mut runs = digests.map(|(digest, seen)| Tally {
            digest,
            seen,
            ..Tally::default()
        });
        let chunk = (n as usize).div_ceil(CHUNKS).max(1);
        for (k, part) in steps.chunks(chunk).enumerate() {
            let order = if k % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                send_chunk(&mut clients[i], op, part, per_trip, &mut runs[i], &what[i]);
            }
        }
        for (i, r) in runs.iter().enumerate() {
            check_calls(&cmdstat(&mut clients[i], stat), stat, n, 0, &what[i]);
            robust[i] += n as f64 * summary(&r.chunk_means).1;
            totals[i].0 += r.usec;
            totals[i].1 += r.calls;
            digests[i] = (r.digest, r.seen);
        }
    }
    let calls = (calls.0 + calls.1) as f64;
    [0, 1].map(|i| Measured {
        usec_per_call: robust[i] / calls,
        mean_usec: totals[i].0 as f64 / totals[i].1 as f64,
        digest: digests[i].0,
        seen: digests[i].1,
    })
}

/// One line of the log per workload and round.
pub fn print_round(pair: &Pair, name: &str, r: &[Measured; 2]) {
    println!(
        "  {name:<36} {}: {:>8.3} µs/call (mean {:>8.3}) | {}: {:>8.3} µs/call (mean {:>8.3}) | ratio {:.3} (of means {:.3})",
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

/// Sends `cmds` to one server in pipelined batches, panicking on any
/// reply `ok` refuses (loading a key before a round).
pub fn load(c: &mut RawClient, cmds: &[Vec<String>], ok: impl Fn(&[u8]) -> bool, what: &str) {
    for (cmd, raw) in cmds.iter().zip(c.pipeline(cmds)) {
        assert!(
            ok(&raw),
            "{what}: {:?} replied {}",
            &cmd[..2.min(cmd.len())],
            crate::client::show(&raw)
        );
    }
}
