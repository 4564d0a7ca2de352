//! The Cuckoo filter (RedisBloom's `MBbloomCF` type, the CF.* commands),
//! with RedisBloom 2.8.2's hashing, placement, kick-out and compaction
//! orders, so that filters move between the two modules byte for byte.
//!
//! - [`sizing`]: bucket counts from a capacity, the limits, sub-filter sizes
//!   and the reported size.
//! - [`hash`]: the item hash, fingerprint and two buckets.
//! - [`filter`]: the chain of sub-filters; insert, unique insert, lookup,
//!   count, delete and compaction.
//! - [`plan`]: what CF.RESERVE allocates and may grow into, before it
//!   exists, and the measured load of the first expansion.
//! - [`scandump`]: the CF.SCANDUMP / CF.LOADCHUNK header and data chunks;
//!   [`load_progress`]: a LOADCHUNK sequence not yet complete.
//! - [`rdb`], [`dump`]: the RDB value (encodings 0–4 read, 4 written) and
//!   its DUMP payload, validated field by field.
//!
//! Where 2.8.2 crashes or accepts nonsense, these modules refuse cleanly;
//! each says what it chose.

mod compact;
mod copy;
pub mod dump;
pub mod filter;
#[doc(hidden)]
pub mod fuzzing;
pub mod hash;
pub mod load_progress;
pub mod plan;
pub mod rdb;
pub mod scandump;
pub mod sizing;
pub mod stats;

pub use filter::{CompactMode, CreateError, CuckooFilter, GrowError, InsertOutcome, SubFilter};
pub use hash::CuckooHash;
pub use sizing::{CuckooParams, CuckooShape, SizingError};
