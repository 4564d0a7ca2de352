//! The Cuckoo filter (`CF.*`, type `MBbloomCF`), RedisBloom 2.8.2's: the
//! commands, their grammar, and what the data type does, all without Redis
//! in them (`ffi::datatype` registers the type, `ffi::cuckoo` the command
//! table). The structure itself is `ferrobloom_core::cuckoo`.

pub mod create;
pub mod datatype;
pub mod dump;
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
