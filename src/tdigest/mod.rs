//! The t-digest (`TDIGEST.*`, type `TDIS-TYPE`): what the data type does,
//! without Redis in it (`ffi::datatype` registers the type). The structure
//! itself is `ferrobloom_core::tdigest`.
//!
//! - `value`: the value stored under a key;
//! - `datatype`: RDB, AOF rewrite, COPY, DEBUG DIGEST, MEMORY USAGE.

pub mod datatype;
mod value;

#[cfg(test)]
mod tests;

pub use value::TDigestValue;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "t-digest";
