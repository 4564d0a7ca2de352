//! The only places where FerroBloom's Count-Min sketches answer otherwise
//! than RedisBloom 2.8.2: RedisBloom 8.12's behaviour, which FerroBloom
//! follows (sketches-compat.md §3.9, "a 2.8.2 differential test must skip
//! exactly these"). `newer_case` says which case a command is, from its
//! arguments and the two replies; `accept` checks each reply against what
//! its module documents for that case, and brings FerroBloom's data back to
//! 2.8.2's where the case let them part.

use super::{Cms, Diff};
use crate::common::differential::{args, eq_ic, parse_int, show_reply, show_stream, Args};
use crate::common::{decode, dump_parts, restamp_dump, Resp};

pub const OVERFLOW: &[u8] = b"-CMS: INCRBY overflow\r\n";
pub const UNDERFLOW: &[u8] = b"-CMS: INCRBY underflow\r\n";
pub const NEGATIVE: &[u8] = b"-CMS: Number cannot be negative\r\n";
pub const CANNOT_PARSE: &[u8] = b"-CMS: Cannot parse number\r\n";
pub const INVALID_INCREMENT: &[u8] = b"-CMS: invalid increment\r\n";
/// CMS.INFO's fourth pair in FerroBloom (RedisBloom 8.12) for a sketch of
/// 4-byte cells, the only size 2.8.2 has.
const CELL_SIZE_4: &[u8] = b"+cell_size\r\n:4\r\n";

/// A §3.9 difference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Newer {
    /// CMS.INITBYDIM / CMS.INITBYPROB with 6 arguments (`CELL_SIZE n`):
    /// 2.8.2 answers the arity error, 8.12 reads the option.
    CellSizeOption,
    /// A CMS.INCRBY whose first increment that parses is negative: 2.8.2
    /// refuses the command (`Number cannot be negative`), 8.12 parses every
    /// increment first and decrements (or reports `INCRBY underflow`).
    NegativeIncrement,
    /// A CMS.INCRBY (alone, or in a transaction or script) where a reply has
    /// an `INCRBY overflow` or `underflow` element: 2.8.2 saturates the
    /// cells at 2^32 − 1, advances the count and reports overflow when a
    /// count reaches 2^32 − 1 exactly; 8.12 leaves the item's cells and the
    /// count alone when an increment does not fit and reports a count at
    /// the maximum as a number.
    Overflow,
    /// CMS.INFO (alone, or in a transaction or script): 8.12's fourth pair,
    /// `cell_size 4`.
    InfoCellSize,
}

fn is(args: &[Vec<u8>], name: &str) -> bool {
    args.first().is_some_and(|a| eq_ic(a, name))
}

fn contains(reply: &[u8], part: &[u8]) -> bool {
    reply.windows(part.len()).any(|w| w == part)
}

/// A reply that stops a command at its key (missing key, another type).
fn key_refused(reply: &[u8]) -> bool {
    reply.starts_with(b"-CMS: key does not exist\r\n") || reply.starts_with(b"-WRONGTYPE")
}

/// Which §3.9 case the command `args` is, given 2.8.2's reply `rb` and
/// FerroBloom's `fb`; None where both must be byte for byte equal.
pub fn newer_case(args: &[Vec<u8>], rb: &[u8], fb: &[u8]) -> Option<Newer> {
    let initby = is(args, "CMS.INITBYDIM") || is(args, "CMS.INITBYPROB");
    if initby && args.len() == 6 {
        return Some(Newer::CellSizeOption);
    }
    let incrby = is(args, "CMS.INCRBY");
    if incrby && args.len() >= 4 && args.len() % 2 == 0 && !key_refused(rb) {
        // 2.8.2 checks each pair in order: the first increment that does
        // not parse stops it with the parse error, as 8.12; a negative one
        // before it is the difference.
        for increment in args[3..].iter().step_by(2) {
            match parse_int(increment) {
                None => break,
                Some(v) if v < 0 => return Some(Newer::NegativeIncrement),
                Some(_) => {}
            }
        }
    }
    let batch = is(args, "EXEC") || is(args, "EVAL");
    let flows = |r: &[u8]| contains(r, OVERFLOW) || contains(r, UNDERFLOW);
    if (incrby || batch) && (flows(rb) || flows(fb)) {
        return Some(Newer::Overflow);
    }
    if (is(args, "CMS.INFO") || batch) && contains(fb, CELL_SIZE_4) {
        return Some(Newer::InfoCellSize);
    }
    None
}

/// `reply` with every CMS.INFO reply in it (RESP2 `*8`, RESP3 `%4`) cut to
/// 2.8.2's three pairs, where its fourth pair is `cell_size 4`; other
/// replies unchanged.
pub fn without_cell_size(reply: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(reply.len());
    let mut rest = reply;
    while let Some(at) = rest
        .windows(CELL_SIZE_4.len())
        .position(|w| w == CELL_SIZE_4)
    {
        let before = &rest[..at];
        let header_at = before
            .windows(b"+width\r\n".len())
            .rposition(|w| w == b"+width\r\n")
            .and_then(|i| i.checked_sub(4));
        let Some(h) = header_at else {
            out.extend_from_slice(&rest[..at + CELL_SIZE_4.len()]);
            rest = &rest[at + CELL_SIZE_4.len()..];
            continue;
        };
        let three = match &before[h..h + 4] {
            b"*8\r\n" => b"*6\r\n",
            b"%4\r\n" => b"%3\r\n",
            _ => {
                out.extend_from_slice(&rest[..at + CELL_SIZE_4.len()]);
                rest = &rest[at + CELL_SIZE_4.len()..];
                continue;
            }
        };
        out.extend_from_slice(&before[..h]);
        out.extend_from_slice(three);
        out.extend_from_slice(&before[h + 4..]);
        rest = &rest[at + CELL_SIZE_4.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// Number of elements of an array reply, None for another reply.
fn array_len(reply: &[u8]) -> Option<usize> {
    match decode(reply) {
        Resp::Array(v) => Some(v.len()),
        _ => None,
    }
}

/// The arity error of a command as both modules word it.
pub fn arity_error(name: &[u8]) -> Vec<u8> {
    format!(
        "-ERR wrong number of arguments for '{}' command\r\n",
        String::from_utf8_lossy(name).to_lowercase()
    )
    .into_bytes()
}

/// `Cms::known_difference`: checks a §3.9 case and returns FerroBloom's
/// reply as 2.8.2 gives it.
pub fn accept(run: &mut Diff, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
    let Some(case) = newer_case(args, rb, &fb) else {
        return fb;
    };
    run.ty.newer_seen.push(case);
    let line = run.history.back().cloned().unwrap_or_default();
    let pairs = args.len().saturating_sub(2) / 2;
    let alone = !is(args, "EXEC") && !is(args, "EVAL");
    // What each module documents for the case (2.8.2: §3.3-3.4, 3.7;
    // 8.12: §3.9); a reply outside it is a mismatch as any other.
    let (rb_ok, fb_ok) = match case {
        Newer::InfoCellSize => {
            let fb = without_cell_size(&fb);
            return fb;
        }
        Newer::CellSizeOption => (
            rb == arity_error(&args[0]).as_slice(),
            fb == b"+OK\r\n" || fb.starts_with(b"-CMS: "),
        ),
        Newer::NegativeIncrement => (
            rb == NEGATIVE,
            array_len(&fb) == Some(pairs) || fb == CANNOT_PARSE || fb == INVALID_INCREMENT,
        ),
        Newer::Overflow if alone => (
            array_len(rb) == Some(pairs),
            array_len(&fb) == Some(pairs) && !contains(&fb, UNDERFLOW),
        ),
        Newer::Overflow => (true, true),
    };
    if !rb_ok || !fb_ok {
        let what = format!("{line}   -- outside §3.9's {case:?}");
        run.mismatch(&what, &show_reply(rb), &show_reply(&fb));
    }
    // 2.8.2 propagates an INCRBY whose increments all parsed verbatim,
    // saturated cells and all, and nothing for a refused command (§7.2);
    // FerroBloom propagates what it applied, on the same key.
    let (rb_stream, fb_stream) = drain(run);
    if alone {
        let rb_want: Vec<Args> = match case {
            Newer::Overflow => vec![args.to_vec()],
            _ => Vec::new(),
        };
        let fb_fits = fb_stream.iter().all(|c| {
            c.len() >= 2 && c[0].len() > 4 && eq_ic(&c[0][..4], "CMS.") && c[1] == args[1]
        });
        if rb_stream != rb_want || !fb_fits {
            let what = format!("{line}   -- propagated in §3.9's {case:?}");
            run.mismatch(&what, &show_stream(&rb_stream), &show_stream(&fb_stream));
        }
    }
    resync(run);
    rb.to_vec()
}

/// The commands each server propagated since the last marker.
fn drain(run: &mut Diff) -> (Vec<Args>, Vec<Args>) {
    run.markers += 1;
    let marker = run.markers.to_string().into_bytes();
    let rb = run
        .rb
        .propagated(&marker)
        .expect("2.8.2's replication stream");
    let fb = run
        .fb
        .propagated(&marker)
        .expect("FerroBloom's replication stream");
    (rb, fb)
}

/// Gives every key whose DUMP value differs 2.8.2's value on FerroBloom's
/// server (RESTORE … REPLACE of 2.8.2's payload, or DEL), out of the
/// compared streams: after a §3.9 case the servers hold different counts
/// by design, and the comparison goes on from 2.8.2's.
pub fn resync(run: &mut Diff) {
    let mut keys = keys_of(&run.rb.control.cmd(&["KEYS", "*"]));
    keys.extend(keys_of(&run.fb.control.cmd(&["KEYS", "*"])));
    keys.sort();
    keys.dedup();
    let fb_rdb = run.fb_version.rdb_version();
    let mut changed = Vec::new();
    for key in keys {
        let dump =
            |c: &mut crate::common::RawClient| match decode(&c.cmd(&[b"DUMP".as_slice(), &key])) {
                Resp::Bulk(p) => Some(p),
                _ => None,
            };
        let (rb, fb) = (dump(&mut run.rb.control), dump(&mut run.fb.control));
        let value = |p: &Option<Vec<u8>>| p.as_ref().map(|p| dump_parts(p).0.to_vec());
        if value(&rb) == value(&fb) {
            continue;
        }
        let reply = match rb {
            None => run.fb.control.cmd(&[b"DEL".as_slice(), &key]),
            Some(p) => {
                let p = restamp_dump(&p, fb_rdb);
                let restore = args!["RESTORE", &key, "0", p, "REPLACE"];
                run.fb.control.cmd(&restore)
            }
        };
        assert!(
            reply == b"+OK\r\n" || reply == b":1\r\n",
            "resync of {}: {}",
            crate::common::differential::quote(&key, 60),
            show_reply(&reply)
        );
        changed.push(key);
    }
    run.ty.resynced += changed.len();
    drain(run);
}

fn keys_of(reply: &[u8]) -> Vec<Vec<u8>> {
    match decode(reply) {
        Resp::Array(v) => v
            .into_iter()
            .filter_map(|k| match k {
                Resp::Bulk(k) => Some(k),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

impl Cms {
    /// How often each case was met (printed at the end of a run).
    pub fn newer_summary(&self) -> String {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for case in &self.newer_seen {
            let name = format!("{case:?}");
            match counts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => *c += 1,
                None => counts.push((name, 1)),
            }
        }
        let parts: Vec<String> = counts.iter().map(|(n, c)| format!("{n} {c}")).collect();
        format!(
            "§3.9 cases met: {} (keys brought back to 2.8.2's data: {})",
            if parts.is_empty() {
                "none".to_string()
            } else {
                parts.join(", ")
            },
            self.resynced
        )
    }
}
