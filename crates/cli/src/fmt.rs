//! Number formatting, key names as text, and plain-text tables.

use console::{measure_text_width, pad_str, Alignment};

/// `12345678` as `12,345,678`.
pub fn int(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `noun` as the count `n` needs it: singular for exactly one, else the
/// plural (`-es` after a sibilant: `hash`, `hashes`). Every count-noun
/// phrase of the tool goes through here so that none says `1 items`.
pub fn noun(n: u64, noun: &str) -> String {
    if n == 1 {
        noun.to_string()
    } else if ["s", "sh", "ch", "x", "z"]
        .iter()
        .any(|end| noun.ends_with(end))
    {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

/// A count with its noun, the count grouped by thousands: `1 item`,
/// `12,345 items`.
pub fn count(n: u64, what: &str) -> String {
    format!("{} {}", int(n), noun(n, what))
}

/// A byte count in binary units: `512 B`, `1.5 KiB`, `18.9 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// C's `%g` with `precision` significant digits (BF.DEBUG prints error
/// rates this way): `0.005`, `0.000625`, `6.25e-05`, `1e-07`.
pub fn g(x: f64, precision: usize) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return x.to_string();
    }
    let p = precision.max(1);
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A ratio as a percentage with one decimal: `0.953` as `95.3%`.
pub fn percent(ratio: f64) -> String {
    format!("{:.1}%", ratio * 100.0)
}

/// The current time of day in UTC, `HH:MM:SS`.
pub fn utc_time() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let day = secs % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        day / 3600,
        (day / 60) % 60,
        day % 60
    )
}

/// A key name as text for a terminal or a log line, never anything that
/// moves the cursor, changes colours or breaks a line: printable UTF-8 as it
/// is; a backslash as `\\`; tab, newline and carriage return as `\t`, `\n`,
/// `\r`; every byte of the other control characters (C0, DEL, C1), of the
/// invisible characters that reorder or separate text (bidirectional
/// controls, zero-width joiners, U+2028/U+2029, the byte order mark) and of
/// invalid UTF-8 as `\xHH`. The key's bytes can be read back from it.
pub fn key(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() || is_invisible(c) => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        push_hex(&mut out, b);
                    }
                }
                c => out.push(c),
            }
        }
        for &b in chunk.invalid() {
            push_hex(&mut out, b);
        }
    }
    out
}

fn push_hex(out: &mut String, b: u8) {
    out.push_str(&format!("\\x{b:02x}"));
}

/// Characters that show nothing but change how the text around them is
/// laid out: zero-width spaces and joiners, bidirectional marks, embeddings,
/// overrides and isolates, line and paragraph separators, the BOM.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// A column: its title and whether values are right-aligned (numbers).
pub struct Column {
    pub title: &'static str,
    pub right: bool,
}

/// Renders rows under a header, columns separated by two spaces. Cells may
/// hold ANSI styling; widths count visible characters only.
pub fn table(columns: &[Column], rows: &[Vec<String>], indent: &str) -> String {
    let mut widths: Vec<usize> = columns.iter().map(|c| c.title.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(measure_text_width(cell));
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut out = String::from(indent);
        let last = cells.len().saturating_sub(1);
        for (i, ((cell, col), w)) in cells.iter().zip(columns).zip(&widths).enumerate() {
            let align = if col.right {
                Alignment::Right
            } else {
                Alignment::Left
            };
            if i == last && !col.right {
                out.push_str(cell);
            } else {
                out.push_str(&pad_str(cell, *w, align, None));
            }
            if i != last {
                out.push_str("  ");
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(columns.iter().map(|c| c.title).collect());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands() {
        assert_eq!(int(0), "0");
        assert_eq!(int(999), "999");
        assert_eq!(int(1000), "1,000");
        assert_eq!(int(19_775_456), "19,775,456");
        assert_eq!(int(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(count(1, "item"), "1 item");
        assert_eq!(count(0, "item"), "0 items");
        assert_eq!(count(2_000, "sub-filter"), "2,000 sub-filters");
        assert_eq!(count(1, "hash"), "1 hash");
        assert_eq!(count(3, "hash"), "3 hashes");
        assert_eq!(noun(1, "key"), "key");
        assert_eq!(noun(2, "key"), "keys");
    }

    #[test]
    fn binary_units() {
        assert_eq!(bytes(240), "240 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(19_775_456), "18.9 MiB");
        assert_eq!(bytes(1 << 40), "1.0 TiB");
    }

    #[test]
    fn like_c_percent_g() {
        assert_eq!(g(0.005, 6), "0.005");
        assert_eq!(g(0.000625, 6), "0.000625");
        assert_eq!(g(6.25e-05, 6), "6.25e-05");
        assert_eq!(g(1e-07, 6), "1e-07");
        assert_eq!(g(0.0001, 6), "0.0001");
        assert_eq!(g(0.1, 6), "0.1");
        assert_eq!(g(0.009999999, 6), "0.01");
        assert_eq!(g(1234567.0, 6), "1.23457e+06");
        assert_eq!(g(0.0, 6), "0");
    }

    #[test]
    fn keys_as_text() {
        assert_eq!(key(b"urls:2024"), "urls:2024");
        assert_eq!(
            key("caf\u{e9} \u{1f600} \u{65e5}\u{672c}".as_bytes()),
            "caf\u{e9} \u{1f600} \u{65e5}\u{672c}"
        );
        assert_eq!(key(b"a\nb\tc\rd"), "a\\nb\\tc\\rd");
        assert_eq!(key(b"back\\slash"), "back\\\\slash");
        // An escape sequence that would colour the table.
        assert_eq!(key(b"\x1b[31mred"), "\\x1b[31mred");
        assert_eq!(key(b"nul\0del\x7f"), "nul\\x00del\\x7f");
        // Invalid UTF-8, byte by byte.
        assert_eq!(key(b"\xff\xfe"), "\\xff\\xfe");
        assert_eq!(key(b"ok\xc3"), "ok\\xc3");
        // C1 controls (U+009B is a one-character CSI) and a right-to-left
        // override, by their UTF-8 bytes.
        assert_eq!(key("x\u{9b}31m".as_bytes()), "x\\xc2\\x9b31m");
        assert_eq!(key("a\u{202e}b".as_bytes()), "a\\xe2\\x80\\xaeb");
        assert_eq!(key(b""), "");
        // Nothing printed is a control character.
        let all: Vec<u8> = (0..=255).collect();
        let text = key(&all);
        assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
    }

    #[test]
    fn escaped_keys_read_back() {
        fn unescape(text: &str) -> Vec<u8> {
            let mut out = Vec::new();
            let mut it = text.bytes();
            while let Some(b) = it.next() {
                if b != b'\\' {
                    out.push(b);
                    continue;
                }
                match it.next().unwrap() {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'\\' => out.push(b'\\'),
                    b'x' => {
                        let hex = [it.next().unwrap(), it.next().unwrap()];
                        let hex = std::str::from_utf8(&hex).unwrap();
                        out.push(u8::from_str_radix(hex, 16).unwrap());
                    }
                    other => panic!("unknown escape {other}"),
                }
            }
            out
        }
        let samples: [&[u8]; 6] = [
            b"plain",
            b"\\x41 is not A",
            b"\x1b]0;title\x07",
            b"\xf0\x9f\x98",
            "\u{2066}iso\u{2069}\u{feff}".as_bytes(),
            b"line\nbreak\\n",
        ];
        for s in samples {
            assert_eq!(unescape(&key(s)), s, "{:?}", key(s));
        }
    }

    #[test]
    fn aligned_table() {
        let cols = [
            Column {
                title: "KEY",
                right: false,
            },
            Column {
                title: "ITEMS",
                right: true,
            },
            Column {
                title: "LEVEL",
                right: false,
            },
        ];
        let rows = vec![
            vec!["a".to_string(), "1,000".to_string(), "ok".to_string()],
            vec!["long-key".to_string(), "5".to_string(), "ALERT".to_string()],
        ];
        assert_eq!(
            table(&cols, &rows, ""),
            "KEY       ITEMS  LEVEL\na         1,000  ok\nlong-key      5  ALERT\n"
        );
    }
}
