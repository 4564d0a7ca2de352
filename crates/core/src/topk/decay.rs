//! The decay of HeavyKeeper: when an item meets a bucket another item
//! owns, each unit of its increment decrements that bucket with
//! probability `decay^count` (spec §4.3).
//!
//! The probability is 2.8.2's: a table T[j] = pow(decay, j) for j < 256,
//! and past it pow(T[255], count / 255) · T[count mod 255] (2.8.2 divides
//! by 255, not 256; kept). Rust's `f64::powf` calls the platform's `pow`,
//! glibc's on Linux, as 2.8.2 does. The table is rebuilt whenever a sketch
//! is created or loaded (2.8.2 leaves it zero after a load, so loaded keys
//! never decay again: a documented difference).
//!
//! The coin is where this differs. 2.8.2 compares `rand() / RAND_MAX`
//! with the probability: the process-wide generator makes a master and
//! its replica, or a server before and after a restart, disagree. Here the
//! coin is a 64-bit mix of the draw's inputs (item fingerprint, row,
//! column, the bucket's current count, the unit) and of a counter of the
//! draws the sketch has made, mapped to [0, 1). The counter makes two
//! draws with the same inputs independent (without it an item that lost
//! the toss against a bucket at some count would lose it on every later
//! arrival until the owner's count changed). The counter is saved in the
//! RDB, in the padding bytes of the first heap record, which 2.8.2 never
//! reads (see [`super::rdb`]), so every replica, AOF replay and reload
//! draws the same coins.
//!
//! A coin is drawn, and the counter advanced, only when the probability
//! is below 1: with decay 1 every collision decrements, as in 2.8.2 (its
//! `rand()` only fails that with a draw of exactly RAND_MAX), the counter
//! stays 0 and the saved bytes equal 2.8.2's.

/// T[j] = pow(decay, j), j = 0..255.
#[derive(Clone, Debug, PartialEq)]
pub struct DecayTable {
    powers: [f64; 256],
}

impl DecayTable {
    pub fn new(decay: f64) -> DecayTable {
        let mut powers = [0.0; 256];
        for (j, p) in powers.iter_mut().enumerate() {
            *p = decay.powf(j as f64);
        }
        DecayTable { powers }
    }

    /// An upper bound of [`DecayTable::probability`] that costs one load:
    /// exact below 256, T[255] from there (every product past it is at
    /// most T[255]). A coin at or above it fails without the two `pow`
    /// calls of the exact value, which is what almost every draw against
    /// a heavy bucket does.
    #[inline]
    pub fn bound(&self, count: u32) -> f64 {
        self.powers[(count as usize).min(255)]
    }

    /// The probability that a unit decrements a bucket at `count`.
    #[inline]
    pub fn probability(&self, count: u32) -> f64 {
        if count < 256 {
            self.powers[count as usize]
        } else {
            self.powers[255].powf(f64::from(count / 255)) * self.powers[(count % 255) as usize]
        }
    }
}

/// What one draw depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    /// The sketch's draw counter before this draw.
    pub counter: u32,
    /// The fingerprint of the item being added.
    pub fp: u32,
    pub row: u32,
    pub column: u32,
    /// The bucket's count before this unit.
    pub count: u32,
    /// The units of the increment left, this one included.
    pub unit: u32,
}

/// SplitMix64's finalizer: a bijective mix whose output bits each depend
/// on every input bit.
#[inline(always)]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The coin of one draw, in [0, 1): a unit decrements when it is below
/// the probability.
#[inline]
pub fn coin(d: Draw) -> f64 {
    let mut h = mix((u64::from(d.fp) << 32 | u64::from(d.count)) ^ 0x9e37_79b9_7f4a_7c15);
    h = mix(h ^ (u64::from(d.row) << 32 | u64::from(d.column)));
    h = mix(h ^ (u64::from(d.counter) << 32 | u64::from(d.unit)));
    // The top 53 bits, exactly representable: [0, 1 − 2^−53].
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_pow() {
        let t = DecayTable::new(0.9);
        assert_eq!(t.probability(0), 1.0);
        assert_eq!(t.probability(1), 0.9);
        assert_eq!(t.probability(2), 0.9f64.powf(2.0));
        assert_eq!(
            t.probability(600),
            0.9f64.powf(255.0).powf(2.0) * 0.9f64.powf(90.0)
        );
        for c in [1, 200, 255, 256, 600, u32::MAX] {
            assert!(t.probability(c) <= t.bound(c), "{c}");
        }
        assert_eq!(t.bound(7), t.probability(7));
        let one = DecayTable::new(1.0);
        assert!([0, 1, 255, 256, u32::MAX]
            .iter()
            .all(|&c| one.probability(c) == 1.0));
    }

    #[test]
    fn coins_spread_over_the_unit_interval() {
        let base = Draw {
            counter: 0,
            fp: 7,
            row: 1,
            column: 3,
            count: 5,
            unit: 1,
        };
        let coins: Vec<f64> = (0..10_000)
            .map(|i| coin(Draw { counter: i, ..base }))
            .collect();
        assert!(coins.iter().all(|&c| (0.0..1.0).contains(&c)));
        let below = coins.iter().filter(|&&c| c < 0.25).count();
        assert!((2300..2700).contains(&below), "{below}");
        assert_eq!(coin(base), coin(base));
        assert_ne!(coin(base), coin(Draw { unit: 2, ..base }));
    }
}
