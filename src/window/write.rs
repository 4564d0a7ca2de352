//! BF.RESERVE and BF.INSERT with WINDOW create a windowed filter; BF.ADD,
//! BF.MADD and BF.INSERT add to one with their usual grammar and reply
//! shapes. The FFI layer routes a BF.* command here when its key holds a
//! windowed filter, or when it asks for a new one
//! (`grammar::asks_for_window`).
//!
//! Time: on the master, a write first moves the window to the epoch the
//! clock is in; what it propagates names that epoch (`AT`) and, for a
//! creation, when epoch 0 began (`ORIGIN`), so replicas and AOF replays
//! reach the same state whatever their clocks say.

use std::ffi::CStr;

use ferrobloom_core::window::{GrowError, Rotation};

use super::create::{check_matches, create, window_defaults};
use super::grammar::{self, Creation, Source};
use super::propagate;
use super::replies;
use super::Window;
use crate::bloom::replies as bloom;
use crate::command::{
    arity, ArgSource, Batch, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome, Reply,
};
use crate::guard;
use crate::notify::{Event, Events};

/// Moves a window before a write: to the epoch a master or an AOF named,
/// else (a client's write) to the epoch the clock is in. A write from a
/// master or an AOF without AT keeps the epoch: only the master's clock
/// decides. Also answers whether the epoch moved.
fn advance(window: &mut Window, at: Option<u64>, env: &impl Env) -> (Events, bool) {
    let before = window.filter().epoch();
    let epoch = match at {
        Some(epoch) => epoch,
        None if env.replicated_or_loading() => return (Events::default(), false),
        None => window.filter().epoch_at(env.now_ms()),
    };
    let events = rotation_events(&window.rotate_to(epoch));
    (events, window.filter().epoch() != before)
}

/// `bf.rotate` when generations left the window.
fn rotation_events(rotation: &Rotation) -> Events {
    let mut events = Events::default();
    events.add_if(rotation.retired > 0, Event::Rotated);
    events
}

/// Adds the items at argument indices `items`; replies one boolean each
/// (`single`: a lone boolean, BF.ADD's shape), or an error for an item
/// whose generation could not grow. Propagates the adds applied: as sent
/// when that reproduces them, else with their epoch, after the creation
/// options when the key was just made.
#[allow(clippy::too_many_arguments)]
fn add_items<'k>(
    window: &mut Window,
    args: &impl ArgSource,
    items: std::ops::Range<usize>,
    single: bool,
    created: bool,
    moved: bool,
    env: &impl Env,
    mut events: Events,
) -> Outcome<'k> {
    // An item window rotates as its items arrive: the adds began in this
    // epoch, which is where a replica must begin them too.
    let start_epoch = window.filter().epoch();
    let guard = guard::CommandGuard::new(env, args.arg(1), super::WHAT);
    let mut replies = Batch::with_capacity(items.len());
    let mut last = Ok(false);
    let mut applied = Vec::with_capacity(items.len());
    let mut any_new = false;
    for i in items.clone() {
        let h = window.filter().hash(args.arg(i));
        last = match window.add(h, &guard) {
            Ok(added) => {
                events.add_if(added.rotation.retired > 0, Event::Rotated);
                any_new |= added.new;
                applied.push(i);
                Ok(added.new)
            }
            Err(e) => {
                events.add(Event::GuardRefused);
                Err(growth_error(e, env))
            }
        };
        if !single {
            replies.push(std::mem::replace(&mut last, Ok(false)));
        }
    }
    events.add_if(any_new, Event::Added);
    let crossings = window.refresh();
    events.add_if(crossings.warning, Event::FillWarning);
    events.add_if(crossings.alert, Event::FillAlert);
    let propagate = propagate::adds(
        window.filter(),
        applied,
        items.len(),
        created,
        moved,
        start_epoch,
    );
    let reply = if single {
        match last {
            Ok(new) => Reply::Bool(new),
            Err(e) => Reply::Error(e),
        }
    } else {
        Reply::Batch(replies)
    };
    Outcome {
        reply,
        propagate,
        events,
    }
}

/// The error of an add whose generation could not grow: RedisBloom's
/// words for a scale-out that failed, then why.
fn growth_error(e: GrowError, env: &impl Env) -> CommandError {
    CommandError::Text(match e {
        GrowError::Refused(refusal) => {
            guard::refusal_reply(bloom::PROBLEM_INSERTING, &refusal, env.memory())
        }
        GrowError::Alloc(e) => guard::allocation_failed_reply(bloom::PROBLEM_INSERTING, e.bytes),
        GrowError::TooLarge => format!(
            "{}: the generation has grown its {} bit arrays, the most it may",
            bloom::PROBLEM_INSERTING.to_string_lossy(),
            ferrobloom_core::window::MAX_GROWN_LINKS
        ),
    })
}

pub struct Reserve;

impl KeyedCommand for Reserve {
    const NAME: &'static CStr = c"bf.reserve";
    const WRITES: bool = true;
    type Value = Window;
    type Request = Creation;

    fn parse(args: &impl ArgSource, env: &impl Env) -> Result<Creation, CommandError> {
        grammar::parse_reserve(args, &window_defaults(env), Source::of(env))
    }

    fn claims_new_key(args: &impl ArgSource) -> bool {
        grammar::asks_for_window(args)
    }

    fn run<'k>(
        creation: Creation,
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Window>,
        env: &impl Env,
    ) -> Outcome<'k> {
        // Any existing key, windowed or not, is RedisBloom's "item exists".
        if !matches!(key.kind(), KeyState::Missing) {
            return Outcome::error(bloom::ITEM_EXISTS);
        }
        let mut events = Events::default();
        match create(key, args.arg(1), &creation, env, &mut events) {
            Ok(window) => Outcome {
                reply: Reply::Ok,
                propagate: propagate::reserve(window.filter()),
                events,
            },
            Err(e) => Outcome::failed(e, events),
        }
    }
}

/// BF.ADD (`MANY` false: one item, a lone boolean) and BF.MADD (true: an
/// array of replies) on a windowed filter (routed here only when the key
/// holds one).
pub struct Adds<const MANY: bool>;
pub type Add = Adds<false>;
pub type MAdd = Adds<true>;

impl<const MANY: bool> KeyedCommand for Adds<MANY> {
    const NAME: &'static CStr = if MANY { c"bf.madd" } else { c"bf.add" };
    const WRITES: bool = true;
    type Value = Window;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 3, if MANY { usize::MAX } else { 3 })
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Window>,
        env: &impl Env,
    ) -> Outcome<'k> {
        match key.state_mut().existing() {
            Ok(window) => {
                let (events, moved) = advance(window, None, env);
                let items = 2..args.count();
                add_items(window, args, items, !MANY, false, moved, env, events)
            }
            Err(e) => Outcome::error(e),
        }
    }
}

pub struct Insert;

impl KeyedCommand for Insert {
    const NAME: &'static CStr = c"bf.insert";
    const WRITES: bool = true;
    type Value = Window;
    type Request = grammar::Insert;

    fn parse(args: &impl ArgSource, env: &impl Env) -> Result<grammar::Insert, CommandError> {
        grammar::parse_insert(args, &window_defaults(env), Source::of(env))
    }

    fn claims_new_key(args: &impl ArgSource) -> bool {
        grammar::asks_for_window(args)
    }

    fn run<'k>(
        request: grammar::Insert,
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Window>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let mut events = Events::default();
        let (window, created) = match key.kind() {
            KeyState::Held(()) => match key.state_mut().existing() {
                Ok(window) => {
                    // A master's or an AOF's add is never refused.
                    if let (Some(creation), false) =
                        (&request.creation, env.replicated_or_loading())
                    {
                        if let Err(e) = check_matches(creation, window.filter()) {
                            return Outcome::error(e);
                        }
                    }
                    (window, false)
                }
                Err(e) => return Outcome::error(e),
            },
            KeyState::Other if request.creation.is_some() => {
                return Outcome::error(replies::NOT_WINDOWED)
            }
            KeyState::Other => return Outcome::error(bloom::WRONGTYPE),
            KeyState::Missing if request.nocreate => return Outcome::error(bloom::NOT_FOUND),
            KeyState::Missing => {
                let Some(creation) = request.creation else {
                    return Outcome::error(bloom::NOT_FOUND);
                };
                match create(key, args.arg(1), &creation, env, &mut events) {
                    Ok(window) => (window, true),
                    Err(e) => return Outcome::failed(e, events),
                }
            }
        };
        let (advanced, moved) = advance(window, request.at, env);
        events.merge(advanced);
        add_items(
            window,
            args,
            request.items_from..args.count(),
            false,
            created,
            moved,
            env,
            events,
        )
    }
}
