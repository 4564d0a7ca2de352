//! Error replies of windowed filters (FerroBloom's own: RedisBloom has no
//! windows).

use std::ffi::CStr;

pub const BAD_SPAN: &CStr = c"ERR WINDOW needs a span: a number of items, or of seconds, minutes, hours or days (for example 1000000, 3600s, 90m, 12h, 30d)";
pub const BAD_GENERATIONS: &CStr = c"ERR GENERATIONS must be an integer from 1 to 64";
pub const BAD_ORIGIN: &CStr = c"ERR ORIGIN must be a time in milliseconds (an integer >= 0)";
pub const BAD_AT: &CStr = c"ERR AT must be an epoch (an integer from 0 to 2305843009213693951)";
pub const NO_EXPANSION: &CStr =
    c"ERR EXPANSION does not apply to a windowed filter: a generation that receives more than its share grows by 2 (NONSCALING keeps the memory planned)";
pub const UNKNOWN_OPTION: &CStr = c"ERR unknown option for a windowed filter (expected WINDOW, GENERATIONS, POLICY, ORIGIN or NONSCALING; BF.INSERT also takes CAPACITY, ERROR, NOCREATE and ITEMS)";
pub const UNKNOWN_PLAN_OPTION: &CStr = c"ERR unknown option for BF.PLAN of a windowed filter (expected WINDOW, GENERATIONS, POLICY or NONSCALING)";
pub const GENERATIONS_OVER_ITEMS: &CStr = c"ERR GENERATIONS must not exceed the number of items in an item WINDOW (each generation holds at least one item)";
pub const SPAN_TOO_SHORT: &CStr = c"ERR WINDOW is shorter than one millisecond per generation";
pub const TOO_LARGE: &CStr = c"ERR the windowed filter would be too large to size";
pub const NOT_WINDOWED: &CStr =
    c"ERR the key holds a Bloom filter without a window: WINDOW applies only when creating a filter";
pub const UNSUPPORTED: &CStr =
    c"ERR windowed filters do not support this command (DUMP and RESTORE move them)";
pub const ORIGIN_NEEDS_TIME: &CStr =
    c"ERR ORIGIN applies only to a time WINDOW (an item window has no clock)";
