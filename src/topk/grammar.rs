//! Argument grammars of the TOPK.* commands, in RedisBloom 2.8.2's check
//! order (spec §4.2, §4.5, §4.6), so the first error a client sees is the
//! same. The key checks that come first (RESERVE's `key already exists`,
//! the others' `key does not exist`) are the commands'.

use ferrobloom_core::topk::sizing::{
    decay_from_arg, depth_from_arg, k_from_arg, width_from_arg, MAX_INCREMENT,
};
use ferrobloom_core::topk::Params;

use super::replies;
use crate::command::{ArgSource, CommandError};

/// TOPK.RESERVE takes `key topk` or `key topk width depth decay`.
pub fn reserve_arity(args: &impl ArgSource) -> Result<(), CommandError> {
    match args.count() {
        3 | 6 => Ok(()),
        _ => Err(CommandError::Arity),
    }
}

/// `topk [width depth decay]`: k, then width, depth and decay, each
/// checked in turn (the defaults without them).
pub fn parse_reserve(args: &impl ArgSource) -> Result<Params, CommandError> {
    let bad = |e| CommandError::Static(replies::param_error(e));
    let int = |i: usize, e| args.int(i).ok_or(bad(e));
    use ferrobloom_core::topk::ParamError as P;
    let k = k_from_arg(int(2, P::K)?).map_err(bad)?;
    if args.count() == 3 {
        return Ok(Params::with_defaults(k));
    }
    let width = width_from_arg(int(3, P::Width)?).map_err(bad)?;
    let depth = depth_from_arg(int(4, P::Depth)?).map_err(bad)?;
    let decay = args.double(5).ok_or(bad(P::Decay))?;
    let decay = decay_from_arg(decay).map_err(bad)?;
    Ok(Params {
        k,
        width,
        depth,
        decay,
    })
}

/// TOPK.ADD: `key item [item ...]`.
pub fn add_arity(args: &impl ArgSource) -> Result<(), CommandError> {
    if args.count() < 3 {
        return Err(CommandError::Arity);
    }
    Ok(())
}

/// TOPK.INCRBY: `key item incr [item incr ...]`.
pub fn incrby_arity(args: &impl ArgSource) -> Result<(), CommandError> {
    let n = args.count();
    if n < 4 || n % 2 != 0 {
        return Err(CommandError::Arity);
    }
    Ok(())
}

/// The increment at argument `i`: an integer in 0..=100000.
pub fn increment(args: &impl ArgSource, i: usize) -> Option<u32> {
    args.int(i)
        .and_then(|v| u32::try_from(v).ok())
        .filter(|&v| v <= MAX_INCREMENT)
}

/// TOPK.LIST: `key [WITHCOUNT]`, checked before the key. The third
/// argument is accepted when it is a case-insensitive prefix of
/// `WITHCOUNT`, the empty string included, as 2.8.2 compares. Whether
/// counts are asked for.
pub fn parse_list(args: &impl ArgSource) -> Result<bool, CommandError> {
    match args.count() {
        2 => Ok(false),
        3 => {
            let word = args.arg(2);
            let keyword = b"WITHCOUNT";
            if word.len() <= keyword.len() && word.eq_ignore_ascii_case(&keyword[..word.len()]) {
                Ok(true)
            } else {
                Err(replies::WITHCOUNT_EXPECTED.into())
            }
        }
        _ => Err(CommandError::Arity),
    }
}
