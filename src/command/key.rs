//! The key a command works on, as the command sees it.

use super::{CommandError, NOT_FOUND, WRONGTYPE};

/// What a key holds.
#[derive(Debug)]
pub enum KeyState<T> {
    Missing,
    /// A value of the command's type.
    Held(T),
    /// A value of another type.
    Other,
}

/// The key of a running command, holding values of type `V`: an open
/// Redis key in the module, an in-memory slot in unit tests.
pub trait KeySlot<V> {
    /// What the key holds, without fetching the value.
    fn kind(&self) -> KeyState<()> {
        match self.state() {
            KeyState::Missing => KeyState::Missing,
            KeyState::Held(_) => KeyState::Held(()),
            KeyState::Other => KeyState::Other,
        }
    }
    fn state(&self) -> KeyState<&V>;
    /// For writing (the key was opened for writing).
    fn state_mut(&mut self) -> KeyState<&mut V>;
    /// Stores a new value in the empty key; None when the server did not
    /// take it (the value is then dropped).
    fn store(&mut self, value: Box<V>) -> Option<&mut V>;
    /// Makes a key a command opened for reading writable, once the command
    /// knows it will write it (TDIGEST.MERGE's destination, after every
    /// check and the merge itself passed): only then is the key signalled
    /// as modified (WATCH, client-side caching), so a command that failed
    /// touches nothing, as in RedisBloom. Keys opened for writing from the
    /// start, and keys in memory, have nothing to do.
    fn open_for_writing(&mut self) {}
}

impl<T> KeyState<T> {
    /// The value of a command that needs one: `ERR not found` for a
    /// missing key, `WRONGTYPE` for another type's.
    pub fn existing(self) -> Result<T, CommandError> {
        match self {
            KeyState::Held(value) => Ok(value),
            KeyState::Missing => Err(CommandError::Static(NOT_FOUND)),
            KeyState::Other => Err(CommandError::Static(WRONGTYPE)),
        }
    }
}

/// The other keys of a command on many keys (CMS.MERGE, TDIGEST.MERGE),
/// opened for reading by argument index (`name` is that argument) when the
/// command reaches them: the FFI layer opens them on the server, tests from
/// memory.
pub trait Sources<V> {
    type Key<'a>: KeySlot<V>
    where
        Self: 'a;
    fn open(&self, arg: usize, name: &[u8]) -> Self::Key<'_>;
}
