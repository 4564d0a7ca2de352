//! The Count-Min sketch (RedisBloom's `CMSk-TYPE`, the CMS.* commands):
//! RedisBloom 2.8.2's cells, placement and RDB bytes, with RedisBloom
//! 8.12's semantics (cell sizes of 1, 2, 4 or 8 bytes, signed increments,
//! overflow and underflow refused per item with nothing changed).
//!
//! - [`cells`]: cell sizes, their maximums, the `CELL_SIZE` argument.
//! - [`sizing`]: CMS.INITBYPROB's dimensions and the creation limits, with
//!   2.8.2's error texts.
//! - [`sketch`]: the sketch; creation through the allocation guard,
//!   increments and queries.
//! - [`merge`]: CMS.MERGE's weighted sum, all or nothing.
//! - `rows`: an item's column in every row, its hashes computed together.
//! - [`plan`], [`stats`]: sizing before creation and the error bound; how
//!   full a sketch is.
//! - [`rdb`], [`dump`]: the RDB value (encoding 0 as 2.8.2 writes it for
//!   4-byte cells, the other sizes with their cell size after the cells;
//!   8.12's encoding 1 read too) and its DUMP payload,
//!   validated field by field.
//!
//! Where 2.8.2 crashes or accepts nonsense, these modules refuse cleanly;
//! each says what it chose.

pub mod cells;
pub mod dump;
#[doc(hidden)]
pub mod fuzzing;
pub mod merge;
pub mod plan;
pub mod rdb;
pub(crate) mod rows;
pub mod sizing;
pub mod sketch;
pub mod stats;

pub use cells::CellSize;
pub use merge::{MergeError, Operand};
pub use sizing::{Dims, InitError};
pub use sketch::{CountMinSketch, CreateError, IncrError, Incremented};
