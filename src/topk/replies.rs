//! Top-K's error replies, byte for byte RedisBloom 2.8.2's: clients match
//! on them (most have no `ERR` code).

use std::ffi::CStr;

use ferrobloom_core::topk::ParamError;

pub use crate::command::WRONGTYPE;

/// A missing key, for every command that needs a sketch.
pub const KEY_DOES_NOT_EXIST: &CStr = c"TopK: key does not exist";
/// TOPK.RESERVE on a key holding anything.
pub const KEY_EXISTS: &CStr = c"TopK: key already exists";
pub const INVALID_K: &CStr = c"TopK: invalid k";
pub const INVALID_WIDTH: &CStr = c"TopK: invalid width";
pub const INVALID_DEPTH: &CStr = c"TopK: invalid depth";
pub const INVALID_DECAY: &CStr = c"TopK: invalid decay value. must be '<= 1' & '> 0'";
pub const INSUFFICIENT_MEMORY: &CStr = c"ERR Insufficient memory to create topk data structure";
/// TOPK.INCRBY's increment outside 0..=100000, with 2.8.2's run of 28
/// spaces (a C line continuation inside its literal).
pub const BAD_INCREMENT: &CStr = c"TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";
/// TOPK.LIST's third argument, when it is no prefix of `WITHCOUNT`.
pub const WITHCOUNT_EXPECTED: &CStr = c"WITHCOUNT keyword expected";
/// An item whose length does not fit the heap's 32-bit field (beyond
/// what a client can send under Redis' default limits).
pub const ITEM_TOO_LONG: &CStr = c"TopK: item longer than 4294967295 bytes";

/// The reply of a refused TOPK.RESERVE argument.
pub fn param_error(e: ParamError) -> &'static CStr {
    match e {
        ParamError::K => INVALID_K,
        ParamError::Width => INVALID_WIDTH,
        ParamError::Depth => INVALID_DEPTH,
        ParamError::Decay => INVALID_DECAY,
        ParamError::InsufficientMemory => INSUFFICIENT_MEMORY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrobloom_core::topk::sizing::INCREMENT_ERROR;
    use ferrobloom_core::topk::AddError;

    /// The engine's texts and these replies are the same words.
    #[test]
    fn engine_messages_agree() {
        let text = |c: &CStr| c.to_str().unwrap().to_owned();
        for e in [
            ParamError::K,
            ParamError::Width,
            ParamError::Depth,
            ParamError::Decay,
            ParamError::InsufficientMemory,
        ] {
            assert_eq!(text(param_error(e)), e.message());
        }
        assert_eq!(text(BAD_INCREMENT), INCREMENT_ERROR);
        assert_eq!(text(ITEM_TOO_LONG), AddError::ItemTooLong.message());
    }
}
