//! The only places where FerroBloom's t-digest answers otherwise than
//! RedisBloom 2.8.2: the differences docs/tdigest.md lists ("Differences
//! from RedisBloom 2.8.2"). `accept` tells which one a compared command
//! is, from its arguments, both replies and what each server holds (read
//! on the control connections, which change nothing: TDIGEST.INFO,
//! TDIGEST.MIN, PEXPIRETIME), checks FerroBloom's reply against what
//! docs/tdigest.md documents for it (and 2.8.2's against what the spec
//! records), and brings the data back together where the case let it
//! part. `fb_only_case` names the commands 2.8.2 is not sent (they leave
//! it holding a digest whose capacity wrapped), whose FerroBloom reply
//! `check_fb_only` checks. `normalise` is the propagated stream without
//! FerroBloom's marker.

use super::Diff;
use crate::common::differential::{args, eq_ic, parse_int, show_reply, show_stream, Args};
use crate::common::{decode, doubles_in_one_form, dump_parts, restamp_dump, RawClient, Resp};
use ferrobloom_core::tdigest::dump;
use ferrobloom_core::Unguarded;

pub const OK: &[u8] = b"+OK\r\n";
pub const ALLOCATION_FAILED: &[u8] = b"-ERR T-Digest: allocation failed\r\n";
/// FerroBloom's memory guard refusing a creation (docs/operations.md,
/// `bf.max-filter-bytes`).
pub const GUARD_REFUSED: &[u8] = b"-ERR T-Digest: allocation failed: the filter would take ";
/// FerroBloom's default per-value cap (`bf.max-filter-bytes`).
const GUARD_CAP: i128 = 4 << 30;
/// 2.8.2's rank for a NaN (the double converted with x86 semantics).
const NAN_RANK: i64 = i64::MIN;
/// The capacity of a compression is stored in 32 bits by 2.8.2.
const CAPACITY_MAX: i128 = i32::MAX as i128;

/// A difference docs/tdigest.md documents.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Known {
    /// A compressing read of a digest holding one observation: 2.8.2
    /// answers `nan` (ranks `-9223372036854775808`), FerroBloom the value.
    SingleObservationReply,
    /// Such a digest as held after a read, a save or a load (TDIGEST.INFO,
    /// DUMP): 2.8.2 keeps the point unmerged and its payload loses it;
    /// FerroBloom holds it as a centroid. 2.8.2 is then given FerroBloom's
    /// payload, which it loads and answers as FerroBloom does.
    SingleObservationState,
    /// TDIGEST.MERGE into a destination with a TTL: FerroBloom keeps it,
    /// 2.8.2 removes it.
    MergeKeepsTtl,
    /// TDIGEST.MERGE without OVERRIDE naming its destination among the
    /// sources: FerroBloom merges the destination once, 2.8.2 twice.
    DestListedOnce,
    /// A compression whose capacity (6c + 10) does not fit 32 bits:
    /// FerroBloom refuses it, 2.8.2 wraps the capacity (not sent there).
    CapacityOverflow,
    /// A digest too large for memory (its node array over
    /// `bf.max-filter-bytes`, docs/operations.md): FerroBloom's memory
    /// guard refuses it, 2.8.2 reserves it (not sent there).
    GuardRefused,
    /// A compressing read of a digest with points to merge while the
    /// server is past maxmemory: FerroBloom's view is an allocation the
    /// memory guard refuses (`ERR T-Digest: allocation failed`), 2.8.2
    /// compresses in place and answers. FerroBloom is sent the read again
    /// (control connection) once maxmemory is lifted, which compresses the
    /// digest as 2.8.2's read did.
    ViewRefused,
    /// MEMORY USAGE while a read's compressed view exists: FerroBloom adds
    /// its bytes (16 a node) to 2.8.2's formula.
    ViewBytes,
    /// FerroBloom's `TDIGEST.QUANTILE key 0` before a write that follows
    /// a read, in the replication stream (with the MULTI/EXEC around it).
    Marker,
}

impl Known {
    pub const ALL: &'static [Known] = &[
        Known::SingleObservationReply,
        Known::SingleObservationState,
        Known::MergeKeepsTtl,
        Known::DestListedOnce,
        Known::CapacityOverflow,
        Known::GuardRefused,
        Known::ViewRefused,
        Known::ViewBytes,
        Known::Marker,
    ];

    /// Words of docs/tdigest.md's "Differences from RedisBloom 2.8.2"
    /// that document the case (whitespace collapsed).
    pub fn documented_as(self) -> &'static str {
        match self {
            Known::SingleObservationReply => "One observation** answers its value (2.8.2 answers `nan`, and its ranks `-9223372036854775808`)",
            Known::SingleObservationState => "A compress that finds one observation makes it a centroid where 2.8.2 leaves the point unmerged",
            Known::MergeKeepsTtl => "keeps an existing destination's TTL (2.8.2 removes it)",
            Known::DestListedOnce => "without OVERRIDE a destination also listed as a source is merged once",
            Known::CapacityOverflow => "whose capacity (6 x compression + 10) does not fit 32 bits are refused with `ERR T-Digest: allocation failed`",
            Known::GuardRefused => "those whose node array the memory guard refuses",
            Known::ViewRefused => "a refused view answers `ERR T-Digest: allocation failed`",
            Known::ViewBytes => "MEMORY USAGE adds the view's bytes (16 per node)",
            Known::Marker => "the replication stream and the AOF carry the marker before a write that follows a read",
        }
    }
}

fn is(args: &[Vec<u8>], name: &str) -> bool {
    args.first().is_some_and(|a| eq_ic(a, name))
}

/// The reads that compress the digest in 2.8.2.
pub const COMPRESSING_READS: &[&str] = &[
    "TDIGEST.QUANTILE",
    "TDIGEST.CDF",
    "TDIGEST.RANK",
    "TDIGEST.REVRANK",
    "TDIGEST.BYRANK",
    "TDIGEST.BYREVRANK",
    "TDIGEST.TRIMMED_MEAN",
];

// -- what a server holds (control connections) --------------------------------

/// TDIGEST.INFO as (label, value) pairs; None for no digest.
pub fn info(c: &mut RawClient, key: &[u8]) -> Option<Vec<(String, i64)>> {
    let Resp::Array(v) = decode(&c.cmd(&[b"TDIGEST.INFO".as_slice(), key])) else {
        return None;
    };
    Some(
        v.chunks(2)
            .map(|p| {
                let n = match p[1] {
                    Resp::Int(n) => n,
                    _ => i64::MIN,
                };
                (p[0].as_str().unwrap_or_default(), n)
            })
            .collect(),
    )
}

/// FerroBloom's TDIGEST.STATS integers as (name, value) pairs.
fn stats(c: &mut RawClient, key: &[u8]) -> Option<Vec<(String, i64)>> {
    let Resp::Array(v) = decode(&c.cmd(&[b"TDIGEST.STATS".as_slice(), key])) else {
        return None;
    };
    Some(
        v.chunks(2)
            .filter_map(|p| match p[1] {
                Resp::Int(n) => Some((p[0].as_str().unwrap_or_default(), n)),
                _ => None,
            })
            .collect(),
    )
}

pub fn field(info: &[(String, i64)], name: &str) -> i64 {
    info.iter()
        .find(|(n, _)| n == name)
        .map_or(i64::MIN, |f| f.1)
}

pub fn observations(c: &mut RawClient, key: &[u8]) -> Option<i64> {
    info(c, key).map(|i| field(&i, "Observations"))
}

pub fn dump_of(c: &mut RawClient, key: &[u8]) -> Option<Vec<u8>> {
    match decode(&c.cmd(&[b"DUMP".as_slice(), key])) {
        Resp::Bulk(p) => Some(p),
        _ => None,
    }
}

fn pexpiretime(c: &mut RawClient, key: &[u8]) -> i64 {
    match decode(&c.cmd(&[b"PEXPIRETIME".as_slice(), key])) {
        Resp::Int(t) => t,
        _ => -3,
    }
}

/// A t-digest payload's value bytes in one form: as saved, except a digest
/// of one observation saved 2.8.2's way (no centroid, its point lost but
/// min and max kept), which is written as FerroBloom loads and saves it
/// (one centroid). None for what is no t-digest payload.
pub fn canonical(payload: &[u8]) -> Option<Vec<u8>> {
    let td = dump::load_payload(payload, &Unguarded).ok()?;
    if td.merged_nodes() == 0 && td.unmerged_nodes() == 1 {
        let again = dump::dump_payload(&td, 10);
        return Some(dump_parts(&again).0.to_vec());
    }
    Some(dump_parts(payload).0.to_vec())
}

/// The value part of a DUMP payload with a valid trailer (without the
/// server's RDB version: FerroBloom may run on a newer server).
pub fn value_part(payload: &[u8]) -> Option<Vec<u8>> {
    let signed = payload.get(..payload.len().checked_sub(8)?)?;
    let crc = ferrobloom_core::dump_format::crc64_jones(signed).to_le_bytes();
    (payload[signed.len()..] == crc && signed.len() >= 2)
        .then(|| signed[..signed.len() - 2].to_vec())
}

/// Whether `payload` holds one observation saved 2.8.2's way.
fn single_saved_2_8_2s_way(payload: &[u8]) -> bool {
    dump::load_payload(payload, &Unguarded)
        .is_ok_and(|td| td.merged_nodes() == 0 && td.unmerged_nodes() == 1)
}

// -- commands 2.8.2 is not sent --------------------------------------------------

/// TDIGEST.CREATE of a compression whose capacity does not fit 32 bits
/// (2.8.2 wraps the capacity and reserves 16 bytes a node of 6c + 10:
/// gigabytes of address space) or whose node array FerroBloom's memory
/// guard refuses. The caller sends it to a key that does not exist.
pub fn fb_only_case(args: &[Vec<u8>]) -> Option<Known> {
    if !is(args, "TDIGEST.CREATE") || args.len() != 4 || !eq_ic(&args[2], "COMPRESSION") {
        return None;
    }
    let c = parse_int(&args[3]).filter(|&c| c > 0)? as i128;
    // 2.8.2 refuses the largest itself (its size check, or malloc), with
    // FerroBloom's text; which ones depends on the machine, so none of
    // them is sent there.
    if 6 * c + 10 > CAPACITY_MAX {
        Some(Known::CapacityOverflow)
    } else if 16 * (6 * c + 10) + 8 > GUARD_CAP {
        Some(Known::GuardRefused)
    } else {
        None
    }
}

/// Checks FerroBloom's reply to a command `fb_only_case` kept from 2.8.2
/// (`ERR T-Digest: allocation failed`, as for a compression 2.8.2 itself
/// refuses, or the memory guard's longer text), and that it propagated
/// nothing.
pub fn check_fb_only(run: &mut Diff, case: Known, reply: &[u8], propagated: &[Args]) {
    run.ty.seen.push(case);
    let ok = match case {
        Known::CapacityOverflow => reply == ALLOCATION_FAILED,
        _ => reply.starts_with(GUARD_REFUSED),
    };
    if !ok || !propagated.is_empty() {
        let line = run.history.back().cloned().unwrap_or_default();
        let what = format!("{line}   -- outside docs/tdigest.md's {case:?}");
        let fb = format!(
            "{}, propagated {}",
            show_reply(reply),
            show_stream(propagated)
        );
        run.mismatch(&what, "(not sent: its capacity wraps there)", &fb);
    }
}

// -- propagation -------------------------------------------------------------------

/// Whether `c` is FerroBloom's marker (for any key).
fn is_marker(c: &[Vec<u8>]) -> bool {
    c.len() == 3 && eq_ic(&c[0], "TDIGEST.QUANTILE") && c[2] == b"0"
}

/// A propagated stream in the form it is compared in: FerroBloom's
/// markers left out (2.8.2 propagates no read, so a marker is FerroBloom's
/// own), a MULTI/EXEC left holding at most one command unwrapped (Redis
/// 7.0 wraps what one command propagates only when it is more than one),
/// and RESTORE payloads as `canonical` values (other types' as their value
/// part). Also returns the markers
/// left out, each with whether the command after it names its key.
pub fn normalise(cmds: Vec<Args>) -> (Vec<Args>, Vec<bool>) {
    let mut markers = Vec::new();
    let mut out: Vec<Args> = Vec::new();
    for (i, c) in cmds.iter().enumerate() {
        if is_marker(c) {
            let next = cmds[i + 1..].iter().find(|n| !is_marker(n));
            markers.push(next.is_some_and(|n| n.iter().skip(1).any(|a| *a == c[1])));
            continue;
        }
        let mut c = c.clone();
        if c.len() >= 4 && eq_ic(&c[0], "RESTORE") {
            if let Some(v) = canonical(&c[3]).or_else(|| value_part(&c[3])) {
                c[3] = v;
            }
        }
        out.push(c);
    }
    let mut flat: Vec<Args> = Vec::new();
    let mut i = 0;
    while i < out.len() {
        if eq_ic(&out[i][0], "MULTI") {
            let end = out[i..].iter().position(|c| eq_ic(&c[0], "EXEC"));
            if let Some(end) = end.map(|e| e + i) {
                if end - i - 1 <= 1 {
                    flat.extend(out[i + 1..end].iter().cloned());
                    i = end + 1;
                    continue;
                }
            }
        }
        flat.push(out[i].clone());
        i += 1;
    }
    for c in &mut flat {
        c[0].make_ascii_uppercase();
    }
    (flat, markers)
}

/// Compares what both servers propagated for `line` (`normalise`d),
/// counting the markers met.
pub fn compare_streams(run: &mut Diff, line: &str, rb: Vec<Args>, fb: Vec<Args>) {
    let (rb, rb_markers) = normalise(rb);
    let (fb, fb_markers) = normalise(fb);
    if !rb_markers.is_empty() {
        let what = format!("{line}   -- 2.8.2 propagated a read");
        run.mismatch(&what, &show_stream(&rb), "");
    }
    if fb_markers.iter().any(|named| !named) {
        let what = format!("{line}   -- a marker before a command on another key");
        run.mismatch(&what, "", &show_stream(&fb));
    }
    run.ty
        .seen
        .extend(fb_markers.iter().map(|_| Known::Marker).take(1));
    run.ty.markers += fb_markers.len();
    if rb != fb {
        let what = format!("{line}   -- propagated to replicas");
        run.mismatch(&what, &show_stream(&rb), &show_stream(&fb));
    }
}

/// The commands each server propagated since the last marker, without the
/// control writes made since (the last ones of each stream), the rest
/// compared as the command's own propagation (when it is checked).
pub fn drain(run: &mut Diff) {
    run.markers += 1;
    let marker = run.markers.to_string().into_bytes();
    let mut rb = run.rb.propagated(&marker).expect("2.8.2's stream");
    let mut fb = run.fb.propagated(&marker).expect("FerroBloom's stream");
    let (rb_writes, fb_writes) = std::mem::take(&mut run.ty.control_writes);
    rb.truncate(rb.len().saturating_sub(rb_writes));
    fb.truncate(fb.len().saturating_sub(fb_writes));
    if run.check_replication {
        let line = run.history.back().cloned().unwrap_or_default();
        run.propagated += rb.len();
        compare_streams(run, &line, rb, fb);
    }
}

// -- bringing the data back together ---------------------------------------------------

/// Where 2.8.2 holds a digest of one observation otherwise than FerroBloom
/// (TDIGEST.INFO differs: 2.8.2's point unmerged, or lost after a load),
/// 2.8.2 is given FerroBloom's payload (its TTL kept). True when it was.
pub fn align_single(run: &mut Diff, key: &[u8]) -> bool {
    let fb = info(&mut run.fb.control, key);
    if fb.is_none() || fb == info(&mut run.rb.control, key) {
        return false;
    }
    if fb.as_deref().map(|i| field(i, "Observations")) != Some(1) {
        return false;
    }
    let payload = dump_of(&mut run.fb.control, key).expect("FerroBloom's digest");
    let payload = restamp_dump(&payload, run.rb_version.rdb_version());
    let at = pexpiretime(&mut run.rb.control, key).max(0).to_string();
    let restore = args!["RESTORE", key, at, payload, "REPLACE", "ABSTTL"];
    let reply = run.rb.control.cmd(&restore);
    assert_eq!(reply, OK, "RESTORE on 2.8.2: {}", show_reply(&reply));
    run.ty.control_writes.0 += 1;
    run.ty.seen.push(Known::SingleObservationState);
    run.ty.aligned += 1;
    let rb = info(&mut run.rb.control, key);
    if rb != fb {
        let line = run.history.back().cloned().unwrap_or_default();
        let what = format!("{line}   -- 2.8.2 given FerroBloom's digest of one observation");
        run.mismatch(&what, &format!("{rb:?}"), &format!("{fb:?}"));
    }
    true
}

/// Gives FerroBloom's `key` 2.8.2's digest (its DUMP compresses 2.8.2's
/// in place: both then hold it compressed), without a TTL, as 2.8.2's
/// MERGE leaves it.
fn take_2_8_2s(run: &mut Diff, key: &[u8]) {
    let payload = dump_of(&mut run.rb.control, key).expect("2.8.2's digest");
    let payload = restamp_dump(&payload, run.fb_version.rdb_version());
    let reply = run
        .fb
        .control
        .cmd(&args!["RESTORE", key, "0", payload, "REPLACE"]);
    assert_eq!(reply, OK, "RESTORE on FerroBloom: {}", show_reply(&reply));
    run.ty.control_writes.1 += 1;
    run.ty.resynced += 1;
}

// -- the cases ---------------------------------------------------------------------

/// A double as a server printed it (bulk or RESP3 double).
fn double(r: &Resp) -> Option<f64> {
    let text = match r {
        Resp::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Resp::Double(d) => d.clone(),
        _ => return None,
    };
    match text.as_str() {
        "nan" | "-nan" => Some(f64::NAN),
        t => t.parse().ok(),
    }
}

fn parse_f64(a: &[u8]) -> f64 {
    std::str::from_utf8(a)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(f64::NAN)
}

/// What FerroBloom answers for a read of a digest holding the one value
/// `m` (docs/tdigest.md: "One observation answers its value"), element by
/// element: a double or an integer.
fn single_model(args: &[Vec<u8>], m: f64) -> Vec<Result<f64, i64>> {
    let name = args[0].to_ascii_uppercase();
    let rest = &args[2..];
    let cmp = |a: &[u8]| parse_f64(a).partial_cmp(&m);
    use std::cmp::Ordering::*;
    match name.as_slice() {
        b"TDIGEST.QUANTILE" => rest.iter().map(|_| Ok(m)).collect(),
        b"TDIGEST.TRIMMED_MEAN" => vec![Ok(m)],
        b"TDIGEST.CDF" => rest
            .iter()
            .map(|v| {
                Ok(match cmp(v) {
                    Some(Less) => 0.0,
                    Some(Greater) => 1.0,
                    _ => 0.5,
                })
            })
            .collect(),
        b"TDIGEST.RANK" | b"TDIGEST.REVRANK" => {
            let rev = name.as_slice() == b"TDIGEST.REVRANK";
            rest.iter()
                .map(|v| {
                    Err(match (cmp(v), rev) {
                        (Some(Less), false) | (Some(Greater), true) => -1,
                        (Some(Greater), false) | (Some(Less), true) => 1,
                        _ => 0,
                    })
                })
                .collect()
        }
        _ => {
            let rev = name.as_slice() == b"TDIGEST.BYREVRANK";
            rest.iter()
                .map(|r| {
                    Ok(match (parse_int(r), rev) {
                        (Some(0), _) => m,
                        (_, false) => f64::INFINITY,
                        (_, true) => f64::NEG_INFINITY,
                    })
                })
                .collect()
        }
    }
}

/// Checks a compressing read of a one-observation digest: FerroBloom's
/// answers are the model's; 2.8.2's equal them, or are `nan` (ranks
/// `-9223372036854775808`) where FerroBloom answers the value.
fn single_reply_ok(args: &[Vec<u8>], m: f64, rb: &Resp, fb: &Resp) -> bool {
    let model = single_model(args, m);
    let (rb, fb): (Vec<&Resp>, Vec<&Resp>) = match (rb, fb) {
        (Resp::Array(x), Resp::Array(y)) => (x.iter().collect(), y.iter().collect()),
        (x, y) => (vec![x], vec![y]),
    };
    if rb.len() != model.len() || fb.len() != model.len() {
        return false;
    }
    model.iter().zip(rb.iter().zip(&fb)).all(|(want, (r, f))| {
        let fb_ok = match (want, f) {
            (Ok(w), f) => double(f).is_some_and(|v| v == *w || (v.is_nan() && w.is_nan())),
            (Err(w), Resp::Int(v)) => v == w,
            _ => false,
        };
        let rb_ok = r == f
            || match r {
                Resp::Int(v) => *v == NAN_RANK,
                r => double(r).is_some_and(f64::is_nan),
            };
        fb_ok && rb_ok
    })
}

/// A TDIGEST.INFO reply (RESP2 or RESP3) as (label, value) pairs.
fn info_pairs(r: &Resp) -> Option<Vec<(String, i64)>> {
    let flat: Vec<Resp> = match r {
        Resp::Array(v) => v.clone(),
        Resp::Map(m) => m.iter().flat_map(|(k, v)| [k.clone(), v.clone()]).collect(),
        _ => return None,
    };
    flat.chunks(2)
        .map(|p| match &p[1] {
            Resp::Int(n) => Some((p[0].as_str().unwrap_or_default(), *n)),
            _ => None,
        })
        .collect()
}

/// TDIGEST.INFO of a one-observation digest: 2.8.2's point unmerged,
/// FerroBloom's a centroid made by one more compression.
fn single_info_ok(rb: &Resp, fb: &Resp) -> bool {
    let (Some(x), Some(y)) = (info_pairs(rb), info_pairs(fb)) else {
        return false;
    };
    let get = |i: &[(String, i64)], n| field(i, n);
    let same = ["Compression", "Capacity", "Observations", "Memory usage"];
    same.iter().all(|n| get(&x, n) == get(&y, n))
        && get(&x, "Observations") == 1
        && [
            get(&x, "Merged nodes"),
            get(&x, "Unmerged nodes"),
            get(&x, "Merged weight"),
        ] == [0, 1, 0]
        && [
            get(&y, "Merged nodes"),
            get(&y, "Unmerged nodes"),
            get(&y, "Merged weight"),
        ] == [1, 0, 1]
        && get(&y, "Total compressions") == get(&x, "Total compressions") + 1
}

/// Before a TDIGEST.MERGE (any other command is ignored): what `merged`
/// needs to know of its inputs on 2.8.2's server.
pub fn before_merge(run: &mut Diff, args: &[Vec<u8>]) {
    if !is(args, "TDIGEST.MERGE") || args.len() < 2 {
        return;
    }
    run.ty.dest_before = observations(&mut run.rb.control, &args[1]);
    let mut single = run.ty.dest_before == Some(1);
    for k in args.iter().skip(3) {
        single |= observations(&mut run.rb.control, k) == Some(1);
    }
    run.ty.single_input = single;
}

/// MERGE's destination named among the sources without OVERRIDE.
fn dest_listed_without_override(args: &[Vec<u8>]) -> bool {
    let Some(n) = args.get(2).and_then(|a| parse_int(a)) else {
        return false;
    };
    let n = n.max(0) as usize;
    let sources = args.get(3..(3 + n).min(args.len())).unwrap_or_default();
    let tail = args.get((3 + n).min(args.len())..).unwrap_or_default();
    sources.contains(&args[1]) && !tail.iter().any(|a| eq_ic(a, "OVERRIDE"))
}

/// `Tdigest::known_difference`: FerroBloom's reply as 2.8.2 gives it, once
/// each reply has been checked against its documented behaviour; keys
/// whose data parted are brought back together.
pub fn accept(run: &mut Diff, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
    let out = accept_case(run, args, rb, fb);
    // Not while a read FerroBloom refused past maxmemory is owed, nor
    // between a DUMP and the compressing read after it.
    // DEBUG RELOAD is checked after `Tdigest::reload` aligned what it
    // lets part.
    let pending = is(args, "DUMP") || is(args, "DEBUG");
    if run.ty.check_state && run.ty.owed_reads.is_empty() && !pending {
        check_state(run);
    }
    out
}

/// With `DIFF_CHECK_STATE=1`, after every command: every digest's
/// TDIGEST.INFO, MIN and MAX (which compress nothing) on both servers, so
/// that a divergence shows where it starts rather than at a later read.
pub fn check_state(run: &mut Diff) {
    for key in run.digest_keys() {
        let look = |c: &mut RawClient| {
            let mm =
                |c: &mut RawClient, n: &[u8]| doubles_in_one_form(&c.cmd(&[n, key.as_slice()]));
            (info(c, &key), mm(c, b"TDIGEST.MIN"), mm(c, b"TDIGEST.MAX"))
        };
        let (x, y) = (look(&mut run.rb.control), look(&mut run.fb.control));
        if x != y {
            let line = run.history.back().cloned().unwrap_or_default();
            let what = format!("{line}   -- state of {key:?} (DIFF_CHECK_STATE)");
            run.mismatch(&what, &format!("{x:?}"), &format!("{y:?}"));
        }
    }
}

fn accept_case(run: &mut Diff, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
    let line = run.history.back().cloned().unwrap_or_default();
    let Some(key) = args.get(1).cloned() else {
        return fb;
    };
    let mut out = fb.clone();
    let mut touched = false;
    if is(args, "DUMP") && rb != fb.as_slice() {
        if let (Resp::Bulk(x), Resp::Bulk(y)) = (decode(rb), decode(&fb)) {
            if single_saved_2_8_2s_way(&x)
                && canonical(&x).is_some()
                && canonical(&x) == canonical(&y)
            {
                run.ty.seen.push(Known::SingleObservationState);
                out = rb.to_vec();
            }
        }
        touched = true;
    } else if is(args, "MEMORY") && args.len() == 3 && rb != fb.as_slice() {
        if let (Resp::Int(x), Resp::Int(y)) = (decode(rb), decode(&fb)) {
            // The view holds the nodes the stored digest has in use
            // (TDIGEST.STATS reads it as stored).
            let view = stats(&mut run.fb.control, &args[2]).map_or(-1, |s| {
                16 * (field(&s, "merged_nodes") + field(&s, "unmerged_nodes"))
            });
            let slack = if run.fb_version == run.rb_version {
                0
            } else {
                64
            };
            if view > 0 && (y - x - view).abs() <= slack {
                run.ty.seen.push(Known::ViewBytes);
                out = rb.to_vec();
            }
        }
    } else if COMPRESSING_READS.iter().any(|n| is(args, n)) {
        touched = true;
        if run.ty.over_maxmemory && fb == ALLOCATION_FAILED && !rb.starts_with(b"-") {
            let has_unmerged =
                stats(&mut run.fb.control, &key).is_some_and(|s| field(&s, "unmerged_nodes") > 0);
            if has_unmerged {
                run.ty.seen.push(Known::ViewRefused);
                run.ty.owed_reads.push(key);
                return rb.to_vec();
            }
        }
        if rb != fb.as_slice() && observations(&mut run.fb.control, &key) == Some(1) {
            let min = decode(&run.fb.control.cmd(&[b"TDIGEST.MIN".as_slice(), &key]));
            let m = double(&min).unwrap_or(f64::NAN);
            if single_reply_ok(args, m, &decode(rb), &decode(&fb)) {
                run.ty.seen.push(Known::SingleObservationReply);
                out = rb.to_vec();
            } else {
                let what = format!(
                    "{line}   -- outside docs/tdigest.md's SingleObservationReply (value {m})"
                );
                run.mismatch(&what, &show_reply(rb), &show_reply(&fb));
                out = rb.to_vec();
            }
        }
    } else if is(args, "TDIGEST.INFO") && run.ty.owed_reads.contains(&key) {
        // FerroBloom's read was refused: its INFO shows the digest as
        // stored until the owed read (the same observations).
        let (x, y) = (info_pairs(&decode(rb)), info_pairs(&decode(&fb)));
        let same = match (&x, &y) {
            (Some(x), Some(y)) => ["Compression", "Capacity", "Observations"]
                .iter()
                .all(|n| field(x, n) == field(y, n)),
            _ => false,
        };
        if rb != fb.as_slice() && same {
            run.ty.seen.push(Known::ViewRefused);
            out = rb.to_vec();
        }
    } else if is(args, "TDIGEST.INFO") {
        touched = true;
        if rb != fb.as_slice() && single_info_ok(&decode(rb), &decode(&fb)) {
            run.ty.seen.push(Known::SingleObservationState);
            out = rb.to_vec();
        }
    } else if is(args, "TDIGEST.ADD") || is(args, "TDIGEST.RESET") || is(args, "TDIGEST.CREATE") {
        touched = true;
    } else if is(args, "TDIGEST.MERGE") {
        if rb == OK && fb == OK {
            merged(run, args);
        }
        return out;
    }
    if touched && align_single(run, &key) {
        drain(run);
    }
    out
}

/// After a MERGE both servers made: the destination's TTL (FerroBloom
/// keeps it), a destination listed as a source (FerroBloom merges it
/// once; it is then given 2.8.2's digest) and sources of one observation
/// (2.8.2's left unmerged).
fn merged(run: &mut Diff, args: &[Vec<u8>]) {
    let line = run.history.back().cloned().unwrap_or_default();
    let dest = args[1].clone();
    let mut wrote = false;
    let (rb_ttl, fb_ttl) = (
        pexpiretime(&mut run.rb.control, &dest),
        pexpiretime(&mut run.fb.control, &dest),
    );
    if rb_ttl != fb_ttl {
        if rb_ttl == -1 && fb_ttl > 0 {
            run.ty.seen.push(Known::MergeKeepsTtl);
            let r = run.fb.control.cmd(&[b"PERSIST".as_slice(), &dest]);
            assert_eq!(r, b":1\r\n");
            run.ty.control_writes.1 += 1;
            wrote = true;
        } else {
            let what = format!("{line}   -- destination's PEXPIRETIME");
            run.mismatch(&what, &rb_ttl.to_string(), &fb_ttl.to_string());
        }
    }
    if dest_listed_without_override(args) {
        let (x, y) = (
            observations(&mut run.rb.control, &dest),
            observations(&mut run.fb.control, &dest),
        );
        // 2.8.2's destination data counted twice: FerroBloom's holds the
        // sources' observations and the destination's once.
        run.ty.seen.push(Known::DestListedOnce);
        if x != y || x.is_none() {
            let n = args[3..3 + parse_int(&args[2]).unwrap_or(0) as usize]
                .iter()
                .filter(|s| **s == dest)
                .count() as i64;
            let before = run.ty.dest_before.unwrap_or(-1);
            let (x, y) = (x.unwrap_or(-1), y.unwrap_or(-1));
            if x - y != before * n {
                let what = format!(
                    "{line}   -- outside docs/tdigest.md's DestListedOnce (destination held {before})"
                );
                run.mismatch(&what, &x.to_string(), &y.to_string());
            }
        }
        take_2_8_2s(run, &dest);
        wrote = true;
    } else if run.ty.single_input {
        let (x, y) = (
            info(&mut run.rb.control, &dest),
            info(&mut run.fb.control, &dest),
        );
        // A result of one observation is `align_single`'s, below.
        let one = x.as_deref().map(|i| field(i, "Observations")) == Some(1);
        if x != y && !one {
            single_input_merge(run, &line, &dest, x, y);
            wrote = true;
        }
    }
    let n = args.get(2).and_then(|a| parse_int(a)).unwrap_or(0).max(0) as usize;
    let mut keys: Vec<Vec<u8>> = args[3..(3 + n).min(args.len())].to_vec();
    keys.push(dest);
    keys.sort();
    keys.dedup();
    for k in keys {
        wrote |= align_single(run, &k);
    }
    if wrote {
        drain(run);
    }
}

/// After maxmemory is lifted: the reads `ViewRefused` owes FerroBloom, sent
/// on its control connection (a client allowed to write the key: it
/// compresses the digest as its clients see it, as 2.8.2's read did);
/// then TDIGEST.INFO must be 2.8.2's.
pub fn owed_reads(run: &mut Diff) {
    for key in std::mem::take(&mut run.ty.owed_reads) {
        let r = run
            .fb
            .control
            .cmd(&[b"TDIGEST.QUANTILE".as_slice(), &key, b"0"]);
        let (x, y) = (
            info(&mut run.rb.control, &key),
            info(&mut run.fb.control, &key),
        );
        if r.starts_with(b"-") || x != y {
            let line = run.history.back().cloned().unwrap_or_default();
            let what = format!(
                "{line}   -- FerroBloom's owed read of {key:?}: {}",
                show_reply(&r)
            );
            run.mismatch(&what, &format!("{x:?}"), &format!("{y:?}"));
        }
    }
}

/// A MERGE with an input of one observation, whose result held one
/// observation when the next input was merged: FerroBloom's compress made
/// it a centroid (one more compression), 2.8.2's left it unmerged. The
/// same observations, and the same answers (read on both, which compresses
/// both); FerroBloom's key is then given 2.8.2's digest.
fn single_input_merge(
    run: &mut Diff,
    line: &str,
    dest: &[u8],
    x: Option<Vec<(String, i64)>>,
    y: Option<Vec<(String, i64)>>,
) {
    let same_data = match (&x, &y) {
        (Some(x), Some(y)) => ["Compression", "Capacity", "Observations"]
            .iter()
            .all(|n| field(x, n) == field(y, n)),
        _ => false,
    };
    let reads: &[&[&[u8]]] = &[
        &[
            b"TDIGEST.QUANTILE",
            dest,
            b"0",
            b"0.01",
            b"0.1",
            b"0.5",
            b"0.9",
            b"0.99",
            b"1",
        ],
        &[
            b"TDIGEST.CDF",
            dest,
            b"-1e300",
            b"0",
            b"1",
            b"10",
            b"100",
            b"1e300",
        ],
        &[b"TDIGEST.TRIMMED_MEAN", dest, b"0.1", b"0.9"],
    ];
    let mut answers_agree = true;
    for r in reads {
        // Doubles in one form: FerroBloom may run on a server that prints
        // them otherwise than 2.8.2's Redis 7.0.
        answers_agree &= doubles_in_one_form(&run.rb.control.cmd(r))
            == doubles_in_one_form(&run.fb.control.cmd(r));
    }
    if !same_data || !answers_agree {
        let what = format!(
            "{line}   -- outside docs/tdigest.md's SingleObservationState (a merge input of one observation)"
        );
        run.mismatch(&what, &format!("{x:?}"), &format!("{y:?}"));
    }
    run.ty.seen.push(Known::SingleObservationState);
    take_2_8_2s(run, dest);
}
