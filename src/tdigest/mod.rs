//! The t-digest (`TDIGEST.*`, type `TDIS-TYPE`): what the data type does,
//! without Redis in it (`ffi::datatype` registers the type). The structure
//! itself is `ferrobloom_core::tdigest`.
//!
//! - `value`: the value stored under a key, and how reads compress as
//!   2.8.2's on a master while replicas follow (the view, P, the marker);
//! - `datatype`: RDB, AOF rewrite, COPY, DEBUG DIGEST, MEMORY USAGE;
//! - `write`: TDIGEST.CREATE, RESET, ADD;
//! - `merge`: TDIGEST.MERGE, a command on many keys;
//! - `read`: the reads, on the compressed digest, with their effect;
//! - `replies`: RedisBloom's error strings;
//! - `counted`: what INFO bf counts for a digest, and each write's
//!   counters and keyspace events;
//! - `observe`: TDIGEST.PLAN and TDIGEST.STATS.

mod counted;
pub mod datatype;
pub mod merge;
pub mod observe;
pub mod read;
pub mod replies;
mod value;
pub mod write;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_observe;

pub use value::{save_begins, TDigestValue};

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "t-digest";
