//! The command-line values of `ferrobloom plan`, for every type: whole
//! numbers in their several forms, error rates, policies, and a window's
//! span, generations and arrival rate.

use ferrobloom_core::window::{Span, MAX_GENERATIONS};
use ferrobloom_core::Policy;

/// A whole number written `1000000`, `1_000_000`, `1,000,000` (groups of
/// three digits) or `1e6`, `1.5e6`, `1000.0` (when the value is a whole
/// number).
pub fn parse_whole(text: &str) -> std::result::Result<u64, String> {
    const FORMS: &str = "expected a whole number such as 1000000, 1_000_000, 1,000,000 or 1e6";
    let t = text.trim();
    if t.starts_with('-') {
        return Err("must be positive".into());
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let (int_part, frac_part) = match mantissa.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mantissa, ""),
    };
    let int_digits = if int_part.contains(',') {
        let groups: Vec<&str> = int_part.split(',').collect();
        let well_grouped =
            (1..=3).contains(&groups[0].len()) && groups[1..].iter().all(|g| g.len() == 3);
        if !well_grouped {
            return Err(format!("{FORMS} (commas separate groups of three digits)"));
        }
        groups.concat()
    } else {
        int_part.to_string()
    };
    let clean = |part: &str| -> Option<String> {
        // Underscores between digits only.
        if part.starts_with('_') || part.ends_with('_') || part.contains("__") {
            return None;
        }
        let digits: String = part.chars().filter(|c| *c != '_').collect();
        digits.chars().all(|c| c.is_ascii_digit()).then_some(digits)
    };
    let (Some(int_digits), Some(frac_digits)) = (clean(&int_digits), clean(frac_part)) else {
        return Err(FORMS.into());
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(FORMS.into());
    }
    let exponent: i64 = match exponent {
        None => 0,
        Some(e) => {
            let e = e.strip_prefix('+').unwrap_or(e);
            if e.is_empty() || e.len() > 4 || !e.chars().all(|c| c.is_ascii_digit() || c == '-') {
                return Err(FORMS.into());
            }
            e.parse().map_err(|_| FORMS.to_string())?
        }
    };
    // value = digits × 10^(exponent - fraction digits), exactly.
    let digits = format!("{int_digits}{frac_digits}");
    let digits = digits.trim_start_matches('0');
    let mut scale = exponent - frac_digits.len() as i64;
    let mut digits = digits.to_string();
    while scale < 0 {
        match digits.pop() {
            Some('0') => scale += 1,
            Some(_) => return Err(format!("{text} is not a whole number")),
            None => break,
        }
    }
    if digits.is_empty() {
        return Ok(0);
    }
    let too_large = || format!("{text} is too large (at most {})", u64::MAX);
    let mut value: u64 = digits.parse().map_err(|_| too_large())?;
    for _ in 0..scale.max(0) {
        value = value.checked_mul(10).ok_or_else(too_large)?;
    }
    Ok(value)
}

pub fn parse_count(text: &str) -> std::result::Result<u64, String> {
    parse_whole(text).map_err(|e| {
        if e == "must be positive" {
            "must not be negative".into()
        } else {
            e
        }
    })
}

pub fn parse_positive(text: &str) -> std::result::Result<u64, String> {
    match parse_whole(text)? {
        0 => Err("must be positive".into()),
        n => Ok(n),
    }
}

/// An expansion: 0 is only valid for a Cuckoo filter (checked later).
pub fn parse_expansion(text: &str) -> std::result::Result<u32, String> {
    let n = parse_whole(text)?;
    u32::try_from(n).map_err(|_| format!("{text} is too large (at most {})", u32::MAX))
}

pub fn parse_policy(text: &str) -> std::result::Result<Policy, String> {
    match text.to_ascii_lowercase().as_str() {
        "exact" => Ok(Policy::Exact),
        "pow2" => Ok(Policy::Pow2),
        _ => Err("expected exact or pow2".into()),
    }
}

pub fn parse_error_rate(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(e) if e > 0.0 && e < 1.0 => Ok(e),
        _ => Err("expected a number between 0 and 1 (exclusive)".into()),
    }
}

/// `--decay`: TOPK.RESERVE's decay, in (0, 1].
pub fn parse_decay(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(d) if d > 0.0 && d <= 1.0 => Ok(d),
        _ => Err("expected a number above 0 and at most 1".into()),
    }
}

pub const SECOND_MS: u64 = 1_000;
pub const MINUTE_MS: u64 = 60 * SECOND_MS;
pub const HOUR_MS: u64 = 60 * MINUTE_MS;
pub const DAY_MS: u64 = 24 * HOUR_MS;

/// `--window`: BF.RESERVE's span, `30d`, `12h`, `90m`, `3600s` or a number
/// of items.
pub fn parse_span(text: &str) -> std::result::Result<Span, String> {
    Span::parse(text.trim().as_bytes()).map_err(|e| {
        let message = e.message();
        message.strip_prefix("ERR ").unwrap_or(message).to_string()
    })
}

/// `--generations`: 1 to 64.
pub fn parse_generations(text: &str) -> std::result::Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(g) if (1..=MAX_GENERATIONS).contains(&g) => Ok(g),
        _ => Err(format!(
            "expected a whole number from 1 to {MAX_GENERATIONS}"
        )),
    }
}

/// Items arriving per unit of time (`--rate 500000/d`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub items: u64,
    /// The unit's length in milliseconds.
    pub per_ms: u64,
}

impl Rate {
    /// The unit as the rate was written: `s`, `m`, `h` or `d`.
    pub fn unit(self) -> &'static str {
        match self.per_ms {
            SECOND_MS => "s",
            MINUTE_MS => "m",
            HOUR_MS => "h",
            _ => "d",
        }
    }

    fn unit_word(self) -> &'static str {
        match self.per_ms {
            SECOND_MS => "second",
            MINUTE_MS => "minute",
            HOUR_MS => "hour",
            _ => "day",
        }
    }

    /// `a second`, `a minute`, `an hour`, `a day`: as in `1,000 an hour`.
    pub fn per_unit(self) -> &'static str {
        match self.unit_word() {
            "hour" => "an hour",
            "second" => "a second",
            "minute" => "a minute",
            _ => "a day",
        }
    }

    /// Items arriving within `ms` milliseconds, rounded up; None when that
    /// does not fit in 64 bits.
    pub fn within(self, ms: u64) -> Option<u64> {
        let total = u128::from(self.items) * u128::from(ms);
        u64::try_from(total.div_ceil(u128::from(self.per_ms))).ok()
    }
}

/// `--rate N/UNIT`: N a whole number (as `--capacity` takes it), UNIT `s`,
/// `m`, `h` or `d` (or `sec`, `min`, `hour`, `day`, singular or plural).
pub fn parse_rate(text: &str) -> std::result::Result<Rate, String> {
    const FORM: &str = "expected N/s, N/m, N/h or N/d (items per second, minute, hour or day), \
                        such as 500000/d";
    let Some((count, unit)) = text.trim().split_once('/') else {
        return Err(FORM.into());
    };
    let per_ms = match unit.trim().to_ascii_lowercase().as_str() {
        "s" | "sec" | "second" | "seconds" => SECOND_MS,
        "m" | "min" | "minute" | "minutes" => MINUTE_MS,
        "h" | "hour" | "hours" => HOUR_MS,
        "d" | "day" | "days" => DAY_MS,
        _ => return Err(FORM.into()),
    };
    match parse_whole(count)? {
        0 => Err("must be positive".into()),
        items => Ok(Rate { items, per_ms }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_in_several_forms() {
        for (text, value) in [
            ("1000000", 1_000_000),
            ("1_000_000", 1_000_000),
            ("1,000,000", 1_000_000),
            ("1e6", 1_000_000),
            ("1E6", 1_000_000),
            ("1e+6", 1_000_000),
            ("1.5e6", 1_500_000),
            ("2.50e1", 25),
            ("1000.0", 1000),
            ("1000e-3", 1),
            ("1e18", 1_000_000_000_000_000_000),
            ("18446744073709551615", u64::MAX),
            ("0", 0),
            (" 42 ", 42),
            ("+7", 7),
        ] {
            assert_eq!(parse_whole(text), Ok(value), "{text}");
        }
        for (text, why) in [
            ("1.5", "not a whole number"),
            ("1e-1", "not a whole number"),
            ("15e-1", "not a whole number"),
            ("1e20", "too large"),
            ("18446744073709551616", "too large"),
            ("-5", "must be positive"),
            ("-1e3", "must be positive"),
            ("1,0", "groups of three"),
            ("1,0000", "groups of three"),
            ("abc", "expected a whole number"),
            ("", "expected a whole number"),
            ("1__0", "expected a whole number"),
            ("_1", "expected a whole number"),
            ("1e", "expected a whole number"),
            ("0x10", "expected a whole number"),
            ("inf", "expected a whole number"),
        ] {
            let e = parse_whole(text).expect_err(text);
            assert!(e.contains(why), "{text}: {e}");
        }
        assert_eq!(parse_positive("0"), Err("must be positive".into()));
        assert_eq!(parse_count("-1"), Err("must not be negative".into()));
        assert_eq!(parse_expansion("4"), Ok(4));
        assert_eq!(parse_expansion("0"), Ok(0));
        assert!(parse_expansion("1e10").unwrap_err().contains("too large"));
    }

    #[test]
    fn rates_and_spans() {
        assert_eq!(
            parse_rate("2,000/m"),
            Ok(Rate {
                items: 2000,
                per_ms: MINUTE_MS
            })
        );
        assert_eq!(parse_rate("1e3/H").unwrap().per_ms, HOUR_MS);
        for bad in ["5", "5/w", "0/d", "-5/d", "1.5/s", "/d"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        // A rate over a window, rounded up.
        let r = parse_rate("1/d").unwrap();
        assert_eq!(r.within(HOUR_MS), Some(1));
        assert_eq!(r.within(3 * DAY_MS), Some(3));
        assert_eq!(
            parse_rate("18446744073709551615/s").unwrap().within(DAY_MS),
            None
        );
        assert_eq!(parse_span("30d"), Ok(Span::Time { ms: 30 * DAY_MS }));
        assert_eq!(parse_span("0"), Err("WINDOW must be positive".into()));
        assert!(parse_span("5w").unwrap_err().contains("unit"));
        assert_eq!(parse_generations("64"), Ok(64));
        assert!(parse_generations("65").is_err());
        assert!(parse_generations("0").is_err());
    }
}
