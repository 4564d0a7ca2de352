//! Creating a sketch in an empty key (CMS.INITBYDIM, CMS.INITBYPROB).

use ferrobloom_core::cms::{CountMinSketch, CreateError};

use super::grammar::Init;
use super::{replies, Sketch};
use crate::command::{self, CommandError, Env, KeySlot, NotCreated};
use crate::guard::CommandGuard;
use crate::notify::{Event, Events};

/// Why a sketch was not made, in the command layer's words.
impl From<CreateError> for NotCreated {
    fn from(e: CreateError) -> NotCreated {
        match e {
            CreateError::Refused(refusal) => NotCreated::Refused(refusal),
            CreateError::Alloc(e) => NotCreated::Alloc(e.bytes),
            CreateError::Init(e) => NotCreated::Invalid(replies::init_error(e).into()),
        }
    }
}

/// Creates the sketch `init` describes in the empty key, its cells
/// admitted by the memory guard first (a client's creation is refused
/// over a limit; a master's or an AOF's never is). A refusal or a failed
/// allocation answers RedisBloom's `CMS: Insufficient memory to create
/// the key` followed by the numbers, where 2.8.2 aborts the server on
/// Redis 7.0.
pub fn create<'k, E: Env>(
    key: &'k mut impl KeySlot<Sketch>,
    name: &[u8],
    init: Init,
    env: &E,
    events: &mut Events,
) -> Result<&'k mut Sketch, CommandError> {
    let guard = CommandGuard::new(env, name, super::WHAT);
    let sketch = CountMinSketch::new(init.dims.width, init.dims.depth, init.cell_size, &guard)
        .map_err(|e| {
            let e = NotCreated::from(e);
            events.add_if(e.memory(), Event::GuardRefused);
            e.into_error(replies::INSUFFICIENT_MEMORY, env)
        })?;
    command::install(
        key,
        Sketch::new(sketch),
        replies::INSUFFICIENT_MEMORY,
        Event::SketchCreated,
        events,
    )
}
