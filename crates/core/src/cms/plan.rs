//! Sizing a Count-Min sketch before it exists: its dimensions, its bytes
//! at each cell size, the overestimate to expect for a given total count,
//! and the smallest cell size that holds that total. Nothing is allocated.
//!
//! The bound. An item's cell in one row holds its own count plus the
//! counts of the items that share the column: with N the total count and
//! a column chosen uniformly, that excess is N/width on average, so by
//! Markov's inequality it exceeds 2N/width with probability at most 1/2.
//! The rows hash independently, so the estimate (the smallest row) exceeds
//! the true count by more than `2N/width` with probability at most
//! `2^−depth`. This is the bound RedisBloom's INITBYPROB sizing inverts
//! (width `ceil(2/error)`, depth `ceil(log2(1/p))`), so planning by
//! (error, probability) gives back `error·N` with probability `1 − p`.
//! The textbook bound (Cormode and Muthukrishnan) is the same argument
//! with e instead of 2: an excess above `e·N/width` with probability at
//! most `e^−depth`; it is given too ([`CmsPlan::textbook_bound`]). Both
//! hold for streams whose item counts never go below zero (decrements
//! included), and neither depends on the cell size.

use super::cells::CellSize;
use super::sizing::{check_dims, dims_from_prob, Dims, InitError};
use super::sketch::memory_usage;

/// What the sketch is planned from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PlanInput {
    /// CMS.INITBYPROB's error rate and probability.
    Prob { error: f64, probability: f64 },
    /// CMS.INITBYDIM's width and depth.
    Dims { width: u64, depth: u64 },
}

/// An overestimate in counts and the probability it is not exceeded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    /// The estimate exceeds the true count by at most this many counts...
    pub counts: f64,
    /// ...with at least this probability.
    pub confidence: f64,
}

/// The sketch at one cell size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellSizePlan {
    pub cell_size: CellSize,
    /// Bytes of the cell array.
    pub cell_bytes: u64,
    /// What MEMORY USAGE reports for the value.
    pub memory_usage: u64,
    /// Whether a cell holds the planned total count.
    pub holds_total: bool,
}

/// A planned sketch.
#[derive(Clone, Debug, PartialEq)]
pub struct CmsPlan {
    pub width: u64,
    pub depth: u64,
    pub total: u64,
    /// `2/width`: the error rate as a fraction of N.
    pub error: f64,
    /// `2^−depth`: the probability the error bound is exceeded.
    pub probability: f64,
    /// `2N/width` with probability `1 − 2^−depth` (the module doc says why).
    pub bound: Bound,
    /// `e·N/width` with probability `1 − e^−depth`.
    pub textbook_bound: Bound,
    /// Smallest first.
    pub cell_sizes: [CellSizePlan; 4],
    /// The smallest cell size whose maximum is at least the total (a cell
    /// never holds more than N when no count goes below zero).
    pub smallest_cell_size: Option<CellSize>,
}

/// The (error·N, 1 − p) bound of a `width` × `depth` sketch after `total`
/// counts.
pub fn bound(width: u64, depth: u64, total: u64) -> Bound {
    Bound {
        counts: 2.0 * total as f64 / width as f64,
        confidence: 1.0 - 0.5f64.powf(depth as f64),
    }
}

/// The textbook (e·N/width, 1 − e^−depth) bound.
pub fn textbook_bound(width: u64, depth: u64, total: u64) -> Bound {
    Bound {
        counts: std::f64::consts::E * total as f64 / width as f64,
        confidence: 1.0 - (-(depth as f64)).exp(),
    }
}

/// The smallest cell size that holds `total`.
pub fn smallest_cell_size(total: u64) -> Option<CellSize> {
    CellSize::ALL.into_iter().find(|c| c.max_count() >= total)
}

/// Plans a sketch; the dimensions' errors are CMS.INITBY*'s (a cell size
/// whose array the address space cannot hold is planned with saturated
/// byte counts: [`check_dims`] refuses it at creation).
pub fn plan(input: PlanInput, total: u64) -> Result<CmsPlan, InitError> {
    let Dims { width, depth } = match input {
        PlanInput::Prob { error, probability } => dims_from_prob(error, probability)?,
        PlanInput::Dims { width, depth } => {
            check_dims(width, depth, CellSize::DEFAULT)?;
            Dims { width, depth }
        }
    };
    let cell_sizes = CellSize::ALL.map(|cell_size| CellSizePlan {
        cell_size,
        cell_bytes: (width * depth).saturating_mul(cell_size.bytes()),
        memory_usage: memory_usage(width, depth, cell_size),
        holds_total: cell_size.max_count() >= total,
    });
    Ok(CmsPlan {
        width,
        depth,
        total,
        error: 2.0 / width as f64,
        probability: 0.5f64.powf(depth as f64),
        bound: bound(width, depth, total),
        textbook_bound: textbook_bound(width, depth, total),
        cell_sizes,
        smallest_cell_size: smallest_cell_size(total),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_from_prob_gives_back_the_error() {
        let p = plan(
            PlanInput::Prob {
                error: 0.001,
                probability: 0.01,
            },
            1_000_000,
        )
        .unwrap();
        assert_eq!((p.width, p.depth), (2000, 7));
        assert_eq!(p.bound.counts, 1000.0);
        assert!(p.bound.confidence >= 0.99);
        assert!(p.textbook_bound.counts > p.bound.counts);
        assert_eq!(p.cell_sizes[2].cell_bytes, 56000);
        assert_eq!(p.cell_sizes[2].memory_usage, 112008);
        assert_eq!(p.smallest_cell_size, Some(CellSize::Four));
        assert_eq!(
            p.cell_sizes.map(|c| c.holds_total),
            [false, false, true, true]
        );
    }

    #[test]
    fn smallest_cell_sizes() {
        assert_eq!(smallest_cell_size(255), Some(CellSize::One));
        assert_eq!(smallest_cell_size(256), Some(CellSize::Two));
        assert_eq!(smallest_cell_size(1 << 32), Some(CellSize::Eight));
        assert_eq!(smallest_cell_size(u64::MAX), None);
        assert_eq!(
            plan(PlanInput::Dims { width: 0, depth: 1 }, 1),
            Err(InitError::InvalidArguments)
        );
    }
}
