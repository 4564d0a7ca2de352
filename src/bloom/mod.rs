//! The Bloom filter (`BF.*`, type `MBbloom--`), RedisBloom 2.8.2's: the
//! commands, their grammar, creation and propagation decisions, and what
//! the data type does, all without Redis in them (`ffi::datatype` registers
//! the type, `ffi::bloom` the command table).

pub mod create;
pub mod datatype;
pub mod dump;
pub mod filter;
pub mod grammar;
pub mod observe;
pub mod propagate;
pub mod read;
pub mod replies;
pub mod write;

#[cfg(test)]
mod tests;

pub use filter::Filter;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "Bloom filter";
