//! The t-digest's error replies, byte for byte RedisBloom 2.8.2's (spec
//! §5.8): unlike the other types' they carry the `ERR` code.

use std::ffi::CStr;

pub use crate::command::WRONGTYPE;

pub const KEY_DOES_NOT_EXIST: &CStr = c"ERR T-Digest: key does not exist";
pub const KEY_EXISTS: &CStr = c"ERR T-Digest: key already exists";
pub const WRONG_KEYWORD: &CStr = c"ERR T-Digest: wrong keyword";
pub const PARSING_COMPRESSION: &CStr = c"ERR T-Digest: error parsing compression parameter";
pub const COMPRESSION_NOT_POSITIVE: &CStr =
    c"ERR T-Digest: compression parameter needs to be a positive integer";
pub const PARSING_NUMKEYS: &CStr = c"ERR T-Digest: error parsing numkeys";
pub const NUMKEYS_NOT_POSITIVE: &CStr = c"ERR T-Digest: numkeys needs to be a positive integer";
pub const DEST_ALLOCATION_FAILED: &CStr = c"ERR T-Digest: allocation of destination digest failed";
pub const ALLOCATION_FAILED: &CStr = c"ERR T-Digest: allocation failed";
pub const PARSING_VAL: &CStr = c"ERR T-Digest: error parsing val parameter";
pub const VAL_NOT_FINITE: &CStr = c"ERR T-Digest: val parameter needs to be a finite number";
pub const OVERFLOW: &CStr = c"ERR T-Digest: overflow detected";
pub const PARSING_QUANTILE: &CStr = c"ERR T-Digest: error parsing quantile";
pub const QUANTILE_RANGE: &CStr = c"ERR T-Digest: quantile should be in [0,1]";
pub const PARSING_CDF: &CStr = c"ERR T-Digest: error parsing cdf";
pub const PARSING_VALUE: &CStr = c"ERR T-Digest: error parsing value";
pub const PARSING_RANK: &CStr = c"ERR T-Digest: error parsing rank";
pub const RANK_NEGATIVE: &CStr = c"ERR T-Digest: rank needs to be non negative";
pub const PARSING_LOW: &CStr = c"ERR T-Digest: error parsing low_cut_percentile";
pub const PARSING_HIGH: &CStr = c"ERR T-Digest: error parsing high_cut_percentile";
pub const CUTS_RANGE: &CStr =
    c"ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]";
pub const CUTS_ORDER: &CStr =
    c"ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile";

/// Redis' integer syntax (`string2ll`): an optional minus, digits, no
/// leading zeros, no spaces, within 64 bits.
pub fn parse_integer(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    if digits.is_empty()
        || !digits.iter().all(u8::is_ascii_digit)
        || (digits[0] == b'0' && bytes.len() > 1)
    {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}
