//! The t-digest (RedisBloom's `TDIS-TYPE`, the TDIGEST.* commands): the
//! merging t-digest exactly as RedisBloom 2.8.2 runs it (its library
//! t-digest-c at 9dcd73d), so every reply double and every DUMP byte is
//! 2.8.2's, with its defects fixed where the fix is invisible to a client
//! or documented as a choice.
//!
//! - [`digest`]: the state, capacities (`6c + 10`), creation through the
//!   allocation guard, adding a point, MIN/MAX, INFO's numbers.
//! - [`sort`]: compress's sort — 2.8.2's quicksort order (ties included)
//!   without its quadratic time on equal means.
//! - [`compress`]: the merge pass every read runs first in 2.8.2; kept
//!   apart from evaluation so a read can compress the stored digest or a
//!   scratch copy ([`TDigest::with_compressed`]).
//! - [`quantile`], [`cdf`], [`trimmed_mean`]: the evaluations of a
//!   compressed digest ([`Compressed`]): QUANTILE, BYRANK, BYREVRANK, CDF,
//!   RANK, REVRANK, TRIMMED_MEAN.
//! - [`merge`]: TDIGEST.MERGE's result compression and build.
//! - [`rdb`], [`dump`]: the RDB value (encoding 0) and its DUMP payload,
//!   validated field by field.
//! - [`format`](mod@format): doubles as Redis prints them (7.0's `%.17g`,
//!   7.2's shortest round trip), `-nan` included.
//! - [`plan`], [`stats`]: memory and accuracy for a compression; what a
//!   digest holds.
//!
//! Defects of 2.8.2 fixed here (spec §9.2): a single observation answers
//! its value and survives save/reload ([`SingleObservation`]); the sort is
//! O(n log n) on equal means with the same order; a compression whose
//! capacity overflows 32 bits is refused; crafted payloads are refused
//! with an error.

pub mod cdf;
pub mod compress;
pub mod digest;
pub mod dump;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod merge;
pub mod plan;
pub mod quantile;
pub mod rdb;
pub mod sort;
pub mod stats;
pub mod trimmed_mean;

pub use compress::{CompressError, Compressed, ReadError};
pub use digest::{AddError, CreateError, Info, Node, SingleObservation, TDigest};
pub use merge::MergeError;

/// A double to a signed 64-bit integer as x86-64's `cvttsd2si` converts it
/// (what C's cast compiles to in 2.8.2): truncation toward zero, and
/// 0x8000000000000000 for NaN and anything out of range (Rust's `as`
/// saturates instead).
pub fn c_double_to_i64(x: f64) -> i64 {
    // 2^63 is exactly representable; anything at or above it, below -2^63,
    // or NaN is out of range.
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}
