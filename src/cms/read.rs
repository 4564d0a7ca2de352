//! CMS.QUERY and CMS.INFO.

use std::ffi::CStr;

use super::{replies, Sketch};
use crate::command::{Absent, ArgSource, Batch, CommandError, Env, ReadCommand, Reply};

/// A missing key is `CMS: key does not exist` (checked before any other
/// argument), another type `WRONGTYPE`.
pub(super) fn absent(key: Absent) -> Reply<'static> {
    Reply::Error(match key {
        Absent::Missing => CommandError::Static(replies::KEY_DOES_NOT_EXIST),
        Absent::Other => CommandError::Static(replies::WRONGTYPE),
    })
}

pub struct Query;

impl ReadCommand for Query {
    const NAME: &'static CStr = c"cms.query";
    const ARITY: (usize, usize) = (3, usize::MAX);
    type Value = Sketch;

    /// Each item's estimate: the smallest of its cells.
    fn read(s: &Sketch, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        let s = s.sketch();
        let mut counts = Batch::of_counts(args.count() - 2);
        for i in 2..args.count() {
            counts.push_count(s.query(args.arg(i)));
        }
        Reply::Batch(counts)
    }

    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        absent(key)
    }
}

pub struct Info;

impl ReadCommand for Info {
    const NAME: &'static CStr = c"cms.info";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Sketch;

    /// 2.8.2's three pairs, then RedisBloom 8.12's `cell_size`; N as 8.12
    /// reports it (never negative, capped at 2^63 − 1).
    fn read(s: &Sketch, _: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        let s = s.sketch();
        Reply::Map(vec![
            (c"width", Reply::count(s.width())),
            (c"depth", Reply::count(s.depth())),
            (c"count", Reply::Integer(s.reported_count())),
            (c"cell_size", Reply::count(s.cell_size().bytes())),
        ])
    }

    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        absent(key)
    }
}
