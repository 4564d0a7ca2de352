//! The Count-Min sketch's error replies, byte for byte RedisBloom 2.8.2's:
//! they have no `ERR` code, and clients match on them.

use std::ffi::CStr;

pub use crate::command::WRONGTYPE;

/// A missing key, for every command that needs a sketch.
pub const KEY_DOES_NOT_EXIST: &CStr = c"CMS: key does not exist";
