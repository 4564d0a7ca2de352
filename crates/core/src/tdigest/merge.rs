//! TDIGEST.MERGE (spec §5.7, §5.8): the result's compression and the
//! result itself, built as a new digest so a failure leaves the
//! destination as it was.
//!
//! 2.8.2 compresses every source (and the old destination) in place before
//! reading its nodes, which later answers and DUMP bytes show: the module
//! compresses the stored values first ([`TDigest::compress`], as a master
//! that propagates the change); a value given uncompressed here is read
//! through a compressed scratch copy and not changed.
//!
//! The result's minimum and maximum are those of the centroid means added,
//! not the sources' (2.8.2's, kept). Whether a destination listed among the
//! sources counts twice is the caller's choice of operands: [`merge`]
//! counts what it is given.

use super::compress::ReadError;
use super::digest::{AddError, CreateError, TDigest};
use crate::alloc_guard::{AllocGuard, Unguarded};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeError {
    /// The result cannot be created (2.8.2: `allocation of destination
    /// digest failed`).
    Create(CreateError),
    /// An add failed (2.8.2: `overflow detected`).
    Overflow,
}

impl MergeError {
    /// RedisBloom's reply text (without the `ERR ` prefix).
    pub fn message(self) -> &'static str {
        match self {
            MergeError::Create(_) => "T-Digest: allocation of destination digest failed",
            MergeError::Overflow => "T-Digest: overflow detected",
        }
    }
}

impl From<AddError> for MergeError {
    fn from(_: AddError) -> Self {
        MergeError::Overflow
    }
}

/// The compression of MERGE's result: `COMPRESSION` if given; else, with
/// `OVERRIDE` or no destination, the largest of the sources'; else the
/// destination's.
pub fn result_compression(
    explicit: Option<f64>,
    override_dest: bool,
    dest: Option<&TDigest>,
    sources: &[&TDigest],
) -> f64 {
    if let Some(c) = explicit {
        return c;
    }
    match dest {
        Some(d) if !override_dest => d.compression(),
        _ => sources
            .iter()
            .map(|s| s.compression())
            .fold(0.0, |a, c| if c > a { c } else { a }),
    }
}

impl TDigest {
    /// Merges `src` into `self` (§5.7): compresses `self`, then adds every
    /// node of the compressed `src` (merged and any leftover unmerged) with
    /// its weight. On error `self` may hold part of `src`.
    pub fn merge_from(&mut self, src: &TDigest) -> Result<(), MergeError> {
        self.compress().map_err(|_| MergeError::Overflow)?;
        let nodes = src
            .with_compressed(&Unguarded, |c| c.digest().nodes().to_vec())
            .map_err(|e| match e {
                ReadError::Scratch(e) => MergeError::Create(e),
                ReadError::Compress(_) => MergeError::Overflow,
            })?;
        for node in nodes {
            self.add_weighted(node.mean, node.weight)?;
        }
        Ok(())
    }
}

/// MERGE's new value: a digest of `compression`, into which the old
/// destination (when given: pass it unless `OVERRIDE`) and then each source
/// in order are merged.
pub fn merge(
    compression: f64,
    dest: Option<&TDigest>,
    sources: &[&TDigest],
    guard: &dyn AllocGuard,
) -> Result<TDigest, MergeError> {
    let mut result = TDigest::new(compression, guard).map_err(MergeError::Create)?;
    if let Some(d) = dest {
        result.set_single_observation(d.single_observation());
        result.merge_from(d)?;
    } else if let Some(s) = sources.first() {
        result.set_single_observation(s.single_observation());
    }
    for s in sources {
        result.merge_from(s)?;
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(c: f64, values: &[f64]) -> TDigest {
        let mut td = TDigest::new(c, &Unguarded).unwrap();
        for &v in values {
            td.add(v).unwrap();
        }
        td
    }

    #[test]
    fn compression_rules() {
        let (a, b, d) = (digest(50.0, &[]), digest(200.0, &[]), digest(10.0, &[]));
        assert_eq!(result_compression(Some(30.0), true, Some(&d), &[&a]), 30.0);
        assert_eq!(result_compression(None, false, None, &[&a, &b]), 200.0);
        assert_eq!(result_compression(None, true, Some(&d), &[&a, &b]), 200.0);
        assert_eq!(result_compression(None, false, Some(&d), &[&a, &b]), 10.0);
    }

    #[test]
    fn sources_are_read_compressed_and_left_alone() {
        let a = digest(100.0, &[1.0, 2.0, 3.0]);
        let before = a.clone();
        let m = merge(100.0, None, &[&a, &a], &Unguarded).unwrap();
        assert_eq!(a, before);
        assert_eq!(m.total_weight(), 6);
        assert_eq!((m.min(), m.max()), (1.0, 3.0));
        assert_eq!(
            merge(0.0, None, &[&a], &Unguarded),
            Err(MergeError::Create(CreateError::NotPositive))
        );
    }
}
