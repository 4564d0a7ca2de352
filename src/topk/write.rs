//! TOPK.RESERVE, TOPK.ADD and TOPK.INCRBY.
//!
//! ADD goes to replicas and the AOF as received whenever the key check
//! passed, as 2.8.2 sends it; INCRBY too when every increment was good,
//! and otherwise as a TOPK.INCRBY of the pairs applied (nothing when none
//! was): what goes out is what this server applied. The decay's coin is a
//! function of the item, the bucket and its count
//! (`ferrobloom_core::topk::decay`), so a replica, an AOF replay or a
//! reloaded sketch decides as this server did.

use std::ffi::CStr;

use ferrobloom_core::topk::AddError;

use super::create::create;
use super::{grammar, replies, TopKey};
use crate::command::{
    ArgSource, Batch, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome, Propagation,
    Reply, RewriteArg,
};
use crate::notify::{Event, Events};

pub struct Reserve;

impl KeyedCommand for Reserve {
    const NAME: &'static CStr = c"topk.reserve";
    const WRITES: bool = true;
    type Value = TopKey;
    type Request = ();

    /// Only the count: `key already exists` comes before the other
    /// arguments (spec §4.2).
    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        grammar::reserve_arity(args)
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<TopKey>,
        env: &impl Env,
    ) -> Outcome<'k> {
        // A key of any type, a string too.
        if !matches!(key.kind(), KeyState::Missing) {
            return Outcome::error(replies::KEY_EXISTS);
        }
        let params = match grammar::parse_reserve(args) {
            Ok(params) => params,
            Err(e) => return Outcome::error(e),
        };
        let mut events = Events::default();
        match create(key, args.arg(1), params, env, &mut events) {
            Ok(_) => Outcome::verbatim(Reply::Ok, events),
            Err(e) => Outcome::failed(e, events),
        }
    }
}

/// The sketch of an ADD or INCRBY, or the key's error.
fn existing<'k>(key: &'k mut impl KeySlot<TopKey>) -> Result<&'k mut TopKey, Outcome<'k>> {
    match key.state_mut() {
        KeyState::Held(s) => Ok(s),
        KeyState::Missing => Err(Outcome::error(replies::KEY_DOES_NOT_EXIST)),
        KeyState::Other => Err(Outcome::error(replies::WRONGTYPE)),
    }
}

/// One element of ADD's and INCRBY's reply: the item the add expelled
/// from the list, whole (2.8.2 cuts it at its first NUL), or null. The
/// elements go to a reused batch buffer: an add of one item, the common
/// call, allocates nothing for its reply.
fn expelled(result: Result<Option<Box<[u8]>>, AddError>, reply: &mut Batch, events: &mut Events) {
    match result {
        Ok(Some(item)) => {
            events.add(Event::TopkExpelled);
            reply.push_bytes(item);
        }
        Ok(None) => reply.push_null(),
        Err(AddError::ItemTooLong) => reply.push_error(replies::ITEM_TOO_LONG.into()),
    }
}

pub struct Add;

impl KeyedCommand for Add {
    const NAME: &'static CStr = c"topk.add";
    const WRITES: bool = true;
    type Value = TopKey;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        grammar::add_arity(args)
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<TopKey>,
        _: &impl Env,
    ) -> Outcome<'k> {
        let sketch = match existing(key) {
            Ok(s) => s,
            Err(outcome) => return outcome,
        };
        let mut events = Events::default();
        events.add(Event::TopkAdded);
        let mut elements = Batch::with_capacity(args.count() - 2);
        for i in 2..args.count() {
            expelled(sketch.incrby(args.arg(i), 1), &mut elements, &mut events);
        }
        Outcome::verbatim(Reply::Batch(elements), events)
    }
}

pub struct IncrBy;

impl KeyedCommand for IncrBy {
    const NAME: &'static CStr = c"topk.incrby";
    const WRITES: bool = true;
    type Value = TopKey;
    type Request = ();

    /// Only the count: the key is checked before any increment (§4.5).
    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        grammar::incrby_arity(args)
    }

    /// The pairs apply in order until the first bad increment, as in
    /// 2.8.2; that pair and every later one answer the increment error, so
    /// the reply has the element count its header announces (2.8.2 stops
    /// writing and the client reads the next reply as the missing ones).
    /// Replicas and the AOF get the applied pairs alone (2.8.2 sends the
    /// command as received, which a replica applies up to the same pair).
    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<TopKey>,
        _: &impl Env,
    ) -> Outcome<'k> {
        let sketch = match existing(key) {
            Ok(s) => s,
            Err(outcome) => return outcome,
        };
        let pairs = (args.count() - 2) / 2;
        let mut events = Events::default();
        let mut elements = Batch::with_capacity(pairs);
        let mut propagate = Propagation::Verbatim;
        for p in 0..pairs {
            let at = 2 + 2 * p;
            let Some(incr) = grammar::increment(args, at + 1) else {
                for _ in p..pairs {
                    elements.push_error(replies::BAD_INCREMENT.into());
                }
                propagate = applied_prefix(p);
                break;
            };
            events.add(Event::TopkAdded);
            expelled(
                sketch.incrby(args.arg(at), incr),
                &mut elements,
                &mut events,
            );
        }
        Outcome {
            reply: Reply::Batch(elements),
            propagate,
            events,
        }
    }
}

/// What a TOPK.INCRBY whose pair `bad` (0-based) had a bad increment
/// applied: the pairs before it, as a TOPK.INCRBY of those alone, or
/// nothing when it was the first. The pairs apply in order and stop there,
/// so the prefix is exactly what changed the sketch.
fn applied_prefix(bad: usize) -> Propagation {
    if bad == 0 {
        return Propagation::Nothing;
    }
    let mut args = Vec::with_capacity(1 + 2 * bad);
    args.push(RewriteArg::Input(1));
    args.extend((2..2 + 2 * bad).map(RewriteArg::Input));
    Propagation::Rewrite {
        command: c"TOPK.INCRBY",
        args,
    }
}
