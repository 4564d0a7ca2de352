//! CF.SCANDUMP and CF.LOADCHUNK: a filter as a 38-byte header and its
//! sub-filters' bytes, in RedisBloom 2.8.2's format.

use std::borrow::Cow;
use std::ffi::CStr;

use ferrobloom_core::cuckoo::filter::CreateError;
use ferrobloom_core::cuckoo::scandump::{self, HeaderError, HeaderLoadError, Step};

use super::grammar;
use super::replies;
use super::Cuckoo;
use crate::command::{
    self, arity, ArgSource, CommandError, Env, KeySlot, KeyState, KeyedCommand, NotCreated,
    Outcome, Reply,
};
use crate::guard::{self, CommandGuard};
use crate::notify::{Event, Events};

pub struct ScanDump;

impl KeyedCommand for ScanDump {
    const NAME: &'static CStr = c"cf.scandump";
    const WRITES: bool = false;
    type Value = Cuckoo;
    /// The iterator.
    type Request = u64;

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<u64, CommandError> {
        arity(args, 3, 3)?;
        u64::try_from(grammar::iterator(args)?)
            .map_err(|_| CommandError::Static(replies::INVALID_POSITION))
    }

    fn run<'k>(
        iterator: u64,
        _: &impl ArgSource,
        key: &'k mut impl KeySlot<Cuckoo>,
        _: &impl Env,
    ) -> Outcome<'k> {
        let key: &'k _ = key;
        let cuckoo = match key.state().existing() {
            Ok(c) => c,
            Err(e) => return Outcome::error(e),
        };
        let (next, data) = match scandump::scandump(cuckoo.filter(), iterator) {
            Step::Done => (0, Reply::Null),
            Step::Header(header) => (1, Reply::Bulk(Cow::Owned(header.to_vec()))),
            Step::Chunk { next, data } => (next, Reply::Bulk(Cow::Borrowed(data))),
        };
        Outcome::reply(Reply::Array(vec![Reply::count(next), data]))
    }
}

pub struct LoadChunk;

impl KeyedCommand for LoadChunk {
    const NAME: &'static CStr = c"cf.loadchunk";
    const WRITES: bool = true;
    type Value = Cuckoo;
    /// The iterator.
    type Request = i64;

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<i64, CommandError> {
        arity(args, 4, 4)?;
        match grammar::iterator(args)? {
            0 => Err(CommandError::Static(replies::INVALID_POSITION)),
            iterator => Ok(iterator),
        }
    }

    fn run<'k>(
        iterator: i64,
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Cuckoo>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let data = args.arg(3);
        if iterator == 1 {
            return load_header(key, args.arg(1), data, env);
        }
        let cuckoo = match key.state_mut().existing() {
            Ok(c) => c,
            Err(e) => return Outcome::error(e),
        };
        match cuckoo.load_chunk(iterator, data) {
            // Replicated, unlike in RedisBloom 2.8.2, whose replicas and AOF
            // replays end with zero-filled filters.
            Ok(lost) => {
                if lost > 0 {
                    env.log_warning(&format!(
                        "CF.LOADCHUNK into the loading Cuckoo filter '{}': {lost} fingerprint(s) \
                         stored since its header found no free slot again and were dropped",
                        guard::printable(args.arg(1))
                    ));
                }
                Outcome::verbatim(Reply::Ok, Events::default())
            }
            Err(_) => Outcome::error(replies::BAD_CHUNK),
        }
    }
}

/// CF.LOADCHUNK key 1 header: a new, zero-filled filter of the header's
/// shape in the empty key, loading until all its bytes have arrived.
fn load_header<'k>(
    key: &'k mut impl KeySlot<Cuckoo>,
    name: &[u8],
    header: &[u8],
    env: &impl Env,
) -> Outcome<'k> {
    match key.kind() {
        KeyState::Held(()) => return Outcome::error(replies::ITEM_EXISTS),
        KeyState::Other => return Outcome::error(replies::WRONGTYPE),
        KeyState::Missing => {}
    }
    let mut events = Events::default();
    let created = scandump::create_from_header(header, &CommandGuard::new(env, name, super::WHAT));
    let error = match created {
        Ok(filter) => {
            let stored = command::install(
                key,
                Cuckoo::from_header(filter),
                replies::BAD_HEADER,
                Event::CuckooCreated,
                &mut events,
            );
            return match stored {
                Ok(_) => Outcome::verbatim(Reply::Ok, events),
                Err(e) => Outcome::error(e),
            };
        }
        Err(HeaderLoadError::Header(HeaderError::Length)) => {
            CommandError::Static(replies::INVALID_HEADER)
        }
        // RedisBloom's words for a header it cannot make a filter of, then
        // why (only the guard's refusal is a `bf.guard-refused` event here).
        Err(HeaderLoadError::Create(e @ (CreateError::Refused(_) | CreateError::Alloc(_)))) => {
            let e = NotCreated::from(e);
            events.add_if(matches!(e, NotCreated::Refused(_)), Event::GuardRefused);
            e.into_error(replies::BAD_HEADER, env)
        }
        Err(_) => CommandError::Static(replies::BAD_HEADER),
    };
    Outcome::failed(error, events)
}
