//! Compress (spec §5.3): sort every node, then merge neighbours while the
//! merged centroid stays within the scale function's bound. 2.8.2 runs it
//! before every read and every save; here it is a method of its own, and
//! evaluations take a [`Compressed`] view, so a read can compress the
//! stored digest as 2.8.2 does, evaluate a compressed copy kept for later
//! reads ([`TDigest::compressed_copy`], installed by
//! [`TDigest::install`] when the digest is to become it) or a scratch copy
//! ([`TDigest::with_compressed`]), changing nothing.
//!
//! Arithmetic is 2.8.2's, operation for operation (f64 `ln` is libm's
//! `log`; no fused multiply-add).

use super::c_double_to_i64;
use super::digest::{reserve_nodes, CreateError, Node, SingleObservation, TDigest, TWO_PI};
use super::sort::sort_nodes;
use crate::alloc_guard::AllocGuard;

/// A compress refused because the total weight's scale factor is not
/// finite (unreachable with 64-bit weights; kept as 2.8.2 checks it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompressError {
    Overflow,
}

/// Why a read could not be evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    Compress(CompressError),
    /// The scratch copy could not be allocated.
    Scratch(CreateError),
}

/// A digest a compress would not change: what the evaluations read.
#[derive(Clone, Copy, Debug)]
pub struct Compressed<'a> {
    pub(crate) td: &'a TDigest,
}

impl<'a> Compressed<'a> {
    /// The digest evaluated.
    pub fn digest(&self) -> &'a TDigest {
        self.td
    }

    /// The merged centroids, sorted by mean.
    pub(crate) fn centroids(&self) -> &'a [Node] {
        &self.td.nodes[..self.td.merged_nodes]
    }

    /// The merged weight as a double (what the evaluations divide by).
    pub(crate) fn weight(&self) -> f64 {
        self.td.merged_weight as f64
    }
}

impl TDigest {
    /// The merge pass (§5.3). Nothing happens without unmerged points.
    pub fn compress(&mut self) -> Result<(), CompressError> {
        if !self.has_unmerged() {
            return Ok(());
        }
        sort_nodes(&mut self.nodes);
        let total = self.merged_weight as f64 + self.unmerged_weight as f64;
        if (self.unmerged_weight as f64).is_infinite()
            || total.is_infinite()
            || (TWO_PI * total) * total.ln() == f64::INFINITY
        {
            return Err(CompressError::Overflow);
        }
        if total <= 1.0 {
            if self.single == SingleObservation::Lost282 {
                return Ok(());
            }
            // The fix: the point (the only weight there is) becomes the
            // centroid, so reads answer it and saving keeps it.
            self.finish(self.nodes.len(), total);
            return Ok(());
        }
        let normalizer = self.compression / ((TWO_PI * total) * total.ln());
        if normalizer == f64::INFINITY {
            return Err(CompressError::Overflow);
        }
        let nodes = &mut self.nodes;
        let mut cur = 0;
        let mut s = 0.0;
        // q0·(1 − q0) with q0 = s / W changes only when `s` does (a new
        // centroid starts): computed then, the same double every step
        // recomputes, one division fewer per node.
        let mut left_bound = 0.0;
        for i in 1..nodes.len() {
            let proposed = nodes[cur].weight as f64 + nodes[i].weight as f64;
            let z = proposed * normalizer;
            let q2 = (s + proposed) / total;
            if z <= left_bound && z <= q2 * (1.0 - q2) {
                let Node { mean, weight } = nodes[i];
                nodes[cur].weight = nodes[cur].weight.wrapping_add(weight);
                nodes[cur].mean +=
                    ((mean - nodes[cur].mean) * weight as f64) / nodes[cur].weight as f64;
            } else {
                s += nodes[cur].weight as f64;
                let q0 = s / total;
                left_bound = q0 * (1.0 - q0);
                cur += 1;
                nodes[cur] = nodes[i];
            }
        }
        self.finish(cur + 1, total);
        Ok(())
    }

    fn finish(&mut self, merged: usize, total: f64) {
        self.nodes.truncate(merged);
        self.merged_nodes = merged;
        self.merged_weight = c_double_to_i64(total);
        self.unmerged_weight = 0;
        self.total_compressions = self.total_compressions.wrapping_add(1);
    }

    /// Whether a compress would change nothing.
    pub fn is_compressed(&self) -> bool {
        !self.has_unmerged()
            || (self.single == SingleObservation::Lost282
                && self.nodes.len() == 1
                && self.merged_weight as f64 + self.unmerged_weight as f64 <= 1.0)
    }

    /// The view of an already compressed digest.
    pub fn view(&self) -> Option<Compressed<'_>> {
        self.is_compressed().then_some(Compressed { td: self })
    }

    /// 2.8.2's read: compress the digest itself, then evaluate it.
    pub fn compressed(&mut self) -> Result<Compressed<'_>, CompressError> {
        self.compress()?;
        Ok(Compressed { td: self })
    }

    /// A read that changes nothing: evaluates the digest itself when it is
    /// compressed, else a compressed scratch copy of its nodes (16 bytes a
    /// node, asked of `guard`). The answers are those [`Self::compressed`]
    /// gives.
    pub fn with_compressed<R>(
        &self,
        guard: &dyn AllocGuard,
        f: impl FnOnce(Compressed<'_>) -> R,
    ) -> Result<R, ReadError> {
        if let Some(view) = self.view() {
            return Ok(f(view));
        }
        let mut scratch = self.scratch(guard).map_err(ReadError::Scratch)?;
        scratch.compress().map_err(ReadError::Compress)?;
        Ok(f(Compressed { td: &scratch }))
    }

    /// compress(self) as a copy holding only the nodes in use, asked of
    /// `guard` (16 bytes a node): a view a server keeps for its reads
    /// without changing the digest ([`TDigest::install`] makes it the
    /// digest later). Never added to.
    pub fn compressed_copy(&self, guard: &dyn AllocGuard) -> Result<TDigest, ReadError> {
        let mut scratch = self.scratch(guard).map_err(ReadError::Scratch)?;
        scratch.compress().map_err(ReadError::Compress)?;
        Ok(scratch)
    }

    /// The bytes [`TDigest::compressed_copy`] asks for.
    pub fn compressed_copy_bytes(&self) -> u64 {
        16 * self.nodes.len() as u64
    }

    /// Makes the digest `compressed`, a [`TDigest::compressed_copy`] of it
    /// taken since its last change: the same state as [`TDigest::compress`]
    /// reaches, without sorting again; the node array (and its capacity)
    /// is kept.
    pub fn install(&mut self, compressed: &TDigest) {
        debug_assert!(compressed.is_compressed() && compressed.cap == self.cap);
        self.nodes.clear();
        self.nodes.extend_from_slice(&compressed.nodes);
        self.merged_nodes = compressed.merged_nodes;
        self.merged_weight = compressed.merged_weight;
        self.unmerged_weight = compressed.unmerged_weight;
        self.total_compressions = compressed.total_compressions;
        self.min = compressed.min;
        self.max = compressed.max;
    }

    /// A copy holding only the nodes in use (never added to).
    fn scratch(&self, guard: &dyn AllocGuard) -> Result<TDigest, CreateError> {
        let mut nodes = reserve_nodes(self.nodes.len() as i64, guard)?;
        nodes.extend_from_slice(&self.nodes);
        Ok(TDigest {
            nodes,
            compression: self.compression,
            cap: self.cap,
            min: self.min,
            max: self.max,
            merged_nodes: self.merged_nodes,
            merged_weight: self.merged_weight,
            unmerged_weight: self.unmerged_weight,
            total_compressions: self.total_compressions,
            single: self.single,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;

    #[test]
    fn one_to_ten_stays_ten_singletons() {
        let mut td = TDigest::new(100.0, &Unguarded).unwrap();
        for i in 1..=10 {
            td.add(f64::from(i)).unwrap();
        }
        assert!(!td.is_compressed());
        let copy = td.clone();
        let answer = copy
            .with_compressed(&Unguarded, |c| c.centroids().len())
            .unwrap();
        assert_eq!(copy, td, "a read on a scratch copy changes nothing");
        td.compress().unwrap();
        assert_eq!(answer, 10);
        assert_eq!((td.merged_nodes(), td.unmerged_nodes()), (10, 0));
        assert_eq!((td.merged_weight(), td.total_compressions()), (10, 1));
        assert!(td.is_compressed());
    }

    #[test]
    fn installing_a_compressed_copy_is_compressing() {
        let mut td = TDigest::new(5.0, &Unguarded).unwrap();
        for i in 0..37 {
            td.add(f64::from(i % 7) * 1.5).unwrap();
        }
        assert!(!td.is_compressed());
        let copy = td.compressed_copy(&Unguarded).unwrap();
        assert!(copy.is_compressed());
        assert_eq!(td.compressed_copy_bytes(), 16 * td.nodes().len() as u64);
        let mut compressed = td.clone();
        compressed.compress().unwrap();
        td.install(&copy);
        assert_eq!(td, compressed);
        assert!(td.nodes.capacity() >= td.cap as usize, "the array is kept");
    }

    #[test]
    fn single_observation_modes() {
        let mut td = TDigest::new(100.0, &Unguarded).unwrap();
        td.add(5.0).unwrap();
        let mut lost = td.clone();
        lost.set_single_observation(SingleObservation::Lost282);
        lost.compress().unwrap();
        assert_eq!((lost.merged_nodes(), lost.unmerged_nodes()), (0, 1));
        assert!(lost.is_compressed());
        td.compress().unwrap();
        assert_eq!((td.merged_nodes(), td.unmerged_nodes()), (1, 0));
        assert_eq!(
            td.nodes()[0],
            Node {
                mean: 5.0,
                weight: 1
            }
        );
    }
}
