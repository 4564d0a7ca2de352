//! Top-K (`TOPK.*`, type `TopK-TYPE`): what the data type does and its
//! commands, without Redis in them (`ffi::datatype` registers the type).
//! The structure itself, HeavyKeeper with a deterministic decay, is
//! `ferrobloom_core::topk`.
//!
//! - `value`: the value stored under a key;
//! - `datatype`: what the server's save, load, rewrite, copy, digest and
//!   defragmentation callbacks do with it.

pub mod datatype;
mod value;

pub use value::TopKey;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "Top-K sketch";
