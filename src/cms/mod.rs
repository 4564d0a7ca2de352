//! The Count-Min sketch (`CMS.*`, type `CMSk-TYPE`): what the data type
//! does and its commands, without Redis in them (`ffi::datatype` registers
//! the type, `ffi::cms` the command table). The
//! structure itself is `ferrobloom_core::cms`.

mod create;
pub mod datatype;
pub mod grammar;
pub mod read;
pub mod replies;
mod value;
pub mod write;

#[cfg(test)]
mod tests;

pub use value::Sketch;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "Count-Min sketch";
