//! The dimensions of a sketch: CMS.INITBYPROB's width and depth from an
//! error rate and a probability, and the limits CMS.INITBYDIM and
//! CMS.INITBYPROB share, with RedisBloom 2.8.2's numbers and error texts.

use super::cells::CellSize;

/// Why a sketch cannot be created with these arguments (the argument
/// parsing that comes first, `CMS: invalid width` and the like, is the
/// command's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitError {
    /// INITBYPROB's error is not in (0, 1).
    Overestimation,
    /// INITBYPROB's probability is not in (0, 1).
    Probability,
    /// A dimension below 1, or a width above (2^63 − 1) / depth.
    InvalidArguments,
    /// More cells than the address space holds (2.8.2: width·depth above
    /// SIZE_MAX / 4; here also width·depth·cell size above it).
    InsufficientMemory,
}

impl InitError {
    /// RedisBloom's reply (no `ERR` prefix).
    pub fn message(self) -> &'static str {
        match self {
            InitError::Overestimation => "CMS: invalid overestimation value",
            InitError::Probability => "CMS: invalid prob value",
            InitError::InvalidArguments => "CMS: invalid init arguments",
            InitError::InsufficientMemory => "CMS: Insufficient memory to create the key",
        }
    }
}

/// Width and depth of a sketch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    pub width: u64,
    pub depth: u64,
}

/// 2.8.2's bound on width·depth: SIZE_MAX / 4 on a 64-bit host.
pub const MAX_CELLS: u64 = u64::MAX / 4;

/// 2^63 as a double: the first width C cannot convert to a signed 64-bit
/// integer.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// CMS.INITBYPROB's dimensions, as RedisBloom 2.8.2 computes them:
/// width `ceil(2 / error)` in double precision; depth
/// `ceil(log10f(p) / log10f(0.5))` in single precision (the probability
/// rounded to f32 first; `f32::log10` is the platform's `log10f`, as in
/// C). A probability that rounds to 1.0 gives depth 0, one that rounds to
/// 0.0 an infinite depth: both `invalid init arguments`, as is a width of
/// 2^63 or more (C's conversion is undefined there; 2.8.2 was seen to
/// refuse it). The limits of [`check_dims`] follow.
pub fn dims_from_prob(error: f64, probability: f64) -> Result<Dims, InitError> {
    // NaN fails both comparisons.
    if !(error > 0.0 && error < 1.0) {
        return Err(InitError::Overestimation);
    }
    if !(probability > 0.0 && probability < 1.0) {
        return Err(InitError::Probability);
    }
    let width = (2.0 / error).ceil();
    if width.is_nan() || width >= TWO_POW_63 {
        return Err(InitError::InvalidArguments);
    }
    let depth = ((probability as f32).log10() / 0.5f32.log10()).ceil();
    if !depth.is_finite() || depth < 1.0 {
        return Err(InitError::InvalidArguments);
    }
    let dims = Dims {
        width: width as u64,
        depth: depth as u64,
    };
    check_dims(dims.width, dims.depth, CellSize::DEFAULT)?;
    Ok(dims)
}

/// The limits every creation checks, in 2.8.2's order (spec §3.3 rows 5
/// and 6): a dimension below 1, or width above (2^63 − 1) / depth, is
/// `invalid init arguments`; width·depth above [`MAX_CELLS`], or a cell
/// array of more bytes than a `usize` counts, is `Insufficient memory`.
/// Returns the bytes of the cell array.
pub fn check_dims(width: u64, depth: u64, cell_size: CellSize) -> Result<u64, InitError> {
    if width < 1 || depth < 1 || width > i64::MAX as u64 / depth {
        return Err(InitError::InvalidArguments);
    }
    let cells = width * depth;
    if cells > MAX_CELLS {
        return Err(InitError::InsufficientMemory);
    }
    let bytes = cells
        .checked_mul(cell_size.bytes())
        .filter(|&b| b <= isize::MAX as u64 && usize::try_from(b).is_ok())
        .ok_or(InitError::InsufficientMemory)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log10f_of_a_half_is_glibcs() {
        assert_eq!(0.5f32.log10().to_bits(), 0xbe9a209b);
    }

    #[test]
    fn limits_in_order() {
        let e = |w, d| check_dims(w, d, CellSize::Four).err();
        assert_eq!(e(0, 1), Some(InitError::InvalidArguments));
        assert_eq!(e(1, 0), Some(InitError::InvalidArguments));
        assert_eq!(e(1 << 33, 1 << 33), Some(InitError::InvalidArguments));
        assert_eq!(e(1 << 62, 1), Some(InitError::InsufficientMemory));
        assert_eq!(check_dims((1 << 62) - 1, 1, CellSize::Four).ok(), None);
        assert_eq!(check_dims(2000, 7, CellSize::Four), Ok(56000));
        assert_eq!(check_dims(2000, 7, CellSize::Eight), Ok(112000));
        // width·depth fits 2.8.2's bound, its bytes at 8 a cell do not.
        assert_eq!(
            check_dims(1 << 61, 1, CellSize::Eight),
            Err(InitError::InsufficientMemory)
        );
    }

    #[test]
    fn prob_ranges() {
        assert_eq!(dims_from_prob(0.0, 0.1), Err(InitError::Overestimation));
        assert_eq!(
            dims_from_prob(f64::NAN, 0.1),
            Err(InitError::Overestimation)
        );
        assert_eq!(
            dims_from_prob(f64::INFINITY, 0.1),
            Err(InitError::Overestimation)
        );
        assert_eq!(dims_from_prob(0.1, 1.0), Err(InitError::Probability));
        assert_eq!(dims_from_prob(0.1, f64::NAN), Err(InitError::Probability));
        assert_eq!(
            dims_from_prob(5e-324, 0.5),
            Err(InitError::InvalidArguments)
        );
        assert_eq!(
            dims_from_prob(0.001, 0.01),
            Ok(Dims {
                width: 2000,
                depth: 7
            })
        );
    }
}
