//! The Bloom filter's error replies, byte for byte RedisBloom 2.8.2's (some
//! have no `ERR` code, one has a trailing space: clients match on them).

use std::ffi::CStr;

pub use crate::command::{NOT_FOUND, WRONGTYPE};
pub const ITEM_EXISTS: &CStr = c"ERR item exists";
pub const COULD_NOT_CREATE: &CStr = c"ERR could not create filter";
pub const NONSCALING_FULL: &CStr = c"ERR non scaling filter is full";
pub const PROBLEM_INSERTING: &CStr = c"ERR problem inserting into filter";

// BF.RESERVE
pub const BAD_ERROR_RATE: &CStr = c"ERR bad error rate";
pub const ERROR_RATE_RANGE: &CStr = c"ERR (0 < error rate range < 1) ";
pub const BAD_CAPACITY: &CStr = c"ERR bad capacity";
pub const CAPACITY_RANGE: &CStr = c"ERR (capacity should be larger than 0)";
pub const NO_EXPANSION: &CStr = c"ERR no expansion";
pub const NONSCALING_EXPANSION: &CStr = c"Nonscaling filters cannot expand";
pub const BAD_EXPANSION: &CStr = c"ERR bad expansion";
pub const EXPANSION_RANGE: &CStr = c"ERR expansion should be greater or equal to 1";

// BF.INSERT
pub const INSERT_BAD_CAPACITY: &CStr = c"Bad capacity";
pub const INSERT_BAD_ERROR_RATE: &CStr = c"Bad error rate";
pub const INSERT_BAD_EXPANSION: &CStr = c"Bad expansion";
pub const INSERT_UNKNOWN_ARGUMENT: &CStr = c"Unknown argument received";
pub const INSERT_BAD_ARGUMENT: &CStr = c"Bad argument received";

// BF.INFO
pub const INVALID_INFO_VALUE: &CStr = c"Invalid information value";

// BF.SCANDUMP / BF.LOADCHUNK
pub const SCANDUMP_NOT_NUMERIC: &CStr = c"Second argument must be numeric";
pub const LOADCHUNK_NOT_NUMERIC: &CStr = c"ERR Second argument must be numeric";
pub const BAD_DATA: &CStr = c"ERR received bad data";
pub const NO_LINK: &CStr = c"ERR invalid offset - no link found";
pub const TOO_BIG: &CStr = c"ERR invalid chunk - Too big for current filter";

// FerroBloom's own
pub const BAD_POLICY: &CStr = c"ERR bad policy (expected exact or pow2)";
pub const PLAN_BAD_CAPACITY: &CStr = c"ERR bad capacity (expected an integer >= 1)";
pub const PLAN_BAD_ERROR_RATE: &CStr = c"ERR bad error rate (expected a number between 0 and 1)";
pub const PLAN_BAD_ITEMS: &CStr = c"ERR bad items (expected an integer >= 0)";
pub const PLAN_UNKNOWN_ARGUMENT: &CStr =
    c"ERR unknown argument (expected EXPANSION, NONSCALING, POLICY or ITEMS)";
pub const PLAN_TOO_MANY_LINKS: &CStr =
    c"ERR the filter would need more than 1024 links to hold that many items";
pub const PLAN_TOO_LARGE: &CStr = c"ERR the filter would be too large to size";
