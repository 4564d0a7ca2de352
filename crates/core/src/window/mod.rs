//! Windowed Bloom filters: filters that forget items older than a
//! retention window, in memory fixed when they are created.
//!
//! - [`span`]: the window's length, in time or in items (`WINDOW 30d`).
//! - [`sizing`]: generations, their error rate and the memory formula.
//! - [`filter`]: the ring of generations, rotation and the guarantees.
//! - [`rdb`], [`dump`]: the RDB value (FerroBloom's own type `FBwindows`)
//!   and its DUMP payload, validated field by field.

pub mod cells;
pub mod dump;
pub mod filter;
#[doc(hidden)]
pub mod fuzzing;
pub mod rdb;
pub mod sizing;
pub mod span;

pub use filter::{
    GenerationView, GrowError, Rotation, SlotState, WindowAdd, WindowCreateError, WindowFilter,
};
pub use sizing::{
    Burst, WindowParams, WindowSizingError, WindowSpec, DEFAULT_GENERATIONS, MAX_GENERATIONS,
    MAX_GROWN_LINKS,
};
pub use span::{Span, SpanError};
