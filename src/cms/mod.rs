//! The Count-Min sketch (`CMS.*`, type `CMSk-TYPE`): what the data type
//! does and its commands, without Redis in them (`ffi::datatype` registers
//! the type, `ffi::cms` the command table and CMS.MERGE's handler). The
//! structure itself is `ferrobloom_core::cms`.
//!
//! - `grammar`: the arguments, in RedisBloom's check order;
//! - `create`: a new sketch, through the memory guard;
//! - `write`: CMS.INITBYDIM, CMS.INITBYPROB, CMS.INCRBY;
//! - `merge`: CMS.MERGE, a command on many keys (its sources are opened
//!   through [`merge::Sources`]);
//! - `read`: CMS.QUERY, CMS.INFO;
//! - `replies`: RedisBloom's error strings.

mod create;
pub mod datatype;
pub mod grammar;
pub mod merge;
pub mod read;
pub mod replies;
mod value;
pub mod write;

#[cfg(test)]
mod tests;

pub use value::Sketch;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "Count-Min sketch";
