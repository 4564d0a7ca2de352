//! Windowed Bloom filters (FerroBloom's own type `FBwindows`): BF.* on
//! filters that forget items older than a retention window, in fixed
//! memory (the structure is `ferrobloom_core::window`). No Redis in here:
//! `ffi::datatype` registers the type (its `DataType` impl is in
//! `datatype.rs`), and `ffi::bloom`'s table routes the BF.* commands to it
//! when a key holds a windowed filter or the arguments ask for one.

pub mod create;
pub mod datatype;
pub mod dump;
pub mod grammar;
pub mod observe;
pub mod propagate;
pub mod read;
pub mod replies;
mod value;
pub mod write;

#[cfg(test)]
mod tests;

pub use value::Window;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "windowed filter";
