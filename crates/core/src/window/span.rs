//! The length of a window, as BF.RESERVE's `WINDOW <span>` gives it: a
//! duration (`30d`, `12h`, `90m`, `3600s`) measured on the master's clock,
//! or a plain integer, the last N items added.

/// The longest time window accepted: 100 years. Longer spans are typing
/// mistakes, and keeping the milliseconds far below 2^63 lets every sum of
/// a time and a span stay exact.
pub const MAX_TIME_MS: u64 = 100 * 365 * DAY_MS;

/// The largest item window accepted: 2^48 items, far beyond any filter
/// that fits in memory (it would need some 300 TB at 1%).
pub const MAX_ITEMS: u64 = 1 << 48;

const SECOND_MS: u64 = 1_000;
const MINUTE_MS: u64 = 60 * SECOND_MS;
const HOUR_MS: u64 = 60 * MINUTE_MS;
const DAY_MS: u64 = 24 * HOUR_MS;

/// What a window spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Span {
    /// The last `ms` milliseconds of the master's clock.
    Time { ms: u64 },
    /// The last `count` items added.
    Items { count: u64 },
}

/// Why a span was refused; [`SpanError::message`] is the reply's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanError {
    /// Nothing, or a unit with no number.
    Empty,
    /// A minus sign.
    Negative,
    /// Not a whole number followed by at most one unit.
    NotANumber,
    /// A unit other than s, m, h, d.
    UnknownUnit,
    /// Zero seconds or zero items.
    Zero,
    /// Over [`MAX_TIME_MS`] or [`MAX_ITEMS`].
    TooLong,
}

impl SpanError {
    pub fn message(self) -> &'static str {
        match self {
            SpanError::Empty | SpanError::NotANumber => {
                "ERR WINDOW must be a whole number of items, or of seconds, minutes, hours or days (for example 1000000, 3600s, 90m, 12h, 30d)"
            }
            SpanError::Negative => "ERR WINDOW must be positive",
            SpanError::UnknownUnit => {
                "ERR WINDOW unit must be s, m, h or d (seconds, minutes, hours, days)"
            }
            SpanError::Zero => "ERR WINDOW must be positive",
            SpanError::TooLong => {
                "ERR WINDOW is too long (at most 36500d, or 281474976710656 items)"
            }
        }
    }
}

impl Span {
    /// Parses `30d`, `12h`, `90m`, `3600s` (units in either case) or a
    /// plain number of items. Items are bytes: nothing but ASCII digits
    /// and one trailing unit is accepted.
    pub fn parse(text: &[u8]) -> Result<Span, SpanError> {
        let (digits, unit) = match text.last() {
            None => return Err(SpanError::Empty),
            Some(c) if c.is_ascii_digit() => (text, None),
            Some(&c) => (&text[..text.len() - 1], Some(c.to_ascii_lowercase())),
        };
        if digits.first() == Some(&b'-') {
            return Err(SpanError::Negative);
        }
        if digits.is_empty() {
            return Err(SpanError::Empty);
        }
        if !digits.iter().all(u8::is_ascii_digit) {
            return Err(SpanError::NotANumber);
        }
        let unit_ms = match unit {
            None => None,
            Some(b's') => Some(SECOND_MS),
            Some(b'm') => Some(MINUTE_MS),
            Some(b'h') => Some(HOUR_MS),
            Some(b'd') => Some(DAY_MS),
            Some(c) if c.is_ascii_alphabetic() => return Err(SpanError::UnknownUnit),
            Some(_) => return Err(SpanError::NotANumber),
        };
        // Leading zeros are fine; anything past 20 digits is over u64.
        let value = std::str::from_utf8(digits)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or(SpanError::TooLong)?;
        if value == 0 {
            return Err(SpanError::Zero);
        }
        match unit_ms {
            None if value > MAX_ITEMS => Err(SpanError::TooLong),
            None => Ok(Span::Items { count: value }),
            Some(unit) => match value.checked_mul(unit) {
                Some(ms) if ms <= MAX_TIME_MS => Ok(Span::Time { ms }),
                _ => Err(SpanError::TooLong),
            },
        }
    }

    /// The span as the user would write it, in its largest whole unit.
    pub fn display(self) -> String {
        match self {
            Span::Items { count } => count.to_string(),
            Span::Time { ms } => {
                for (unit, name) in [(DAY_MS, 'd'), (HOUR_MS, 'h'), (MINUTE_MS, 'm')] {
                    if ms % unit == 0 {
                        return format!("{}{name}", ms / unit);
                    }
                }
                if ms % SECOND_MS == 0 {
                    format!("{}s", ms / SECOND_MS)
                } else {
                    format!("{ms}ms")
                }
            }
        }
    }

    pub fn is_time(self) -> bool {
        matches!(self, Span::Time { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_of_every_unit_and_of_items() {
        let cases: &[(&[u8], Span)] = &[
            (b"30d", Span::Time { ms: 30 * DAY_MS }),
            (b"12h", Span::Time { ms: 12 * HOUR_MS }),
            (b"90m", Span::Time { ms: 90 * MINUTE_MS }),
            (b"3600s", Span::Time { ms: 3_600_000 }),
            (b"3600S", Span::Time { ms: 3_600_000 }),
            (b"1D", Span::Time { ms: DAY_MS }),
            (b"007s", Span::Time { ms: 7_000 }),
            (b"1000000", Span::Items { count: 1_000_000 }),
            (b"1", Span::Items { count: 1 }),
            (b"36500d", Span::Time { ms: MAX_TIME_MS }),
            (b"281474976710656", Span::Items { count: MAX_ITEMS }),
        ];
        for (text, span) in cases {
            assert_eq!(
                Span::parse(text),
                Ok(*span),
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn bad_spans_say_why() {
        let cases: &[(&[u8], SpanError)] = &[
            (b"", SpanError::Empty),
            (b"d", SpanError::Empty),
            (b"0", SpanError::Zero),
            (b"0s", SpanError::Zero),
            (b"000d", SpanError::Zero),
            (b"-5", SpanError::Negative),
            (b"-5d", SpanError::Negative),
            (b"5w", SpanError::UnknownUnit),
            (b"5y", SpanError::UnknownUnit),
            (b"5ms", SpanError::NotANumber),
            (b"1.5h", SpanError::NotANumber),
            (b"+5", SpanError::NotANumber),
            (b" 5", SpanError::NotANumber),
            (b"5 ", SpanError::NotANumber),
            (b"5\xff", SpanError::NotANumber),
            (b"1e6", SpanError::NotANumber),
            (b"36501d", SpanError::TooLong),
            (b"281474976710657", SpanError::TooLong),
            (b"99999999999999999999999", SpanError::TooLong),
            (b"99999999999999999999d", SpanError::TooLong),
        ];
        for (text, error) in cases {
            assert_eq!(
                Span::parse(text),
                Err(*error),
                "{}",
                String::from_utf8_lossy(text)
            );
            assert!(error.message().starts_with("ERR WINDOW"));
        }
    }

    #[test]
    fn display_reads_back() {
        for text in ["30d", "12h", "90m", "61s", "1000000"] {
            let span = Span::parse(text.as_bytes()).unwrap();
            assert_eq!(span.display(), text);
            assert_eq!(Span::parse(span.display().as_bytes()), Ok(span));
        }
        assert_eq!(Span::parse(b"3600s").unwrap().display(), "1h");
        assert_eq!(Span::Time { ms: 1500 }.display(), "1500ms");
    }
}
