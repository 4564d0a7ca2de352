//! CF.EXISTS, CF.MEXISTS, CF.COUNT, CF.INFO and CF.DEBUG.

use std::borrow::Cow;
use std::ffi::CStr;

use ferrobloom_core::cuckoo::CuckooHash;

use super::Cuckoo;
use crate::command::{Absent, ArgSource, Batch, Env, ReadCommand, Reply};

pub struct Exists;

impl ReadCommand for Exists {
    const NAME: &'static CStr = c"cf.exists";
    const ARITY: (usize, usize) = (3, 3);
    type Value = Cuckoo;

    fn read(c: &Cuckoo, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        Reply::Bool(c.filter().contains(CuckooHash::of(args.arg(2))))
    }

    /// A missing key, or one of another type, answers "not present" (no
    /// WRONGTYPE), as in RedisBloom.
    fn absent(_: Absent, _: &impl ArgSource) -> Reply<'static> {
        Reply::Bool(false)
    }
}

pub struct MExists;

impl ReadCommand for MExists {
    const NAME: &'static CStr = c"cf.mexists";
    const ARITY: (usize, usize) = (3, usize::MAX);
    type Value = Cuckoo;

    fn read(c: &Cuckoo, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        let count = args.count() - 2;
        let mut replies = Batch::with_capacity(count);
        c.filter().contains_batch(
            count,
            |j| CuckooHash::of(args.arg(2 + j)),
            |_, present| replies.push_bool(present),
        );
        Reply::Batch(replies)
    }

    fn absent(_: Absent, args: &impl ArgSource) -> Reply<'static> {
        Reply::Batch(Batch::all_false(args.count() - 2))
    }
}

pub struct Count;

impl ReadCommand for Count {
    const NAME: &'static CStr = c"cf.count";
    const ARITY: (usize, usize) = (3, 3);
    type Value = Cuckoo;

    fn read(c: &Cuckoo, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        Reply::count(c.filter().count(CuckooHash::of(args.arg(2))))
    }

    fn absent(_: Absent, _: &impl ArgSource) -> Reply<'static> {
        Reply::Integer(0)
    }
}

pub struct Info;

impl ReadCommand for Info {
    const NAME: &'static CStr = c"cf.info";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Cuckoo;

    fn read(c: &Cuckoo, _: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        Reply::Map(
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
        )
    }
}

pub struct Debug;

impl ReadCommand for Debug {
    const NAME: &'static CStr = c"cf.debug";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Cuckoo;

    fn read(c: &Cuckoo, _: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        Reply::Bulk(Cow::Owned(c.filter().debug_line().into_bytes()))
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
