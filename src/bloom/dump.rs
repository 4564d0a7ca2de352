//! BF.SCANDUMP and BF.LOADCHUNK: RedisBloom's export stream.

use std::borrow::Cow;
use std::ffi::CStr;

use ferrobloom_core::bloom::scandump::{self, LoadError};

use super::create::{self, guard_for};
use super::filter::Filter;
use super::replies;
use crate::command::{
    arity, ArgSource, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome, ReadCommand,
    Reply,
};
use crate::guard;
use crate::notify::{Event, Events};

pub struct ScanDump;

impl ReadCommand for ScanDump {
    const NAME: &'static CStr = c"bf.scandump";
    const ARITY: (usize, usize) = (3, 3);
    type Value = Filter;

    /// The reply borrows the chunk from the filter: no copy before Redis'.
    /// The iterator is read once the key holds a filter (RedisBloom's
    /// order).
    fn read<'k>(f: &'k Filter, args: &impl ArgSource, _: &impl Env) -> Reply<'k> {
        let chain = f.chain();
        let Some(iter) = args.int(2) else {
            return Reply::Error(CommandError::Static(replies::SCANDUMP_NOT_NUMERIC));
        };
        let (next, chunk) = match iter {
            0 => (1, Cow::Owned(scandump::encode_header(chain))),
            i if i < 0 => (0, Cow::Borrowed(&[][..])),
            i => {
                let (next, chunk) = scandump::data_chunk(chain, i);
                (next, Cow::Borrowed(chunk))
            }
        };
        Reply::Array(vec![Reply::Integer(next), Reply::Bulk(chunk)])
    }
}

/// The reply to a refused chunk. A header whose filter cannot be had is
/// answered as RedisBloom answers it, `ERR received bad data`, followed by
/// the memory guard's numbers.
fn load_error(e: LoadError, env: &impl Env) -> CommandError {
    match e {
        LoadError::BadData => replies::BAD_DATA.into(),
        LoadError::Alloc(e) => {
            CommandError::Text(guard::allocation_failed_reply(replies::BAD_DATA, e.bytes))
        }
        LoadError::NoLink => replies::NO_LINK.into(),
        LoadError::TooBig => replies::TOO_BIG.into(),
        LoadError::Refused(refusal) => CommandError::Text(guard::refusal_reply(
            replies::BAD_DATA,
            &refusal,
            env.memory(),
        )),
    }
}

pub struct LoadChunk;

impl KeyedCommand for LoadChunk {
    const NAME: &'static CStr = c"bf.loadchunk";
    const WRITES: bool = true;
    type Value = Filter;
    /// The iterator.
    type Request = i64;

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<i64, CommandError> {
        arity(args, 4, 4)?;
        args.int(2)
            .ok_or(CommandError::Static(replies::LOADCHUNK_NOT_NUMERIC))
    }

    fn run<'k>(
        iter: i64,
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Filter>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let data = args.arg(3);
        match key.state_mut() {
            KeyState::Other => Outcome::error(replies::WRONGTYPE),
            KeyState::Missing if iter != 1 => Outcome::error(replies::NOT_FOUND),
            KeyState::Missing => {
                let name = args.arg(1);
                let chain = scandump::decode_header(data)
                    .and_then(|header| header.instantiate(&guard_for(env, name)));
                let mut events = Events::default();
                match chain {
                    Ok(chain) => match create::install(key, Filter::new(chain), &mut events) {
                        Ok(filter) => {
                            filter.start_loading();
                            Outcome::verbatim(Reply::Ok, events)
                        }
                        Err(e) => Outcome::error(e),
                    },
                    Err(e) => {
                        events.add_if(matches!(e, LoadError::Refused(_)), Event::GuardRefused);
                        Outcome::failed(load_error(e, env), events)
                    }
                }
            }
            KeyState::Held(filter) => match filter.load_chunk(iter, data) {
                Ok(()) => {
                    // Bits changed: fill and estimated FPR with them.
                    filter.refresh();
                    Outcome::verbatim(Reply::Ok, Events::default())
                }
                Err(e) => Outcome::error(load_error(e, env)),
            },
        }
    }
}
