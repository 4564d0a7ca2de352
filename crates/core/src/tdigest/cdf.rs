//! The fraction of observations at or below a value (spec §5.5) and the
//! ranks built on it (TDIGEST.CDF, RANK, REVRANK; §5.8).

use super::c_double_to_i64;
use super::compress::Compressed;

/// C's `round`: half away from zero.
fn round_half_away(x: f64) -> f64 {
    x.round()
}

/// RANK's rounding: toward zero when the fractional part is at most one
/// half (so 4.5 → 4), else away from zero; NaN stays NaN.
fn half_rounds_down(x: f64) -> f64 {
    let whole = x.trunc();
    let frac = if x.is_infinite() { 0.0 } else { x - whole };
    if frac.abs() <= 0.5 {
        whole
    } else if x < 0.0 {
        whole - 1.0
    } else {
        whole + 1.0
    }
}

impl Compressed<'_> {
    /// TDIGEST.CDF's answer for `v` (±inf allowed).
    pub fn cdf(&self, v: f64) -> f64 {
        let c = self.centroids();
        let td = self.td;
        let n = c.len();
        if n == 0 {
            return f64::NAN;
        }
        let total = self.weight();
        if v < td.min {
            return 0.0;
        }
        if v > td.max {
            return 1.0;
        }
        if n == 1 {
            return if (v - td.min) <= (td.max - td.min) {
                0.5
            } else {
                (v - td.min) / (td.max - td.min)
            };
        }
        let first = c[0];
        if v < first.mean {
            let width = first.mean - td.min;
            return if width > 0.0 {
                if v == td.min {
                    0.5 / total
                } else {
                    (1.0 + ((v - td.min) / width) * (first.weight as f64 / 2.0 - 1.0)) / total
                }
            } else {
                0.0
            };
        }
        let last = c[n - 1];
        if v > last.mean {
            let width = td.max - last.mean;
            return if width > 0.0 {
                if v == td.max {
                    1.0 - 0.5 / total
                } else {
                    1.0 - (1.0 + ((td.max - v) / width) * (last.weight as f64 / 2.0 - 1.0)) / total
                }
            } else {
                1.0
            };
        }
        let mut s = 0.0;
        for i in 0..n - 1 {
            let (left, right) = (c[i], c[i + 1]);
            if left.mean == v {
                let mut equal = 0.0;
                for node in c[i..].iter().take_while(|node| node.mean == v) {
                    equal += node.weight as f64;
                }
                return (s + equal / 2.0) / total;
            }
            if left.mean <= v && v < right.mean {
                let (wl, wr) = (left.weight as f64, right.weight as f64);
                if right.mean - left.mean > 0.0 {
                    let (mut a, mut b) = (0.0, 0.0);
                    if left.weight == 1 {
                        if right.weight == 1 {
                            return (s + 1.0) / total;
                        }
                        a = 0.5;
                    } else if right.weight == 1 {
                        b = 0.5;
                    }
                    let d = (wl + wr) / 2.0;
                    let base = (s + wl / 2.0) + a;
                    return (base + (((d - a) - b) * (v - left.mean)) / (right.mean - left.mean))
                        / total;
                }
                return (s + (wl + wr) / 2.0) / total;
            }
            s += left.weight as f64;
        }
        1.0 - 0.5 / total
    }

    /// TDIGEST.RANK's answer for `v`: −2 for an empty digest, −1 below the
    /// minimum, the observation count above the maximum.
    pub fn rank(&self, v: f64) -> i64 {
        let size = self.td.total_weight();
        if size == 0 {
            -2
        } else if v < self.td.min {
            -1
        } else if v > self.td.max {
            size
        } else {
            c_double_to_i64(half_rounds_down(self.cdf(v) * size as f64))
        }
    }

    /// TDIGEST.REVRANK's answer for `v`.
    pub fn rev_rank(&self, v: f64) -> i64 {
        let size = self.td.total_weight();
        if size == 0 {
            -2
        } else if v < self.td.min {
            size
        } else if v > self.td.max {
            -1
        } else {
            let x = self.cdf(v) * size as f64;
            c_double_to_i64(round_half_away(size as f64 - round_half_away(x)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::half_rounds_down;
    use crate::alloc_guard::Unguarded;
    use crate::tdigest::TDigest;

    #[test]
    fn rounding() {
        assert_eq!(half_rounds_down(4.5), 4.0);
        assert_eq!(half_rounds_down(4.51), 5.0);
        assert_eq!(half_rounds_down(-4.5), -4.0);
        assert_eq!(half_rounds_down(-4.6), -5.0);
        assert!(half_rounds_down(f64::NAN).is_nan());
    }

    #[test]
    fn worked_numbers() {
        // Spec §5.10: 1 1 1 5 5 9.
        let mut td = TDigest::new(100.0, &Unguarded).unwrap();
        for v in [1.0, 1.0, 1.0, 5.0, 5.0, 9.0] {
            td.add(v).unwrap();
        }
        let c = td.compressed().unwrap();
        assert_eq!(c.cdf(5.0), 0.666_666_666_666_666_6);
        assert_eq!(c.rank(5.0), 4);
    }
}
