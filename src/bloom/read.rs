//! BF.EXISTS, BF.MEXISTS, BF.INFO, BF.CARD, BF.DEBUG.

use std::borrow::Cow;
use std::ffi::CStr;

use super::filter::Filter;
use super::grammar::InfoField;
use super::replies;
use crate::command::{
    ArgSource, Batch, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome, Reply,
};

/// A read command: `NAME`, its arity, and the reply from the key.
macro_rules! read_command {
    ($type:ident, $name:literal, $min:expr, $max:expr, $run:expr) => {
        pub struct $type;

        impl KeyedCommand for $type {
            const NAME: &'static CStr = $name;
            const WRITES: bool = false;
            type Value = Filter;
            type Request = ();

            fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
                $crate::command::arity(args, $min, $max)
            }

            fn run<'k>(
                (): (),
                args: &impl ArgSource,
                key: &'k mut impl KeySlot<Filter>,
                env: &impl Env,
            ) -> Outcome<'k> {
                let key: &'k _ = key;
                Outcome::reply($run(args, key.state(), env))
            }
        }
    };
}
pub(crate) use read_command;

read_command!(Exists, c"bf.exists", 3, 3, exists);
read_command!(MExists, c"bf.mexists", 3, usize::MAX, mexists);
read_command!(Info, c"bf.info", 2, 3, info);
read_command!(Card, c"bf.card", 2, 2, card);
read_command!(Debug, c"bf.debug", 2, 2, debug);

/// A key of another type answers "not present", as in RedisBloom.
fn exists(args: &impl ArgSource, key: KeyState<&Filter>, _: &impl Env) -> Reply<'static> {
    let present = match key {
        KeyState::Held(f) => f.contains(f.hash(args.arg(2))),
        _ => false,
    };
    Reply::Bool(present)
}

fn mexists(args: &impl ArgSource, key: KeyState<&Filter>, _: &impl Env) -> Reply<'static> {
    let count = args.count() - 2;
    let mut replies = Batch::with_capacity(count);
    let KeyState::Held(filter) = key else {
        (0..count).for_each(|_| replies.push_bool(false));
        return Reply::Batch(replies);
    };
    filter.chain().contains_pipelined(
        count,
        |j| filter.hash(args.arg(2 + j)),
        |_, present| replies.push_bool(present),
    );
    Reply::Batch(replies)
}

fn info(args: &impl ArgSource, key: KeyState<&Filter>, _: &impl Env) -> Reply<'static> {
    let filter = match key.existing() {
        Ok(f) => f.chain(),
        Err(e) => return e.into(),
    };
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

fn card(_: &impl ArgSource, key: KeyState<&Filter>, _: &impl Env) -> Reply<'static> {
    match key {
        KeyState::Missing => Reply::Integer(0),
        KeyState::Other => CommandError::Static(replies::WRONGTYPE).into(),
        KeyState::Held(f) => Reply::Integer(f.chain().items() as i64),
    }
}

fn debug(_: &impl ArgSource, key: KeyState<&Filter>, _: &impl Env) -> Reply<'static> {
    match key.existing() {
        Ok(f) => Reply::Array(
            f.chain()
                .debug_lines()
                .into_iter()
                .map(|line| Reply::Bulk(Cow::Owned(line.into_bytes())))
                .collect(),
        ),
        Err(e) => e.into(),
    }
}
