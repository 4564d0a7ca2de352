//! The Count-Min sketch (`CMS.*`, type `CMSk-TYPE`): what the data type
//! does, without Redis in it (`ffi::datatype` registers the type). The
//! structure itself is `ferrobloom_core::cms`.

pub mod datatype;
mod value;

pub use value::Sketch;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "Count-Min sketch";
