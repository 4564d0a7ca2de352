//! C `printf("%g")` for doubles: how RedisBloom prints a link's error rate
//! in BF.DEBUG.

/// Formats `x` like C's `%g` (6 significant digits, trailing zeros removed,
/// exponent form when the exponent is below -4 or at least 6).
pub fn printf_g(x: f64) -> String {
    const PRECISION: i32 = 6;
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Round to PRECISION significant digits first; the exponent of the
    // rounded value decides the style, as C specifies.
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, x);
    let (mantissa, exponent) = sci.split_once('e').expect("exponent form");
    let exponent: i32 = exponent.parse().expect("integer exponent");
    if !(-4..PRECISION).contains(&exponent) {
        let mantissa = strip_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
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

#[cfg(test)]
mod tests {
    use super::printf_g;

    #[test]
    fn observed_outputs() {
        let cases = [
            (0.005, "0.005"),
            (0.000625, "0.000625"),
            (6.25e-05, "6.25e-05"),
            (7.8125e-05, "7.8125e-05"),
            (1e-05, "1e-05"),
            (1e-07, "1e-07"),
            (0.123456789, "0.123457"),
            (1.23456789e-05, "1.23457e-05"),
            (4.9e-324, "4.94066e-324"),
            (0.0, "0"),
            (0.5, "0.5"),
            (0.999, "0.999"),
            (0.0001, "0.0001"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (999999.5, "1e+06"),
            (f64::NAN, "nan"),
        ];
        for (x, text) in cases {
            assert_eq!(printf_g(x), text, "{x:e}");
        }
    }
}
