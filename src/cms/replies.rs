//! The Count-Min sketch's error replies, byte for byte RedisBloom's (2.8.2,
//! and 8.12 for what only 8.12 has): they have no `ERR` code, and clients
//! match on them.

use std::ffi::CStr;

use ferrobloom_core::cms::{IncrError, InitError, MergeError};

pub use crate::command::WRONGTYPE;

/// A missing key, for every command that needs a sketch.
pub const KEY_DOES_NOT_EXIST: &CStr = c"CMS: key does not exist";
/// CMS.INITBYDIM / CMS.INITBYPROB on a key holding anything.
pub const KEY_EXISTS: &CStr = c"CMS: key already exists";
pub const INVALID_WIDTH: &CStr = c"CMS: invalid width";
pub const INVALID_DEPTH: &CStr = c"CMS: invalid depth";
pub const INVALID_OVERESTIMATION: &CStr = c"CMS: invalid overestimation value";
pub const INVALID_PROB: &CStr = c"CMS: invalid prob value";
pub const INVALID_INIT: &CStr = c"CMS: invalid init arguments";
pub const INSUFFICIENT_MEMORY: &CStr = c"CMS: Insufficient memory to create the key";
/// 8.12: a fifth argument other than `CELL_SIZE`.
pub const UNKNOWN_ARGUMENT: &CStr = c"CMS: unknown argument";
/// 8.12: a `CELL_SIZE` value other than 1, 2, 4 or 8.
pub const BAD_CELL_SIZE: &CStr = c"CMS: CELL_SIZE must be 1, 2, 4 or 8";

pub const CANNOT_PARSE_NUMBER: &CStr = c"CMS: Cannot parse number";
/// 8.12: an increment of −2^63, which has no opposite.
pub const INVALID_INCREMENT: &CStr = c"CMS: invalid increment";
pub const INCRBY_OVERFLOW: &CStr = c"CMS: INCRBY overflow";
pub const INCRBY_UNDERFLOW: &CStr = c"CMS: INCRBY underflow";

pub const INVALID_NUMKEYS: &CStr = c"CMS: invalid numkeys";
pub const NUMKEYS_NOT_POSITIVE: &CStr = c"CMS: Number of keys must be positive";
pub const WRONG_NUMBER_OF_KEYS: &CStr = c"CMS: wrong number of keys";
pub const WRONG_NUMBER_OF_KEYS_WEIGHTS: &CStr = c"CMS: wrong number of keys/weights";
pub const INVALID_WEIGHT: &CStr = c"CMS: invalid weight value";
pub const DIMENSIONS_NOT_EQUAL: &CStr = c"CMS: width/depth is not equal";
/// 8.12: sources of another cell size than the destination's.
pub const CELL_SIZE_NOT_EQUAL: &CStr = c"CMS: cell size is not equal";
pub const MERGE_OVERFLOW: &CStr = c"CMS: MERGE overflow";

/// The reply of a creation limit (spec §3.3 rows 3p to 6).
pub fn init_error(e: InitError) -> &'static CStr {
    match e {
        InitError::Overestimation => INVALID_OVERESTIMATION,
        InitError::Probability => INVALID_PROB,
        InitError::InvalidArguments => INVALID_INIT,
        InitError::InsufficientMemory => INSUFFICIENT_MEMORY,
    }
}

/// The element of CMS.INCRBY's reply for a pair that changed nothing.
pub fn incr_error(e: IncrError) -> &'static CStr {
    match e {
        IncrError::Overflow => INCRBY_OVERFLOW,
        IncrError::Underflow => INCRBY_UNDERFLOW,
    }
}

/// The reply of a merge the engine refused.
pub fn merge_error(e: MergeError) -> &'static CStr {
    match e {
        MergeError::Dimensions => DIMENSIONS_NOT_EQUAL,
        MergeError::CellSize => CELL_SIZE_NOT_EQUAL,
        MergeError::Overflow => MERGE_OVERFLOW,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrobloom_core::cms::cells::CELL_SIZE_ERROR;

    /// The engine's texts and these replies are the same words.
    #[test]
    fn engine_messages_agree() {
        let text = |c: &CStr| c.to_str().unwrap().to_owned();
        for e in [
            InitError::Overestimation,
            InitError::Probability,
            InitError::InvalidArguments,
            InitError::InsufficientMemory,
        ] {
            assert_eq!(text(init_error(e)), e.message());
        }
        for e in [IncrError::Overflow, IncrError::Underflow] {
            assert_eq!(text(incr_error(e)), e.message());
        }
        for e in [
            MergeError::Dimensions,
            MergeError::CellSize,
            MergeError::Overflow,
        ] {
            assert_eq!(text(merge_error(e)), e.message());
        }
        assert_eq!(text(BAD_CELL_SIZE), CELL_SIZE_ERROR);
    }
}
