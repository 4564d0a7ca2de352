//! Why a value was not created, in one vocabulary every type's engine maps
//! its creation error to, and the one place where that becomes a reply.

use std::ffi::CStr;

use ferrobloom_core::Refusal;

use super::{CommandError, Env, KeySlot};
use crate::guard;
use crate::notify::{Event, Events};

/// What stopped a type's engine from making a value.
#[derive(Debug)]
pub enum NotCreated {
    /// The memory guard refused the memory.
    Refused(Refusal),
    /// The allocator could not provide these bytes.
    Alloc(u64),
    /// The parameters make no value: the type's own reply (RedisBloom's).
    Invalid(CommandError),
}

impl NotCreated {
    /// Whether memory was missing (refused by the guard or the allocator).
    pub fn memory(&self) -> bool {
        !matches!(self, NotCreated::Invalid(_))
    }

    /// The reply: `words` (RedisBloom's reply to the command whose
    /// allocation failed: clients match on them), then the guard's or the
    /// allocator's numbers; the type's own reply for invalid parameters.
    pub fn into_error(self, words: &CStr, env: &impl Env) -> CommandError {
        match self {
            NotCreated::Refused(refusal) => {
                CommandError::Text(guard::refusal_reply(words, &refusal, env.memory()))
            }
            NotCreated::Alloc(bytes) => {
                CommandError::Text(guard::allocation_failed_reply(words, bytes))
            }
            NotCreated::Invalid(e) => e,
        }
    }
}

/// The reply to a creation (RESERVE, INSERT, an add creating its value)
/// that did not happen, with the guard's refusal recorded in `events`
/// (reported like a refusal when the allocator failed: the memory was not
/// there).
pub fn creation_error(
    e: impl Into<NotCreated>,
    env: &impl Env,
    events: &mut Events,
) -> CommandError {
    let e = e.into();
    events.add_if(e.memory(), Event::GuardRefused);
    e.into_error(guard::CREATE_WORDS, env)
}

/// Stores a new value in the empty key, recording `created`; `refused` is
/// the type's reply when the server does not take it.
pub fn install<'k, V>(
    key: &'k mut impl KeySlot<V>,
    value: Box<V>,
    refused: &'static CStr,
    created: Event,
    events: &mut Events,
) -> Result<&'k mut V, CommandError> {
    let stored = key.store(value).ok_or(CommandError::Static(refused))?;
    events.add(created);
    Ok(stored)
}
