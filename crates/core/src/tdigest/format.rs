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
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    const PRECISION: i32 = 17;
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, x);
    let (mantissa, exponent) = sci.split_once('e').expect("exponent form");
    let exponent: i32 = exponent.parse().expect("integer exponent");
    if !(-4..PRECISION).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            strip_zeros(mantissa),
            exponent.unsigned_abs()
        )
    } else {
        let decimals = (PRECISION - 1 - exponent) as usize;
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
        assert_eq!(format_7_2(0.9), "0.9");
        assert_eq!(format_7_2(1e-5), "0.00001");
        assert_eq!(format_7_2(-f64::NAN), "nan");
        assert_eq!(format_7_2(1e300), "1e+300");
        assert_eq!(format_7_2(123.456), "123.456");
        assert_eq!(format_7_2(-1e-7), "-1e-7");
    }
}
