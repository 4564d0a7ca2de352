//! Top-K (RedisBloom's `TopK-TYPE`, the TOPK.* commands): HeavyKeeper as
//! RedisBloom 2.8.2 runs it (spec sketches-compat.md §4), with its buckets,
//! its min-heap and sift-down, its replies and its RDB bytes, and three
//! deliberate differences:
//!
//! - **Deterministic decay.** 2.8.2 draws its decay coin from the
//!   process-wide `rand()`, so a replica, an AOF replay or a reload lists
//!   other heavy hitters than the master. Here the coin is a hash of saved
//!   state and the add's inputs ([`decay`]); the decay table is recomputed
//!   on load (2.8.2 leaves it zero, so its loaded keys never decay again).
//!   With decay 1, or without collisions, no coin is drawn and every
//!   result equals 2.8.2's.
//! - **Binary-safe items.** The heap keeps whole items; replies and the
//!   RDB carry them whole (2.8.2 cuts them at the first NUL).
//! - **Reproducible DUMP.** The heap records' pointer bytes are written as
//!   zeros.
//!
//! - [`sizing`]: TOPK.RESERVE's argument rules and error texts, the byte
//!   counts checked before allocating.
//! - [`sketch`]: the sketch (buckets, add, count, query, list, info).
//! - [`heap`]: the heap records, 2.8.2's exact sift-down and lookup.
//! - [`decay`]: the decay table and the deterministic coin.
//! - [`plan`], [`stats`]: memory and the smallest count reliably tracked;
//!   how full a sketch is.
//! - [`rdb`], [`dump`]: the RDB value (encoding 0, 2.8.2's layout) and its
//!   DUMP payload, validated field by field.

pub mod decay;
pub mod dump;
#[doc(hidden)]
pub mod fuzzing;
pub mod heap;
pub mod plan;
pub mod rdb;
pub mod sizing;
pub mod sketch;
pub mod stats;

pub use heap::HeapSlot;
pub use sizing::{ParamError, Params};
pub use sketch::{AddError, CreateError, TopK};
