//! CF.EXISTS, CF.MEXISTS, CF.COUNT, CF.INFO and CF.DEBUG.

use std::borrow::Cow;
use std::ffi::CStr;

use ferrobloom_core::cuckoo::CuckooHash;

use super::Cuckoo;
use crate::command::arity;
use crate::command::{
    ArgSource, Batch, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome, Reply,
};

/// A read command on a Cuckoo filter: `NAME`, its arity, and the reply
/// from the key.
macro_rules! cuckoo_read {
    ($type:ident, $name:literal, $min:expr, $max:expr, $run:expr) => {
        pub struct $type;

        impl KeyedCommand for $type {
            const NAME: &'static CStr = $name;
            const WRITES: bool = false;
            type Value = Cuckoo;
            type Request = ();

            fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
                arity(args, $min, $max)
            }

            fn run<'k>(
                (): (),
                args: &impl ArgSource,
                key: &'k mut impl KeySlot<Cuckoo>,
                _: &impl Env,
            ) -> Outcome<'k> {
                let key: &'k _ = key;
                Outcome::reply($run(args, key.state()))
            }
        }
    };
}

cuckoo_read!(Exists, c"cf.exists", 3, 3, exists);
cuckoo_read!(MExists, c"cf.mexists", 3, usize::MAX, mexists);
cuckoo_read!(Count, c"cf.count", 3, 3, count);
cuckoo_read!(Info, c"cf.info", 2, 2, info);
cuckoo_read!(Debug, c"cf.debug", 2, 2, debug);

/// A missing key, or one of another type, answers "not present" (no
/// WRONGTYPE), as in RedisBloom.
fn exists(args: &impl ArgSource, key: KeyState<&Cuckoo>) -> Reply<'static> {
    Reply::Bool(match key {
        KeyState::Held(c) => c.filter().contains(CuckooHash::of(args.arg(2))),
        _ => false,
    })
}

fn mexists(args: &impl ArgSource, key: KeyState<&Cuckoo>) -> Reply<'static> {
    let count = args.count() - 2;
    let mut replies = Batch::with_capacity(count);
    match key {
        KeyState::Held(c) => c.filter().contains_batch(
            count,
            |j| CuckooHash::of(args.arg(2 + j)),
            |_, present| replies.push_bool(present),
        ),
        _ => (0..count).for_each(|_| replies.push_bool(false)),
    }
    Reply::Batch(replies)
}

fn count(args: &impl ArgSource, key: KeyState<&Cuckoo>) -> Reply<'static> {
    match key {
        KeyState::Held(c) => Reply::count(c.filter().count(CuckooHash::of(args.arg(2)))),
        _ => Reply::Integer(0),
    }
}

/// CF.INFO's labels, in its order (simple strings).
const INFO_LABELS: [&CStr; 8] = [
    c"Size",
    c"Number of buckets",
    c"Number of filters",
    c"Number of items inserted",
    c"Number of items deleted",
    c"Bucket size",
    c"Expansion rate",
    c"Max iterations",
];

fn info(_: &impl ArgSource, key: KeyState<&Cuckoo>) -> Reply<'static> {
    match key.existing() {
        Ok(c) => Reply::Map(
            INFO_LABELS
                .iter()
                .zip(c.filter().info())
                .map(|(label, (name, value))| {
                    debug_assert_eq!(label.to_bytes(), name.as_bytes());
                    // RedisBloom sends its unsigned counters as signed
                    // integers: a count that wrapped below zero (deleting
                    // from a filter loaded with a zero count) reads -1.
                    (*label, Reply::Integer(value as i64))
                })
                .collect(),
        ),
        Err(e) => e.into(),
    }
}

fn debug(_: &impl ArgSource, key: KeyState<&Cuckoo>) -> Reply<'static> {
    match key.existing() {
        Ok(c) => Reply::Bulk(Cow::Owned(c.filter().debug_line().into_bytes())),
        Err(e) => e.into(),
    }
}
