//! How big a link is: bits per entry, hash count, bit-array size and the
//! modulus used for bit positions, under the two allocation policies.
//!
//! The two constants are RedisBloom's truncated values of ln 2 and (ln 2)^2.
//! They must be used verbatim: with exact constants some error rates
//! (powers of two) would get one hash fewer than RedisBloom gives them.

/// ln 2 as RedisBloom writes it (truncated on purpose, see above).
#[allow(clippy::approx_constant)]
pub const LN2: f64 = 0.693147180559945;
/// (ln 2)^2 as RedisBloom writes it.
pub const LN2_SQUARED: f64 = 0.480453013918201;

/// How a link's bit array is sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// capacity x bits-per-entry, rounded up to whole 64-bit words. Bit
    /// positions are taken modulo the stored bit count. RedisBloom's
    /// behaviour since 2.2 (options carry NOROUND).
    Exact,
    /// Rounded up to 2^n2 bits, the slack used to raise the capacity, bit
    /// positions taken modulo 2^n2. RedisBloom's behaviour before 2.2.
    Pow2,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Exact => "exact",
            Policy::Pow2 => "pow2",
        }
    }

    pub fn other(self) -> Policy {
        match self {
            Policy::Exact => Policy::Pow2,
            Policy::Pow2 => Policy::Exact,
        }
    }

    /// Parses `exact` / `pow2` (ASCII case-insensitive).
    pub fn parse(text: &[u8]) -> Option<Policy> {
        if text.eq_ignore_ascii_case(b"exact") {
            Some(Policy::Exact)
        } else if text.eq_ignore_ascii_case(b"pow2") {
            Some(Policy::Pow2)
        } else {
            None
        }
    }
}

/// Bits per entry for a target false positive rate.
#[inline]
pub fn bits_per_entry(error: f64) -> f64 {
    (-(error.ln() / LN2_SQUARED)).abs()
}

/// Hash functions per item for a bits-per-entry value. Saturates for
/// absurd inputs (a validated error rate never gets near).
#[inline]
pub fn hash_count(bpe: f64) -> u32 {
    let k = (LN2 * bpe).ceil();
    if k.is_nan() || k < 0.0 {
        0
    } else if k >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        k as u32
    }
}

/// Why a link cannot be sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizingError {
    /// Error rate not in (0, 1) or not finite, or capacity 0.
    InvalidParameters,
    /// The bit array would not fit in 64-bit arithmetic (RedisBloom 2.8.2
    /// silently made such filters 8 bytes long).
    TooLarge,
}

/// Everything about a link that is decided before its bits are allocated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkSpec {
    /// The capacity asked for.
    pub requested: u64,
    /// Capacity (RedisBloom's `entries`): `requested`, raised under the
    /// pow2 policy to use the bits rounding added.
    pub entries: u64,
    /// The link's own error rate.
    pub error: f64,
    pub bpe: f64,
    pub hashes: u32,
    /// Size of the bit array in bytes (whole 64-bit words).
    pub bytes: u64,
    /// The bit count stored in RDB and headers (`bytes * 8`).
    pub bits: u64,
    /// log2 of the modulus for pow2 links, 0 for exact links.
    pub n2: u8,
}

impl LinkSpec {
    /// Sizes a link for `entries` items at `error` under `policy`.
    pub fn new(entries: u64, error: f64, policy: Policy) -> Result<LinkSpec, SizingError> {
        if entries == 0 || !(error > 0.0 && error < 1.0) {
            return Err(SizingError::InvalidParameters);
        }
        let bpe = bits_per_entry(error);
        let hashes = hash_count(bpe);
        if !bpe.is_finite() || hashes == 0 {
            return Err(SizingError::InvalidParameters);
        }
        let wanted = entries as f64 * bpe;
        // 2^64 as f64; anything at or above cannot be a bit count.
        const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
        match policy {
            Policy::Exact => {
                // Written so that NaN also fails.
                if wanted.partial_cmp(&TWO_POW_64) != Some(std::cmp::Ordering::Less) {
                    return Err(SizingError::TooLarge);
                }
                let raw = (wanted as u64).max(1);
                let bytes = raw
                    .div_ceil(64)
                    .checked_mul(8)
                    .ok_or(SizingError::TooLarge)?;
                let bits = bytes.checked_mul(8).ok_or(SizingError::TooLarge)?;
                Ok(LinkSpec {
                    requested: entries,
                    entries,
                    error,
                    bpe,
                    hashes,
                    bytes,
                    bits,
                    n2: 0,
                })
            }
            Policy::Pow2 => {
                // n2 = logb(wanted) + 1: the exponent of the next power of
                // two strictly above `wanted`.
                let n2 = if wanted >= 1.0 {
                    floor_log2(wanted) + 1
                } else {
                    1
                };
                if n2 > 63 {
                    return Err(SizingError::TooLarge);
                }
                let modulus = 1u64 << n2;
                let slack_bits = (modulus as f64 - wanted) as u64;
                let extra = (slack_bits as f64 / bpe) as u64;
                let inflated = entries.checked_add(extra).ok_or(SizingError::TooLarge)?;
                let bytes = modulus.div_ceil(64) * 8;
                Ok(LinkSpec {
                    requested: entries,
                    entries: inflated,
                    error,
                    bpe,
                    hashes,
                    bytes,
                    bits: bytes * 8,
                    n2: n2 as u8,
                })
            }
        }
    }

    /// The modulus bit positions are reduced by.
    pub fn modulus(&self) -> u64 {
        if self.n2 > 0 {
            1u64 << self.n2
        } else {
            self.bits
        }
    }
}

/// The scale-out rule: the link a chain appends after a link of
/// `previous_entries` items at `previous_error` holds `growth` times as many
/// items at half the error, sized under `policy`. Growth 0, a capacity
/// past 2^64 and an error halved to zero cannot make a link (RedisBloom
/// 2.8.2 fails the same scale-outs). The chain grows by it and BF.PLAN
/// predicts with it.
pub fn next_link(
    previous_entries: u64,
    previous_error: f64,
    growth: u32,
    policy: Policy,
) -> Result<LinkSpec, SizingError> {
    if growth == 0 {
        return Err(SizingError::InvalidParameters);
    }
    let entries = previous_entries
        .checked_mul(u64::from(growth))
        .ok_or(SizingError::TooLarge)?;
    let error = previous_error * 0.5;
    if error == 0.0 {
        return Err(SizingError::InvalidParameters);
    }
    LinkSpec::new(entries, error, policy)
}

/// floor(log2(x)) for a finite x >= 1, exactly (C's `logb`).
fn floor_log2(x: f64) -> u32 {
    let exponent = ((x.to_bits() >> 52) & 0x7ff) as i64 - 1023;
    exponent.max(0) as u32
}

/// RedisBloom's accounting of a filter's size (BF.INFO Size, MEMORY USAGE):
/// its chain and link headers counted as 32 and 64 bytes, plus the arrays.
pub fn reported_size(link_bytes: impl IntoIterator<Item = u64>) -> u64 {
    let mut links = 0u64;
    let mut total = 32u64;
    for bytes in link_bytes {
        links += 1;
        total = total.saturating_add(bytes);
    }
    total.saturating_add(links.saturating_mul(64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_filter() {
        let s = LinkSpec::new(100, 0.005, Policy::Exact).unwrap();
        assert_eq!((s.bytes, s.bits, s.hashes, s.n2), (144, 1152, 8, 0));
    }

    #[test]
    fn pow2_examples_from_the_spec() {
        for (entries, error, n2, bytes, capacity) in [
            (6u64, 0.005, 7u8, 16u64, 11u64),
            (212, 0.005, 12, 512, 371),
            (37_340_820, 0.0005, 30, 134_217_728, 67_871_216),
            (2, 0.2, 3, 8, 2),
        ] {
            let s = LinkSpec::new(entries, error, Policy::Pow2).unwrap();
            assert_eq!(
                (s.n2, s.bytes, s.entries),
                (n2, bytes, capacity),
                "{entries} {error}"
            );
            assert_eq!(s.bits, bytes * 8);
            assert_eq!(s.modulus(), 1 << n2);
        }
    }

    #[test]
    fn hash_count_edges() {
        assert_eq!(hash_count(bits_per_entry(0.5)), 2);
        assert_eq!(hash_count(bits_per_entry(0.25)), 3);
        assert_eq!(hash_count(bits_per_entry(0.125)), 4);
        assert_eq!(hash_count(bits_per_entry(0.0078125)), 8);
    }

    #[test]
    fn refuses_what_does_not_fit() {
        assert_eq!(
            LinkSpec::new(2_000_000_000_000_000_000, 0.005, Policy::Exact),
            Err(SizingError::TooLarge)
        );
        assert_eq!(
            LinkSpec::new(u64::MAX, 0.005, Policy::Pow2),
            Err(SizingError::TooLarge)
        );
        assert_eq!(
            LinkSpec::new(0, 0.01, Policy::Exact),
            Err(SizingError::InvalidParameters)
        );
        assert_eq!(
            LinkSpec::new(1, 0.0, Policy::Exact),
            Err(SizingError::InvalidParameters)
        );
        assert_eq!(
            LinkSpec::new(1, f64::NAN, Policy::Exact),
            Err(SizingError::InvalidParameters)
        );
    }

    #[test]
    fn tiny_and_extreme_errors() {
        let s = LinkSpec::new(100, 0.999, Policy::Exact).unwrap();
        assert_eq!((s.bytes, s.hashes), (8, 1));
        let s = LinkSpec::new(10, 4.9e-324, Policy::Exact).unwrap();
        assert_eq!((s.bytes, s.hashes), (1944, 1075));
    }

    #[test]
    fn next_link_grows_capacity_and_halves_error() {
        let s = next_link(100, 0.01, 2, Policy::Exact).unwrap();
        assert_eq!((s.requested, s.entries, s.error), (200, 200, 0.005));
        assert_eq!(s, LinkSpec::new(200, 0.005, Policy::Exact).unwrap());
        // Pow2 links are asked for growth x the previous (inflated) capacity.
        let s = next_link(11, 0.0025, 2, Policy::Pow2).unwrap();
        assert_eq!(s, LinkSpec::new(22, 0.00125, Policy::Pow2).unwrap());
        assert_eq!(
            next_link(100, 0.01, 0, Policy::Exact),
            Err(SizingError::InvalidParameters)
        );
        assert_eq!(
            next_link(u64::MAX / 2 + 1, 0.01, 2, Policy::Exact),
            Err(SizingError::TooLarge)
        );
        assert_eq!(
            next_link(1, f64::from_bits(1), 1, Policy::Exact),
            Err(SizingError::InvalidParameters)
        );
    }

    #[test]
    fn reported_size_matches_bf_info() {
        assert_eq!(reported_size([144]), 240);
        assert_eq!(reported_size([16, 32, 72, 160]), 568);
        assert_eq!(reported_size([144, 0]), 304);
    }
}
