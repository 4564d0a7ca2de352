//! Differential tests of Top-K sketches (TOPK.*): FerroBloom against
//! RedisBloom 2.8.2, reply byte for reply byte, through the harness of
//! tests/common/differential (as tests/differential_cms.rs).
//!
//! * `random_command_sequences`: one server with each module; the same
//!   seeded random sequences of TOPK.* commands (RESERVE, ADD, INCRBY,
//!   QUERY, COUNT, LIST with and without WITHCOUNT's prefixes, INFO; valid
//!   and malformed: arity, bad k / width / depth / decay, increments that
//!   do not parse or are out of range, missing keys, keys of other types)
//!   on sketches with decay 1 and small widths (so buckets collide), with
//!   items that share prefixes, the empty item, long items and items with
//!   NUL bytes, plus DUMP/RESTORE, RENAME, MULTI/EXEC, WATCH, EVAL,
//!   maxmemory and DEBUG RELOAD, over a RESP2 and a RESP3 connection
//!   chosen per command. Replies must be identical, as must the commands
//!   each server propagates to its replicas; every few hundred commands
//!   and at the end of each seed every key is audited (KEYS, TYPE, DUMP
//!   with 2.8.2's heap pointers masked, MEMORY USAGE, TOPK.INFO, LIST,
//!   QUERY, COUNT) and at the end of each seed the AOF rewrite must hold
//!   the same commands per key.
//! * `fixed_sequences`: the grammar, check order and edge values of §4,
//!   every documented difference once, in RESP2 then RESP3.
//!
//! Decay is 1 wherever a sketch gets adds: with decay < 1, 2.8.2 draws
//! from the process' `rand()` and FerroBloom from a coin of its own, by
//! design (docs/topk.md). Sketches made with another decay (TOPK.RESERVE
//! with three arguments takes 0.9) are read (TOPK.INFO) and deleted.
//!
//! The differences accepted are exactly docs/topk.md's, told apart by
//! `known::known_case` from the command, both replies and what the
//! generator knows of the keys, and each checked against what docs/topk.md
//! documents (`known::accept`): items with a NUL byte (2.8.2 cuts them in
//! replies and in DUMP), empty items in a sketch 2.8.2 loaded (null
//! there), TOPK.INCRBY with a bad increment (2.8.2's array stops short and
//! the client reads the next reply as the missing elements: PINGs follow
//! the command on 2.8.2's connection so its reply is read whole; it
//! propagates the command as received, FerroBloom the pairs it applied),
//! adds to a sketch 2.8.2 loaded (its decay table stays zero, so it never
//! decays: FerroBloom's reply and data are checked against the engine fed
//! the same data, and its key is given 2.8.2's data after), and the
//! commands that abort 2.8.2 (k a multiple of 2^32, sketches the memory
//! guard refuses), which go to FerroBloom alone (`known::fb_only_case`).
//!
//! Exclusions (the generator never sends them): adds to sketches with a
//! decay below 1 (above); COPY (2.8.2 refuses it), DEBUG DIGEST-VALUE and
//! keyspace notifications (2.8.2 has none, §7.4); RESTORE of hand-made
//! payloads (2.8.2 aborts on several, §6.4; tests/topk.rs and the
//! decoder's fuzz target cover them); in MULTI/EXEC and EVAL, adds to
//! loaded sketches, bad increments and NUL items (the checks above need
//! the command alone).
//!
//! Environment: `DIFF_SEED=<n>` runs one seed, `DIFF_COMMANDS=<n>` sets the
//! commands per seed, `DIFF_KEEP_GOING=1` collects every mismatch,
//! `DIFF_STATS=1` counts the replies.

mod common;

#[path = "differential_topk/generator.rs"]
mod generator;
#[path = "differential_topk/known.rs"]
mod known;

use std::collections::BTreeSet;

use common::differential::{
    args, b, comparable_value, env_u64, eq_ic, nul_cut, run_random, seeds, show_stream, topk_dump,
    Args, DiffType, Op, Runner,
};
use ferrobloom_core::topk::TopK;
use known::Known;

const FIXED_SEEDS: &[u64] = &[1, 2, 3, 0x70_9C, 8_888_888];
const COMMANDS_PER_SEED: usize = 3_000;
const AUDIT_EVERY: usize = 500;
const TYPE_REPLY: &[u8] = b"+TopK-TYPE\r\n";

/// FerroBloom's sketch before an add to a key 2.8.2 loaded: what a fresh
/// sketch holding the same data does is what FerroBloom must do.
pub struct Model {
    pub key: Vec<u8>,
    pub sketch: TopK,
}

/// The generator's own state.
pub struct Topk {
    /// The documented differences met.
    pub seen: Vec<Known>,
    /// Keys whose data FerroBloom's server was given from 2.8.2's.
    pub resynced: usize,
    /// Keys 2.8.2 may hold as loaded (DEBUG RELOAD, RESTORE, RENAME of
    /// one): its decay table is zero there.
    pub loaded: BTreeSet<Vec<u8>>,
    /// Set just before an add to a loaded key (`known::loaded`).
    pub model: Option<Model>,
}

pub type Diff = Runner<Topk>;

impl DiffType for Topk {
    const LABEL: &'static str = "differential_topk";
    const TYPE_REPLY: &'static [u8] = TYPE_REPLY;
    const FILTER_TYPES: &'static [&'static [u8]] = &[
        TYPE_REPLY,
        b"+CMSk-TYPE\r\n",
        b"+MBbloomCF\r\n",
        b"+MBbloom--\r\n",
    ];
    // Top-K has no SCANDUMP / LOADCHUNK: the names are never sent.
    const LOADCHUNK: &'static str = "TOPK.LOADCHUNK";
    const STATS: &'static str = "TOPK.STATS";
    const SCANDUMP: &'static str = "TOPK.SCANDUMP";
    const SCANDUMP_MAX_CHUNKS: usize = 1;
    const NAME_CASE_ONE_IN: u64 = 10;
    const AUDIT_EVERY: usize = AUDIT_EVERY;
    const RELOAD_ONE_IN: u64 = 500;

    fn new(_module_args: &[&str]) -> Topk {
        Topk {
            seen: Vec::new(),
            resynced: 0,
            loaded: BTreeSet::new(),
            model: None,
        }
    }

    /// Groups by first letter (`generator::group_params`): `t…` colliding
    /// (k 3, width 4, depth 2), `w…` wide (k 10, 100 × 4), `e` one bucket
    /// per row (k 2, 1 × 3), the empty and a binary key (k 4, 8 × 3); keys
    /// of other types.
    fn keys() -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = ["t0", "t1", "t2", "w0", "w1", "e"].iter().map(b).collect();
        keys.extend([Vec::new(), b(b"bin\x00\xff key")]);
        keys.extend([b("str"), b("bf"), b("cf"), b("hash"), b("cms")]);
        keys
    }

    fn ops() -> Vec<(u64, Op<Topk>)> {
        vec![
            (8, Diff::op_reserve),
            (22, Diff::op_add),
            (12, Diff::op_incrby),
            (4, Diff::op_bad_incrby),
            (6, Diff::op_query),
            (6, Diff::op_count),
            (6, Diff::op_list),
            (3, Diff::op_info),
            (3, Diff::op_nul),
            (3, Diff::op_arity),
            (5, Diff::op_keydel),
            (3, Diff::op_generic),
            (1, Diff::op_rename),
            (2, Diff::op_dump_restore),
            (1, Diff::op_multi),
            (1, Diff::op_watch),
            (1, Diff::op_eval),
            (1, Diff::op_oom),
            (1, Diff::op_fb_only),
        ]
    }

    fn reply_class(r: &[u8]) -> String {
        let first = r.split(|&c| c == b'\n').next().unwrap_or_default();
        match r.first() {
            Some(b'-' | b'+') => {
                let text = String::from_utf8_lossy(first).trim_end().to_string();
                text.chars().take(60).collect()
            }
            Some(b'*') if r.windows(9).any(|w| w == b"-TopK: in") => {
                "array with an increment error".into()
            }
            Some(b'*') if r.windows(4).any(|w| w == b"\r\n$1" || w == b"\r\n$2") => {
                "array with items".into()
            }
            Some(b'*') => "array".into(),
            Some(b'%') => "map".into(),
            Some(b':') => String::from_utf8_lossy(first).trim_end().into(),
            Some(c) => format!("type {}", *c as char),
            None => "empty".into(),
        }
    }

    fn start_seed(run: &mut Diff) {
        run.ty.loaded.clear();
        run.ty.model = None;
        run.send(&args!["SET", "str", "v"]);
        run.send(&args!["BF.RESERVE", "bf", "0.01", "100"]);
        run.send(&args!["CF.RESERVE", "cf", "100"]);
        run.send(&args!["HSET", "hash", "f", "v"]);
        run.send(&args!["CMS.INITBYDIM", "cms", "10", "3"]);
    }

    /// DEBUG RELOAD: FerroBloom's sketches must come back byte for byte
    /// (its DUMP is reproducible); 2.8.2's come back with items cut at a
    /// NUL (its RDB), so they are given FerroBloom's payload (which 2.8.2
    /// loads whole), out of the compared streams. Every sketch is then
    /// loaded in 2.8.2's sense.
    fn reload(run: &mut Diff) {
        let keys = run.topk_keys();
        let before: Vec<Option<Vec<u8>>> = keys
            .iter()
            .map(|k| known::dump_of(&mut run.fb.control, k))
            .collect();
        run.send(&args!["DEBUG", "RELOAD"]);
        for (k, before) in keys.iter().zip(before) {
            let after = known::dump_of(&mut run.fb.control, k);
            if after != before {
                let line = run.history.back().cloned().unwrap_or_default();
                let what = format!(
                    "{line}   -- FerroBloom's DUMP of {} changed over DEBUG RELOAD",
                    common::differential::quote(k, 40)
                );
                run.mismatch(&what, &format!("{before:?}"), &format!("{after:?}"));
            }
            run.restore_whole_items_on_2_8_2(k);
            run.ty.loaded.insert(k.clone());
        }
        known::drain(run);
    }

    /// MEMORY USAGE, TOPK.INFO (RESP2 or RESP3), the list with counts and
    /// queries and counts of pool items.
    fn audit_key(run: &mut Diff, key: &[u8]) {
        run.send(&args!["MEMORY", "USAGE", key]);
        let proto = run.rng.index(2);
        run.send_proto(proto, &args!["TOPK.INFO", key]);
        run.send(&args!["TOPK.LIST", key, "WITHCOUNT"]);
        let mut q = args!["TOPK.QUERY", key];
        let mut c = args!["TOPK.COUNT", key];
        for _ in 0..5 {
            let it = run.item();
            q.push(it.clone());
            c.push(it);
        }
        run.send(&q);
        run.send(&c);
    }

    /// RESTORE payloads of sketches as their fields, pointers masked and
    /// items cut at a NUL: 2.8.2's AOF rewrite writes its DUMP (pointers,
    /// C strings), FerroBloom its own serialisation (docs/topk.md); the
    /// DUMP audits compare the items whole. Count-Min payloads are written
    /// again in one form, as tests/differential_cms.rs does (2.8.2
    /// compresses the cells, FerroBloom does not).
    fn aof_form(cmds: Vec<Args>) -> Vec<Args> {
        cmds.into_iter()
            .map(|mut c| {
                if c.len() == 4 && eq_ic(&c[0], "RESTORE") {
                    if let Ok(mut d) = topk_dump(&c[3]) {
                        d.fields.items = d.fields.items.iter().map(|s| nul_cut(s)).collect();
                        c[3] = format!("{:?}", d.fields).into_bytes();
                    } else if let Ok(s) = ferrobloom_core::cms::dump::load_payload(&c[3]) {
                        c[3] = ferrobloom_core::cms::dump::dump_payload(&s, 10);
                    }
                }
                c
            })
            .collect()
    }

    fn known_difference(run: &mut Diff, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
        known::accept(run, args, rb, fb)
    }

    /// Both servers propagate the same commands (§7.2), RESTORE payloads
    /// compared as fields with 2.8.2's pointers masked; the documented
    /// cases were read off the streams before this.
    fn compare_propagation(
        run: &mut Diff,
        line: &str,
        _fb_args: &[Vec<u8>],
        _fb_reply: &[u8],
        rb: Vec<Args>,
        fb: Vec<Args>,
    ) {
        let form = |cmds: Vec<Args>| -> Vec<Args> {
            cmds.into_iter()
                .map(|mut c| {
                    if c.len() >= 4 && eq_ic(&c[0], "RESTORE") {
                        c[3] = comparable_value(&c[3]);
                    }
                    c
                })
                .collect()
        };
        let (rb, fb) = (form(rb), form(fb));
        if rb != fb {
            let what = format!("{line}   -- propagated to replicas");
            run.mismatch(&what, &show_stream(&rb), &show_stream(&fb));
        }
    }
}

impl Topk {
    /// How often each documented difference was met.
    pub fn summary(&self) -> String {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for case in &self.seen {
            let name = format!("{case:?}");
            match counts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => *c += 1,
                None => counts.push((name, 1)),
            }
        }
        let parts: Vec<String> = counts.iter().map(|(n, c)| format!("{n} {c}")).collect();
        format!(
            "documented differences met: {} (keys given 2.8.2's data: {})",
            if parts.is_empty() {
                "none".to_string()
            } else {
                parts.join(", ")
            },
            self.resynced
        )
    }
}

#[test]
fn random_command_sequences() {
    let per_seed = env_u64("DIFF_COMMANDS").map_or(COMMANDS_PER_SEED, |n| n as usize);
    let d = run_random::<Topk>("", &[], &seeds(FIXED_SEEDS), per_seed);
    println!("{}", d.ty.summary());
    let chosen = env_u64("DIFF_COMMANDS").is_some() || env_u64("DIFF_SEED").is_some();
    assert!(d.total >= 15_000 || chosen, "{} commands", d.total);
    // The generator reaches each documented difference it sends on
    // purpose.
    let seen = |c: Known| d.ty.seen.contains(&c);
    if !chosen {
        for case in [
            Known::NulItemReply,
            Known::NulItemSaved,
            Known::BadIncrement,
            Known::KMultipleOf2To32,
            Known::HugeSketch,
        ] {
            assert!(seen(case), "{case:?} never met: {}", d.ty.summary());
        }
    }
}

// ---------------------------------------------------------------------------
// Fixed sequences.

/// The grammar and edge values of §4.2-4.6 after a setup with sketches of
/// two shapes and keys of other types; then each documented difference.
fn fixed_commands() -> Vec<Args> {
    let mut v: Vec<Args> = vec![
        args!["FLUSHALL"],
        args!["SET", "str", "v"],
        args!["HSET", "hash", "f", "v"],
        args!["CMS.INITBYDIM", "cms", "10", "3"],
        args!["TOPK.RESERVE", "t", "4", "2", "2", "1"],
        args!["TOPK.RESERVE", "w", "2", "1000", "3", "1"],
        args!["TOPK.RESERVE", "one", "1", "1", "1", "1"],
        // §4.7's examples.
        args!["TOPK.ADD", "t", "p", "q", "r", "s", "t", "p", "q", "p"],
        args!["TOPK.LIST", "t", "WITHCOUNT"],
        args!["TOPK.ADD", "w", "foo", "bar", "foo", "baz", "baz", "baz", "qux"],
        args!["TOPK.INCRBY", "w", "qux", "5", "zero", "0"],
        args!["TOPK.LIST", "w", "WITHCOUNT"],
        args!["TOPK.QUERY", "w", "zero", "qux", "foo", "nope"],
        args!["TOPK.COUNT", "w", "zero", "qux", "foo", "nope"],
        args!["TOPK.INFO", "w"],
        args!["TOPK.INFO", "t"],
    ];
    // RESERVE: arity, existing keys of any type, each number check.
    for a in [
        args!["TOPK.RESERVE"],
        args!["TOPK.RESERVE", "n"],
        args!["TOPK.RESERVE", "n", "3", "8"],
        args!["TOPK.RESERVE", "n", "3", "8", "7"],
        args!["TOPK.RESERVE", "n", "3", "8", "7", "1", "x"],
        args!["TOPK.RESERVE", "t", "3"],
        args!["TOPK.RESERVE", "str", "x"],
        args!["TOPK.RESERVE", "cms", "3", "8", "7", "1"],
        args!["topk.reserve", "hash", "3", "8", "7", "1"],
    ] {
        v.push(a);
    }
    for (k, w, d, decay) in [
        ("0", "8", "7", "1"),
        ("-1", "8", "7", "1"),
        ("x", "8", "7", "1"),
        ("1.5", "8", "7", "1"),
        ("", "8", "7", "1"),
        ("+3", "8", "7", "1"),
        ("03", "8", "7", "1"),
        ("4294967297", "8", "7", "1"),
        ("3", "0", "7", "1"),
        ("3", "-1", "7", "1"),
        ("3", "4294967296", "7", "1"),
        ("3", "x", "0", "1"),
        ("3", "8", "0", "1"),
        ("3", "8", "4294967296", "1"),
        ("3", "8", "nan", "1"),
        ("3", "8", "7", "0"),
        ("3", "8", "7", "-0.5"),
        ("3", "8", "7", "1.0000001"),
        ("3", "8", "7", "2"),
        ("3", "8", "7", "nan"),
        ("3", "8", "7", "inf"),
        ("3", "8", "7", "-inf"),
        ("3", "8", "7", "x"),
        ("3", "8", "7", ""),
        ("3", "8", "7", "1e309"),
        ("3", "8", "7", "1.0"),
        ("3", "8", "7", "1e0"),
        ("3", "8", "7", "0.1e1"),
        ("3", "8", "7", "0.5"),
        ("3", "4294967295", "4294967295", "0.9"),
        ("0", "4294967295", "4294967295", "0.9"),
        ("1", "1", "1", "1"),
    ] {
        v.push(args!["TOPK.RESERVE", "n", k, w, d, decay]);
        v.push(args!["TOPK.INFO", "n"]);
        v.push(args!["DEL", "n"]);
    }
    for k in ["1", "3", "4294967297", "x", "0"] {
        v.push(args!["TOPK.RESERVE", "n", k]);
        v.push(args!["TOPK.INFO", "n"]);
        v.push(args!["MEMORY", "USAGE", "n"]);
        v.push(args!["DEL", "n"]);
    }
    // ADD / INCRBY: arity, the key first, increments at the edges.
    for a in [
        args!["TOPK.ADD"],
        args!["TOPK.ADD", "t"],
        args!["TOPK.ADD", "nokey", "a"],
        args!["TOPK.ADD", "str", "a"],
        args!["TOPK.ADD", "cms", "a"],
        args!["TOPK.INCRBY", "t"],
        args!["TOPK.INCRBY", "t", "a"],
        args!["TOPK.INCRBY", "t", "a", "1", "b"],
        args!["TOPK.INCRBY", "nokey", "a", "x"],
        args!["TOPK.INCRBY", "hash", "a", "x"],
        args!["TOPK.INCRBY", "t", "a", "0", "b", "100000"],
        args!["TOPK.INCRBY", "w", "", "3", "", "0"],
        args!["TOPK.ADD", "w", "", "fo", "foo", "foob", "fooba", "foobar"],
        args!["TOPK.LIST", "w", "WITHCOUNT"],
        args!["TOPK.ADD", "one", "a", "b", "a", "b", "b"],
        args!["TOPK.LIST", "one", "WITHCOUNT"],
    ] {
        v.push(a);
    }
    // Reads: arity, missing keys, other types, WITHCOUNT's prefixes.
    for a in [
        args!["TOPK.QUERY", "t"],
        args!["TOPK.QUERY", "nokey", "a"],
        args!["TOPK.QUERY", "str", "a"],
        args!["TOPK.COUNT", "t"],
        args!["TOPK.COUNT", "nokey", "a"],
        args!["TOPK.COUNT", "cms", "a"],
        args!["TOPK.INFO"],
        args!["TOPK.INFO", "t", "x"],
        args!["TOPK.INFO", "nokey"],
        args!["TOPK.INFO", "hash"],
        args!["TOPK.LIST"],
        args!["TOPK.LIST", "t", "WITHCOUNT", "x"],
        args!["TOPK.LIST", "nokey"],
        args!["TOPK.LIST", "nokey", "foo"],
        args!["TOPK.LIST", "str"],
        args!["TOPK.LIST", "t", "foo"],
        args!["TOPK.LIST", "t", ""],
        args!["TOPK.LIST", "t", "w"],
        args!["TOPK.LIST", "t", "With"],
        args!["TOPK.LIST", "t", "withcount"],
        args!["TOPK.LIST", "t", "WITHCOUNTS"],
        args!["TOPK.LIST", "t", "WITHCOUNT "],
        args!["TOPK.LIST", "t", "COUNT"],
    ] {
        v.push(a);
    }
    // The documented differences: a NUL item in replies and DUMP, a bad
    // increment (2.8.2's short reply) with pairs applied before it and
    // with none, the empty item after a reload.
    for a in [
        args!["TOPK.RESERVE", "z", "2", "50", "3", "1"],
        args![
            "TOPK.ADD",
            "z",
            b"a\x00b".as_slice(),
            b"a\x00b".as_slice(),
            "c"
        ],
        args!["TOPK.LIST", "z", "WITHCOUNT"],
        args!["TOPK.QUERY", "z", b"a\x00b".as_slice(), "a"],
        args!["TOPK.ADD", "z", "d", "d", "d"],
        args!["DUMP", "z"],
        args!["TOPK.INCRBY", "t", "a", "1", "b", "x", "c", "1"],
        args!["TOPK.INCRBY", "t", "a", "100001", "c", "1"],
        args!["TOPK.INCRBY", "t", "a", "2", "c", "-1"],
        args!["TOPK.RESERVE", "empty", "3", "50", "3", "1"],
        args!["TOPK.ADD", "empty", "", "", "x"],
        args!["DEBUG", "RELOAD"],
        args!["TOPK.LIST", "empty", "WITHCOUNT"],
        args!["TOPK.QUERY", "empty", ""],
    ] {
        v.push(a);
    }
    v
}

/// Sends `cmds` on connection `proto`, 2.8.2's short INCRBY replies
/// completed, and the commands that abort 2.8.2 to FerroBloom alone.
fn send_all(d: &mut Diff, proto: usize, cmds: &[Args]) {
    for c in cmds {
        if let Some(case) = known::fb_only_case(c) {
            let (reply, propagated) = d.send_fb_only(proto, c);
            known::check_fb_only(d, case, &reply, &propagated);
            continue;
        }
        if eq_ic(&c[0], "DEBUG") {
            Topk::reload(d);
            continue;
        }
        let missing = d.short_by(c);
        d.send_short_reply(proto, c, missing);
        if eq_ic(&c[0], "FLUSHALL") {
            d.ty.loaded.clear();
        }
    }
}

#[test]
fn fixed_sequences() {
    let mut d = Diff::new(&[]);
    let mut cmds = fixed_commands();
    cmds.extend([
        args!["TOPK.RESERVE", "n", "4294967296"],
        args!["TOPK.RESERVE", "n", "8589934592", "8", "7", "1"],
        args!["TOPK.RESERVE", "n", "4294967295"],
        args!["TOPK.RESERVE", "n", "1", "4294967295", "2", "1"],
        args!["EXISTS", "n"],
    ]);
    for proto in 0..2 {
        send_all(&mut d, proto, &cmds);
        d.audit();
    }
    d.compare_aof_rewrite();
    d.finish();
    println!("{}", d.ty.summary());
    for case in [
        Known::NulItemReply,
        Known::NulItemSaved,
        Known::BadIncrement,
        Known::EmptyItemLoaded,
        Known::KMultipleOf2To32,
        Known::HugeSketch,
    ] {
        assert!(d.ty.seen.contains(&case), "{case:?}: {}", d.ty.summary());
    }
}
