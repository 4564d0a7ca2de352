//! CF.RESERVE, CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX, CF.DEL and
//! CF.COMPACT.

use std::ffi::CStr;

use ferrobloom_core::cuckoo::filter::{GrowError, InsertOutcome};
use ferrobloom_core::cuckoo::{CompactMode, CuckooHash, CuckooParams};

use super::create::create;
use super::grammar;
use super::replies;
use super::Cuckoo;
use crate::command::{
    arity, Applied, ArgSource, Batch, CommandError, Env, ItemOutcome, KeySlot, KeyState,
    KeyedCommand, Outcome, Reply,
};
use crate::guard::{self, CommandGuard};
use crate::metrics::TOTALS;
use crate::notify::{Event, Events};

/// The filter an add goes to: the key's, or a new one with `params` when
/// the key is empty. A client's add fails with `Maximum expansions reached`
/// when the filter already has `cf-max-expansions` sub-filters (checked
/// once, before any item, as RedisBloom does); an empty key is then left
/// empty, where RedisBloom leaves an empty filter behind that its replicas
/// never get. Commands from a master or an AOF are never refused: the
/// master decided.
fn filter_for_add<'k, E: Env>(
    key: &'k mut impl KeySlot<Cuckoo>,
    args: &impl ArgSource,
    params: &CuckooParams,
    env: &E,
    events: &mut Events,
) -> Result<&'k mut Cuckoo, CommandError> {
    let limit_reached = |sub_filters: u64| {
        sub_filters >= env.settings().cf_max_expansions && !env.replicated_or_loading()
    };
    match key.kind() {
        KeyState::Other => Err(CommandError::Static(replies::WRONGTYPE)),
        KeyState::Missing => {
            if limit_reached(1) {
                return Err(CommandError::Static(replies::MAX_EXPANSIONS));
            }
            create(key, args.arg(1), params, env, events)
        }
        KeyState::Held(()) => {
            let cuckoo = key.state_mut().existing()?;
            if limit_reached(cuckoo.filter().sub_filter_count()) {
                return Err(CommandError::Static(replies::MAX_EXPANSIONS));
            }
            Ok(cuckoo)
        }
    }
}

pub struct Reserve;

impl KeyedCommand for Reserve {
    const NAME: &'static CStr = c"cf.reserve";
    const WRITES: bool = true;
    type Value = Cuckoo;
    type Request = CuckooParams;

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<CuckooParams, CommandError> {
        grammar::parse_reserve(args)
    }

    fn run<'k>(
        params: CuckooParams,
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Cuckoo>,
        env: &impl Env,
    ) -> Outcome<'k> {
        match key.kind() {
            KeyState::Held(()) => return Outcome::error(replies::ITEM_EXISTS),
            KeyState::Other => return Outcome::error(replies::WRONGTYPE),
            KeyState::Missing => {}
        }
        let mut events = Events::default();
        match create(key, args.arg(1), &params, env, &mut events) {
            Ok(_) => Outcome::verbatim(Reply::Ok, events),
            Err(e) => Outcome::failed(e, events),
        }
    }
}

/// Records what an insert did; the reply is the caller's.
#[inline]
fn count_insert(outcome: InsertOutcome, events: &mut Events) {
    match outcome {
        InsertOutcome::Inserted => events.add(Event::CuckooAdded),
        InsertOutcome::Exists => {}
        InsertOutcome::NoRoom | InsertOutcome::GrowthFailed(_) => {
            TOTALS.cuckoo_insert_failures.incr();
            if let InsertOutcome::GrowthFailed(GrowError::Refused(_)) = outcome {
                events.add(Event::GuardRefused);
            }
        }
    }
}

/// The error of a single add that found no room.
fn insert_error(outcome: InsertOutcome, env: &impl Env) -> CommandError {
    match outcome {
        InsertOutcome::NoRoom => CommandError::Static(replies::FILTER_FULL),
        InsertOutcome::GrowthFailed(GrowError::Refused(refusal)) => {
            CommandError::Text(guard::growth_refusal_message(&refusal, env.memory()))
        }
        _ => CommandError::Static(replies::GROWTH_FAILED),
    }
}

/// Inserts one item (`unique`: unless it looks present), recording the
/// events; the sub-filters it added count as an expansion.
#[inline]
fn insert(
    cuckoo: &mut Cuckoo,
    item: &[u8],
    unique: bool,
    guard: &CommandGuard<'_, impl Env>,
    events: &mut Events,
) -> InsertOutcome {
    let h = CuckooHash::of(item);
    let before = cuckoo.filter().sub_filter_count();
    let outcome = cuckoo.update(|f| {
        if unique {
            f.insert_unique(h, guard)
        } else {
            f.insert(h, guard)
        }
    });
    events.add_if(
        cuckoo.filter().sub_filter_count() > before,
        Event::CuckooExpanded,
    );
    count_insert(outcome, events);
    outcome
}

/// CF.ADD (`UNIQUE` false) and CF.ADDNX (true).
pub struct Add<const UNIQUE: bool>;

impl<const UNIQUE: bool> KeyedCommand for Add<UNIQUE> {
    const NAME: &'static CStr = if UNIQUE { c"cf.addnx" } else { c"cf.add" };
    const WRITES: bool = true;
    type Value = Cuckoo;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 3, 3)
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Cuckoo>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let name = args.arg(1);
        let mut events = Events::default();
        let cuckoo = match filter_for_add(key, args, &CuckooParams::default(), env, &mut events) {
            Ok(c) => c,
            Err(e) => return Outcome::failed(e, events),
        };
        let guard = CommandGuard::new(env, name, super::WHAT);
        match insert(cuckoo, args.arg(2), UNIQUE, &guard, &mut events) {
            InsertOutcome::Inserted => Outcome::verbatim(Reply::Bool(true), events),
            InsertOutcome::Exists => Outcome::verbatim(Reply::Bool(false), events),
            failed => Outcome::failed(insert_error(failed, env), events),
        }
    }
}

/// CF.INSERT (`UNIQUE` false) and CF.INSERTNX (true).
pub struct Insert<const UNIQUE: bool>;

impl<const UNIQUE: bool> KeyedCommand for Insert<UNIQUE> {
    const NAME: &'static CStr = if UNIQUE { c"cf.insertnx" } else { c"cf.insert" };
    const WRITES: bool = true;
    type Value = Cuckoo;
    type Request = grammar::Insert;

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<grammar::Insert, CommandError> {
        grammar::parse_insert(args)
    }

    fn run<'k>(
        request: grammar::Insert,
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Cuckoo>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let name = args.arg(1);
        let mut events = Events::default();
        if request.nocreate {
            if let KeyState::Missing = key.kind() {
                return Outcome::error(replies::NOT_FOUND);
            }
        }
        let params = CuckooParams {
            capacity: request.capacity,
            ..CuckooParams::default()
        };
        let cuckoo = match filter_for_add(key, args, &params, env, &mut events) {
            Ok(c) => c,
            Err(e) => return Outcome::failed(e, events),
        };
        let guard = CommandGuard::new(env, name, super::WHAT);
        let from = request.items_from;
        let count = args.count() - from;
        let mut replies = Batch::with_capacity(count);
        let mut applied = Applied::default();
        let before = cuckoo.filter().sub_filter_count();
        // One update (and one recount of the totals) for the whole batch.
        cuckoo.update(|f| {
            f.insert_batch(
                count,
                UNIQUE,
                &guard,
                |j| CuckooHash::of(args.arg(from + j)),
                |j, inserted| {
                    count_insert(inserted, &mut events);
                    applied.record(from + j, item(inserted));
                    match inserted {
                        InsertOutcome::Inserted if UNIQUE => replies.push_int(1),
                        InsertOutcome::Inserted => replies.push_bool(true),
                        InsertOutcome::Exists => replies.push_int(0),
                        _ if UNIQUE => replies.push_int(-1),
                        _ => replies.push_no_room(),
                    }
                },
            )
        });
        events.add_if(
            cuckoo.filter().sub_filter_count() > before,
            Event::CuckooExpanded,
        );
        // After a failed item, the same command with its options (a
        // creation included: CAPACITY, and the defaults every server
        // shares) and only the items applied. The first item of a new
        // filter always fits, so a creating command always keeps one.
        let propagate = applied.propagation(Self::NAME_UPPER, 1..from, from, args.count());
        Outcome {
            reply: Reply::Batch(replies),
            propagate,
            events,
        }
    }
}

impl<const UNIQUE: bool> Insert<UNIQUE> {
    /// The name a rewrite is propagated under.
    const NAME_UPPER: &'static CStr = if UNIQUE { c"CF.INSERTNX" } else { c"CF.INSERT" };
}

/// What an insert did, as the propagation rule sees it. A failed insert
/// leaves the filter as it was (a failed kick-out is rolled back). Where
/// the filter's state alone decides the failure (no room without
/// expansion, a sub-filter past the largest size or count), a replica in
/// the same state fails the same way: the item is a no-op there, and the
/// command still goes out as received, as RedisBloom sends it. A growth
/// the memory guard or the allocator refused here would be made there.
fn item(outcome: InsertOutcome) -> ItemOutcome {
    match outcome {
        InsertOutcome::Inserted => ItemOutcome::Changed,
        InsertOutcome::Exists
        | InsertOutcome::NoRoom
        | InsertOutcome::GrowthFailed(GrowError::TooLarge | GrowError::TooMany) => {
            ItemOutcome::Unchanged
        }
        InsertOutcome::GrowthFailed(GrowError::Refused(_) | GrowError::Alloc(_)) => {
            ItemOutcome::Failed
        }
    }
}

pub struct Del;

impl KeyedCommand for Del {
    const NAME: &'static CStr = c"cf.del";
    const WRITES: bool = true;
    type Value = Cuckoo;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 3, 3)
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Cuckoo>,
        _: &impl Env,
    ) -> Outcome<'k> {
        let KeyState::Held(cuckoo) = key.state_mut() else {
            return Outcome::error(replies::DEL_NOT_FOUND);
        };
        let h = CuckooHash::of(args.arg(2));
        let before = cuckoo.filter().sub_filter_count();
        let deleted = cuckoo.update(|f| f.delete(h));
        let mut events = Events::default();
        if deleted {
            TOTALS.cuckoo_deletes.incr();
            events.add(Event::CuckooDeleted);
        }
        events.add_if(
            cuckoo.filter().sub_filter_count() < before,
            Event::CuckooCompacted,
        );
        // Replicated also when nothing was deleted, as RedisBloom does.
        Outcome::verbatim(Reply::Bool(deleted), events)
    }
}

pub struct Compact;

impl KeyedCommand for Compact {
    const NAME: &'static CStr = c"cf.compact";
    const WRITES: bool = true;
    type Value = Cuckoo;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 2, 2)
    }

    fn run<'k>(
        (): (),
        _: &impl ArgSource,
        key: &'k mut impl KeySlot<Cuckoo>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let KeyState::Held(cuckoo) = key.state_mut() else {
            return Outcome::error(replies::COMPACT_NOT_FOUND);
        };
        // RedisBloom 2.8.2 compacts there, and the replica's buckets then
        // differ from its master's.
        if env.client_on_read_only_replica() {
            return Outcome::error(replies::READ_ONLY_REPLICA);
        }
        cuckoo.update(|f| f.compact(CompactMode::Continue));
        Outcome::verbatim(Reply::Ok, Events::of(&[Event::CuckooCompacted]))
    }
}
