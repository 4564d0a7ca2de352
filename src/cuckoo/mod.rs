//! The Cuckoo filter (`CF.*`, type `MBbloomCF`), RedisBloom 2.8.2's: the
//! commands, their grammar, and what the data type does, all without Redis
//! in them (`ffi::cuckoo` registers them with the server). The structure
//! itself is `ferrobloom_core::cuckoo`.

pub mod chunks;
pub mod create;
pub mod datatype;
pub mod grammar;
pub mod observe;
pub mod read;
pub mod replies;
mod value;
pub mod write;

#[cfg(test)]
mod tests;

pub use value::Cuckoo;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "Cuckoo filter";
