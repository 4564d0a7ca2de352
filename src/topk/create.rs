//! Creating a sketch in an empty key (TOPK.RESERVE).

use ferrobloom_core::topk::{CreateError, Params, TopK};

use super::{replies, TopKey};
use crate::command::{self, CommandError, Env, KeySlot, NotCreated};
use crate::guard::CommandGuard;
use crate::notify::{Event, Events};

/// Why a sketch was not made, in the command layer's words.
impl From<CreateError> for NotCreated {
    fn from(e: CreateError) -> NotCreated {
        match e {
            CreateError::Refused(refusal) => NotCreated::Refused(refusal),
            CreateError::Alloc(e) => NotCreated::Alloc(e.bytes),
            CreateError::Params(e) => NotCreated::Invalid(replies::param_error(e).into()),
        }
    }
}

/// Creates the sketch `params` describe in the empty key, its buckets and
/// heap admitted by the memory guard first (a client's creation is refused
/// over a limit; a master's or an AOF's never is). A refusal or a failed
/// allocation answers 2.8.2's `ERR Insufficient memory to create topk data
/// structure` followed by the numbers, where 2.8.2 aborts the server on
/// Redis 7.0.
pub fn create<'k, E: Env>(
    key: &'k mut impl KeySlot<TopKey>,
    name: &[u8],
    params: Params,
    env: &E,
    events: &mut Events,
) -> Result<&'k mut TopKey, CommandError> {
    let guard = CommandGuard::new(env, name, super::WHAT);
    let sketch = TopK::new(params, &guard).map_err(|e| {
        let e = NotCreated::from(e);
        events.add_if(e.memory(), Event::GuardRefused);
        e.into_error(replies::INSUFFICIENT_MEMORY, env)
    })?;
    command::install(
        key,
        TopKey::new(sketch),
        replies::INSUFFICIENT_MEMORY,
        Event::TopkReserved,
        events,
    )
}
