//! BF.EXISTS, BF.MEXISTS, BF.INFO, BF.CARD, BF.DEBUG.

use std::borrow::Cow;
use std::ffi::CStr;

use super::filter::Filter;
use super::grammar::InfoField;
use super::replies;
use crate::command::{Absent, ArgSource, Batch, CommandError, Env, ReadCommand, Reply};

pub struct Exists;

impl ReadCommand for Exists {
    const NAME: &'static CStr = c"bf.exists";
    const ARITY: (usize, usize) = (3, 3);
    type Value = Filter;

    fn read(f: &Filter, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        Reply::Bool(f.contains(f.hash(args.arg(2))))
    }

    /// A missing key, or one of another type, answers "not present", as in
    /// RedisBloom.
    fn absent(_: Absent, _: &impl ArgSource) -> Reply<'static> {
        Reply::Bool(false)
    }
}

pub struct MExists;

impl ReadCommand for MExists {
    const NAME: &'static CStr = c"bf.mexists";
    const ARITY: (usize, usize) = (3, usize::MAX);
    type Value = Filter;

    fn read(filter: &Filter, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        let count = args.count() - 2;
        let mut replies = Batch::with_capacity(count);
        filter.chain().contains_pipelined(
            count,
            |j| filter.hash(args.arg(2 + j)),
            |_, present| replies.push_bool(present),
        );
        Reply::Batch(replies)
    }

    fn absent(_: Absent, args: &impl ArgSource) -> Reply<'static> {
        Reply::Batch(Batch::all_false(args.count() - 2))
    }
}

pub struct Info;

impl ReadCommand for Info {
    const NAME: &'static CStr = c"bf.info";
    const ARITY: (usize, usize) = (2, 3);
    type Value = Filter;

    fn read(f: &Filter, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        info(f, args)
    }
}

pub struct Card;

impl ReadCommand for Card {
    const NAME: &'static CStr = c"bf.card";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Filter;

    fn read(f: &Filter, _: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        Reply::Integer(f.chain().items() as i64)
    }

    /// A missing key counts no items, as in RedisBloom.
    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        match key {
            Absent::Missing => Reply::Integer(0),
            Absent::Other => Reply::Error(key.error()),
        }
    }
}

pub struct Debug;

impl ReadCommand for Debug {
    const NAME: &'static CStr = c"bf.debug";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Filter;

    fn read(f: &Filter, _: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        Reply::Array(
            f.chain()
                .debug_lines()
                .into_iter()
                .map(|line| Reply::Bulk(Cow::Owned(line.into_bytes())))
                .collect(),
        )
    }
}

fn info(f: &Filter, args: &impl ArgSource) -> Reply<'static> {
    let filter = f.chain();
    let value = |field: InfoField| match field {
        InfoField::Capacity => Reply::Integer(filter.capacity() as i64),
        InfoField::Size => Reply::Integer(filter.reported_size() as i64),
        InfoField::Filters => Reply::Integer(filter.links().len() as i64),
        InfoField::Items => Reply::Integer(filter.items() as i64),
        InfoField::Expansion => Reply::optional(filter.expansion().map(i64::from)),
    };
    if args.count() == 3 {
        return match InfoField::parse(args.arg(2)) {
            Some(field) => Reply::Field(field.label(), Box::new(value(field))),
            None => CommandError::Static(replies::INVALID_INFO_VALUE).into(),
        };
    }
    Reply::Map(
        InfoField::ALL
            .into_iter()
            .map(|field| (field.label(), value(field)))
            .collect(),
    )
}
