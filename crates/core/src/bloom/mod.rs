//! The scalable Bloom filter (RedisBloom's `MBbloom--` type, the BF.*
//! commands): everything that knows what a Bloom filter is.
//!
//! - [`sizing`]: one link's size from a capacity and an error rate, and
//!   [`sizing::next_link`], the scale-out rule (the next link's capacity,
//!   error and size), used by the chain when it grows and by [`plan`].
//! - [`link`]: one Bloom filter of a chain, its bits and counters.
//! - [`chain`]: the chain of links, with the one add engine and the one
//!   lookup engine ([`chain::Chain::add_batch`], [`chain::Chain::contains_batch`]).
//! - [`plan`], [`stats`]: sizing before allocation; state after.
//! - [`scandump`], [`load_progress`], [`rdb`], [`dump`]: the SCANDUMP /
//!   LOADCHUNK stream, a load in progress, the RDB value and the DUMP payload.
//! - `fuzzing`: the bodies of the fuzz targets, replayed by the tests.
//!
//! What another data type would also use (hashing, bit arrays, modular
//! reduction, the serialized-value framing) lives beside this folder, at
//! the crate's top.

pub mod chain;
pub mod dump;
#[doc(hidden)]
pub mod fuzzing;
pub mod link;
pub mod load_progress;
pub mod plan;
pub mod rdb;
pub mod scandump;
pub mod sizing;
pub mod stats;
