//! The only places where FerroBloom's Top-K answers otherwise than
//! RedisBloom 2.8.2: the differences docs/topk.md lists. `known_case` says
//! which one a compared command is, from its arguments, both replies and
//! what the generator knows of the keys; `accept` checks FerroBloom's
//! reply against what docs/topk.md documents for it (and 2.8.2's against
//! what the spec records), and brings the data back together where the
//! case let it part. `fb_only_case` names the commands 2.8.2 cannot be
//! sent at all (it aborts), whose FerroBloom reply `check_fb_only` checks.

use super::{Diff, Model};
use crate::common::differential::{
    args, eq_ic, nul_cut, parse_int, show_reply, show_stream, topk_dump, topk_payloads_agree, Args,
    TopkFields,
};
use crate::common::{decode, Resp};
use ferrobloom_core::dump_format::DumpWriter;
use ferrobloom_core::rdb_io::RdbOutput;
use ferrobloom_core::topk::dump::{dump_payload, type_id};
use ferrobloom_core::topk::sketch::fingerprint;

pub const BAD_INCREMENT: &str = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";
pub const INVALID_K: &[u8] = b"-TopK: invalid k\r\n";
pub const GUARD_REFUSED: &[u8] = b"-ERR Insufficient memory to create topk data structure: ";
/// Above this many bytes FerroBloom's memory guard refuses a sketch (its
/// default per-value cap); 2.8.2 allocates it and Redis 7.0 aborts.
const GUARD_CAP: u128 = 4 << 30;

/// A difference docs/topk.md documents.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Known {
    /// A reply holding an item with a NUL byte: 2.8.2 cuts it at the NUL,
    /// FerroBloom sends it whole.
    NulItemReply,
    /// DUMP of a sketch holding such an item: 2.8.2 saves the bytes before
    /// the NUL (and a NUL), FerroBloom the whole item.
    NulItemSaved,
    /// An empty item in a sketch 2.8.2 loaded (RDB, RESTORE): 2.8.2 lists
    /// and expels it as null, FerroBloom as the empty string.
    EmptyItemLoaded,
    /// TOPK.INCRBY with a bad increment: 2.8.2's array stops after the
    /// error element and it propagates the command as received;
    /// FerroBloom answers the error for every later pair and propagates
    /// the pairs it applied.
    BadIncrement,
    /// An add to a sketch 2.8.2 loaded: its decay table stays zero, so it
    /// never decays again; FerroBloom's decays as a fresh sketch does.
    LoadedNeverDecays,
    /// TOPK.RESERVE with k a multiple of 2^32: 2.8.2 aborts, FerroBloom
    /// answers `TopK: invalid k`.
    KMultipleOf2To32,
    /// A sketch too large for memory: 2.8.2 allocates it (Redis 7.0
    /// aborts when that fails), FerroBloom's memory guard refuses it.
    HugeSketch,
}

fn is(args: &[Vec<u8>], name: &str) -> bool {
    args.first().is_some_and(|a| eq_ic(a, name))
}

/// An increment TOPK.INCRBY takes: an integer in 0..=100000.
pub fn good_increment(arg: &[u8]) -> bool {
    parse_int(arg).is_some_and(|v| (0..=100_000).contains(&v))
}

/// The first pair of a TOPK.INCRBY whose increment is bad, if any.
pub fn first_bad_pair(args: &[Vec<u8>]) -> Option<usize> {
    args.get(3..)?
        .iter()
        .step_by(2)
        .position(|incr| !good_increment(incr))
}

/// The commands 2.8.2 must not get: TOPK.RESERVE of a new key with k ≡ 0
/// mod 2^32 (an assertion aborts it), or with valid dimensions whose
/// buckets and heap pass 2.8.2's size check but not the memory guard
/// (2.8.2 allocates them). The caller sends them to a key that does not
/// exist.
pub fn fb_only_case(args: &[Vec<u8>]) -> Option<Known> {
    if !is(args, "TOPK.RESERVE") || !(args.len() == 3 || args.len() == 6) {
        return None;
    }
    let k = parse_int(&args[2]).filter(|&k| k >= 1)?;
    let k = k as u64 & 0xffff_ffff;
    if k == 0 {
        return Some(Known::KMultipleOf2To32);
    }
    let (width, depth) = if args.len() == 3 {
        (8, 7)
    } else {
        let dim = |a: &[u8]| parse_int(a).filter(|&v| (1..=0xffff_ffff).contains(&v));
        let decay: f64 = std::str::from_utf8(&args[5]).ok()?.parse().ok()?;
        if !(decay > 0.0 && decay <= 1.0) {
            return None;
        }
        (dim(&args[3])? as u128, dim(&args[4])? as u128)
    };
    let buckets = width * depth * 8;
    if buckets > u128::from(u64::MAX) {
        // 2.8.2's own `Insufficient memory` check: both modules answer it.
        return None;
    }
    (buckets + u128::from(k) * 24 > GUARD_CAP).then_some(Known::HugeSketch)
}

/// Checks FerroBloom's reply to a command `fb_only_case` kept from 2.8.2,
/// and that it propagated nothing.
pub fn check_fb_only(run: &mut Diff, case: Known, reply: &[u8], propagated: &[Args]) {
    run.ty.seen.push(case);
    let ok = match case {
        Known::KMultipleOf2To32 => reply == INVALID_K,
        Known::HugeSketch => reply.starts_with(GUARD_REFUSED),
        _ => false,
    };
    if !ok || !propagated.is_empty() {
        let line = run.history.back().cloned().unwrap_or_default();
        let what = format!("{line}   -- outside docs/topk.md's {case:?}");
        let fb = format!(
            "{}, propagated {}",
            show_reply(reply),
            show_stream(propagated)
        );
        run.mismatch(&what, "(not sent: it aborts 2.8.2)", &fb);
    }
}

/// How one reply leaf of FerroBloom relates to 2.8.2's.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Leaf {
    Same,
    /// 2.8.2's bulk is FerroBloom's cut at its first NUL.
    NulCut,
    /// 2.8.2's null where FerroBloom has the empty string.
    EmptyVsNull,
    Differs,
}

/// Walks both replies together: the differences found at their leaves
/// (`Differs` when the shapes differ).
fn relate(rb: &Resp, fb: &Resp, out: &mut Vec<Leaf>) {
    match (rb, fb) {
        (Resp::Array(x), Resp::Array(y)) | (Resp::Set(x), Resp::Set(y)) if x.len() == y.len() => {
            for (a, b) in x.iter().zip(y) {
                relate(a, b, out);
            }
        }
        (Resp::Map(x), Resp::Map(y)) if x.len() == y.len() => {
            for ((ka, va), (kb, vb)) in x.iter().zip(y) {
                relate(ka, kb, out);
                relate(va, vb, out);
            }
        }
        (a, b) if a == b => out.push(Leaf::Same),
        (Resp::Bulk(a), Resp::Bulk(b)) if b.contains(&0) => {
            let cut = nul_cut(b);
            out.push(if a[..] == cut[..cut.len() - 1] {
                Leaf::NulCut
            } else {
                Leaf::Differs
            });
        }
        (Resp::Nil, Resp::Bulk(b)) if b.is_empty() => out.push(Leaf::EmptyVsNull),
        _ => out.push(Leaf::Differs),
    }
}

/// The reply-level case of two replies that differ: whole NUL items, or
/// empty items 2.8.2 loaded as null; None when they differ otherwise.
fn reply_case(rb: &Resp, fb: &Resp) -> Option<Known> {
    let mut leaves = Vec::new();
    relate(rb, fb, &mut leaves);
    if leaves.contains(&Leaf::Differs) {
        return None;
    }
    if leaves.contains(&Leaf::NulCut) {
        Some(Known::NulItemReply)
    } else if leaves.contains(&Leaf::EmptyVsNull) {
        Some(Known::EmptyItemLoaded)
    } else {
        None
    }
}

/// Which documented difference the compared command `args` is, given
/// 2.8.2's reply `rb` and FerroBloom's `fb`; None where both must be equal
/// byte for byte. A DUMP of a sketch is never equal byte for byte (2.8.2's
/// pointers): `accept` compares it masked before asking this.
pub fn known_case(run: &Diff, args: &[Vec<u8>], rb: &[u8], fb: &[u8]) -> Option<Known> {
    if run
        .ty
        .model
        .as_ref()
        .is_some_and(|m| args.get(1) == Some(&m.key))
    {
        return Some(Known::LoadedNeverDecays);
    }
    let incrby = is(args, "TOPK.INCRBY") && args.len() >= 4 && args.len() % 2 == 0;
    if incrby && rb.starts_with(b"*") && first_bad_pair(args).is_some() {
        return Some(Known::BadIncrement);
    }
    if rb == fb {
        return None;
    }
    let (x, y) = (decode(rb), decode(fb));
    if is(args, "EVAL") {
        if let Some(case) = lua_cut_at_null(&x, &y) {
            return Some(case);
        }
    }
    reply_case(&x, &y)
}

/// A script under `redis.setresp(3)` gets 2.8.2's null for a loaded
/// empty item as Lua's nil, which ends the array it returns: 2.8.2's
/// reply is FerroBloom's cut just before an empty string.
fn lua_cut_at_null(rb: &Resp, fb: &Resp) -> Option<Known> {
    let (Resp::Array(x), Resp::Array(y)) = (rb, fb) else {
        return None;
    };
    if x.len() >= y.len() || y[x.len()] != Resp::Bulk(Vec::new()) {
        return None;
    }
    let mut leaves = Vec::new();
    relate(rb, &Resp::Array(y[..x.len()].to_vec()), &mut leaves);
    (!leaves.contains(&Leaf::Differs)).then_some(Known::EmptyItemLoaded)
}

/// `Topk::known_difference`: FerroBloom's reply as 2.8.2 gives it, once
/// each reply has been checked against its documented behaviour.
pub fn accept(run: &mut Diff, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
    let line = run.history.back().cloned().unwrap_or_default();
    // A model serves the one command it was made for (one without a key
    // leaves it unused).
    if run
        .ty
        .model
        .as_ref()
        .is_some_and(|m| args.get(1) != Some(&m.key))
    {
        run.ty.model = None;
    }
    if is(args, "DUMP") {
        if let (Resp::Bulk(x), Resp::Bulk(y)) = (decode(rb), decode(&fb)) {
            if topk_dump(&x).is_ok() || topk_dump(&y).is_ok() {
                match topk_payloads_agree(&x, &y) {
                    Ok(true) => return rb.to_vec(),
                    Ok(false) => {
                        run.ty.seen.push(Known::NulItemSaved);
                        return rb.to_vec();
                    }
                    Err(why) => {
                        let what = format!("{line}   -- {why}");
                        run.mismatch(&what, &show_reply(rb), &show_reply(&fb));
                        return fb;
                    }
                }
            }
        }
    }
    let Some(case) = known_case(run, args, rb, &fb) else {
        return fb;
    };
    // A write to a loaded sketch is a case only where the data parted
    // (`loaded` says so).
    if case != Known::LoadedNeverDecays {
        run.ty.seen.push(case);
    }
    match case {
        Known::NulItemReply | Known::EmptyItemLoaded => rb.to_vec(),
        Known::BadIncrement => bad_increment(run, &line, args, rb, fb),
        Known::LoadedNeverDecays => loaded(run, &line, args, rb, fb),
        Known::KMultipleOf2To32 | Known::HugeSketch | Known::NulItemSaved => fb,
    }
}

/// 2.8.2: the elements up to the first bad pair's error, then the PONGs
/// that completed its array (`Runner::send_short_reply`), and the command
/// propagated as received. FerroBloom: the same elements (up to NUL cuts
/// and loaded empty items), then the error for every later pair, and a
/// TOPK.INCRBY of the pairs before the bad one propagated (nothing when it
/// is the first).
fn bad_increment(run: &mut Diff, line: &str, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
    let bad = first_bad_pair(args).expect("a bad pair");
    let pairs = (args.len() - 2) / 2;
    let error = Resp::Error(BAD_INCREMENT.to_string());
    let ok = match (decode(rb), decode(&fb)) {
        (Resp::Array(x), Resp::Array(y)) if x.len() == pairs && y.len() == pairs => {
            let head = |v: &[Resp]| Resp::Array(v[..bad].to_vec());
            let mut leaves = Vec::new();
            relate(&head(&x), &head(&y), &mut leaves);
            !leaves.contains(&Leaf::Differs)
                && x[bad] == error
                && x[bad + 1..]
                    .iter()
                    .all(|p| *p == Resp::Simple("PONG".into()))
                && y[bad..].iter().all(|e| *e == error)
        }
        _ => false,
    };
    if !ok {
        let what = format!("{line}   -- outside docs/topk.md's BadIncrement");
        run.mismatch(&what, &show_reply(rb), &show_reply(&fb));
    }
    let (rb_stream, fb_stream) = drain(run);
    let mut applied: Args = args[..2 + 2 * bad].to_vec();
    applied[0] = b"TOPK.INCRBY".to_vec();
    let fb_want = if bad == 0 { vec![] } else { vec![applied] };
    let fb_got = uppercase_names(fb_stream);
    if rb_stream != [args.to_vec()] || fb_got != fb_want {
        let what = format!("{line}   -- propagated in docs/topk.md's BadIncrement");
        run.mismatch(
            &what,
            &show_stream(&rb_stream),
            &format!("{} (want {})", show_stream(&fb_got), show_stream(&fb_want)),
        );
    }
    rb.to_vec()
}

fn uppercase_names(cmds: Vec<Args>) -> Vec<Args> {
    cmds.into_iter()
        .map(|mut c| {
            c[0].make_ascii_uppercase();
            c
        })
        .collect()
}

/// An add to a sketch 2.8.2 loaded. FerroBloom must answer and end as the
/// engine does with a sketch freshly made of the data it held before the
/// command (the model: decay 1 decrements on every collision, as a fresh
/// 2.8.2 sketch does); 2.8.2's array has the same length. Where their
/// replies or data then differ, FerroBloom's key gets 2.8.2's data.
fn loaded(run: &mut Diff, line: &str, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
    let Model { key, mut sketch } = run.ty.model.take().expect("a model");
    let fb_reply = decode(&fb);
    if matches!(fb_reply, Resp::Error(_)) && rb == fb.as_slice() {
        // Refused alike (arity, maxmemory): nothing changed.
        return fb;
    }
    let refused = false;
    let expected = model_reply(&mut sketch, args);
    if fb_reply != expected {
        let what = format!("{line}   -- FerroBloom's reply is not a fresh sketch's (model)");
        run.mismatch(&what, &format!("{expected:?}"), &show_reply(&fb));
    }
    let fb_payload = dump_of(&mut run.fb.control, &key);
    let want = topk_dump(&dump_payload(&sketch, 10)).ok().map(|d| d.fields);
    let got = fb_payload
        .as_deref()
        .map(topk_dump)
        .and_then(Result::ok)
        .map(|d| d.fields);
    if !refused && want != got {
        let what = format!("{line}   -- FerroBloom's data is not a fresh sketch's (model)");
        run.mismatch(&what, &format!("{want:?}"), &format!("{got:?}"));
    }
    let same_length = match (decode(rb), &fb_reply) {
        (Resp::Array(x), Resp::Array(y)) => x.len() == y.len(),
        (x, y) => x == *y,
    };
    if !same_length {
        let what = format!("{line}   -- outside docs/topk.md's LoadedNeverDecays");
        run.mismatch(&what, &show_reply(rb), &show_reply(&fb));
    }
    let (rb_stream, fb_stream) = drain(run);
    if uppercase_names(rb_stream.clone()) != uppercase_names(fb_stream.clone())
        && first_bad_pair(args).is_none()
    {
        let what = format!("{line}   -- propagated in docs/topk.md's LoadedNeverDecays");
        run.mismatch(&what, &show_stream(&rb_stream), &show_stream(&fb_stream));
    }
    let rb_payload = dump_of(&mut run.rb.control, &key);
    let data_agree = match (&rb_payload, &fb_payload) {
        (Some(x), Some(y)) => topk_payloads_agree(x, y).is_ok(),
        (x, y) => x.is_none() && y.is_none(),
    };
    let replies_agree = rb == fb.as_slice() || reply_case(&decode(rb), &fb_reply).is_some();
    if !data_agree || !replies_agree {
        run.ty.seen.push(Known::LoadedNeverDecays);
    }
    resync_key(run, &key);
    rb.to_vec()
}

/// The reply the engine gives: each ADD item or INCRBY pair in order, an
/// INCRBY stopping at its first bad increment (the error for that pair
/// and every later one).
fn model_reply(sketch: &mut ferrobloom_core::topk::TopK, args: &[Vec<u8>]) -> Resp {
    let expelled = |r: Result<Option<Box<[u8]>>, _>| match r {
        Ok(Some(item)) => Resp::Bulk(item.into_vec()),
        Ok(None) => Resp::Nil,
        Err(e) => panic!("model: {e:?}"),
    };
    if is(args, "TOPK.ADD") {
        return Resp::Array(args[2..].iter().map(|i| expelled(sketch.add(i))).collect());
    }
    let mut out = Vec::new();
    let mut stopped = false;
    for pair in args[2..].chunks(2) {
        if stopped || !good_increment(&pair[1]) {
            stopped = true;
            out.push(Resp::Error(BAD_INCREMENT.into()));
            continue;
        }
        let incr = parse_int(&pair[1]).expect("checked") as u32;
        out.push(expelled(sketch.incrby(&pair[0], incr)));
    }
    Resp::Array(out)
}

pub fn dump_of(c: &mut crate::common::RawClient, key: &[u8]) -> Option<Vec<u8>> {
    match decode(&c.cmd(&[b"DUMP".as_slice(), key])) {
        Resp::Bulk(p) => Some(p),
        _ => None,
    }
}

/// Gives FerroBloom's `key` 2.8.2's data (RESTORE … REPLACE, out of the
/// compared streams), with the items 2.8.2 saved cut at a NUL made whole
/// again (`whole_items`), or deletes it where 2.8.2 has none.
pub fn resync_key(run: &mut Diff, key: &[u8]) {
    let rb = dump_of(&mut run.rb.control, key);
    let fb = dump_of(&mut run.fb.control, key);
    let agree = match (&rb, &fb) {
        (Some(x), Some(y)) => topk_payloads_agree(x, y).is_ok(),
        (None, None) => true,
        _ => false,
    };
    if agree {
        drain(run);
        return;
    }
    let reply = match rb {
        None => run.fb.control.cmd(&[b"DEL".as_slice(), key]),
        Some(p) => {
            let payload = whole_items(&p, run.fb_version.rdb_version(), &run.keys)
                .unwrap_or_else(|e| panic!("seed {}: {e}", run.seed));
            let restore = args!["RESTORE", key, "0", payload, "REPLACE"];
            run.fb.control.cmd(&restore)
        }
    };
    assert!(
        reply == b"+OK\r\n" || reply == b":1\r\n",
        "resync: {}",
        show_reply(&reply)
    );
    run.ty.resynced += 1;
    drain(run);
}

/// 2.8.2's payload `p` with each item it cut at a NUL made whole again
/// (found by fingerprint and length among the NUL items the generator
/// sends and the key names `keys`, which `op_arity` sends as items too),
/// pointers zero, strings uncompressed: the data 2.8.2 holds in memory, in
/// FerroBloom's form.
pub fn whole_items(p: &[u8], rdb_version: u16, keys: &[Vec<u8>]) -> Result<Vec<u8>, String> {
    let TopkFields {
        k,
        width,
        depth,
        decay_bits,
        buckets,
        heap,
        items,
    } = topk_dump(p)?.fields;
    let mut w = DumpWriter::new(type_id(0));
    w.write_unsigned(k);
    w.write_unsigned(width);
    w.write_unsigned(depth);
    w.write_double(f64::from_bits(decay_bits));
    w.write_bytes(&buckets);
    w.write_bytes(&heap);
    for (record, saved) in heap.chunks_exact(24).zip(items) {
        let fp = u32::from_le_bytes(record[0..4].try_into().unwrap());
        let itemlen = u32::from_le_bytes(record[4..8].try_into().unwrap()) as usize;
        if saved.len() > itemlen {
            w.write_bytes(&saved);
            continue;
        }
        let whole = super::generator::NUL_ITEMS
            .iter()
            .copied()
            .chain(keys.iter().map(Vec::as_slice))
            .find(|x| x.len() == itemlen && fingerprint(x) == fp && nul_cut(x) == saved)
            .ok_or_else(|| format!("no NUL item for the cut {saved:?} (len {itemlen})"))?;
        let mut s = whole.to_vec();
        s.push(0);
        w.write_bytes(&s);
    }
    Ok(w.finish(rdb_version))
}

/// The commands each server propagated since the last marker.
pub fn drain(run: &mut Diff) -> (Vec<Args>, Vec<Args>) {
    run.markers += 1;
    let marker = run.markers.to_string().into_bytes();
    let rb = run.rb.propagated(&marker).expect("2.8.2's stream");
    let fb = run.fb.propagated(&marker).expect("FerroBloom's stream");
    (rb, fb)
}
