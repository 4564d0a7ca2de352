//! BF.EXISTS, BF.MEXISTS, BF.CARD and BF.INFO on a windowed filter (routed
//! here only when the key holds one), with their usual reply shapes. Reads
//! look at the window as the clock sees it, so items leave on time even on
//! a key nobody writes to. BF.DEBUG is not taken.

use std::ffi::CStr;

use super::dump::Unsupported;
use super::Window;
use crate::bloom::grammar::InfoField;
use crate::bloom::replies as bloom;
use crate::command::{ArgSource, Batch, CommandError, Env, ReadCommand, Reply};

/// The epoch a read sees: the clock's (never before the filter's own).
fn read_epoch(window: &Window, env: &impl Env) -> u64 {
    window.filter().epoch_at(env.now_ms())
}

pub struct Exists;

impl ReadCommand for Exists {
    const NAME: &'static CStr = c"bf.exists";
    const ARITY: (usize, usize) = (3, 3);
    type Value = Window;

    fn read(w: &Window, args: &impl ArgSource, env: &impl Env) -> Reply<'static> {
        let f = w.filter();
        Reply::Bool(f.contains(f.hash(args.arg(2)), read_epoch(w, env)))
    }
}

pub struct MExists;

impl ReadCommand for MExists {
    const NAME: &'static CStr = c"bf.mexists";
    const ARITY: (usize, usize) = (3, usize::MAX);
    type Value = Window;

    fn read(w: &Window, args: &impl ArgSource, env: &impl Env) -> Reply<'static> {
        let (f, at) = (w.filter(), read_epoch(w, env));
        let mut replies = Batch::with_capacity(args.count() - 2);
        for i in 2..args.count() {
            replies.push_bool(f.contains(f.hash(args.arg(i)), at));
        }
        Reply::Batch(replies)
    }
}

pub struct Card;

impl ReadCommand for Card {
    const NAME: &'static CStr = c"bf.card";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Window;

    fn read(w: &Window, _: &impl ArgSource, env: &impl Env) -> Reply<'static> {
        Reply::count(w.filter().items(read_epoch(w, env)))
    }
}

pub struct Info;

impl ReadCommand for Info {
    const NAME: &'static CStr = c"bf.info";
    const ARITY: (usize, usize) = (2, 3);
    type Value = Window;

    fn read(w: &Window, args: &impl ArgSource, env: &impl Env) -> Reply<'static> {
        info(w, args, read_epoch(w, env))
    }
}

/// BF.DEBUG: a clear error instead of WRONGTYPE.
pub type Debug = Unsupported<crate::bloom::read::Debug>;

/// The fields only windowed filters have, asked for by name.
#[derive(Clone, Copy)]
enum WindowField {
    Window,
    Generations,
    Epoch,
    Rotations,
    Forgotten,
    ErrorRate,
}

impl WindowField {
    fn parse(token: &[u8]) -> Option<WindowField> {
        const FIELDS: [(&[u8], WindowField); 6] = [
            (b"WINDOW", WindowField::Window),
            (b"GENERATIONS", WindowField::Generations),
            (b"EPOCH", WindowField::Epoch),
            (b"ROTATIONS", WindowField::Rotations),
            (b"FORGOTTEN", WindowField::Forgotten),
            (b"ERROR", WindowField::ErrorRate),
        ];
        FIELDS
            .iter()
            .find(|(name, _)| token.eq_ignore_ascii_case(name))
            .map(|&(_, field)| field)
    }

    fn label(self) -> &'static CStr {
        match self {
            WindowField::Window => c"Window",
            WindowField::Generations => c"Generations",
            WindowField::Epoch => c"Epoch",
            WindowField::Rotations => c"Generations retired",
            WindowField::Forgotten => c"Items forgotten",
            WindowField::ErrorRate => c"Error rate",
        }
    }
}

/// BF.INFO: RedisBloom's five fields, in its shape, so clients parse it as
/// they parse any filter's; the window's own fields by name only.
fn info(w: &Window, args: &impl ArgSource, at: u64) -> Reply<'static> {
    let f = w.filter();
    let params = f.spec().params;
    let value = |field: InfoField| match field {
        InfoField::Capacity => Reply::count(params.capacity),
        InfoField::Size => Reply::count(f.bytes()),
        InfoField::Filters => Reply::count(f.live_slots(at).len() as u64),
        InfoField::Items => Reply::count(f.items(at)),
        // Fixed memory: like a non-scaling filter, no expansion.
        InfoField::Expansion => Reply::Null,
    };
    if args.count() == 3 {
        let token = args.arg(2);
        if let Some(field) = InfoField::parse(token) {
            return Reply::Field(field.label(), Box::new(value(field)));
        }
        return match WindowField::parse(token) {
            Some(field) => Reply::Field(
                field.label(),
                Box::new(match field {
                    WindowField::Window => {
                        Reply::Bulk(std::borrow::Cow::Owned(params.span.display().into_bytes()))
                    }
                    WindowField::Generations => Reply::count(u64::from(params.generations)),
                    WindowField::Epoch => Reply::count(at),
                    WindowField::Rotations => Reply::count(f.rotations()),
                    WindowField::Forgotten => Reply::count(f.forgotten()),
                    WindowField::ErrorRate => Reply::Double(params.error),
                }),
            ),
            None => CommandError::Static(bloom::INVALID_INFO_VALUE).into(),
        };
    }
    Reply::Map(
        InfoField::ALL
            .into_iter()
            .map(|field| (field.label(), value(field)))
            .collect(),
    )
}
