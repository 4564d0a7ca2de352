//! Parsing and printing of command arguments and replies.

use super::Args;
use std::fmt::Write as _;

/// Redis' string2ll: optional '-', digits, no leading zeros, no "-0".
pub fn parse_int(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    if digits == b"0" {
        return (!neg).then_some(0);
    }
    if digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if neg {
        (v <= 1 << 63).then(|| (v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

pub fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// A byte string as redis-cli accepts it (quoted, with \xNN escapes).
pub fn quote(arg: &[u8], max: usize) -> String {
    let plain = !arg.is_empty()
        && arg
            .iter()
            .all(|&c| c.is_ascii_graphic() && c != b'"' && c != b'\'' && c != b'\\');
    let shown = &arg[..arg.len().min(max)];
    let mut s = String::new();
    if plain {
        s.push_str(std::str::from_utf8(shown).unwrap());
    } else {
        s.push('"');
        for &c in shown {
            match c {
                b'"' | b'\\' => {
                    s.push('\\');
                    s.push(c as char);
                }
                b' '..=b'~' => s.push(c as char),
                _ => {
                    let _ = write!(s, "\\x{c:02x}");
                }
            }
        }
        s.push('"');
    }
    if arg.len() > max {
        let _ = write!(s, "…(+{} bytes)", arg.len() - max);
    }
    s
}

pub fn show_cmd(args: &[Vec<u8>]) -> String {
    let mut s = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&quote(a, 120));
    }
    s
}

pub fn show_reply(r: &[u8]) -> String {
    quote(r, 600)
}
/// A command stream as `[cmd] [cmd] ...`, or `(nothing)`.
pub fn show_stream(cmds: &[Args]) -> String {
    if cmds.is_empty() {
        return "(nothing)".into();
    }
    cmds.iter()
        .map(|c| format!("[{}]", show_cmd(c)))
        .collect::<Vec<_>>()
        .join(" ")
}
