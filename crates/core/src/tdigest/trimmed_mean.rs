//! TDIGEST.TRIMMED_MEAN (spec §5.6): the mean of the observations between
//! two fractions, centroids counted partially at the cuts.

use super::compress::Compressed;

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

impl Compressed<'_> {
    /// The mean between the fractions `lo` < `hi` of [0, 1] (the command
    /// checks both).
    pub fn trimmed_mean(&self, lo: f64, hi: f64) -> f64 {
        let c = self.centroids();
        match c {
            [] => return f64::NAN,
            [only] => return only.mean,
            _ => {}
        }
        let total = self.weight();
        let low = (total * lo).floor();
        let high = (total * hi).ceil();
        let (mut done, mut sum, mut count) = (0.0, 0.0, 0.0);
        for node in c {
            let w = node.weight as f64;
            let mut a = w;
            a -= c_min(c_max(0.0, low - done), a);
            a = c_min(c_max(0.0, high - done), a);
            done += w;
            sum += node.mean * a;
            count += a;
            if done >= high {
                break;
            }
        }
        sum / count
    }
}

#[cfg(test)]
mod tests {
    use crate::alloc_guard::Unguarded;
    use crate::tdigest::TDigest;

    #[test]
    fn worked_numbers() {
        let mut td = TDigest::new(100.0, &Unguarded).unwrap();
        for v in [1.0, 1.0, 1.0, 5.0, 5.0, 9.0] {
            td.add(v).unwrap();
        }
        assert_eq!(
            td.compressed().unwrap().trimmed_mean(0.0, 1.0),
            3.666_666_666_666_666_5
        );
    }
}
