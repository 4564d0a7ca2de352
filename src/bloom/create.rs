//! Creating a filter in an empty key, shared by BF.RESERVE, BF.INSERT,
//! the auto-creating adds and BF.LOADCHUNK; and the decision of what a
//! command that does not name every parameter creates.

use ferrobloom_core::{Chain, ChainParams, CreateError, Policy};

use super::replies;
use super::Filter;
use crate::command::{self, CommandError, Env, KeySlot, NotCreated};
use crate::config::Settings;
use crate::guard::CommandGuard;
use crate::notify::{Event, Events};

/// What a command from a master or an AOF gets where it does not say
/// otherwise: RedisBloom's fixed expansion (2) and the exact policy (the
/// only one RedisBloom creates); error rate and capacity come from the
/// local settings, as in RedisBloom. FerroBloom masters spell out whatever
/// their own settings decided (see `propagate`), so replicas end identical
/// whatever their settings.
pub fn replica_rule(local: &ChainParams) -> ChainParams {
    ChainParams {
        growth: 2,
        nonscaling: false,
        policy: Policy::Exact,
        ..*local
    }
}

/// The defaults of a command: the local settings for a client's, the
/// replica rule for one from a master or an AOF (so that a RedisBloom AOF or
/// master stream replays into the filters it made, whatever this server's
/// settings say).
pub fn creation_defaults(settings: &Settings, replicated_or_loading: bool) -> ChainParams {
    let local = settings.creation_params();
    if replicated_or_loading {
        replica_rule(&local)
    } else {
        local
    }
}

/// [`creation_defaults`] of the running command.
pub fn command_defaults(env: &impl Env) -> ChainParams {
    creation_defaults(&env.settings(), env.replicated_or_loading())
}

/// The guard of the running command for allocations of the filter at `key`.
pub fn guard_for<'a, E: Env>(env: &'a E, key: &'a [u8]) -> CommandGuard<'a, E> {
    CommandGuard::new(env, key, super::WHAT)
}

/// Why a chain was not made, in the command layer's words.
impl From<CreateError> for NotCreated {
    fn from(e: CreateError) -> NotCreated {
        match e {
            CreateError::Refused(refusal) => NotCreated::Refused(refusal),
            CreateError::Alloc(e) => NotCreated::Alloc(e.bytes),
            CreateError::Sizing(_) => NotCreated::Invalid(replies::COULD_NOT_CREATE.into()),
        }
    }
}

/// Creates a filter with `params` in the empty key, recording the creation
/// or the memory guard's refusal in `events`.
pub fn create<'k, E: Env>(
    key: &'k mut impl KeySlot<Filter>,
    name: &[u8],
    params: &ChainParams,
    env: &E,
    events: &mut Events,
) -> Result<&'k mut Filter, CommandError> {
    let chain = Chain::new(params, &guard_for(env, name))
        .map_err(|e| command::creation_error(e, env, events))?;
    install(key, Filter::new(chain), events)
}

/// Stores a new filter in the empty key, recording its creation.
pub fn install<'k>(
    key: &'k mut impl KeySlot<Filter>,
    filter: Box<Filter>,
    events: &mut Events,
) -> Result<&'k mut Filter, CommandError> {
    command::install(
        key,
        filter,
        replies::COULD_NOT_CREATE,
        Event::Created,
        events,
    )
}
