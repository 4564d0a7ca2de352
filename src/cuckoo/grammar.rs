//! Argument grammars of CF.RESERVE (and CF.PLAN) and CF.INSERT / CF.INSERTNX, with
//! RedisBloom 2.8.2's quirks and check order, so the first error a client
//! sees is the same: CF.RESERVE looks its options up in the whole argv
//! (command name and key included, first occurrence wins, unknown tokens
//! ignored); CF.INSERT recognises its tokens by their first letter.

use std::ffi::CStr;

use ferrobloom_core::cuckoo::sizing::{
    DEFAULT_CAPACITY, MAX_BUCKET_SIZE, MAX_EXPANSION, MAX_ITERATIONS,
};
use ferrobloom_core::cuckoo::CuckooParams;

use super::replies;
use crate::command::{ArgSource, CommandError};

/// One CF.RESERVE option: its word, range and messages.
struct ReserveOption {
    word: &'static [u8],
    min: i64,
    max: i64,
    unparsable: &'static CStr,
    out_of_range: &'static CStr,
}

/// In the order RedisBloom checks them.
const MAX_ITERATIONS_OPTION: ReserveOption = ReserveOption {
    word: b"MAXITERATIONS",
    min: 1,
    max: MAX_ITERATIONS as i64,
    unparsable: replies::PARSE_MAX_ITERATIONS,
    out_of_range: replies::MAX_ITERATIONS_RANGE,
};
const BUCKET_SIZE_OPTION: ReserveOption = ReserveOption {
    word: b"BUCKETSIZE",
    min: 1,
    max: MAX_BUCKET_SIZE as i64,
    unparsable: replies::PARSE_BUCKET_SIZE,
    out_of_range: replies::BUCKET_SIZE_RANGE,
};
const EXPANSION_OPTION: ReserveOption = ReserveOption {
    word: b"EXPANSION",
    min: 0,
    max: MAX_EXPANSION as i64,
    unparsable: replies::PARSE_EXPANSION,
    out_of_range: replies::EXPANSION_RANGE,
};

/// The option's value, if its word appears anywhere in the argv (the
/// first occurrence; the value is the argument after it, whatever it is).
fn reserve_option(args: &impl ArgSource, o: &ReserveOption) -> Result<Option<u64>, CommandError> {
    let Some(at) = (0..args.count()).find(|&i| args.arg(i).eq_ignore_ascii_case(o.word)) else {
        return Ok(None);
    };
    // 2.8.2 reads past the argument array here (and crashes).
    if at + 1 >= args.count() {
        return Err(CommandError::Arity);
    }
    let value = args.int(at + 1).ok_or(CommandError::Static(o.unparsable))?;
    if !(o.min..=o.max).contains(&value) {
        return Err(CommandError::Static(o.out_of_range));
    }
    Ok(Some(value as u64))
}

/// `CF.RESERVE key capacity [BUCKETSIZE bs] [MAXITERATIONS mi]
/// [EXPANSION e]`.
pub fn parse_reserve(args: &impl ArgSource) -> Result<CuckooParams, CommandError> {
    parse_capacity_and_options(args, 2)
}

/// `CF.PLAN capacity [BUCKETSIZE bs] [MAXITERATIONS mi] [EXPANSION e]`:
/// CF.RESERVE's grammar, checks and errors without the key.
pub fn parse_plan(args: &impl ArgSource) -> Result<CuckooParams, CommandError> {
    parse_capacity_and_options(args, 1)
}

/// The capacity at `capacity_at`, then options in pairs after it (looked
/// up in the whole argv, RedisBloom's way).
fn parse_capacity_and_options(
    args: &impl ArgSource,
    capacity_at: usize,
) -> Result<CuckooParams, CommandError> {
    let n = args.count();
    if n <= capacity_at || (n - capacity_at) % 2 == 0 {
        return Err(CommandError::Arity);
    }
    let capacity = args
        .int(capacity_at)
        .ok_or(CommandError::Static(replies::BAD_CAPACITY))?;
    let mut params = CuckooParams::default();
    if let Some(v) = reserve_option(args, &MAX_ITERATIONS_OPTION)? {
        params.max_iterations = v as u16;
    }
    if let Some(v) = reserve_option(args, &BUCKET_SIZE_OPTION)? {
        params.bucket_size = v as u8;
    }
    if let Some(v) = reserve_option(args, &EXPANSION_OPTION)? {
        params.expansion = v as u16;
    }
    if capacity < 2 * i64::from(params.bucket_size) {
        return Err(CommandError::Static(replies::CAPACITY_TOO_SMALL));
    }
    params.capacity = capacity as u64;
    Ok(params)
}

/// A parsed CF.INSERT / CF.INSERTNX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insert {
    /// The capacity a missing key is created with.
    pub capacity: u64,
    pub nocreate: bool,
    /// Index of the first item.
    pub items_from: usize,
}

/// `CF.INSERT key [CAPACITY cap] [NOCREATE] ITEMS item [item ...]`:
/// tokens are told apart by their first letter (`c`, `n`, `i`, any case).
pub fn parse_insert(args: &impl ArgSource) -> Result<Insert, CommandError> {
    let n = args.count();
    if n < 4 {
        return Err(CommandError::Arity);
    }
    let mut insert = Insert {
        capacity: DEFAULT_CAPACITY,
        nocreate: false,
        items_from: 0,
    };
    let mut i = 2;
    while i < n {
        match args.arg(i).first().map(u8::to_ascii_lowercase) {
            Some(b'c') => {
                if i + 1 >= n {
                    return Err(CommandError::Arity);
                }
                let capacity = args
                    .int(i + 1)
                    .ok_or(CommandError::Static(replies::BAD_CAPACITY))?;
                // Twice the default bucket size, whatever the key holds.
                if capacity < 4 {
                    return Err(CommandError::Static(replies::CAPACITY_TOO_SMALL));
                }
                insert.capacity = capacity as u64;
                i += 2;
            }
            Some(b'n') => {
                insert.nocreate = true;
                i += 1;
            }
            Some(b'i') => {
                insert.items_from = i + 1;
                break;
            }
            _ => return Err(CommandError::Static(replies::UNKNOWN_ARGUMENT)),
        }
    }
    if insert.items_from == 0 || insert.items_from >= n {
        return Err(CommandError::Arity);
    }
    Ok(insert)
}

/// CF.SCANDUMP's and CF.LOADCHUNK's iterator: an integer (negative ones
/// are told apart by each command).
pub fn iterator(args: &impl ArgSource) -> Result<i64, CommandError> {
    args.int(2)
        .ok_or(CommandError::Static(replies::INVALID_POSITION))
}
