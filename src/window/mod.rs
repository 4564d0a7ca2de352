//! Windowed Bloom filters (FerroBloom's own type `FBwindows`): BF.* on
//! filters that forget items older than a retention window, in fixed
//! memory (the structure is `ferrobloom_core::window`). No Redis in here;
//! `ffi::window` registers the type and routes BF.* commands to it.

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
