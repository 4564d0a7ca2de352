//! Reduction of a 64-bit hash to a bit index without a division per probe.
//!
//! A Bloom probe needs `x mod M` for every hash function. A 64-bit `div`
//! costs tens of cycles, far more than the rest of a probe, so each link
//! precomputes either a mask (M a power of two) or the 128-bit reciprocal of
//! Lemire, Kaser and Kurz ("Faster Remainder by Direct Computation", 2019):
//! with `c = ceil(2^128 / M)`, `x mod M = ((c * x) mod 2^128) * M >> 128` for
//! every 64-bit `x`. The property tests check it against `%`.

/// A precomputed modulus `M >= 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Modulus {
    divisor: u64,
    kind: Kind,
    /// 2^64 mod M: what a wrap of the 64-bit sum takes away.
    wrap: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `M` is a power of two: `x & mask`.
    Mask(u64),
    /// `ceil(2^128 / M)`, wrapped to 0 for `M = 1` (which still yields 0).
    Reciprocal(u128),
}

impl Modulus {
    /// Precomputes the reduction by `divisor`; `None` for 0.
    pub fn new(divisor: u64) -> Option<Self> {
        if divisor == 0 {
            return None;
        }
        let kind = if divisor.is_power_of_two() {
            Kind::Mask(divisor - 1)
        } else {
            Kind::Reciprocal((u128::MAX / u128::from(divisor)).wrapping_add(1))
        };
        let mut m = Modulus {
            divisor,
            kind,
            wrap: 0,
        };
        // 2^64 mod M = ((2^64 - 1) mod M + 1) mod M.
        let r = m.reduce(u64::MAX) + 1;
        m.wrap = if r == divisor { 0 } else { r };
        Some(m)
    }

    /// The sequence `(a + i*b) mod 2^64 mod M` for i = 0, 1, 2, ... with two
    /// reductions in all: each next position is the previous one plus
    /// `b mod M`, corrected when the 64-bit sum wraps.
    #[inline(always)]
    pub fn steps(&self, a: u64, b: u64) -> Steps {
        Steps {
            r: self.reduce(a),
            s: self.reduce(b),
            m: self.divisor,
            wrap: self.wrap,
            x: a,
            b,
        }
    }

    /// The divisor `M`.
    #[inline]
    pub fn divisor(&self) -> u64 {
        self.divisor
    }

    /// `x mod M`, identical to `x % M` for every `x`.
    #[inline(always)]
    pub fn reduce(&self, x: u64) -> u64 {
        match self.kind {
            Kind::Mask(mask) => x & mask,
            Kind::Reciprocal(c) => {
                let low = c.wrapping_mul(u128::from(x));
                mul_high_128_by_64(low, self.divisor)
            }
        }
    }
}

/// An item's bit positions in one link, in probe order (see
/// [`Modulus::steps`]).
#[derive(Clone, Copy, Debug)]
pub struct Steps {
    /// The current position: x mod M.
    r: u64,
    /// b mod M.
    s: u64,
    m: u64,
    wrap: u64,
    /// The current 64-bit sum a + i*b.
    x: u64,
    b: u64,
}

impl Steps {
    /// The current position, then advances to the next.
    #[inline(always)]
    pub fn next_position(&mut self) -> u64 {
        let out = self.r;
        let (x, wrapped) = self.x.overflowing_add(self.b);
        self.x = x;
        // r + s < 2M: one subtraction brings it back below M, also when the
        // addition itself overflows 64 bits.
        let (mut r, overflow) = self.r.overflowing_add(self.s);
        if overflow || r >= self.m {
            r = r.wrapping_sub(self.m);
        }
        if wrapped {
            // The true sum lost 2^64: take 2^64 mod M away, modulo M.
            r = if r >= self.wrap {
                r - self.wrap
            } else {
                r + (self.m - self.wrap)
            };
        }
        self.r = r;
        out
    }
}

/// The top 64 bits of the 192-bit product `low * d`.
#[inline(always)]
fn mul_high_128_by_64(low: u128, d: u64) -> u64 {
    let d = u128::from(d);
    let bottom = ((low & u128::from(u64::MAX)) * d) >> 64;
    let top = (low >> 64) * d;
    // top <= (2^64 - 1)^2 and bottom < 2^64, so the sum stays below 2^128.
    ((top + bottom) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn zero_is_not_a_modulus() {
        assert!(Modulus::new(0).is_none());
    }

    #[test]
    fn edge_divisors_and_inputs() {
        let divisors = [
            1u64,
            2,
            3,
            7,
            64,
            1152,
            1153,
            u64::MAX,
            u64::MAX - 1,
            1 << 63,
            (1 << 63) + 1,
            (1 << 32) - 1,
            (1 << 32) + 1,
        ];
        let inputs = [
            0u64,
            1,
            2,
            63,
            64,
            1151,
            1152,
            u64::MAX,
            u64::MAX - 1,
            1 << 63,
        ];
        for &d in &divisors {
            let m = Modulus::new(d).unwrap();
            for &x in &inputs {
                assert_eq!(m.reduce(x), x % d, "{x} mod {d}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn equals_remainder(x in any::<u64>(), d in 1u64..) {
            prop_assert_eq!(Modulus::new(d).unwrap().reduce(x), x % d);
        }

        #[test]
        fn steps_equal_remainders_of_the_wrapping_sums(
            a in any::<u64>(),
            b in any::<u64>(),
            d in prop_oneof![1u64..1_000_000, any::<u64>().prop_map(|d| d.max(1)), (0u32..64).prop_map(|e| 1u64 << e)],
        ) {
            let m = Modulus::new(d).unwrap();
            let mut steps = m.steps(a, b);
            for i in 0..200u64 {
                let want = a.wrapping_add(i.wrapping_mul(b)) % d;
                prop_assert_eq!(steps.next_position(), want, "i {}", i);
            }
        }

        #[test]
        fn equals_remainder_small_divisors(x in any::<u64>(), d in 1u64..100_000) {
            prop_assert_eq!(Modulus::new(d).unwrap().reduce(x), x % d);
        }

        #[test]
        fn equals_remainder_word_multiples(x in any::<u64>(), words in 1u64..(1 << 40)) {
            let d = words * 64;
            prop_assert_eq!(Modulus::new(d).unwrap().reduce(x), x % d);
        }
    }
}
