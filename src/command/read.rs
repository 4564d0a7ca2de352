//! Read commands: what every type's read commands share (arity and key
//! checks, the key opened for reading, nothing propagated), so that a
//! type writes only its reply.

use std::ffi::CStr;

use super::{arity, ArgSource, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome, Reply};
use super::{NOT_FOUND, WRONGTYPE};

/// What a key holds instead of a value of the command's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absent {
    Missing,
    /// A value of another type.
    Other,
}

impl Absent {
    /// The error of a command that needs a value: `ERR not found`, or
    /// `WRONGTYPE`.
    pub fn error(self) -> CommandError {
        CommandError::Static(match self {
            Absent::Missing => NOT_FOUND,
            Absent::Other => WRONGTYPE,
        })
    }
}

/// A command that reads one key and changes nothing. Every read command
/// is a [`KeyedCommand`] (the impl below): it checks its arguments first,
/// whatever the key holds, then replies [`ReadCommand::read`] from the
/// key's value, or [`ReadCommand::absent`] when there is none.
pub trait ReadCommand {
    /// The registered (lowercase) name, which the arity error names.
    const NAME: &'static CStr;
    /// The fewest and the most arguments, the command name included.
    const ARITY: (usize, usize);
    /// The value type this command reads.
    type Value: 'static;

    /// The argument checks made before the key is looked at: the arity,
    /// unless the command checks more.
    fn parse(args: &impl ArgSource, _env: &impl Env) -> Result<(), CommandError> {
        arity(args, Self::ARITY.0, Self::ARITY.1)
    }

    /// The reply from the key's value (it may borrow from it).
    fn read<'k>(value: &'k Self::Value, args: &impl ArgSource, env: &impl Env) -> Reply<'k>;

    /// The reply when the key holds no value of this type: by default the
    /// command needs one (`ERR not found`, `WRONGTYPE`); RedisBloom answers
    /// some reads (EXISTS, COUNT) as for an empty value instead.
    fn absent(key: Absent, _args: &impl ArgSource) -> Reply<'static> {
        Reply::Error(key.error())
    }
}

impl<R: ReadCommand> KeyedCommand for R {
    const NAME: &'static CStr = R::NAME;
    const WRITES: bool = false;
    type Value = R::Value;
    type Request = ();

    fn parse(args: &impl ArgSource, env: &impl Env) -> Result<(), CommandError> {
        R::parse(args, env)
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<R::Value>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let key: &'k _ = key;
        Outcome::reply(match key.state() {
            KeyState::Held(value) => R::read(value, args, env),
            KeyState::Missing => R::absent(Absent::Missing, args),
            KeyState::Other => R::absent(Absent::Other, args),
        })
    }
}
