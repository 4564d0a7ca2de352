//! Differential tests of Count-Min sketches (CMS.*): FerroBloom against
//! RedisBloom 2.8.2, reply byte for reply byte, through the harness of
//! tests/common/differential (the same as tests/differential.rs and
//! tests/differential_cuckoo.rs).
//!
//! * `random_command_sequences`: one server with each module; the same
//!   seeded random sequences of CMS commands (INITBYDIM, INITBYPROB,
//!   INCRBY, QUERY, MERGE with and without WEIGHTS, INFO; valid and
//!   malformed: arity, non-integers, `nan`, `inf`, `0x10`, zero and huge
//!   dimensions, WEIGHTS quirks, missing keys, keys of other types) plus
//!   DUMP/RESTORE, RENAME, MULTI/EXEC, WATCH, EVAL, maxmemory and DEBUG
//!   RELOAD go to both over a RESP2 and a RESP3 connection chosen per
//!   command. Replies must be identical, as must the commands each server
//!   propagates to its replicas; every few hundred commands and at the end
//!   of each seed every key is audited (KEYS, TYPE, DUMP bytes, CMS.INFO,
//!   MEMORY USAGE, CMS.QUERY) and at the end of each seed the AOF rewrite
//!   must hold the same commands per key.
//! * `fixed_sequences`: the malformed arguments and edge values of §3.3-3.7
//!   in a fixed order, RESP2 then RESP3.
//! * `recorded_replies`: the CMS commands of the `replies` vectors (recorded
//!   from 2.8.2): 2.8.2's bytes from both modules, but for §3.9.
//! * `newer_behaviour`: the §3.9 cases, each module's own documented reply
//!   asserted (2.8.2's saturation and its overflow at exactly 2^32 − 1, its
//!   signed count; 8.12's atomic overflow, decrements, CELL_SIZE), and the
//!   data brought back together after each.
//! * `merge_weights`: §3.9's MERGE examples, which hold for 4-byte cells on
//!   both modules alike.
//! * `seeded_stress`: 2000×7 and wider sketches, thousands of increments,
//!   queries and merges, every reply and DUMP compared.
//!
//! RDB files with Count-Min sketches (and every other type) moving between
//! the two modules are tests/rdb_both_ways.rs.
//!
//! The differences accepted are exactly §3.9's ("a 2.8.2 differential test
//! must skip exactly these"), told apart by `newer::newer_case` from the
//! command and both replies: negative increments, the overflow cases of
//! CMS.INCRBY, CMS.INFO's fourth pair (the first three pairs are compared,
//! the fourth must be `cell_size 4`) and the 6-argument CMS.INITBY*. After
//! each, both replies are checked against their module's documented
//! behaviour and the keys whose data parted are given 2.8.2's data on
//! FerroBloom's server, out of the compared streams (`newer::resync`).
//! Random increments stay small, so cells reach 2^32 − 1 only through
//! merges with large weights; overflow is tested on its own.
//!
//! Exclusions (the generator never sends them): CMS.INCRBY under WATCH
//! (2.8.2 opens the key read-only, FerroBloom for writing: §9.2); COPY (2.8.2
//! refuses it), DEBUG DIGEST-VALUE and keyspace notifications (2.8.2 has
//! none of them, §1.2, §7.4); sketches of more than `MAX_CELLS` cells and
//! huge dimensions that pass 2.8.2's checks (it allocates them and Redis 7.0
//! aborts, §3.3 row 7); COMMAND INFO / GETKEYS (FerroBloom's CMS.MERGE
//! declares every key, §8); RESTORE of hand-made payloads (2.8.2 crashes on
//! several, §6.4; the decoder's own tests cover them).
//!
//! Environment: `DIFF_SEED=<n>` runs one seed (and seeds the stress),
//! `DIFF_COMMANDS=<n>` sets the commands per seed, `DIFF_KEEP_GOING=1`
//! collects every mismatch, `DIFF_STATS=1` counts the replies.

mod common;

#[path = "differential_cms/generator.rs"]
mod generator;
#[path = "differential_cms/newer.rs"]
mod newer;

use common::differential::{
    args, b, env_u64, run_random, seeds, show_reply, Args, DiffType, Op, Runner,
};
use common::{decode, dump_parts, Resp};
use newer::{Newer, NEGATIVE, OVERFLOW};

const FIXED_SEEDS: &[u64] = &[1, 2, 3, 0xC3_5C, 7_777_777];
const COMMANDS_PER_SEED: usize = 3_000;
const AUDIT_EVERY: usize = 500;
const OK: &[u8] = b"+OK\r\n";
const TYPE_REPLY: &[u8] = b"+CMSk-TYPE\r\n";

/// Integers Redis' parser refuses.
pub const BAD_INTS: &[&str] = &[
    "+5",
    "05",
    "-0",
    " 5",
    "5 ",
    "1.5",
    "1e3",
    "0x10",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "",
    "abc",
    "5\0",
    "--5",
    "nan",
    "inf",
];
/// Integers at the edges of the checks.
pub const EDGE_INTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "255",
    "256",
    "65535",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-1",
    "-9223372036854775808",
];
/// Words for INITBYPROB's numbers: refused by the double parser or the
/// range checks, or (as the error) valid down to 0.001.
pub const BAD_DOUBLES: &[&str] = &[
    "nan", "NaN", "-nan", "inf", "+inf", "-inf", "infinity", "1e309", "-1e309", "0x10", "0X1P-7",
    "1e-1", "+0.5", ".5", "5.", "1e", "0.5e", " 0.5", "0.5 ", "0.5\0", "0,5", "-0", "0.0",
    "1e-300", "0.001", "",
];

// ---------------------------------------------------------------------------
// Count-Min sketches in the generic differential runner.

/// The generator's own state: the §3.9 cases met and the keys given back
/// 2.8.2's data after them.
pub struct Cms {
    pub newer_seen: Vec<Newer>,
    pub resynced: usize,
}

pub type Diff = Runner<Cms>;

impl DiffType for Cms {
    const LABEL: &'static str = "differential_cms";
    const TYPE_REPLY: &'static [u8] = TYPE_REPLY;
    const FILTER_TYPES: &'static [&'static [u8]] =
        &[TYPE_REPLY, b"+MBbloomCF\r\n", b"+MBbloom--\r\n"];
    // Sketches have no SCANDUMP / LOADCHUNK (§8): the names are never sent,
    // so no key is ever taken for one in the middle of a load.
    const LOADCHUNK: &'static str = "CMS.LOADCHUNK";
    const STATS: &'static str = "CMS.STATS";
    const SCANDUMP: &'static str = "CMS.SCANDUMP";
    const SCANDUMP_MAX_CHUNKS: usize = 1;
    const NAME_CASE_ONE_IN: u64 = 10;
    const AUDIT_EVERY: usize = AUDIT_EVERY;
    const RELOAD_ONE_IN: u64 = 500;

    fn new(_module_args: &[&str]) -> Cms {
        Cms {
            newer_seen: Vec::new(),
            resynced: 0,
        }
    }

    /// Groups by first letter (`a…`, `w…`, `W…` 10×3, `b…` 5×2, `c…` 1×1,
    /// `d…` 200×7, the rest 3×2): a source named `weights` counts as the
    /// WEIGHTS word (§3.6 row 5), an empty and a binary key, other types.
    fn keys() -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = ["a0", "a1", "a2", "b0", "b1", "c0", "c1", "d0", "d1", "e"]
            .iter()
            .map(b)
            .collect();
        keys.extend([
            b("weights"),
            b("WEIGHTS"),
            Vec::new(),
            b(b"bin\x00\xff key"),
        ]);
        keys.extend([b("str"), b("bf"), b("cf"), b("hash")]);
        keys
    }

    fn ops() -> Vec<(u64, Op<Cms>)> {
        vec![
            (8, Diff::op_init_dim),
            (5, Diff::op_init_prob),
            (1, Diff::op_prob_words),
            (22, Diff::op_incrby),
            (12, Diff::op_query),
            (4, Diff::op_info),
            (10, Diff::op_merge),
            (3, Diff::op_arity),
            (2, Diff::op_keydel),
            (3, Diff::op_generic),
            (1, Diff::op_rename),
            (2, Diff::op_dump_restore),
            (1, Diff::op_multi),
            (1, Diff::op_watch),
            (1, Diff::op_eval),
            (1, Diff::op_oom),
        ]
    }

    fn reply_class(r: &[u8]) -> String {
        let first = r.split(|&c| c == b'\n').next().unwrap_or_default();
        match r.first() {
            Some(b'-' | b'+') => String::from_utf8_lossy(first).trim_end().to_string(),
            Some(b'*') if r.windows(9).any(|w| w == b"-CMS: INC") => {
                "array with an overflow".into()
            }
            Some(b'*') => "array".into(),
            Some(b'%') => "map".into(),
            Some(b':') if first.len() <= 4 => String::from_utf8_lossy(first).trim_end().into(),
            Some(b':') => "integer".into(),
            Some(c) => format!("type {}", *c as char),
            None => "empty".into(),
        }
    }

    fn start_seed(run: &mut Diff) {
        run.send(&args!["SET", "str", "v"]);
        run.send(&args!["BF.RESERVE", "bf", "0.01", "100"]);
        run.send(&args!["CF.RESERVE", "cf", "100"]);
        run.send(&args!["HSET", "hash", "f", "v"]);
    }

    fn reload(run: &mut Diff) {
        run.send(&args!["DEBUG", "RELOAD"]);
    }

    /// MEMORY USAGE, CMS.INFO (RESP2 or RESP3) and a query of pool items.
    fn audit_key(run: &mut Diff, key: &[u8]) {
        run.send(&args!["MEMORY", "USAGE", key]);
        let proto = run.rng.index(2);
        run.send_proto(proto, &args!["CMS.INFO", key]);
        let mut q = args!["CMS.QUERY", key];
        for _ in 0..5 {
            let it = run.item();
            q.push(it);
        }
        run.send(&q);
    }

    /// RESTORE payloads as their values: 2.8.2's AOF rewrite writes the
    /// DUMP of the key (cells LZF-compressed past 20 bytes, the server's
    /// RDB version), FerroBloom serialises the value itself (cells
    /// uncompressed, RDB version 10), docs/cms.md; both load alike. Each
    /// payload is decoded and written again in one form.
    fn aof_form(cmds: Vec<Args>) -> Vec<Args> {
        cmds.into_iter()
            .map(|mut c| {
                if c.len() == 4 && common::differential::eq_ic(&c[0], "RESTORE") {
                    if let Ok(s) = ferrobloom_core::cms::dump::load_payload(&c[3]) {
                        c[3] = ferrobloom_core::cms::dump::dump_payload(&s, 10);
                    }
                }
                c
            })
            .collect()
    }

    fn known_difference(run: &mut Diff, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
        newer::accept(run, args, rb, fb)
    }

    /// Both servers propagate the same commands (§7.2): creations and
    /// merges verbatim on success, INCRBY verbatim once its increments
    /// parsed; the §3.9 cases were read off the streams before this.
    fn compare_propagation(
        run: &mut Diff,
        line: &str,
        _fb_args: &[Vec<u8>],
        _fb_reply: &[u8],
        rb: Vec<Args>,
        fb: Vec<Args>,
    ) {
        if rb != fb {
            let what = format!("{line}   -- propagated to replicas");
            run.mismatch(
                &what,
                &common::differential::show_stream(&rb),
                &common::differential::show_stream(&fb),
            );
        }
    }
}

fn print_summary(d: &Diff) {
    println!("{}", d.ty.newer_summary());
}

#[test]
fn random_command_sequences() {
    let per_seed = env_u64("DIFF_COMMANDS").map_or(COMMANDS_PER_SEED, |n| n as usize);
    let d = run_random::<Cms>("", &[], &seeds(FIXED_SEEDS), per_seed);
    print_summary(&d);
    let chosen = env_u64("DIFF_COMMANDS").is_some() || env_u64("DIFF_SEED").is_some();
    assert!(d.total >= 15_000 || chosen, "{} commands", d.total);
    // The generator reaches what it is for: successful creations, merges
    // and increments, and each §3.9 case it sends on purpose.
    let seen = |c: Newer| d.ty.newer_seen.contains(&c);
    assert!(
        seen(Newer::InfoCellSize) && seen(Newer::NegativeIncrement) && seen(Newer::CellSizeOption),
        "{}",
        d.ty.newer_summary()
    );
}

// ---------------------------------------------------------------------------
// Fixed sequences.

/// Sends `cmds` on connection `proto` (0: RESP2, 1: RESP3), compared.
fn send_all(d: &mut Diff, proto: usize, cmds: &[Args]) {
    for c in cmds {
        d.send_proto(proto, c);
    }
}

/// The edge values and malformed arguments of §3.3-3.7, after a setup with
/// sketches of two shapes and keys of other types.
fn fixed_commands() -> Vec<Args> {
    let mut v: Vec<Args> = vec![
        args!["FLUSHALL"],
        args!["SET", "str", "v"],
        args!["HSET", "hash", "f", "v"],
        args!["BF.RESERVE", "bf", "0.01", "100"],
        args!["BF.ADD", "bf", "x"],
        args!["CF.RESERVE", "cf", "100"],
        args!["CF.ADD", "cf", "x"],
        args!["CMS.INITBYDIM", "a", "10", "3"],
        args!["CMS.INITBYDIM", "b", "10", "3"],
        args!["CMS.INITBYPROB", "p", "0.001", "0.01"],
        args!["CMS.INITBYDIM", "one", "1", "1"],
        args!["CMS.INITBYDIM", "weights", "10", "3"],
        args!["CMS.INCRBY", "a", "foo", "3", "bar", "5", "foo", "1"],
        args!["CMS.INCRBY", "b", "foo", "10", "baz", "2"],
    ];
    // INITBYDIM: arity, existing keys of any type, each number check.
    for a in [
        args!["CMS.INITBYDIM"],
        args!["CMS.INITBYDIM", "n"],
        args!["CMS.INITBYDIM", "n", "10"],
        args!["CMS.INITBYDIM", "n", "10", "3", "4"],
        args!["cms.initbydim", "a", "10", "3"],
        args!["CMS.INITBYDIM", "str", "10", "3"],
        args!["CMS.INITBYDIM", "hash", "x", "x"],
        args!["CMS.INITBYDIM", "bf", "10", "3"],
    ] {
        v.push(a);
    }
    for (w, d) in [
        ("0", "3"),
        ("-1", "3"),
        ("x", "3"),
        ("1.5", "3"),
        ("nan", "3"),
        ("inf", "3"),
        ("0x10", "3"),
        ("", "3"),
        ("+5", "3"),
        ("9223372036854775808", "1"),
        ("10", "0"),
        ("10", "-1"),
        ("10", "x"),
        ("10", "nan"),
        ("10", "0x10"),
        ("0", "0"),
        ("x", "0"),
        ("8589934592", "8589934592"),
        ("4611686018427387904", "1"),
        ("2305843009213693952", "2"),
        ("9223372036854775807", "2"),
        ("2", "9223372036854775807"),
        ("9223372036854775807", "9223372036854775807"),
        ("1", "1"),
        ("7", "05"),
    ] {
        v.push(args!["CMS.INITBYDIM", "n", w, d]);
        v.push(args!["DEL", "n"]);
    }
    // INITBYPROB: each number check, the single-precision depth edges.
    for (e, p) in [
        ("0", "0.1"),
        ("1", "0.1"),
        ("-0.5", "0.1"),
        ("nan", "0.1"),
        ("inf", "0.1"),
        ("-inf", "0.1"),
        ("1e309", "0.1"),
        ("0x10", "0.1"),
        ("x", "0.1"),
        ("0.1", "0"),
        ("0.1", "1"),
        ("0.1", "nan"),
        ("0.1", "inf"),
        ("0.1", "0x10"),
        ("0.1", "-0.1"),
        ("nan", "nan"),
        ("1e-300", "0.5"),
        ("0.5", "0.99999999"),
        ("0.5", "1e-46"),
        ("0.5", "5e-324"),
        ("0.5", "1e-45"),
        ("0.4", "1e-30"),
        ("0.3", "0.2"),
        ("0.99", "0.999999"),
        ("0x1p-7", "0.5"),
        ("2e-1", "5e-2"),
        ("0.002", "1e-5"),
    ] {
        v.push(args!["CMS.INITBYPROB", "n", e, p]);
        v.push(args!["CMS.INFO", "n"]);
        v.push(args!["DUMP", "n"]);
        v.push(args!["DEL", "n"]);
    }
    for a in [
        args!["CMS.INITBYPROB", "n", "0.1"],
        args!["CMS.INITBYPROB", "n", "0.1", "0.1", "0.1"],
        args!["CMS.INITBYPROB", "a", "0.1", "0.1"],
        args!["CMS.INITBYPROB", "str", "nan", "nan"],
    ] {
        v.push(a);
    }
    // INCRBY: arity, key before arguments, each pair's checks in order.
    for a in [
        args!["CMS.INCRBY"],
        args!["CMS.INCRBY", "a"],
        args!["CMS.INCRBY", "a", "x"],
        args!["CMS.INCRBY", "a", "x", "1", "y"],
        args!["CMS.INCRBY", "nokey", "x", "1"],
        args!["CMS.INCRBY", "nokey", "x", "nan"],
        args!["CMS.INCRBY", "str", "x", "1"],
        args!["CMS.INCRBY", "hash", "x", "bad"],
        args!["CMS.INCRBY", "a", "x", "1.0"],
        args!["CMS.INCRBY", "a", "x", "1e3"],
        args!["CMS.INCRBY", "a", "x", "nan"],
        args!["CMS.INCRBY", "a", "x", "inf"],
        args!["CMS.INCRBY", "a", "x", "0x10"],
        args!["CMS.INCRBY", "a", "x", ""],
        args!["CMS.INCRBY", "a", "x", "+1"],
        args!["CMS.INCRBY", "a", "x", "9223372036854775808"],
        args!["CMS.INCRBY", "a", "x", "1", "y", "z"],
        args!["CMS.INCRBY", "a", "x", "z", "y", "-1"],
        args!["CMS.INCRBY", "a", "x", "0"],
        args!["CMS.INCRBY", "a", "x", "1", "x", "2", "", "7", "\x00", "1"],
        args!["CMS.INCRBY", "one", "q", "4294967294"],
        args!["CMS.INCRBY", "p", "foo", "100000", "bar", "1"],
        args!["CMS.INFO", "one"],
        args!["CMS.INFO", "a"],
    ] {
        v.push(a);
    }
    // QUERY and INFO.
    for a in [
        args!["CMS.QUERY"],
        args!["CMS.QUERY", "a"],
        args!["CMS.QUERY", "nokey", "a"],
        args!["CMS.QUERY", "str", "a"],
        args![
            "CMS.QUERY",
            "a",
            "foo",
            "bar",
            "baz",
            "",
            "x",
            "\x00",
            "foo"
        ],
        args!["CMS.QUERY", "one", "q", "anything"],
        args!["CMS.QUERY", "p", "foo", "bar"],
        args!["CMS.INFO"],
        args!["CMS.INFO", "a", "b"],
        args!["CMS.INFO", "nokey"],
        args!["CMS.INFO", "str"],
        args!["CMS.INFO", "p"],
    ] {
        v.push(a);
    }
    // MERGE: arity, destination, numkeys, the WEIGHTS scan, each source's
    // checks in order, overflow, and dest among the sources.
    for a in [
        args!["CMS.MERGE"],
        args!["CMS.MERGE", "a"],
        args!["CMS.MERGE", "a", "1"],
        args!["CMS.MERGE", "nokey", "1", "a"],
        args!["CMS.MERGE", "nokey", "x", "a"],
        args!["CMS.MERGE", "str", "1", "a"],
        args!["CMS.MERGE", "a", "x", "b"],
        args!["CMS.MERGE", "a", "1.5", "b"],
        args!["CMS.MERGE", "a", "nan", "b"],
        args!["CMS.MERGE", "a", "0x10", "b"],
        args!["CMS.MERGE", "a", "0", "b"],
        args!["CMS.MERGE", "a", "-1", "b"],
        args!["CMS.MERGE", "a", "9223372036854775807", "b"],
        args!["CMS.MERGE", "a", "2", "b"],
        args!["CMS.MERGE", "a", "1", "b", "b"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "1", "2"],
        args!["CMS.MERGE", "a", "2", "b", "WEIGHTS", "1", "2"],
        args!["CMS.MERGE", "a", "1", "WEIGHTS", "b", "1"],
        args!["CMS.MERGE", "a", "1", "weights"],
        args!["CMS.MERGE", "a", "1", "weights", "WEIGHTS", "2"],
        args!["CMS.MERGE", "a", "2", "b", "weights", "WEIGHTS", "1", "1"],
        args!["CMS.MERGE", "a", "2", "weights", "b", "1", "1"],
        args!["CMS.MERGE", "a", "1", "b", "weights", "x"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHT", "1"],
        args!["CMS.MERGE", "a", "1", "b", "WeIgHtS", "3"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "x"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "1.5"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "nan"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "inf"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "0x10"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", ""],
        args!["CMS.MERGE", "a", "2", "nokey", "b", "WEIGHTS", "1", "x"],
        args!["CMS.MERGE", "a", "2", "b", "nokey", "WEIGHTS", "1", "x"],
        args!["CMS.MERGE", "a", "2", "b", "nokey"],
        args!["CMS.MERGE", "a", "2", "b", "str"],
        args!["CMS.MERGE", "a", "2", "p", "b"],
        args!["CMS.MERGE", "a", "1", "one"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "-1"],
        args!["CMS.MERGE", "a", "2", "a", "b", "WEIGHTS", "1", "-1"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "429496729"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "429496730"],
        args!["CMS.MERGE", "a", "1", "b", "WEIGHTS", "9223372036854775807"],
        args![
            "CMS.MERGE",
            "a",
            "1",
            "b",
            "WEIGHTS",
            "-9223372036854775808"
        ],
        args!["CMS.QUERY", "a", "foo", "bar", "baz"],
        args!["CMS.INFO", "a"],
        args!["CMS.MERGE", "a", "2", "a", "b"],
        args![
            "CMS.MERGE",
            "a",
            "3",
            "a",
            "a",
            "b",
            "WEIGHTS",
            "2",
            "-1",
            "0"
        ],
        args!["CMS.MERGE", "b", "2", "a", "a", "WEIGHTS", "1", "-1"],
        args!["CMS.MERGE", "weights", "2", "a", "b", "WEIGHTS", "3", "1"],
        args!["CMS.QUERY", "a", "foo", "bar", "baz"],
        args!["CMS.QUERY", "b", "foo", "bar", "baz"],
        args!["CMS.INFO", "b"],
        args!["CMS.INFO", "weights"],
    ] {
        v.push(a);
    }
    // The data, after everything.
    for key in ["a", "b", "p", "one", "weights"] {
        v.push(args!["DUMP", key]);
        v.push(args!["MEMORY", "USAGE", key]);
        v.push(args!["TYPE", key]);
        v.push(args!["OBJECT", "ENCODING", key]);
    }
    v.push(args!["DEBUG", "RELOAD"]);
    for key in ["a", "b", "p", "one", "weights"] {
        v.push(args!["DUMP", key]);
        v.push(args!["CMS.INFO", key]);
    }
    v
}

#[test]
fn fixed_sequences() {
    let mut d = Diff::new(&[]);
    let cmds = fixed_commands();
    for proto in 0..2 {
        send_all(&mut d, proto, &cmds);
        d.audit();
    }
    d.compare_aof_rewrite();
    d.finish();
    print_summary(&d);
    assert_eq!(d.ty.resynced, 0, "no §3.9 case changes data here");
}

// ---------------------------------------------------------------------------
// The recorded replies.

fn latin1(s: &str) -> Vec<u8> {
    s.chars().map(|c| c as u32 as u8).collect()
}

/// The CMS commands of the `replies` vectors, replayed after their setup
/// (its Top-K and t-digest lines left out: FerroBloom has neither), on a
/// RESP2 and a RESP3 connection: 2.8.2 gives the recorded bytes, FerroBloom
/// the same but for the §3.9 cases (the overflow element of `INCRBY cms big
/// 4294967295 a 0`, INFO's fourth pair), compared as everywhere.
#[test]
fn recorded_replies() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/core/tests/data/sketches-vectors.json"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("the vectors")).expect("JSON");
    let strings = |v: &serde_json::Value| -> Args {
        v.as_array()
            .expect("a command")
            .iter()
            .map(|a| latin1(a.as_str().expect("an argument")))
            .collect()
    };
    let setup: Vec<Args> = json["replies"]["setup"]
        .as_array()
        .expect("setup")
        .iter()
        .map(strings)
        .filter(|c| c[0].starts_with(b"CMS.") || c[0] == b"SET")
        .collect();
    let vectors: Vec<(Args, [Vec<u8>; 2])> = json["replies"]["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .map(|v| {
            let reply = |k: &str| latin1(v[k].as_str().expect("a reply"));
            (strings(&v["command"]), [reply("resp2"), reply("resp3")])
        })
        .filter(|(c, _)| c[0].starts_with(b"CMS."))
        .collect();
    assert!(vectors.len() >= 40, "{} CMS vectors", vectors.len());
    let mut d = Diff::new(&[]);
    for proto in 0..2 {
        d.send_proto(proto, &args!["FLUSHALL"]);
        send_all(&mut d, proto, &setup);
        for (cmd, replies) in &vectors {
            let r = d.send_proto(proto, cmd);
            assert_eq!(
                show_reply(&r.rb),
                show_reply(&replies[proto]),
                "2.8.2 no longer gives the recorded reply to {}",
                common::differential::show_cmd(cmd)
            );
        }
        d.audit();
    }
    d.finish();
    print_summary(&d);
    let seen = |c: Newer| d.ty.newer_seen.contains(&c);
    assert!(seen(Newer::Overflow) && seen(Newer::InfoCellSize));
}

// ---------------------------------------------------------------------------
// §3.9, each module's own behaviour.

fn ints(reply: &[u8]) -> Vec<Result<i64, String>> {
    match decode(reply) {
        Resp::Array(v) => v
            .into_iter()
            .map(|x| match x {
                Resp::Int(n) => Ok(n),
                Resp::Error(e) => Err(e),
                other => panic!("{other:?} in {}", show_reply(reply)),
            })
            .collect(),
        _ => panic!("not an array: {}", show_reply(reply)),
    }
}

fn over() -> Result<i64, String> {
    Err(String::from_utf8_lossy(&OVERFLOW[1..OVERFLOW.len() - 2]).into_owned())
}

fn under() -> Result<i64, String> {
    Err("CMS: INCRBY underflow".into())
}

/// Each server's own reply to `cmd` (RESP2), both sent through the
/// runner: a §3.9 case is recognised and the data brought back to 2.8.2's.
/// Returns (2.8.2, FerroBloom).
fn both(d: &mut Diff, cmd: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let a: Args = cmd.iter().map(b).collect();
    let rb = d.rb.conns[0].cmd(&a);
    let fb = d.fb.conns[0].cmd(&a);
    // The same command went to both: compare and resync as the runner does.
    let fb_framed = newer::accept(d, &a, &rb, fb.clone());
    assert_eq!(show_reply(&fb_framed), show_reply(&rb), "{cmd:?}");
    (rb, fb)
}

/// FerroBloom alone (2.8.2 has been brought level by `both`).
fn fb(d: &mut Diff, cmd: &[&str]) -> Vec<u8> {
    d.fb.conns[0].cmd(cmd)
}

fn info_count(reply: &[u8]) -> i64 {
    match decode(reply) {
        Resp::Array(v) => match v.as_slice() {
            [_, _, _, _, Resp::Simple(c), Resp::Int(n), ..] if c == "count" => *n,
            _ => panic!("{}", show_reply(reply)),
        },
        _ => panic!("{}", show_reply(reply)),
    }
}

#[test]
fn newer_behaviour() {
    let mut d = Diff::new(&[]);
    // A 4-byte sketch as 2.8.2 creates it, for the CELL_SIZE 4 check below.
    d.send_proto(0, &args!["CMS.INITBYDIM", "ref", "10", "3"]);

    // 5×2, §3.8 / §3.9: `a 2147483647 b 10 c 7 d 5` three times.
    d.send_proto(0, &args!["CMS.INITBYDIM", "t", "5", "2"]);
    let cmd = [
        "CMS.INCRBY",
        "t",
        "a",
        "2147483647",
        "b",
        "10",
        "c",
        "7",
        "d",
        "5",
    ];
    let cmd_args: Args = cmd.iter().map(b).collect();
    let first = d.send_proto(0, &cmd_args);
    assert_eq!(ints(&first.rb)[0], Ok(2147483647));
    let second = d.send_proto(0, &cmd_args);
    assert_eq!(
        ints(&second.fb),
        [Ok(4294967294), Ok(27), Ok(34), Ok(10)],
        "8.12's published second reply"
    );
    // The third: 2.8.2 saturates a's cells and reports overflow, 8.12
    // refuses a's increment alone.
    let rb_third = d.rb.conns[0].cmd(&cmd);
    let fb_third = d.fb.conns[0].cmd(&cmd);
    assert_eq!(ints(&fb_third), [over(), Ok(44), Ok(51), Ok(15)]);
    assert_eq!(ints(&rb_third), [over(), Ok(44), Ok(51), Ok(15)]);
    let rb_info = d.rb.conns[0].cmd(&["CMS.INFO", "t"]);
    let fb_info = d.fb.conns[0].cmd(&["CMS.INFO", "t"]);
    assert_eq!(info_count(&rb_info), 3 * (2147483647 + 22));
    assert_eq!(info_count(&fb_info), 2 * (2147483647 + 22) + 22);
    assert!(
        fb_info.ends_with(b"+cell_size\r\n:4\r\n"),
        "{}",
        show_reply(&fb_info)
    );
    let rb_q = d.rb.conns[0].cmd(&["CMS.QUERY", "t", "a"]);
    let fb_q = d.fb.conns[0].cmd(&["CMS.QUERY", "t", "a"]);
    assert_eq!(ints(&rb_q), [Ok(4294967295)], "2.8.2 saturates");
    assert_eq!(ints(&fb_q), [Ok(4294967294)], "8.12 leaves a alone");
    let _ = newer::accept(&mut d, &cmd_args, &rb_third, fb_third);
    d.audit();

    // 1×1: a count that reaches 2^32 − 1 exactly.
    d.send_proto(0, &args!["CMS.INITBYDIM", "one", "1", "1"]);
    let (rb, fbr) = both(&mut d, &["CMS.INCRBY", "one", "x", "4294967295"]);
    assert_eq!(ints(&rb), [over()], "2.8.2: overflow at exactly 2^32 − 1");
    assert_eq!(ints(&fbr), [Ok(4294967295)], "8.12: the maximum is a count");
    let (rb, fbr) = both(&mut d, &["CMS.INCRBY", "one", "x", "0"]);
    assert_eq!(ints(&rb), [over()]);
    assert_eq!(ints(&fbr), [Ok(4294967295)]);
    let (rb, fbr) = both(&mut d, &["CMS.INCRBY", "one", "x", "1", "y", "0"]);
    assert_eq!(ints(&rb), [over(), over()]);
    assert_eq!(ints(&fbr), [over(), Ok(4294967295)]);
    d.send_proto(0, &args!["CMS.QUERY", "one", "x"]);

    // Increments of 2^32 and more: 2.8.2 saturates every touched cell.
    d.send_proto(0, &args!["CMS.INITBYDIM", "wide", "3", "1"]);
    let (rb, fbr) = both(&mut d, &["CMS.INCRBY", "wide", "q", "4294967296"]);
    assert_eq!((ints(&rb), ints(&fbr)), (vec![over()], vec![over()]));
    assert_eq!(
        ints(&fb(&mut d, &["CMS.QUERY", "wide", "q"])),
        [Ok(4294967295)]
    );

    // The count: 2.8.2 wraps it and shows it signed (§3.7), 8.12 refuses.
    d.send_proto(0, &args!["CMS.INITBYDIM", "n", "1", "1"]);
    both(&mut d, &["CMS.INCRBY", "n", "x", "9223372036854775807"]);
    let fb_after_one = info_count(&fb(&mut d, &["CMS.INFO", "n"]));
    assert_eq!(fb_after_one, 9223372036854775807, "now 2.8.2's count");
    both(&mut d, &["CMS.INCRBY", "n", "x", "9223372036854775807"]);
    let rb_info = d.rb.conns[0].cmd(&["CMS.INFO", "n"]);
    assert_eq!(
        info_count(&rb_info),
        -2,
        "2.8.2 shows the wrapped count signed"
    );
    // FerroBloom holds 2.8.2's wrapped count now: it shows it as 2.8.2
    // does, or capped at 2^63 − 1 as 8.12's INFO (§3.9).
    let fb_count = info_count(&fb(&mut d, &["CMS.INFO", "n"]));
    assert!(fb_count == -2 || fb_count == i64::MAX, "{fb_count}");
    d.send(&args!["DEL", "n"]);
    d.send_proto(0, &args!["CMS.INITBYDIM", "n", "1", "1"]);
    let fbr = fb(&mut d, &["CMS.INCRBY", "n", "x", "9223372036854775807"]);
    assert_eq!(ints(&fbr), [over()], "8.12: no cell holds it");
    assert_eq!(info_count(&fb(&mut d, &["CMS.INFO", "n"])), 0);
    newer::resync(&mut d);

    // Negative increments: 2.8.2 refuses them, 8.12 decrements atomically.
    d.send_proto(0, &args!["CMS.INITBYDIM", "neg", "10", "3"]);
    d.send_proto(0, &args!["CMS.INCRBY", "neg", "a", "10"]);
    let (rb, fbr) = both(
        &mut d,
        &["CMS.INCRBY", "neg", "a", "-100", "b", "3", "a", "-4"],
    );
    assert_eq!(rb, NEGATIVE);
    assert_eq!(ints(&fbr), [under(), Ok(3), Ok(6)], "§3.9's example");
    let (rb, fbr) = both(&mut d, &["CMS.INCRBY", "neg", "a", "-9223372036854775808"]);
    assert_eq!(rb, NEGATIVE);
    assert_eq!(fbr, b"-CMS: invalid increment\r\n");
    let (rb, fbr) = both(&mut d, &["CMS.INCRBY", "neg", "a", "-1", "b", "x"]);
    assert_eq!(rb, NEGATIVE);
    assert_eq!(fbr, b"-CMS: Cannot parse number\r\n");
    let (rb, fbr) = both(&mut d, &["CMS.INCRBY", "neg", "a", "-10"]);
    assert_eq!(rb, NEGATIVE);
    assert_eq!(ints(&fbr), [Ok(0)]);
    // A negative increment after one that does not parse: the same parse
    // error from both, no §3.9 case.
    d.send_proto(0, &args!["CMS.INCRBY", "neg", "a", "x", "b", "-1"]);
    d.send_proto(0, &args!["CMS.QUERY", "neg", "a", "b"]);

    // CELL_SIZE (6 arguments): the arity error from 2.8.2.
    for (cmd, fb_want) in [
        (
            vec!["CMS.INITBYDIM", "cs", "10", "3", "CELL_SIZE", "4"],
            "+OK\r\n",
        ),
        (
            vec!["CMS.INITBYDIM", "cs1", "10", "3", "cell_size", "1"],
            "+OK\r\n",
        ),
        (
            vec!["CMS.INITBYPROB", "cs8", "0.1", "0.1", "CELL_SIZE", "8"],
            "+OK\r\n",
        ),
        (
            vec!["CMS.INITBYDIM", "cs3", "10", "3", "CELL_SIZE", "3"],
            "-CMS: CELL_SIZE must be 1, 2, 4 or 8\r\n",
        ),
        (
            vec!["CMS.INITBYDIM", "csx", "10", "3", "CELL_SIZE", "4.5"],
            "-CMS: CELL_SIZE must be 1, 2, 4 or 8\r\n",
        ),
        (
            vec!["CMS.INITBYDIM", "csf", "10", "3", "FOO", "4"],
            "-CMS: unknown argument\r\n",
        ),
        (
            vec!["CMS.INITBYDIM", "csw", "0", "3", "FOO", "4"],
            "-CMS: invalid width\r\n",
        ),
        (
            vec!["CMS.INITBYDIM", "neg", "10", "3", "CELL_SIZE", "4"],
            "-CMS: key already exists\r\n",
        ),
    ] {
        let a: Args = cmd.iter().map(b).collect();
        let rb = d.rb.conns[0].cmd(&a);
        let fbr = d.fb.conns[0].cmd(&a);
        assert_eq!(rb, newer::arity_error(&a[0]), "{cmd:?}");
        assert_eq!(show_reply(&fbr), show_reply(fb_want.as_bytes()), "{cmd:?}");
        // FerroBloom's 4-byte sketch is 2.8.2's, byte for byte.
        if cmd[1] == "cs" {
            let value = |r: &[u8]| match decode(r) {
                Resp::Bulk(p) => dump_parts(&p).0.to_vec(),
                _ => panic!("{}", show_reply(r)),
            };
            let ours = value(&d.fb.conns[0].cmd(&["DUMP", "cs"]));
            let theirs = value(&d.rb.conns[0].cmd(&["DUMP", "ref"]));
            assert_eq!(ours, theirs, "CELL_SIZE 4 writes 2.8.2's bytes");
        }
        let _ = newer::accept(&mut d, &a, &rb, fbr);
    }
    d.audit();
    d.finish();
    print_summary(&d);
}

/// §3.9's MERGE examples: with 4-byte cells both modules overflow (or
/// merge) alike; replies and data compared, the published results checked.
#[test]
fn merge_weights() {
    let mut d = Diff::new(&[]);
    let setup = |d: &mut Diff, count: &str| {
        for k in ["x", "y", "dst"] {
            d.send(&args!["DEL", k]);
            d.send(&args!["CMS.INITBYDIM", k, "2", "2"]);
        }
        d.send(&args!["CMS.INCRBY", "x", "foo", count]);
        d.send(&args!["CMS.INCRBY", "y", "foo", count]);
    };
    setup(&mut d, "4000000000");
    for (w1, w2) in [
        ("1", "-2"),
        ("-2", "-2"),
        ("-2", "1"),
        ("2", "0"),
        ("0", "2"),
        ("-1", "-1"),
    ] {
        let r = d.send(&args!["CMS.MERGE", "dst", "2", "x", "y", "WEIGHTS", w1, w2]);
        assert_eq!(r.rb, b"-CMS: MERGE overflow\r\n", "WEIGHTS {w1} {w2}");
    }
    d.send(&args!["CMS.INFO", "dst"]);
    setup(&mut d, "4");
    for (w1, w2) in [
        ("9223372036854775807", "-4000000000"),
        ("8000000000", "-4000000000"),
        ("-8000000000", "4000000000"),
        ("-800000000000", "8000000000"),
        ("-1", "-1"),
        ("-5", "-4"),
    ] {
        let r = d.send(&args!["CMS.MERGE", "dst", "2", "x", "y", "WEIGHTS", w1, w2]);
        assert_eq!(r.rb, b"-CMS: MERGE overflow\r\n", "WEIGHTS {w1} {w2}");
    }
    let r = d.send(&args![
        "CMS.MERGE",
        "dst",
        "2",
        "x",
        "y",
        "WEIGHTS",
        "-922337203685477500",
        "922337203685477502"
    ]);
    assert_eq!(r.rb, OK);
    let info = d.send_proto(0, &args!["CMS.INFO", "dst"]);
    assert_eq!(info_count(&info.rb), 8);
    d.send(&args!["CMS.QUERY", "dst", "foo", "bar"]);
    // §3.6: a cell of 10 times 429496729 fits, times 429496730 does not.
    d.send(&args!["CMS.INITBYDIM", "ten", "2", "2"]);
    d.send(&args!["CMS.INCRBY", "ten", "foo", "10"]);
    let r = d.send(&args![
        "CMS.MERGE",
        "dst",
        "1",
        "ten",
        "WEIGHTS",
        "429496729"
    ]);
    assert_eq!(r.rb, OK);
    d.send(&args!["CMS.QUERY", "dst", "foo"]);
    let r = d.send(&args![
        "CMS.MERGE",
        "dst",
        "1",
        "ten",
        "WEIGHTS",
        "429496730"
    ]);
    assert_eq!(r.rb, b"-CMS: MERGE overflow\r\n");
    d.send(&args!["CMS.QUERY", "dst", "foo"]);
    let r = d.send(&args![
        "CMS.MERGE",
        "dst",
        "2",
        "ten",
        "ten",
        "WEIGHTS",
        "1",
        "-1"
    ]);
    assert_eq!(r.rb, OK);
    d.send(&args!["CMS.INFO", "dst"]);
    d.audit();
    d.compare_aof_rewrite();
    d.finish();
    assert_eq!(d.ty.resynced, 0);
}

// ---------------------------------------------------------------------------
// The seeded stress.

/// The stress's seed without `DIFF_SEED`.
const STRESS_SEED: u64 = 0x5EED_0C35;
const STRESS_ROUNDS: usize = 120;

/// Sketches of the sizes people run (2000×7 from INITBYPROB 0.001 0.01,
/// wide and deep ones), thousands of increments of a skewed item
/// distribution, batched queries, merges with the destination among its
/// sources, DEBUG RELOAD: every reply and every DUMP compared. Counts stay
/// far below 2^32 − 1. Seed: `DIFF_SEED`, else `STRESS_SEED`.
#[test]
fn seeded_stress() {
    let seed = env_u64("DIFF_SEED").unwrap_or(STRESS_SEED);
    println!("seeded_stress: seed {seed} (DIFF_SEED=<n> changes it)");
    let started = std::time::Instant::now();
    let mut d = Diff::new(&[]);
    d.seed = seed;
    d.rng = common::differential::Rng(seed);
    d.send(&args!["CMS.INITBYPROB", "s:prob", "0.001", "0.01"]);
    for k in ["s:a", "s:b", "s:c", "s:d"] {
        d.send(&args!["CMS.INITBYDIM", k, "2000", "7"]);
    }
    d.send(&args!["CMS.INITBYDIM", "s:wide", "50000", "2"]);
    d.send(&args!["CMS.INITBYDIM", "s:deep", "64", "40"]);
    let sketches = ["s:prob", "s:a", "s:b", "s:c", "s:d", "s:wide", "s:deep"];
    // A skewed universe: item i drawn with weight about 1/(i+1).
    let universe = 20_000u64;
    let draw = |rng: &mut common::differential::Rng| -> Vec<u8> {
        let u = rng.unit();
        let i = ((universe as f64).powf(u) - 1.0) as u64;
        format!("u{i}").into_bytes()
    };
    for round in 0..STRESS_ROUNDS {
        for key in sketches {
            let mut a = args!["CMS.INCRBY", key];
            for _ in 0..d.rng.range(50, 250) {
                let it = draw(&mut d.rng);
                a.push(it);
                a.push(d.rng.range(1, 50).to_string().into_bytes());
            }
            d.send(&a);
            let mut q = args!["CMS.QUERY", key];
            for _ in 0..d.rng.range(20, 200) {
                let it = draw(&mut d.rng);
                q.push(it);
            }
            d.send(&q);
        }
        if round % 5 == 4 {
            d.send(&args!["CMS.MERGE", "s:c", "2", "s:a", "s:b"]);
            d.send(&args![
                "CMS.MERGE",
                "s:d",
                "3",
                "s:a",
                "s:b",
                "s:c",
                "WEIGHTS",
                "1",
                "2",
                "-1"
            ]);
            d.send(&args![
                "CMS.MERGE",
                "s:a",
                "2",
                "s:a",
                "s:prob",
                "WEIGHTS",
                "1",
                "1"
            ]);
            d.send(&args![
                "CMS.MERGE",
                "s:b",
                "2",
                "s:b",
                "s:a",
                "WEIGHTS",
                "1",
                "-1"
            ]);
            for key in sketches {
                d.send(&args!["CMS.INFO", key]);
                d.send(&args!["DUMP", key]);
            }
        }
        if round % 40 == 39 {
            d.send(&args!["DEBUG", "RELOAD"]);
        }
    }
    d.audit();
    d.compare_aof_rewrite();
    d.finish();
    println!(
        "seeded_stress: seed {seed}: {} commands compared in {:.2?}",
        d.total,
        started.elapsed()
    );
    assert_eq!(d.ty.resynced, 0, "{}", d.ty.newer_summary());
}
