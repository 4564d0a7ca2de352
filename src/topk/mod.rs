//! Top-K (`TOPK.*`, type `TopK-TYPE`): what the data type does and its
//! commands, without Redis in them (`ffi::datatype` registers the type,
//! `ffi::topk` the command table). The structure itself, HeavyKeeper with
//! a deterministic decay, is `ferrobloom_core::topk`.
//!
//! - `grammar`: the arguments, in RedisBloom's check order;
//! - `create`: a new sketch, through the memory guard;
//! - `write`: TOPK.RESERVE, TOPK.ADD, TOPK.INCRBY;
//! - `read`: TOPK.QUERY, TOPK.COUNT, TOPK.LIST, TOPK.INFO;
//! - `observe`: TOPK.STATS and TOPK.PLAN, FerroBloom's own;
//! - `replies`: RedisBloom's error strings;
//! - `value`: the stored sketch and what `INFO bf` counts for it;
//! - `datatype`: what the server's save, load, rewrite, copy, digest and
//!   defragmentation callbacks do with a sketch.

mod create;
pub mod datatype;
pub mod grammar;
pub mod observe;
pub mod read;
pub mod replies;
mod value;
pub mod write;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_observe;

pub use value::TopKey;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "Top-K sketch";
