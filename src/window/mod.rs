//! Windowed Bloom filters (FerroBloom's own type `FBwindows`): BF.* on
//! filters that forget items older than a retention window, in fixed
//! memory (the structure is `ferrobloom_core::window`). No Redis in here;
//! `ffi::window` registers the type and routes BF.* commands to it.

pub mod commands;
pub mod datatype;
pub mod grammar;
pub(crate) mod observe;
pub mod replies;
mod value;

#[cfg(test)]
mod tests;

pub use value::Window;

/// What the memory guard's warnings call this type's values.
pub const WHAT: &str = "windowed filter";
