//! Differential tests of t-digests (TDIGEST.*): FerroBloom against
//! RedisBloom 2.8.2, reply byte for reply byte, through the harness of
//! tests/common/differential (as tests/differential_topk.rs).
//!
//! * `random_command_sequences`: one server with each module; the same
//!   seeded random sequences of TDIGEST.* commands (CREATE with small
//!   compressions so that compressions happen often, RESET, ADD of 1 to 50
//!   values: integers, fractions, negatives, repeats, huge and tiny
//!   magnitudes, words the parser refuses; MERGE with numkeys, COMPRESSION,
//!   OVERRIDE, missing sources, the destination among the sources; MIN,
//!   MAX, QUANTILE, CDF, RANK, REVRANK, BYRANK, BYREVRANK, TRIMMED_MEAN,
//!   INFO with arguments in and out of range; malformed arity and
//!   arguments, missing keys, keys of other types) plus DUMP/RESTORE
//!   (each module loading the other's payload), RENAME, absolute TTLs,
//!   MULTI/EXEC, WATCH (around refused writes and refused and made
//!   merges too), EVAL, maxmemory, DEBUG RELOAD and AOF rewrites in the
//!   middle of a seed (digests with points not merged yet), over a RESP2
//!   and a RESP3 connection chosen per command. Replies must be identical,
//!   as must the commands each server propagates to its replicas
//!   (FerroBloom's marker left out, below); every few hundred commands and
//!   at the end of each seed every key is audited (KEYS, TYPE, DUMP bytes,
//!   then a compressing read, MEMORY USAGE, TDIGEST.INFO and reads of every
//!   kind) and at the end of each seed the AOF rewrite must hold the same
//!   commands per key.
//! * `fixed_sequences`: the grammar, check order and edge values of spec
//!   §5.8, every documented difference once, in RESP2 then RESP3.
//!
//! Reads compress in both modules alike as far as a client on a master
//! sees (docs/tdigest.md), with two exceptions the generator works around:
//! 2.8.2's DUMP compresses the stored digest, FerroBloom's does not (both
//! send the same bytes), and a fork (the AOF rewrite) leaves FerroBloom's
//! digests owing a compress its clients see at once, while 2.8.2's child
//! compresses only its own copy. Every DUMP sent to both, and every
//! digest after an AOF rewrite, is followed by a compressing read,
//! `TDIGEST.QUANTILE key 0`, so that later answers, INFO and DUMP stay
//! comparable.
//!
//! The differences accepted are exactly docs/tdigest.md's (each `Known`
//! case names its words there, `every_accepted_difference_is_documented`),
//! told apart by `known::accept` from the command, both replies and what
//! each server holds, and each checked against what docs/tdigest.md
//! documents: one observation (FerroBloom answers its value where 2.8.2
//! answers `nan` and ranks `-9223372036854775808`, holds it as a centroid
//! where 2.8.2 keeps it unmerged, also inside a MERGE whose new digest
//! holds one observation when the next input is merged, and saves it where
//! 2.8.2's payload loses it: 2.8.2 is then given FerroBloom's payload,
//! which it answers alike, or FerroBloom 2.8.2's merge result), MERGE
//! keeping the destination's TTL and merging a destination listed as a
//! source once without OVERRIDE (FerroBloom's key then given 2.8.2's data
//! or TTL), MEMORY USAGE with a read's view, a compressing read past
//! maxmemory (FerroBloom's view refused; the read is sent to it again once
//! maxmemory is lifted), the marker (`TDIGEST.QUANTILE key 0` before a
//! write that follows a read, in a MULTI/EXEC) in FerroBloom's replication
//! stream, which `known::normalise` leaves out, checking that it names the
//! key of the command after it, and compressions whose capacity does not
//! fit 32 bits or whose node array the memory guard refuses, which go to
//! FerroBloom alone (2.8.2 wraps the capacity or reserves gigabytes;
//! `known::fb_only_case`). Keys whose data a case let part are brought
//! back together on the control connections, out of the compared streams.
//!
//! Exclusions (the generator never sends them): COPY (2.8.2 refuses it:
//! `ERR not supported for this module key`), DEBUG DIGEST-VALUE (2.8.2
//! answers one constant for every t-digest) and keyspace notifications
//! (2.8.2 sends none); RESTORE of hand-made payloads (2.8.2 crashes on
//! some, spec §6.4; tests/tdigest.rs and the decoder's fuzz target cover
//! them); additions near 2^63 observations (`overflow detected`, spec
//! §5.8); hex floats (Valkey 9 parses none); in MULTI/EXEC and EVAL, DUMP,
//! single values added and compressing reads of a digest of one
//! observation (the checks above need the command alone); reads on a
//! replica or by a user who may not write (their compressions differ by
//! design; tests/tdigest/replication.rs).
//!
//! Environment: `DIFF_SEED=<n>` runs one seed, `DIFF_COMMANDS=<n>` sets the
//! commands per seed, `DIFF_KEEP_GOING=1` collects every mismatch,
//! `DIFF_STATS=1` counts the replies, `DIFF_CHECK_STATE=1` compares every
//! digest's INFO, MIN and MAX after every command (slow; it shows where a
//! divergence starts).

mod common;

#[path = "differential_tdigest/generator.rs"]
mod generator;
#[path = "differential_tdigest/known.rs"]
mod known;

use common::differential::{
    args, b, env_u64, eq_ic, quote, run_random, seeds, Args, DiffType, Op, Runner,
};
use known::Known;

const FIXED_SEEDS: &[u64] = &[1, 2, 3, 0x7D16, 9_999_999];
const COMMANDS_PER_SEED: usize = 10_000;
const AUDIT_EVERY: usize = 400;
const TYPE_REPLY: &[u8] = b"+TDIS-TYPE\r\n";

/// The generator's own state.
pub struct Tdigest {
    /// The documented differences met.
    pub seen: Vec<Known>,
    /// Keys whose data FerroBloom's server was given from 2.8.2's.
    pub resynced: usize,
    /// Digests of one observation 2.8.2 was given FerroBloom's payload of.
    pub aligned: usize,
    /// Markers left out of FerroBloom's replication stream.
    pub markers: usize,
    /// Writes made on the control connections since the streams were last
    /// read (2.8.2's, FerroBloom's): the last commands of each stream.
    pub control_writes: (usize, usize),
    /// Observations of a MERGE's destination on 2.8.2 before it.
    pub dest_before: Option<i64>,
    /// Whether the MERGE about to run has a digest of one observation
    /// among its inputs (its destination or a source).
    pub single_input: bool,
    /// maxmemory is set below what the servers use (`op_oom`).
    pub over_maxmemory: bool,
    /// Digests whose compressing read FerroBloom refused past maxmemory
    /// (`Known::ViewRefused`).
    pub owed_reads: Vec<Vec<u8>>,
    /// `DIFF_CHECK_STATE=1`: every digest's INFO, MIN and MAX compared
    /// after every command (`known::accept`).
    pub check_state: bool,
}

pub type Diff = Runner<Tdigest>;

impl DiffType for Tdigest {
    const LABEL: &'static str = "differential_tdigest";
    const TYPE_REPLY: &'static [u8] = TYPE_REPLY;
    const FILTER_TYPES: &'static [&'static [u8]] = &[
        TYPE_REPLY,
        b"+CMSk-TYPE\r\n",
        b"+MBbloomCF\r\n",
        b"+MBbloom--\r\n",
    ];
    // t-digests have no SCANDUMP / LOADCHUNK: the names are never sent.
    const LOADCHUNK: &'static str = "TDIGEST.LOADCHUNK";
    const STATS: &'static str = "TDIGEST.STATS";
    const SCANDUMP: &'static str = "TDIGEST.SCANDUMP";
    const SCANDUMP_MAX_CHUNKS: usize = 1;
    const NAME_CASE_ONE_IN: u64 = 10;
    const AUDIT_EVERY: usize = AUDIT_EVERY;
    const RELOAD_ONE_IN: u64 = 300;

    fn new(_module_args: &[&str]) -> Tdigest {
        Tdigest {
            seen: Vec::new(),
            resynced: 0,
            aligned: 0,
            markers: 0,
            control_writes: (0, 0),
            dest_before: None,
            single_input: false,
            over_maxmemory: false,
            owed_reads: Vec::new(),
            check_state: std::env::var("DIFF_CHECK_STATE").is_ok_and(|v| v == "1"),
        }
    }

    /// Digests `t0`..`t3` (created with small compressions by the
    /// generator), `m`, the empty and a binary key, keys of other types.
    fn keys() -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = ["t0", "t1", "t2", "t3", "m"].iter().map(b).collect();
        keys.extend([Vec::new(), b(b"bin\x00\xff key")]);
        keys.extend([b("str"), b("bf"), b("hash"), b("cms")]);
        keys
    }

    fn ops() -> Vec<(u64, Op<Tdigest>)> {
        vec![
            (7, Diff::op_create),
            (24, Diff::op_add),
            (2, Diff::op_reset),
            (9, Diff::op_merge),
            (7, Diff::op_quantile),
            (5, Diff::op_cdf),
            (5, Diff::op_rank),
            (5, Diff::op_byrank),
            (4, Diff::op_trimmed_mean),
            (5, Diff::op_min_max_info),
            (3, Diff::op_arity),
            (4, Diff::op_keydel),
            (3, Diff::op_generic),
            (2, Diff::op_ttl),
            (1, Diff::op_rename),
            (2, Diff::op_dump_restore),
            (1, Diff::op_multi),
            (2, Diff::op_watch),
            (1, Diff::op_eval),
            (1, Diff::op_oom),
            (1, Diff::op_fb_only),
        ]
    }

    fn reply_class(r: &[u8]) -> String {
        let first = r.split(|&c| c == b'\n').next().unwrap_or_default();
        let text = String::from_utf8_lossy(r);
        match r.first() {
            Some(b'-' | b'+') => {
                let text = String::from_utf8_lossy(first).trim_end().to_string();
                text.chars().take(70).collect()
            }
            Some(b'*' | b'%') if text.contains("Compression") => "INFO".into(),
            Some(b'*') if text.contains("nan") => "array with nan".into(),
            Some(b'*') if text.contains("inf") => "array with inf".into(),
            Some(b'*') if text.contains("-922337203685477580") => "array with NaN rank".into(),
            Some(b'*') if text.contains("\r\n:") => "array of integers".into(),
            Some(b'*') => "array".into(),
            Some(b'$' | b',') if text.contains("nan") => "double nan".into(),
            Some(b'$' | b',') if text.contains("inf") => "double inf".into(),
            Some(b'$' | b',') => "bulk or double".into(),
            Some(b':') => "integer".into(),
            Some(c) => format!("type {}", *c as char),
            None => "empty".into(),
        }
    }

    fn start_seed(run: &mut Diff) {
        run.ty.dest_before = None;
        run.send(&args!["SET", "str", "v"]);
        run.send(&args!["BF.RESERVE", "bf", "0.01", "100"]);
        run.send(&args!["HSET", "hash", "f", "v"]);
        run.send(&args!["CMS.INITBYDIM", "cms", "10", "3"]);
    }

    /// DEBUG RELOAD (`debug_reload`), or an AOF rewrite in the middle of
    /// the seed (`Runner::op_aof_rewrite`).
    fn reload(run: &mut Diff) {
        // One time in four, an AOF rewrite instead.
        if run.rng.chance(1, 4) {
            run.op_aof_rewrite();
        } else {
            debug_reload(run);
        }
    }

    /// After the audit's DUMP, the compressing read that keeps both
    /// comparable; then MEMORY USAGE, TDIGEST.INFO (RESP2 or RESP3), MIN,
    /// MAX and reads of every kind.
    fn audit_key(run: &mut Diff, key: &[u8]) {
        run.send(&args!["TDIGEST.QUANTILE", key, "0"]);
        run.send(&args!["MEMORY", "USAGE", key]);
        let proto = run.rng.index(2);
        run.send_proto(proto, &args!["TDIGEST.INFO", key]);
        run.send(&args!["TDIGEST.MIN", key]);
        run.send(&args!["TDIGEST.MAX", key]);
        run.send(&args![
            "TDIGEST.QUANTILE",
            key,
            "0",
            "0.01",
            "0.1",
            "0.5",
            "0.9",
            "0.99",
            "1"
        ]);
        let (x, y) = (run.value(), run.value());
        run.send(&args!["TDIGEST.CDF", key, &x, &y, "-inf", "inf"]);
        run.send(&args!["TDIGEST.RANK", key, &x, &y]);
        run.send(&args!["TDIGEST.REVRANK", key, &x, &y]);
        run.send(&args!["TDIGEST.BYRANK", key, "0", "1", "5", "50"]);
        run.send(&args!["TDIGEST.BYREVRANK", key, "0", "1", "5", "50"]);
        run.send(&args!["TDIGEST.TRIMMED_MEAN", key, "0.1", "0.9"]);
    }

    /// RESTORE payloads as their values in one form: the RDB version of
    /// the trailer left out (each server writes its own), a digest of one
    /// observation as FerroBloom saves it (`known::canonical`), a Count-Min
    /// sketch written again in one form (2.8.2 compresses its cells,
    /// FerroBloom does not: docs/cms.md); everything else byte for byte.
    fn aof_form(cmds: Vec<Args>) -> Vec<Args> {
        cmds.into_iter()
            .map(|mut c| {
                if c.len() >= 4 && eq_ic(&c[0], "RESTORE") {
                    if let Some(v) = known::canonical(&c[3]) {
                        c[3] = v;
                    } else if let Ok(s) = ferrobloom_core::cms::dump::load_payload(&c[3]) {
                        c[3] = ferrobloom_core::cms::dump::dump_payload(&s, 10);
                    } else if let Some(v) = known::value_part(&c[3]) {
                        c[3] = v;
                    }
                }
                c
            })
            .collect()
    }

    fn known_difference(run: &mut Diff, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
        known::accept(run, args, rb, fb)
    }

    /// Both servers propagate the same commands, FerroBloom's marker left
    /// out (`known::normalise`).
    fn compare_propagation(
        run: &mut Diff,
        line: &str,
        _fb_args: &[Vec<u8>],
        _fb_reply: &[u8],
        rb: Vec<Args>,
        fb: Vec<Args>,
    ) {
        known::compare_streams(run, line, rb, fb);
    }
}

/// DEBUG RELOAD: FerroBloom's digests come back byte for byte (its DUMP
/// writes what it saves); a digest of one observation comes back from
/// 2.8.2's RDB without its point, so 2.8.2 is given FerroBloom's payload
/// (`known::align_single`).
fn debug_reload(run: &mut Diff) {
    let keys = run.digest_keys();
    let before: Vec<Option<Vec<u8>>> = keys
        .iter()
        .map(|k| known::dump_of(&mut run.fb.control, k))
        .collect();
    run.send(&args!["DEBUG", "RELOAD"]);
    let mut aligned = false;
    for (k, before) in keys.iter().zip(before) {
        let after = known::dump_of(&mut run.fb.control, k);
        if after != before {
            let line = run.history.back().cloned().unwrap_or_default();
            let what = format!(
                "{line}   -- FerroBloom's DUMP of {} changed over DEBUG RELOAD",
                quote(k, 40)
            );
            run.mismatch(&what, &format!("{before:?}"), &format!("{after:?}"));
        }
        aligned |= known::align_single(run, k);
    }
    if aligned {
        known::drain(run);
    }
    if run.ty.check_state {
        known::check_state(run);
    }
}

impl Tdigest {
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
            "documented differences met: {} (markers left out: {}; keys given 2.8.2's data: {}; \
             digests of one observation given to 2.8.2: {})",
            if parts.is_empty() {
                "none".to_string()
            } else {
                parts.join(", ")
            },
            self.markers,
            self.resynced,
            self.aligned
        )
    }
}

#[test]
fn random_command_sequences() {
    let per_seed = env_u64("DIFF_COMMANDS").map_or(COMMANDS_PER_SEED, |n| n as usize);
    let d = run_random::<Tdigest>("", &[], &seeds(FIXED_SEEDS), per_seed);
    println!("{}", d.ty.summary());
    let chosen = env_u64("DIFF_COMMANDS").is_some() || env_u64("DIFF_SEED").is_some();
    assert!(d.total >= 50_000 || chosen, "{} commands", d.total);
    // The generator reaches each documented difference it sends on
    // purpose.
    let seen = |c: Known| d.ty.seen.contains(&c);
    if !chosen {
        for &case in Known::ALL {
            assert!(seen(case), "{case:?} never met: {}", d.ty.summary());
        }
    }
}

// ---------------------------------------------------------------------------
// Fixed sequences.

/// The grammar, check order and edge values of spec §5.8 after a setup
/// with digests and keys of other types; then each documented difference.
/// A DUMP is followed by the compressing read, as in the random sequences.
fn fixed_commands() -> Vec<Args> {
    let mut v: Vec<Args> = vec![
        args!["FLUSHALL"],
        args!["SET", "str", "v"],
        args!["HSET", "hash", "f", "v"],
        args!["CMS.INITBYDIM", "cms", "10", "3"],
        args!["TDIGEST.CREATE", "a", "COMPRESSION", "5"],
        args!["TDIGEST.CREATE", "b"],
        args!["TDIGEST.CREATE", "e", "COMPRESSION", "50"],
        // §5.10's numbers.
        args![
            "TDIGEST.ADD",
            "b",
            "1",
            "2",
            "3",
            "4",
            "5",
            "6",
            "7",
            "8",
            "9",
            "10"
        ],
        args!["TDIGEST.INFO", "b"],
        args!["TDIGEST.QUANTILE", "b", "0", "0.1", "0.5", "0.9", "1"],
        args!["TDIGEST.INFO", "b"],
        args!["TDIGEST.CDF", "b", "0", "1", "5", "5.5", "10", "11"],
        args!["TDIGEST.RANK", "b", "0", "1", "5", "5.5", "10", "11"],
        args!["TDIGEST.REVRANK", "b", "0", "1", "5", "5.5", "10", "11"],
        args!["TDIGEST.BYRANK", "b", "0", "1", "5", "9", "10", "11"],
        args!["TDIGEST.BYREVRANK", "b", "0", "1", "5", "9", "10", "11"],
        args!["TDIGEST.TRIMMED_MEAN", "b", "0.1", "0.9"],
        args!["TDIGEST.MIN", "b"],
        args!["TDIGEST.MAX", "b"],
        // §5.9's -nan.
        args!["TDIGEST.CREATE", "nn", "COMPRESSION", "5"],
        args![
            "TDIGEST.ADD",
            "nn",
            "0",
            "2",
            "3",
            "3",
            "2",
            "3",
            "2",
            "1",
            "1",
            "2",
            "1"
        ],
        args!["TDIGEST.QUANTILE", "nn", "0.5"],
        args!["TDIGEST.ADD", "nn", "0", "2", "1", "2", "0", "0"],
        args!["TDIGEST.BYRANK", "nn", "15", "16"],
        args!["TDIGEST.INFO", "nn"],
        args!["DUMP", "nn"],
        args!["TDIGEST.QUANTILE", "nn", "0"],
        // Empty digest: nan, -2, min/max.
        args!["TDIGEST.QUANTILE", "e", "0", "0.5", "1"],
        args!["TDIGEST.CDF", "e", "1"],
        args!["TDIGEST.RANK", "e", "1"],
        args!["TDIGEST.REVRANK", "e", "1"],
        args!["TDIGEST.BYRANK", "e", "0", "1"],
        args!["TDIGEST.BYREVRANK", "e", "0", "1"],
        args!["TDIGEST.TRIMMED_MEAN", "e", "0", "1"],
        args!["TDIGEST.MIN", "e"],
        args!["TDIGEST.MAX", "e"],
        args!["DUMP", "e"],
        args!["TDIGEST.QUANTILE", "e", "0"],
        // Huge magnitudes: infinities and NaNs made by the arithmetic.
        args!["TDIGEST.CREATE", "h", "COMPRESSION", "2"],
        args![
            "TDIGEST.ADD",
            "h",
            "1.7976931348623157e308",
            "-1.7976931348623157e308",
            "1.7976931348623157e308",
            "1e308",
            "-1e308",
            "0",
            "5e-324",
            "1.7976931348623157e308",
            "-1.7976931348623157e308",
            "1",
            "2",
            "3",
            "4",
            "5",
            "6",
            "7",
            "8",
            "9",
            "10",
            "11",
            "12",
            "13",
            "14",
            "15"
        ],
        args!["TDIGEST.QUANTILE", "h", "0", "0.1", "0.5", "0.9", "1"],
        args!["TDIGEST.CDF", "h", "0", "1e308", "-inf", "inf"],
        args!["TDIGEST.RANK", "h", "0", "1e308"],
        args!["TDIGEST.TRIMMED_MEAN", "h", "0", "1"],
        args!["TDIGEST.INFO", "h"],
        args!["DUMP", "h"],
        args!["TDIGEST.QUANTILE", "h", "0"],
        args!["TDIGEST.MERGE", "hm", "2", "h", "h"],
        args!["TDIGEST.MAX", "hm"],
        args!["TDIGEST.MIN", "hm"],
        args!["TDIGEST.QUANTILE", "hm", "0", "0.5", "1"],
        args!["DUMP", "hm"],
        args!["TDIGEST.QUANTILE", "hm", "0"],
        // An AOF rewrite of digests whose max is +inf and with points
        // not merged yet: the rewrite compresses them.
        args!["TDIGEST.ADD", "hm", "1", "2", "3", "1e308"],
        args!["TDIGEST.MERGE", "hm2", "1", "hm"],
        args!["TDIGEST.ADD", "hm2", "-1e308", "5"],
        args!["(AOF rewrite)"],
        args!["TDIGEST.INFO", "hm"],
        args!["TDIGEST.QUANTILE", "hm", "0", "0.5", "1"],
        args!["TDIGEST.CDF", "hm2", "0", "1e308"],
        args!["TDIGEST.BYRANK", "hm2", "0", "1", "2", "3", "10", "40"],
        // And loaded back from the AOF: the same digests, NaNs of the same
        // sign included.
        args!["TDIGEST.ADD", "hm", "7", "1.7976931348623157e308"],
        args!["TDIGEST.ADD", "hm2", "-1.7976931348623157e308", "2"],
        args!["(AOF reload)"],
        args!["TDIGEST.INFO", "hm"],
        args!["TDIGEST.INFO", "hm2"],
        args!["TDIGEST.MIN", "hm2"],
        args!["TDIGEST.MAX", "hm2"],
        args!["TDIGEST.QUANTILE", "hm", "0", "0.1", "0.5", "0.9", "1"],
        args!["TDIGEST.QUANTILE", "hm2", "0", "0.1", "0.5", "0.9", "1"],
        args!["TDIGEST.CDF", "hm2", "0", "1e308", "inf"],
        args!["TDIGEST.TRIMMED_MEAN", "hm2", "0", "1"],
        args!["TDIGEST.BYREVRANK", "hm", "0", "1", "2", "3", "10", "40"],
        args!["DUMP", "hm2"],
        args!["TDIGEST.QUANTILE", "hm2", "0"],
    ];
    // CREATE: arity, existing keys, the keyword, the compression checks.
    for a in [
        args!["TDIGEST.CREATE"],
        args!["TDIGEST.CREATE", "n", "COMPRESSION"],
        args!["TDIGEST.CREATE", "n", "COMPRESSION", "10", "x"],
        args!["TDIGEST.CREATE", "a"],
        args!["TDIGEST.CREATE", "str"],
        args!["TDIGEST.CREATE", "cms", "COMPRESSION", "x"],
        args!["tdigest.create", "hash", "x", "y"],
        args!["TDIGEST.CREATE", "n", "x", "10"],
        args!["TDIGEST.CREATE", "n", "10", "COMPRESSION"],
        args!["TDIGEST.CREATE", "n", "COMPRESSION", "COMPRESSION"],
    ] {
        v.push(a);
    }
    for c in [
        "0",
        "-1",
        "x",
        "1.5",
        "",
        "+5",
        "05",
        "1e3",
        "0x10",
        "nan",
        "9223372036854775808",
        "384307168202282316",
        "9223372036854775807",
        "1000000",
        "1",
        "compression",
    ] {
        v.push(args!["TDIGEST.CREATE", "n", "COMPRESSION", c]);
        v.push(args!["TDIGEST.INFO", "n"]);
        v.push(args!["DEL", "n"]);
    }
    // RESET, ADD: arity, the key first, every value parsed before any is
    // added.
    for a in [
        args!["TDIGEST.RESET"],
        args!["TDIGEST.RESET", "a", "x"],
        args!["TDIGEST.RESET", "nokey"],
        args!["TDIGEST.RESET", "str"],
        args!["TDIGEST.ADD"],
        args!["TDIGEST.ADD", "a"],
        args!["TDIGEST.ADD", "nokey", "x"],
        args!["TDIGEST.ADD", "str", "1"],
        args!["TDIGEST.ADD", "a", "1", "x"],
        args!["TDIGEST.ADD", "a", "1", "nan"],
        args!["TDIGEST.ADD", "a", "1", "inf"],
        args!["TDIGEST.ADD", "a", "-inf", "x"],
        args!["TDIGEST.ADD", "a", "1e309"],
        args!["TDIGEST.ADD", "a", " 1"],
        args!["TDIGEST.INFO", "a"],
        args!["TDIGEST.ADD", "a", "1", "2", "2.5", "-0", "1e-300"],
        args!["TDIGEST.INFO", "a"],
        args!["DUMP", "a"],
        args!["TDIGEST.QUANTILE", "a", "0"],
        args!["TDIGEST.INFO", "a"],
    ] {
        v.push(a);
    }
    // MERGE: §5.8's checks in order.
    for a in [
        args!["TDIGEST.MERGE", "d", "1"],
        args!["TDIGEST.MERGE", "str", "1", "a"],
        args!["TDIGEST.MERGE", "d", "x", "a"],
        args!["TDIGEST.MERGE", "d", "0", "a"],
        args!["TDIGEST.MERGE", "d", "-1", "a"],
        args!["TDIGEST.MERGE", "d", "3", "a"],
        args!["TDIGEST.MERGE", "d", "1", "a", "COMPRESSION"],
        args!["TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "x"],
        args!["TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "0"],
        args!["TDIGEST.MERGE", "d", "1", "a", "foo"],
        args!["TDIGEST.MERGE", "d", "2", "a", "missing"],
        args!["TDIGEST.MERGE", "d", "2", "a", "str"],
        args!["TDIGEST.MERGE", "d", "2", "a", "d"],
        args![
            "TDIGEST.MERGE",
            "d",
            "1",
            "a",
            "COMPRESSION",
            "9223372036854775807"
        ],
        args!["TDIGEST.MERGE", "d", "2", "a", "b"],
        args!["TDIGEST.INFO", "d"],
        args!["TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "100", "foo"],
        args!["TDIGEST.MERGE", "d", "1", "b", "OVERRIDE"],
        args![
            "TDIGEST.MERGE",
            "d",
            "2",
            "a",
            "b",
            "compression",
            "7",
            "override"
        ],
        args!["TDIGEST.MERGE", "d", "2", "d", "b", "OVERRIDE"],
        args!["TDIGEST.INFO", "d"],
        args!["TDIGEST.QUANTILE", "d", "0", "0.5", "1"],
        args!["DUMP", "d"],
        args!["TDIGEST.QUANTILE", "d", "0"],
    ] {
        v.push(a);
    }
    // Reads: arity, missing keys, other types, each argument check.
    for a in [
        args!["TDIGEST.MIN"],
        args!["TDIGEST.MIN", "nokey"],
        args!["TDIGEST.MAX", "str"],
        args!["TDIGEST.INFO", "a", "x"],
        args!["TDIGEST.QUANTILE", "a"],
        args!["TDIGEST.QUANTILE", "nokey", "0.5"],
        args!["TDIGEST.QUANTILE", "a", "x"],
        args!["TDIGEST.QUANTILE", "a", "nan"],
        args!["TDIGEST.QUANTILE", "a", "2", "x"],
        args!["TDIGEST.QUANTILE", "a", "-0.1"],
        args!["TDIGEST.QUANTILE", "a", "1", "0", "0.5", "0.5", "0.25"],
        args!["TDIGEST.CDF", "a", "x"],
        args!["TDIGEST.CDF", "a", "nan"],
        args!["TDIGEST.CDF", "a", "-inf", "inf", "1", "2"],
        args!["TDIGEST.RANK", "a", "x"],
        args!["TDIGEST.REVRANK", "a", "inf", "-inf", "2"],
        args!["TDIGEST.BYRANK", "a", "1.5"],
        args!["TDIGEST.BYRANK", "a", "-1"],
        args!["TDIGEST.BYREVRANK", "a", "x"],
        args![
            "TDIGEST.BYRANK",
            "a",
            "0",
            "1",
            "4",
            "5",
            "9223372036854775807"
        ],
        args!["TDIGEST.TRIMMED_MEAN", "a", "0.1"],
        args!["TDIGEST.TRIMMED_MEAN", "a", "0.1", "0.9", "1"],
        args!["TDIGEST.TRIMMED_MEAN", "a", "x", "y"],
        args!["TDIGEST.TRIMMED_MEAN", "a", "0.1", "y"],
        args!["TDIGEST.TRIMMED_MEAN", "a", "-0.1", "0.5"],
        args!["TDIGEST.TRIMMED_MEAN", "a", "0.5", "0.5"],
        args!["TDIGEST.TRIMMED_MEAN", "a", "0.9", "0.1"],
        args!["TDIGEST.TRIMMED_MEAN", "a", "0", "1"],
        args!["TDIGEST.TRIMMED_MEAN", "nokey", "0", "1"],
    ] {
        v.push(a);
    }
    // The documented differences: one observation (reads, INFO, DUMP,
    // DEBUG RELOAD), MERGE keeping the TTL and merging a listed
    // destination once, MEMORY USAGE with a view, the marker.
    for a in [
        args!["TDIGEST.CREATE", "one"],
        args!["TDIGEST.ADD", "one", "5"],
        args!["DUMP", "one"],
        args!["TDIGEST.QUANTILE", "one", "0"],
        args!["TDIGEST.CDF", "one", "4", "5", "6"],
        args!["TDIGEST.RANK", "one", "4", "5", "6"],
        args!["TDIGEST.REVRANK", "one", "4", "5", "6"],
        args!["TDIGEST.BYRANK", "one", "0", "1"],
        args!["TDIGEST.TRIMMED_MEAN", "one", "0", "1"],
        args!["TDIGEST.INFO", "one"],
        args!["TDIGEST.CREATE", "one2"],
        args!["TDIGEST.ADD", "one2", "7"],
        args!["DEBUG", "RELOAD"],
        args!["TDIGEST.INFO", "one2"],
        args!["TDIGEST.ADD", "one2", "9"],
        args!["TDIGEST.QUANTILE", "one2", "0", "0.5", "1"],
        args!["PEXPIREAT", "d", "4102444800000"],
        args!["TDIGEST.MERGE", "d", "1", "a"],
        args!["PEXPIRETIME", "d"],
        args!["TDIGEST.MERGE", "d", "2", "d", "a"],
        args!["TDIGEST.INFO", "d"],
        args!["TDIGEST.QUANTILE", "d", "0.5"],
        args!["MEMORY", "USAGE", "d"],
        args!["TDIGEST.ADD", "d", "1"],
        args!["MEMORY", "USAGE", "d"],
        // A compressing read past maxmemory: FerroBloom's view refused.
        args!["TDIGEST.ADD", "d", "5", "6", "7"],
        args!["CONFIG", "SET", "maxmemory", "1"],
        args!["TDIGEST.ADD", "d", "8"],
        args!["TDIGEST.QUANTILE", "d", "0.5"],
        args!["TDIGEST.INFO", "d"],
        args!["TDIGEST.MIN", "d"],
        args!["CONFIG", "SET", "maxmemory", "0"],
        args!["TDIGEST.INFO", "d"],
        args!["TDIGEST.QUANTILE", "d", "0.5"],
    ] {
        v.push(a);
    }
    v
}

/// Both servers rewrite their AOF (no RDB preamble) and load it back
/// (DEBUG LOADAOF), out of the compared streams; what they then answer is
/// compared by the commands after.
fn aof_reload(d: &mut Diff) {
    for side in [&mut d.rb, &mut d.fb] {
        let c = &mut side.control;
        assert_eq!(c.cmd(&["CONFIG", "SET", "appendonly", "yes"]), b"+OK\r\n");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let info = String::from_utf8_lossy(&c.cmd(&["INFO", "persistence"])).into_owned();
            if info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
                && info.contains("aof_enabled:1")
            {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "AOF rewrite");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(c.cmd(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["CONFIG", "SET", "appendonly", "no"]), b"+OK\r\n");
    }
    known::drain(d);
}

/// Sends `cmds` on connection `proto`; the creations 2.8.2 is not sent go
/// to FerroBloom alone, DEBUG RELOAD through `Tdigest::reload`.
fn send_all(d: &mut Diff, proto: usize, cmds: &[Args]) {
    for c in cmds {
        if let Some(case) = known::fb_only_case(c) {
            let (reply, propagated) = d.send_fb_only(proto, c);
            known::check_fb_only(d, case, &reply, &propagated);
            continue;
        }
        if eq_ic(&c[0], "DEBUG") {
            debug_reload(d);
            continue;
        }
        if c[0] == b"(AOF rewrite)" {
            d.op_aof_rewrite();
            continue;
        }
        if c[0] == b"(AOF reload)" {
            aof_reload(d);
            continue;
        }
        if eq_ic(&c[0], "CONFIG") && c.len() == 4 && eq_ic(&c[2], "maxmemory") {
            d.send_proto(0, c);
            d.ty.over_maxmemory = c[3] != b"0";
            if !d.ty.over_maxmemory {
                known::owed_reads(d);
            }
            continue;
        }
        known::before_merge(d, c);
        d.send_proto(proto, c);
    }
}

#[test]
fn fixed_sequences() {
    let mut d = Diff::new(&[]);
    let mut cmds = fixed_commands();
    cmds.extend([
        args!["TDIGEST.CREATE", "huge", "COMPRESSION", "357913940"],
        args!["TDIGEST.CREATE", "huge", "COMPRESSION", "1000000000000"],
        args!["TDIGEST.CREATE", "huge", "COMPRESSION", "357913939"],
        args!["TDIGEST.CREATE", "huge", "COMPRESSION", "44739241"],
        args!["EXISTS", "huge"],
    ]);
    for proto in 0..2 {
        send_all(&mut d, proto, &cmds);
        d.audit();
    }
    d.compare_aof_rewrite();
    d.finish();
    println!("{}", d.ty.summary());
    for &case in Known::ALL {
        assert!(d.ty.seen.contains(&case), "{case:?}: {}", d.ty.summary());
    }
}

/// Every difference `known::accept` lets through is one docs/tdigest.md
/// lists under "Differences from RedisBloom 2.8.2".
#[test]
fn every_accepted_difference_is_documented() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/tdigest.md");
    let text = std::fs::read_to_string(path).expect("docs/tdigest.md");
    let section = text
        .split("## Differences from RedisBloom 2.8.2")
        .nth(1)
        .expect("the differences section");
    let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
    for case in Known::ALL {
        assert!(
            section.contains(case.documented_as()),
            "{case:?}: docs/tdigest.md does not say {:?}",
            case.documented_as()
        );
    }
}
