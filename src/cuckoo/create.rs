//! Creating a Cuckoo filter in an empty key, shared by CF.RESERVE and the
//! adds and inserts that create their filter.

use ferrobloom_core::cuckoo::filter::CreateError;
use ferrobloom_core::cuckoo::{CuckooFilter, CuckooParams};

use super::replies;
use super::Cuckoo;
use crate::command::{self, CommandError, Env, KeySlot, NotCreated};
use crate::guard::CommandGuard;
use crate::notify::{Event, Events};

/// Why a filter was not made, in the command layer's words.
impl From<CreateError> for NotCreated {
    fn from(e: CreateError) -> NotCreated {
        match e {
            CreateError::Refused(refusal) => NotCreated::Refused(refusal),
            CreateError::Alloc(e) => NotCreated::Alloc(e.bytes),
            CreateError::Sizing(_) => NotCreated::Invalid(replies::CANNOT_CREATE.into()),
        }
    }
}

/// Creates a filter with `params` in the empty key.
pub fn create<'k, E: Env>(
    key: &'k mut impl KeySlot<Cuckoo>,
    name: &[u8],
    params: &CuckooParams,
    env: &E,
    events: &mut Events,
) -> Result<&'k mut Cuckoo, CommandError> {
    let filter = CuckooFilter::new(params, &CommandGuard::new(env, name, super::WHAT))
        .map_err(|e| command::creation_error(e, env, events))?;
    install(key, Cuckoo::new(filter), events)
}

/// Stores a new filter in the empty key, recording its creation.
pub fn install<'k>(
    key: &'k mut impl KeySlot<Cuckoo>,
    cuckoo: Box<Cuckoo>,
    events: &mut Events,
) -> Result<&'k mut Cuckoo, CommandError> {
    command::install(
        key,
        cuckoo,
        replies::CANNOT_CREATE,
        Event::CuckooCreated,
        events,
    )
}
