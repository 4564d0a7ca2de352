//! TOPK.QUERY, TOPK.COUNT, TOPK.LIST and TOPK.INFO.

use std::borrow::Cow;
use std::ffi::CStr;

use super::{grammar, replies, TopKey};
use crate::command::{Absent, ArgSource, CommandError, Env, ReadCommand, Reply};

/// A missing key is `TopK: key does not exist`, another type `WRONGTYPE`.
fn absent(key: Absent) -> Reply<'static> {
    Reply::Error(match key {
        Absent::Missing => CommandError::Static(replies::KEY_DOES_NOT_EXIST),
        Absent::Other => CommandError::Static(replies::WRONGTYPE),
    })
}

pub struct Query;

impl ReadCommand for Query {
    const NAME: &'static CStr = c"topk.query";
    const ARITY: (usize, usize) = (3, usize::MAX);
    type Value = TopKey;

    /// Whether each item is in the list (`:1`/`:0`, RESP3 `#t`/`#f`); an
    /// item held with count 0 (TOPK.INCRBY x 0) is.
    fn read(s: &TopKey, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        let s = s.sketch();
        Reply::Array(
            (2..args.count())
                .map(|i| Reply::Bool(s.query(args.arg(i))))
                .collect(),
        )
    }

    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        absent(key)
    }
}

/// Registered read only: it changes nothing (2.8.2 registers it `write`,
/// so a read-only replica refuses it).
pub struct Count;

impl ReadCommand for Count {
    const NAME: &'static CStr = c"topk.count";
    const ARITY: (usize, usize) = (3, usize::MAX);
    type Value = TopKey;

    fn read(s: &TopKey, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        let s = s.sketch();
        Reply::Array(
            (2..args.count())
                .map(|i| Reply::count(u64::from(s.count(args.arg(i)))))
                .collect(),
        )
    }

    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        absent(key)
    }
}

pub struct List;

impl ReadCommand for List {
    const NAME: &'static CStr = c"topk.list";
    const ARITY: (usize, usize) = (2, 3);
    type Value = TopKey;

    /// `WITHCOUNT` is checked before the key (spec §4.6).
    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        grammar::parse_list(args).map(drop)
    }

    /// The listed items by count, highest first (equal counts in heap
    /// order), whole; an item lost by a reload of an empty item is null.
    fn read<'k>(s: &'k TopKey, args: &impl ArgSource, _: &impl Env) -> Reply<'k> {
        let with_count = args.count() == 3;
        let list = s.sketch().list();
        let mut elements = Vec::with_capacity(list.len() * (1 + usize::from(with_count)));
        for slot in list {
            elements.push(
                slot.item()
                    .map_or(Reply::Null, |item| Reply::Bulk(Cow::Borrowed(item))),
            );
            if with_count {
                elements.push(Reply::count(u64::from(slot.count())));
            }
        }
        Reply::Array(elements)
    }

    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        absent(key)
    }
}

pub struct Info;

impl ReadCommand for Info {
    const NAME: &'static CStr = c"topk.info";
    const ARITY: (usize, usize) = (2, 2);
    type Value = TopKey;

    /// k, width, depth and decay; the decay through the server's double
    /// reply, formatted by the host as for 2.8.2 (`0.90000000000000002` in
    /// RESP2 on Redis 7.0).
    fn read(s: &TopKey, _: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        let s = s.sketch();
        Reply::Map(vec![
            (c"k", Reply::count(u64::from(s.k()))),
            (c"width", Reply::count(u64::from(s.width()))),
            (c"depth", Reply::count(u64::from(s.depth()))),
            (c"decay", Reply::ServerDouble(s.decay())),
        ])
    }

    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        absent(key)
    }
}
