//! BF.SCANDUMP and BF.LOADCHUNK on a windowed filter: not taken (a
//! window's generations have no RedisBloom export stream), with a clear
//! error instead of WRONGTYPE.

use std::ffi::CStr;
use std::marker::PhantomData;

use super::replies;
use super::Window;
use crate::bloom::dump;
use crate::command::{ArgSource, CommandError, Env, KeySlot, KeyedCommand, Outcome};

/// A BF.* command windowed filters do not take: the plain filter's command
/// `C` (its name, and its key opened as `C` opens it) answering
/// `replies::UNSUPPORTED` whatever its arguments.
pub struct Unsupported<C>(PhantomData<C>);

impl<C: KeyedCommand> KeyedCommand for Unsupported<C> {
    const NAME: &'static CStr = C::NAME;
    const WRITES: bool = C::WRITES;
    type Value = Window;
    type Request = ();

    fn parse(_: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        Ok(())
    }

    fn run<'k>(
        (): (),
        _: &impl ArgSource,
        _: &'k mut impl KeySlot<Window>,
        _: &impl Env,
    ) -> Outcome<'k> {
        Outcome::error(replies::UNSUPPORTED)
    }
}

pub type ScanDump = Unsupported<dump::ScanDump>;
pub type LoadChunk = Unsupported<dump::LoadChunk>;
