//! What a digest holds: its observations, centroids against its capacity,
//! the heaviest centroid, its range, and the rank-error guidance of
//! [`super::plan`] at its current observation count. No compress.

use super::digest::TDigest;
use super::plan::{rank_error, TAIL_QUANTILE};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TDigestStats {
    pub compression: f64,
    pub capacity: i64,
    pub merged_nodes: usize,
    pub unmerged_nodes: usize,
    pub observations: i64,
    /// Nodes in use over the capacity.
    pub fill: f64,
    /// The largest merged centroid weight (0 without centroids).
    pub heaviest_centroid: i64,
    /// None when nothing was added.
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub rank_error_median: f64,
    /// At the 1% and 99% quantiles.
    pub rank_error_tail: f64,
    pub memory_usage: i64,
}

/// O(merged nodes).
pub fn stats(td: &TDigest) -> TDigestStats {
    let observations = td.total_weight();
    let present = observations != 0;
    TDigestStats {
        compression: td.compression(),
        capacity: td.capacity(),
        merged_nodes: td.merged_nodes(),
        unmerged_nodes: td.unmerged_nodes(),
        observations,
        fill: td.nodes().len() as f64 / td.capacity() as f64,
        heaviest_centroid: td.nodes()[..td.merged_nodes()]
            .iter()
            .map(|n| n.weight)
            .max()
            .unwrap_or(0),
        min: present.then_some(td.min_raw()),
        max: present.then_some(td.max_raw()),
        rank_error_median: rank_error(td.compression(), observations.max(0) as u64, 0.5),
        rank_error_tail: rank_error(td.compression(), observations.max(0) as u64, TAIL_QUANTILE),
        memory_usage: td.memory_usage(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;

    #[test]
    fn counts() {
        let mut td = TDigest::new(10.0, &Unguarded).unwrap();
        assert_eq!(stats(&td).min, None);
        for i in 0..100 {
            td.add(f64::from(i)).unwrap();
        }
        td.compress().unwrap();
        let s = stats(&td);
        assert_eq!(s.observations, 100);
        assert_eq!((s.min, s.max), (Some(0.0), Some(99.0)));
        assert!(s.heaviest_centroid > 1 && s.heaviest_centroid < 100);
        assert_eq!(s.unmerged_nodes, 0);
        assert!(s.fill > 0.0 && s.fill <= 1.0);
    }
}
