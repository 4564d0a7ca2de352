//! Reduction of a 64-bit hash to a bit index without a division per probe.
//!
//! A Bloom probe needs `x mod M` for every hash function. A 64-bit `div`
//! costs tens of cycles, far more than the rest of a probe, so each link
//! precomputes either a mask (M a power of two) or Barrett's reciprocal
//! `mu = floor(2^64 / M)`: the quotient estimate `q = (x * mu) >> 64` is the
//! true quotient or one less for every 64-bit `x`, so `x - q * M` is below
//! `2M` and one conditional subtraction gives exactly `x mod M`. That is two
//! multiplications per probe, and the probes of an item are independent of
//! one another, so the core computes them in parallel. The property tests
//! check it against `%`.

/// A precomputed modulus `M >= 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Modulus {
    divisor: u64,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `M` is a power of two: `x & mask`.
    Mask(u64),
    /// `floor(2^64 / M)` for `M` not a power of two (so `M >= 3`).
    Barrett(u64),
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
            // M does not divide 2^64, so floor((2^64 - 1) / M) = floor(2^64 / M).
            Kind::Barrett(u64::MAX / divisor)
        };
        Some(Modulus { divisor, kind })
    }

    /// The sequence `(a + i*b) mod 2^64 mod M` for i = 0, 1, 2, ...: the
    /// probe positions of an item whose hash pair is `(a, b)`.
    #[inline(always)]
    pub fn steps(&self, a: u64, b: u64) -> Steps {
        Steps {
            modulus: *self,
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
            Kind::Barrett(mu) => {
                // With e = 2^64 mod M (0 < e < M), x * mu / 2^64 = x/M - x*e/(M*2^64)
                // lies in (x/M - 1, x/M]: q is floor(x/M) or one less, so
                // x - q*M is in [0, 2M), and never above x, so it cannot wrap.
                let q = ((u128::from(x) * u128::from(mu)) >> 64) as u64;
                let r = x - q * self.divisor;
                if r >= self.divisor {
                    r - self.divisor
                } else {
                    r
                }
            }
        }
    }
}

/// An item's bit positions in one link, in probe order (see
/// [`Modulus::steps`]). Each position is reduced on its own: no position
/// waits for the previous one, so the loads they address can all be
/// issued at once.
#[derive(Clone, Copy, Debug)]
pub struct Steps {
    modulus: Modulus,
    /// The next 64-bit sum a + i*b.
    x: u64,
    b: u64,
}

impl Steps {
    /// The current position, then advances to the next.
    #[inline(always)]
    pub fn next_position(&mut self) -> u64 {
        let out = self.modulus.reduce(self.x);
        self.x = self.x.wrapping_add(self.b);
        out
    }
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

    /// The quotient estimate is one short for some inputs: those just
    /// above a multiple of M, with large quotients. Both sides of every
    /// multiple near the top of the range, for divisors of every size.
    #[test]
    fn inputs_next_to_multiples() {
        let divisors = [
            3u64,
            1153,
            143_775_880,
            (1 << 40) + 64,
            (1 << 63) + 1,
            u64::MAX - 2,
        ];
        for &d in &divisors {
            let m = Modulus::new(d).unwrap();
            let top = u64::MAX / d;
            for q in [1, 2, top / 2, top.saturating_sub(1), top] {
                // q = 2 overflows for divisors above 2^63.
                let Some(base) = q.checked_mul(d) else {
                    continue;
                };
                for x in [
                    base.wrapping_sub(1),
                    base,
                    base.wrapping_add(1),
                    base.saturating_add(d - 1),
                ] {
                    assert_eq!(m.reduce(x), x % d, "{x} mod {d}");
                }
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
