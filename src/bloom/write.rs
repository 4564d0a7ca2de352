//! BF.RESERVE, BF.ADD, BF.MADD, BF.INSERT.

use ferrobloom_core::{AddOutcome, AllocGuard, ChainParams};

use super::create::{self, command_defaults, guard_for};
use super::filter::{Changes, Filter};
use super::grammar;
use super::propagate;
use super::replies;
use crate::command::Applied;
use crate::command::{
    arity, ArgSource, Batch, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome, Reply,
};
use crate::guard;
use crate::notify::{Event, Events};

pub struct Reserve;

impl KeyedCommand for Reserve {
    const NAME: &'static std::ffi::CStr = c"bf.reserve";
    const WRITES: bool = true;
    type Value = Filter;
    /// The request, and the defaults it was read with.
    type Request = (grammar::Reserve, ChainParams);

    fn parse(args: &impl ArgSource, env: &impl Env) -> Result<Self::Request, CommandError> {
        let defaults = command_defaults(env);
        Ok((grammar::parse_reserve(args, &defaults)?, defaults))
    }

    fn run<'k>(
        (parsed, defaults): Self::Request,
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Filter>,
        env: &impl Env,
    ) -> Outcome<'k> {
        match key.state() {
            KeyState::Held(_) => return Outcome::error(replies::ITEM_EXISTS),
            KeyState::Other => return Outcome::error(replies::WRONGTYPE),
            KeyState::Missing => {}
        }
        let mut events = Events::default();
        match create::create(key, args.arg(1), &parsed.params, env, &mut events) {
            Ok(_) => Outcome {
                reply: Reply::Ok,
                propagate: propagate::reserve(args, &parsed, &defaults),
                events,
            },
            Err(e) => Outcome::failed(e, events),
        }
    }
}

/// The filter an add goes to: existing, or created with the defaults
/// (returned, for propagation).
#[inline]
fn existing_or_default<'k, E: Env>(
    key: &'k mut impl KeySlot<Filter>,
    name: &[u8],
    env: &E,
    events: &mut Events,
) -> Result<(&'k mut Filter, Option<ChainParams>), CommandError> {
    match key.kind() {
        KeyState::Held(()) => Ok((key.state_mut().existing()?, None)),
        KeyState::Other => Err(CommandError::Static(replies::WRONGTYPE)),
        KeyState::Missing => {
            let params = command_defaults(env);
            let filter = create::create(key, name, &params, env, events)?;
            Ok((filter, Some(params)))
        }
    }
}

#[inline]
fn record(changes: Changes, events: &mut Events) {
    events.add_if(changes.scaled, Event::Scaled);
    events.add_if(changes.crossings.warning, Event::FillWarning);
    events.add_if(changes.crossings.alert, Event::FillAlert);
}

/// The reply to one add, and whether the batch goes on (RedisBloom stops
/// at a full non-scaling filter).
#[inline(always)]
fn add_reply(
    outcome: AddOutcome,
    events: &mut Events,
    env: &impl Env,
) -> (Result<bool, CommandError>, bool) {
    let reply = match outcome {
        AddOutcome::Added => {
            events.add(Event::Added);
            Ok(true)
        }
        AddOutcome::Present => Ok(false),
        AddOutcome::Full => return (Err(replies::NONSCALING_FULL.into()), false),
        AddOutcome::ScaleFailed => Err(replies::PROBLEM_INSERTING.into()),
        // RedisBloom's words for a scale-out that failed, then the guard's
        // numbers.
        AddOutcome::ScaleRefused(refusal) => {
            events.add(Event::GuardRefused);
            Err(CommandError::Text(guard::refusal_reply(
                replies::PROBLEM_INSERTING,
                &refusal,
                env.memory(),
            )))
        }
    };
    (reply, true)
}

/// BF.ADD (`MANY` false: one item, a lone boolean) and BF.MADD (true: an
/// array of replies).
pub struct Adds<const MANY: bool>;
pub type Add = Adds<false>;
pub type MAdd = Adds<true>;

impl<const MANY: bool> KeyedCommand for Adds<MANY> {
    const NAME: &'static std::ffi::CStr = if MANY { c"bf.madd" } else { c"bf.add" };
    const WRITES: bool = true;
    type Value = Filter;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 3, if MANY { usize::MAX } else { 3 })
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Filter>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let name = args.arg(1);
        let mut events = Events::default();
        let (filter, created_with) = match existing_or_default(key, name, env, &mut events) {
            Ok(found) => found,
            Err(e) => return Outcome::failed(e, events),
        };
        let guard = guard_for(env, name);
        let (reply, applied) = if MANY {
            add_items(filter, args, 2, &guard, &mut events, env)
        } else {
            add_one(filter, args.arg(2), &guard, &mut events, env)
        };
        Outcome {
            reply,
            propagate: propagate::adds(args.count(), 2, &applied, created_with.as_ref()),
            events,
        }
    }
}

/// Adds BF.ADD's item (argument 2): the lone boolean or error, and whether
/// it changed the filter.
#[inline(always)]
fn add_one(
    filter: &mut Filter,
    item: &[u8],
    guard: &dyn AllocGuard,
    events: &mut Events,
    env: &impl Env,
) -> (Reply<'static>, Applied) {
    let (outcome, changes) = filter.add(filter.hash(item), guard);
    record(changes, events);
    let reply = match add_reply(outcome, events, env).0 {
        Ok(added) => Reply::Bool(added),
        Err(e) => Reply::Error(e),
    };
    let mut applied = Applied::default();
    applied.record(2, propagate::item(outcome));
    (reply, applied)
}

/// Adds the items from argument `from` on, in order, stopping after a
/// "full" error as RedisBloom does: the array of replies, and which items
/// changed the filter.
fn add_items(
    filter: &mut Filter,
    args: &impl ArgSource,
    from: usize,
    guard: &dyn AllocGuard,
    events: &mut Events,
    env: &impl Env,
) -> (Reply<'static>, Applied) {
    let count = args.count() - from;
    let mut replies = Batch::with_capacity(count);
    let mut applied = Applied::default();
    // The common case: the whole batch fits in the newest link, and each
    // reply is built inside the pipeline, while later items' cache lines are
    // on their way.
    let pipelined = filter.add_pipelined(
        count,
        |j| args.arg(from + j),
        |i, outcome| {
            applied.record(from + i, propagate::item(outcome));
            replies.push(add_reply(outcome, events, env).0);
        },
    );
    match pipelined {
        Some(changes) => record(changes, events),
        None => {
            for j in 0..count {
                let (outcome, changes) = filter.add(filter.hash(args.arg(from + j)), guard);
                record(changes, events);
                applied.record(from + j, propagate::item(outcome));
                let (reply, go_on) = add_reply(outcome, events, env);
                replies.push(reply);
                if !go_on {
                    break;
                }
            }
        }
    }
    (Reply::Batch(replies), applied)
}

pub struct Insert;

impl KeyedCommand for Insert {
    const NAME: &'static std::ffi::CStr = c"bf.insert";
    const WRITES: bool = true;
    type Value = Filter;
    type Request = grammar::Insert;

    fn parse(args: &impl ArgSource, env: &impl Env) -> Result<grammar::Insert, CommandError> {
        grammar::parse_insert(args, &command_defaults(env))
    }

    fn run<'k>(
        parsed: grammar::Insert,
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Filter>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let name = args.arg(1);
        let mut events = Events::default();
        let params = parsed.params;
        let mut created = false;
        let filter = match key.state_mut() {
            KeyState::Held(filter) => filter,
            KeyState::Other => return Outcome::error(replies::WRONGTYPE),
            KeyState::Missing if parsed.nocreate => return Outcome::error(replies::NOT_FOUND),
            KeyState::Missing => match create::create(key, name, &params, env, &mut events) {
                Ok(filter) => {
                    created = true;
                    filter
                }
                Err(e) => return Outcome::failed(e, events),
            },
        };
        let from = parsed.items_from;
        let guard = guard_for(env, name);
        let (reply, applied) = add_items(filter, args, from, &guard, &mut events, env);
        // An explicit creation replicates verbatim when nothing failed;
        // after a failure it is spelled out like any other.
        let spelled = created
            && (applied.first_failure.is_some() || !propagate::insert_is_explicit(args, &params));
        Outcome {
            reply,
            propagate: propagate::adds(args.count(), from, &applied, spelled.then_some(&params)),
            events,
        }
    }
}
