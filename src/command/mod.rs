//! The command layer, with no Redis in it: what every data type's commands
//! are made of. A command parses its arguments into a typed request
//! ([`KeyedCommand::parse`]), runs it against the state of its key
//! ([`KeySlot`]: missing, a value of this type, or another type) in an
//! environment ([`Env`]: settings, where the call comes from, the memory
//! guard's inputs), and returns an [`Outcome`]: the reply tree, what to
//! propagate and the keyspace events. The FFI layer (`crate::ffi`) opens the
//! key, runs the command and renders the outcome; unit tests drive the same
//! commands with in-memory keys.

mod applied;
mod args;
mod batch;
mod creation;
mod env;
mod error;
mod key;
mod outcome;
mod read;
mod reply;
mod route;
#[cfg(test)]
pub mod testing;

pub use applied::{Applied, ItemOutcome, RefusalCheck};
#[cfg(test)]
pub use args::TestArgs;
pub use args::{arity, ArgSource};
pub use batch::{Batch, BatchReply};
pub use creation::{creation_error, install, NotCreated};
pub use env::Env;
pub use error::{CommandError, NOT_FOUND, WRONGTYPE};
pub use key::{KeySlot, KeyState, Sources};
pub use outcome::{Outcome, Preceded, Propagation, RewriteArg};
pub use read::{Absent, ReadCommand};
pub use reply::{format_double, Reply};
pub use route::{route, Route};

use std::ffi::CStr;

/// A command on one key (argument 1), in two steps: the argument checks,
/// which come first whatever the key holds (RedisBloom's order), then the
/// work on the opened key.
pub trait KeyedCommand {
    /// The registered (lowercase) name, which the arity error names.
    const NAME: &'static CStr;
    /// Whether the key is opened for writing: closing it then signals the
    /// key as modified (WATCH, client-side caching).
    const WRITES: bool;
    /// The value type this command works on.
    type Value;
    /// What the arguments say.
    type Request;

    fn parse(args: &impl ArgSource, env: &impl Env) -> Result<Self::Request, CommandError>;

    fn run<'k>(
        request: Self::Request,
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Self::Value>,
        env: &impl Env,
    ) -> Outcome<'k>;

    /// For a command that shares its name with another type's: whether
    /// these arguments ask for a new value of this type (BF.RESERVE ...
    /// WINDOW), whatever the key holds.
    fn claims_new_key(_args: &impl ArgSource) -> bool {
        false
    }
}

/// A command without a key.
pub trait KeylessCommand {
    const NAME: &'static CStr;

    fn run(args: &impl ArgSource, env: &impl Env) -> Outcome<'static>;

    /// For a command that shares its name with another type's: whether
    /// these arguments are this type's (BF.PLAN ... WINDOW).
    fn claims(_args: &impl ArgSource) -> bool {
        false
    }
}

/// What a command does with its key, as its key spec tells the server (and
/// the server's ACL key permissions: `%R~` allows `Read`, `%W~` the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads the value and returns what it holds: `RO access`.
    Read,
    /// Adds to a value or creates one: `RW insert`.
    Insert,
    /// Overwrites a value's data (BF.LOADCHUNK): `RW update`.
    Update,
    /// Removes from a value (CF.DEL): `RW delete`.
    Delete,
}
