//! Quantiles (spec §5.4) and the rank-to-value reads built on them
//! (TDIGEST.QUANTILE, BYRANK, BYREVRANK; §5.8).
//!
//! QUANTILE uses the walk directly ("Q-multi"); BYRANK goes through a
//! variant with an extra `x < 1 → min` shortcut ("Q-single"). Both are
//! 2.8.2's and both are kept: their answers differ near the minimum.

use super::compress::Compressed;

/// 2.8.2's weighted average of two points, clamped between them.
fn weighted_average(x1: f64, u1: f64, x2: f64, u2: f64) -> f64 {
    if x1 <= x2 {
        clamped(x1, u1, x2, u2)
    } else {
        clamped(x2, u2, x1, u1)
    }
}

/// C's MIN/MAX macros: a NaN falls through to the second operand.
fn c_min(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

fn c_max(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

fn clamped(x1: f64, u1: f64, x2: f64, u2: f64) -> f64 {
    let v = (x1 * u1 + x2 * u2) / (u1 + u2);
    c_max(x1, c_min(v, x2))
}

/// Where a walk stopped: the pair of centroids `p`, `p + 1`, and `s`, the
/// target index at the middle of centroid `p`.
#[derive(Clone, Copy)]
struct Cursor {
    p: usize,
    s: f64,
}

impl Compressed<'_> {
    /// The walk's start: the first pair, at the middle of the first
    /// centroid.
    fn start(&self) -> Cursor {
        Cursor {
            p: 0,
            s: self.centroids()[0].weight as f64 / 2.0,
        }
    }

    /// The value at target index `x` (0..W) of a digest with at least two
    /// centroids.
    fn walk(&self, x: f64) -> f64 {
        self.walk_from(x, &mut self.start())
    }

    /// [`Self::walk`] resumed at `cursor`, which a walk for a target at
    /// most `x` left (every pair before it ends at or below that target, so
    /// a walk from the start would pass them with the same sums), and left
    /// where this one stops.
    fn walk_from(&self, x: f64, cursor: &mut Cursor) -> f64 {
        let c = self.centroids();
        let td = self.td;
        let total = self.weight();
        let n = c.len();
        let w0 = c[0].weight as f64;
        if c[0].weight > 1 && x < w0 / 2.0 {
            return td.min + ((x - 1.0) / (w0 / 2.0 - 1.0)) * (c[0].mean - td.min);
        }
        if x > total - 1.0 {
            return td.max;
        }
        let last = c[n - 1];
        let wl = last.weight as f64;
        if last.weight > 1 && total - x <= wl / 2.0 {
            return td.max - ((total - x - 1.0) / (wl / 2.0 - 1.0)) * (td.max - last.mean);
        }
        let mut s = cursor.s;
        for p in cursor.p..n - 1 {
            let (left, right) = (c[p], c[p + 1]);
            let d = (left.weight as f64 + right.weight as f64) / 2.0;
            if s + d > x {
                *cursor = Cursor { p, s };
                let mut a = 0.0;
                if left.weight == 1 {
                    if x - s < 0.5 {
                        return left.mean;
                    }
                    a = 0.5;
                }
                let mut b = 0.0;
                if right.weight == 1 {
                    if (s + d) - x <= 0.5 {
                        return right.mean;
                    }
                    b = 0.5;
                }
                return weighted_average(left.mean, ((s + d) - x) - b, right.mean, (x - s) - a);
            }
            s += d;
        }
        *cursor = Cursor { p: n - 1, s };
        let z1 = (x - total) - wl / 2.0;
        let z2 = wl / 2.0 - z1;
        weighted_average(last.mean, z1, td.max, z2)
    }

    /// TDIGEST.QUANTILE's answer for `q` in [0, 1] (Q-multi).
    pub fn quantile(&self, q: f64) -> f64 {
        match self.centroids() {
            [] => f64::NAN,
            [only] => only.mean,
            _ => self.walk(q * self.weight()),
        }
    }

    /// TDIGEST.QUANTILE for every fraction, in argument order: the
    /// answers of [`Self::quantile`], with one walk shared by each run of
    /// non-decreasing fractions (as 2.8.2 does), which resumes where the
    /// previous fraction's stopped instead of starting over.
    pub fn quantiles(&self, qs: &[f64]) -> Vec<f64> {
        let mut out = Vec::with_capacity(qs.len());
        self.each_quantile(qs, |v| out.push(v));
        out
    }

    /// [`Self::quantiles`] handed to `out` one by one, in the order of
    /// `qs` (a reply is written from them without a vector in between).
    pub fn each_quantile(&self, qs: &[f64], mut out: impl FnMut(f64)) {
        match self.centroids() {
            [] => qs.iter().for_each(|_| out(f64::NAN)),
            [only] => qs.iter().for_each(|_| out(only.mean)),
            _ => {
                let total = self.weight();
                let mut cursor = self.start();
                let mut last = f64::NEG_INFINITY;
                for &q in qs {
                    let x = q * total;
                    // A smaller target (or NaN) starts over.
                    if x.partial_cmp(&last).is_none_or(|o| o.is_lt()) {
                        cursor = self.start();
                    }
                    last = x;
                    out(self.walk_from(x, &mut cursor));
                }
            }
        }
    }

    /// Q-single: as [`Self::quantile`], with indexes below 1 answering the
    /// minimum.
    pub fn quantile_single(&self, q: f64) -> f64 {
        match self.centroids() {
            [] => f64::NAN,
            [only] => only.mean,
            _ => {
                let x = q * self.weight();
                if x < 1.0 {
                    self.td.min
                } else {
                    self.walk(x)
                }
            }
        }
    }

    /// TDIGEST.BYRANK for a rank ≥ 0 (the command refuses negatives).
    pub fn by_rank(&self, rank: i64) -> f64 {
        let size = self.td.total_weight() as f64;
        if size == 0.0 {
            f64::NAN
        } else if rank == 0 {
            self.td.min
        } else if rank as f64 >= size {
            f64::INFINITY
        } else {
            self.quantile_single(rank as f64 / size)
        }
    }

    /// TDIGEST.BYREVRANK for a rank ≥ 0.
    pub fn by_rev_rank(&self, rank: i64) -> f64 {
        let size = self.td.total_weight() as f64;
        if size == 0.0 {
            f64::NAN
        } else if rank == 0 {
            self.td.max
        } else if rank as f64 >= size {
            f64::NEG_INFINITY
        } else {
            self.quantile_single((size - rank as f64 - 1.0) / size)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::alloc_guard::Unguarded;
    use crate::tdigest::TDigest;

    /// The shared walk answers what a walk per fraction answers, bit for
    /// bit, in any order of fractions.
    #[test]
    fn shared_walk_is_a_walk_per_fraction() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..60 {
            let mut td = TDigest::new(1.0 + (case % 7) as f64 * 20.0, &Unguarded).unwrap();
            for _ in 0..(2 + next() % 5000) {
                // Few distinct values in some cases: centroids of weight 1
                // and equal means.
                let v = (next() % if case % 3 == 0 { 5 } else { 1 << 40 }) as f64;
                td.add(v).unwrap();
            }
            let c = td.compressed().unwrap();
            let mut qs: Vec<f64> = (0..40).map(|_| (next() % 1001) as f64 / 1000.0).collect();
            if case % 2 == 0 {
                qs.sort_by(f64::total_cmp);
            }
            qs.extend([0.0, 1.0, 1.0, 0.5, 0.5, 0.0]);
            let shared: Vec<u64> = c.quantiles(&qs).iter().map(|q| q.to_bits()).collect();
            let each: Vec<u64> = qs.iter().map(|&q| c.quantile(q).to_bits()).collect();
            assert_eq!(shared, each, "case {case}");
        }
    }

    #[test]
    fn worked_numbers() {
        // Spec §5.10.
        let mut td = TDigest::new(100.0, &Unguarded).unwrap();
        for i in 1..=10 {
            td.add(f64::from(i)).unwrap();
        }
        let c = td.compressed().unwrap();
        assert_eq!(
            c.quantiles(&[0.0, 0.1, 0.5, 0.9, 1.0]),
            [1.0, 2.0, 6.0, 10.0, 10.0]
        );
        let by: Vec<f64> = [0, 1, 5, 9, 10, 11].iter().map(|&r| c.by_rank(r)).collect();
        assert_eq!(by, [1.0, 2.0, 6.0, 10.0, f64::INFINITY, f64::INFINITY]);
        let rev: Vec<f64> = [0, 1, 5, 9, 10, 11]
            .iter()
            .map(|&r| c.by_rev_rank(r))
            .collect();
        assert_eq!(
            rev,
            [10.0, 9.0, 5.0, 1.0, f64::NEG_INFINITY, f64::NEG_INFINITY]
        );
    }
}
