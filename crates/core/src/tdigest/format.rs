//! Doubles as Redis prints a module's `RedisModule_ReplyWithDouble`
//! (spec §2.3): the module layer formats replies itself, so it must print
//! what the host Redis would.
//!
//! - Redis 7.0: C's `%.17g`; infinities `inf`/`-inf`; NaN `nan`, or `-nan`
//!   when its sign bit is set (glibc prints the sign).
//! - Redis ≥ 7.2: `nan` whatever the sign, `inf`/`-inf`, `0`/`-0`; a whole
//!   number of magnitude at most 2^62 as an integer; anything else in
//!   shortest round-trip digits laid out as its `fpconv_dtoa` lays them
//!   out (plain up to 7 leading zeros or trailing zeros, else `d.ddde±x`
//!   without exponent padding).
//!
//! The shortest digits here are Rust's (exactly shortest, nearest).
//! Redis' fpconv uses Grisu2, which for a small fraction of doubles
//! prints one more digit than the shortest; such a double then prints
//! differently on ≥ 7.2 (the value read back is the same double).

/// Which Redis prints the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoubleStyle {
    /// Redis 7.0 (`%.17g`).
    Redis70,
    /// Redis 7.2 and later (shortest round trip).
    Redis72,
}

/// `x` as the host Redis prints it.
pub fn format_double(x: f64, style: DoubleStyle) -> String {
    match style {
        DoubleStyle::Redis70 => format_7_0(x),
        DoubleStyle::Redis72 => format_7_2(x),
    }
}

/// Redis 7.0: `%.17g`, `-nan` for a NaN with its sign bit set.
pub fn format_7_0(x: f64) -> String {
    let mut buf: Buf70 = [0; 32];
    write_7_0(x, &mut buf).to_string()
}

/// Room for any double in `%.17g`: a sign, 17 digits, a point and
/// `e-308`, or `-0.000` and 17 digits.
pub type Buf70 = [u8; 32];

/// [`format_7_0`] without an allocation, into `buf`: a reply of doubles
/// formats each on the stack (C's `%.17g` goes through glibc's
/// multiprecision `printf_fp`, most of such a reply's time on Redis 7.0).
pub fn write_7_0(x: f64, buf: &mut Buf70) -> &str {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" };
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" };
    }
    const PRECISION: i32 = 17;
    // The 17 significant digits, rounded as printf rounds them (both
    // exact, ties to even), and the exponent after that rounding, which
    // is the one %g chooses its form by.
    let mut sci = Cursor {
        buf: [0; 32],
        len: 0,
    };
    std::fmt::Write::write_fmt(
        &mut sci,
        format_args!("{:.*e}", (PRECISION - 1) as usize, x.abs()),
    )
    .expect("32 bytes hold a double's exponent form");
    let sci = &sci.buf[..sci.len];
    let e_at = sci.iter().position(|&b| b == b'e').expect("exponent form");
    let mut digits = [0u8; PRECISION as usize];
    digits[0] = sci[0];
    digits[1..].copy_from_slice(&sci[2..e_at]);
    let exponent = parse_exponent(&sci[e_at + 1..]);
    let mut out = Cursor {
        buf: [0; 32],
        len: 0,
    };
    if x.is_sign_negative() {
        out.push(b'-');
    }
    if !(-4..PRECISION).contains(&exponent) {
        let kept = significant(&digits[1..]);
        out.push(digits[0]);
        if kept > 0 {
            out.push(b'.');
            out.extend(&digits[1..1 + kept]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let e = exponent.unsigned_abs();
        if e >= 100 {
            out.push(b'0' + (e / 100) as u8);
        }
        out.push(b'0' + (e / 10 % 10) as u8);
        out.push(b'0' + (e % 10) as u8);
    } else if exponent >= 0 {
        let whole = exponent as usize + 1;
        out.extend(&digits[..whole]);
        let kept = significant(&digits[whole..]);
        if kept > 0 {
            out.push(b'.');
            out.extend(&digits[whole..whole + kept]);
        }
    } else {
        out.extend(b"0.");
        for _ in 0..(-exponent - 1) {
            out.push(b'0');
        }
        out.extend(&digits[..significant(&digits)]);
    }
    let len = out.len;
    buf[..len].copy_from_slice(&out.buf[..len]);
    std::str::from_utf8(&buf[..len]).expect("ASCII")
}

/// How many of `digits` remain once trailing zeros are cut.
fn significant(digits: &[u8]) -> usize {
    digits.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1)
}

/// Rust's exponent: `-5`, `0`, `300`.
fn parse_exponent(text: &[u8]) -> i32 {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let e = digits
        .iter()
        .fold(0i32, |e, &d| e * 10 + i32::from(d - b'0'));
    if negative {
        -e
    } else {
        e
    }
}

/// A fixed buffer written to by `write!` and byte by byte.
struct Cursor {
    buf: Buf70,
    len: usize,
}

impl Cursor {
    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    fn extend(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
}

impl std::fmt::Write for Cursor {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.extend(s.as_bytes());
        Ok(())
    }
}

/// Redis ≥ 7.2.
pub fn format_7_2(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Whole numbers within ±(2^63 − 1)/2 print as integers.
    const HALF: f64 = (i64::MAX / 2) as f64;
    if (-HALF..=HALF).contains(&x) && (x as i64) as f64 == x {
        return (x as i64).to_string();
    }
    let sci = format!("{:e}", x.abs());
    let (mantissa, exponent) = sci.split_once('e').expect("exponent form");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i32 = exponent.parse().expect("integer exponent");
    let n = digits.len() as i32;
    // The value is digits × 10^k.
    let k = exponent - (n - 1);
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    let exp_abs = (k + n - 1).abs();
    if k >= 0 && exp_abs < n + 7 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', k as usize));
    } else if k < 0 && (k > -7 || exp_abs < 4) {
        let offset = n + k;
        if offset <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-offset) as usize));
            out.push_str(&digits);
        } else {
            out.push_str(&digits[..offset as usize]);
            out.push('.');
            out.push_str(&digits[offset as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if k + n - 1 < 0 { '-' } else { '+' });
        out.push_str(&exp_abs.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        assert_eq!(format_7_0(0.9), "0.90000000000000002");
        assert_eq!(format_7_0(1e-5), "1.0000000000000001e-05");
        assert_eq!(format_7_0(-0.0), "-0");
        assert_eq!(format_7_0(-f64::NAN), "-nan");
        assert_eq!(format_7_0(5.5), "5.5");
        assert_eq!(format_7_0(1e300), "1.0000000000000001e+300");
        assert_eq!(format_7_0(-1e-300), "-1e-300");
        assert_eq!(format_7_0(5e-324), "4.9406564584124654e-324");
        assert_eq!(format_7_0(0.0001), "0.0001");
        assert_eq!(format_7_0(0.00001234), "1.234e-05");
        assert_eq!(format_7_0(1e16), "10000000000000000");
        assert_eq!(format_7_0(1e17), "1e+17");
        assert_eq!(format_7_0(99999999999999999.0), "1e+17");
        assert_eq!(format_7_0(123.0), "123");
        assert_eq!(format_7_0(-f64::INFINITY), "-inf");
        assert_eq!(format_7_2(0.9), "0.9");
        assert_eq!(format_7_2(1e-5), "0.00001");
        assert_eq!(format_7_2(-f64::NAN), "nan");
        assert_eq!(format_7_2(1e300), "1e+300");
        assert_eq!(format_7_2(123.456), "123.456");
        assert_eq!(format_7_2(-1e-7), "-1e-7");
    }
}
