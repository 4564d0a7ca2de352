//! The Cuckoo filter's error replies, byte for byte RedisBloom 2.8.2's
//! (several have no `ERR` code and clients match on them).

use std::ffi::CStr;

pub use crate::command::{NOT_FOUND, WRONGTYPE};
pub const ITEM_EXISTS: &CStr = c"ERR item exists";

// CF.RESERVE
pub const BAD_CAPACITY: &CStr = c"Bad capacity";
pub const CAPACITY_TOO_SMALL: &CStr = c"Capacity must be at least (BucketSize * 2)";
pub const PARSE_MAX_ITERATIONS: &CStr = c"Couldn't parse MAXITERATIONS";
pub const MAX_ITERATIONS_RANGE: &CStr =
    c"MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.";
pub const PARSE_BUCKET_SIZE: &CStr = c"Couldn't parse BUCKETSIZE";
pub const BUCKET_SIZE_RANGE: &CStr =
    c"BUCKETSIZE: value must be an integer between 1 and 255, inclusive.";
pub const PARSE_EXPANSION: &CStr = c"Couldn't parse EXPANSION";
pub const EXPANSION_RANGE: &CStr =
    c"EXPANSION: value must be an integer between 0 and 32768, inclusive.";
pub const CANNOT_CREATE: &CStr = crate::guard::CREATE_WORDS;

// The adds
pub const MAX_EXPANSIONS: &CStr = c"Maximum expansions reached";
pub const FILTER_FULL: &CStr = c"Filter is full";
pub const GROWTH_FAILED: &CStr = crate::guard::GROWTH_WORDS;
pub const UNKNOWN_ARGUMENT: &CStr = c"Unknown argument received";

// CF.DEL, CF.COMPACT
pub const DEL_NOT_FOUND: &CStr = c"Not found";
pub const COMPACT_NOT_FOUND: &CStr = c"Cuckoo filter was not found";
/// The server's own error for a write sent to a read-only replica.
pub const READ_ONLY_REPLICA: &CStr = c"READONLY You can't write against a read only replica.";

// CF.SCANDUMP / CF.LOADCHUNK
pub const INVALID_POSITION: &CStr = c"Invalid position";
pub const INVALID_HEADER: &CStr = c"Invalid header";
pub const BAD_HEADER: &CStr = c"Couldn't create filter!";
pub const BAD_CHUNK: &CStr = c"Couldn't load chunk!";
