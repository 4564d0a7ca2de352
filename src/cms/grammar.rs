//! Argument grammars of the CMS.* write commands, in RedisBloom's check
//! order (spec §3.3, §3.4, §3.6, and §3.9 for what 8.12 added), so the
//! first error a client sees is the same. The key checks that come first
//! (a creation's `key already exists`, an increment's `key does not
//! exist`) are the commands'; these run after them.

use ferrobloom_core::cms::sizing::{check_dims, dims_from_prob};
use ferrobloom_core::cms::{CellSize, Dims};

use super::replies;
use crate::command::{ArgSource, CommandError};

/// What a creation makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Init {
    pub dims: Dims,
    pub cell_size: CellSize,
}

/// INITBYDIM and INITBYPROB take 4 arguments, or 6 with `CELL_SIZE n`
/// (8.12).
pub fn init_arity(args: &impl ArgSource) -> Result<(), CommandError> {
    match args.count() {
        4 | 6 => Ok(()),
        _ => Err(CommandError::Arity),
    }
}

/// `width depth [CELL_SIZE n]` of CMS.INITBYDIM: each an integer of at
/// least 1, then 2.8.2's limits on width·depth, then the cell size.
pub fn parse_init_by_dim(args: &impl ArgSource) -> Result<Init, CommandError> {
    let positive = |i: usize| args.int(i).filter(|&v| v >= 1).map(|v| v as u64);
    let width = positive(2).ok_or(CommandError::Static(replies::INVALID_WIDTH))?;
    let depth = positive(3).ok_or(CommandError::Static(replies::INVALID_DEPTH))?;
    let dims = Dims { width, depth };
    // 2.8.2's limits (1-byte cells: width·depth alone); the bytes of
    // larger cells are checked again on creation.
    check_dims(width, depth, CellSize::One).map_err(replies::init_error)?;
    Ok(Init {
        dims,
        cell_size: cell_size(args)?,
    })
}

/// `error probability [CELL_SIZE n]` of CMS.INITBYPROB: each a double in
/// (0, 1), the dimensions 2.8.2 computes from them and their limits, then
/// the cell size.
pub fn parse_init_by_prob(args: &impl ArgSource) -> Result<Init, CommandError> {
    let error = args
        .double(2)
        .ok_or(CommandError::Static(replies::INVALID_OVERESTIMATION))?;
    if !(error > 0.0 && error < 1.0) {
        return Err(replies::INVALID_OVERESTIMATION.into());
    }
    let probability = args
        .double(3)
        .ok_or(CommandError::Static(replies::INVALID_PROB))?;
    let dims = dims_from_prob(error, probability).map_err(replies::init_error)?;
    Ok(Init {
        dims,
        cell_size: cell_size(args)?,
    })
}

/// The cell size of a creation: 4 without the option; with it, the fifth
/// argument must be the word `CELL_SIZE` (any case) and the sixth 1, 2, 4
/// or 8.
fn cell_size(args: &impl ArgSource) -> Result<CellSize, CommandError> {
    if args.count() < 6 {
        return Ok(CellSize::DEFAULT);
    }
    if !args.arg(4).eq_ignore_ascii_case(b"CELL_SIZE") {
        return Err(replies::UNKNOWN_ARGUMENT.into());
    }
    CellSize::parse(args.arg(5)).ok_or(CommandError::Static(replies::BAD_CELL_SIZE))
}

/// CMS.INCRBY's count: `key item increment [item increment ...]`.
pub fn incrby_arity(args: &impl ArgSource) -> Result<(), CommandError> {
    let n = args.count();
    if n < 4 || n % 2 != 0 {
        return Err(CommandError::Arity);
    }
    Ok(())
}

/// The increment at argument `i`: a signed 64-bit integer other than
/// −2^63 (8.12; 2.8.2 refuses every negative one).
pub fn increment(args: &impl ArgSource, i: usize) -> Result<i64, CommandError> {
    match args.int(i) {
        None => Err(replies::CANNOT_PARSE_NUMBER.into()),
        Some(i64::MIN) => Err(replies::INVALID_INCREMENT.into()),
        Some(v) => Ok(v),
    }
}

/// Every increment of a CMS.INCRBY into `out` (one per pair), all
/// parsed before any is applied; the first bad one is the error.
pub fn parse_increments(args: &impl ArgSource, out: &mut [i64]) -> Result<(), CommandError> {
    for (p, slot) in out.iter_mut().enumerate() {
        *slot = increment(args, 3 + 2 * p)?;
    }
    Ok(())
}

/// A parsed CMS.MERGE: `dest numkeys src [src ...] [WEIGHTS w ...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Merge {
    pub numkeys: usize,
    /// Whether weights follow the sources (`WEIGHTS` at argument
    /// `3 + numkeys`, the weights after it).
    pub weighted: bool,
}

/// The sources start here.
pub const MERGE_SOURCES_AT: usize = 3;

/// CMS.MERGE's count: at least `dest numkeys src`.
pub fn merge_arity(args: &impl ArgSource) -> Result<(), CommandError> {
    if args.count() < 4 {
        return Err(CommandError::Arity);
    }
    Ok(())
}

/// numkeys and the shape of the rest (spec §3.6 rows 3 to 6): `WEIGHTS`
/// is the first argument after numkeys equal to the word in any case, a
/// source key of that name included, as 2.8.2 scans.
pub fn parse_merge(args: &impl ArgSource) -> Result<Merge, CommandError> {
    let numkeys = args
        .int(2)
        .ok_or(CommandError::Static(replies::INVALID_NUMKEYS))?;
    if numkeys <= 0 {
        return Err(replies::NUMKEYS_NOT_POSITIVE.into());
    }
    let rest = args.count() - MERGE_SOURCES_AT;
    let weights_at = (0..rest).find(|&p| {
        args.arg(MERGE_SOURCES_AT + p)
            .eq_ignore_ascii_case(b"WEIGHTS")
    });
    // numkeys is positive and compared with counts of arguments: it fits.
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    match weights_at {
        None if rest != numkeys => Err(replies::WRONG_NUMBER_OF_KEYS.into()),
        None => Ok(Merge {
            numkeys,
            weighted: false,
        }),
        Some(p) if p != numkeys || rest != 2 * numkeys + 1 => {
            Err(replies::WRONG_NUMBER_OF_KEYS_WEIGHTS.into())
        }
        Some(_) => Ok(Merge {
            numkeys,
            weighted: true,
        }),
    }
}

impl Merge {
    /// The argument index of source `k`.
    pub fn source_at(&self, k: usize) -> usize {
        MERGE_SOURCES_AT + k
    }

    /// Source `k`'s weight (1 without `WEIGHTS`; any sign allowed).
    pub fn weight(&self, args: &impl ArgSource, k: usize) -> Result<i64, CommandError> {
        if !self.weighted {
            return Ok(1);
        }
        args.int(MERGE_SOURCES_AT + self.numkeys + 1 + k)
            .ok_or(CommandError::Static(replies::INVALID_WEIGHT))
    }
}
