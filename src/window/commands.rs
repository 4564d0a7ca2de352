//! BF.* commands on windowed filters: BF.RESERVE and BF.INSERT with WINDOW
//! create one; BF.ADD, BF.MADD, BF.INSERT, BF.EXISTS, BF.MEXISTS, BF.CARD
//! and BF.INFO work on one with their usual grammar and reply shapes. The
//! FFI layer routes a BF.* command here when its key holds a windowed
//! filter, or when it asks for a new one (`grammar::asks_for_window`).
//!
//! Time: on the master, a write first moves the window to the epoch the
//! clock is in; what it propagates names that epoch (`AT`) and, for a
//! creation, when epoch 0 began (`ORIGIN`), so replicas and AOF replays
//! reach the same state whatever their clocks say. Reads look at the
//! window as the clock sees it, so items leave on time even on a key
//! nobody writes to.

use std::ffi::CStr;

use ferrobloom_core::window::{
    GrowError, Rotation, WindowCreateError, WindowFilter, WindowSizingError, WindowSpec,
    DEFAULT_GENERATIONS,
};

use super::grammar::{self, Creation, Given, Source, WindowDefaults};
use super::observe::late_by;
use super::replies;
use super::Window;
use crate::bloom::create::command_defaults;
use crate::bloom::grammar::InfoField;
use crate::bloom::replies as bloom;
use crate::command::{
    arity, ArgSource, Batch, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome,
    Propagation, Reply, RewriteArg,
};
use crate::guard;
use crate::notify::{Event, Events};

const KEY: RewriteArg = RewriteArg::Input(1);

/// The defaults of a creation: the settings' on the master, the built-in
/// ones for replicated and loaded commands (which spell out every option
/// anyway), as for plain filters.
fn window_defaults(env: &impl Env) -> WindowDefaults {
    WindowDefaults {
        chain: command_defaults(env),
        generations: if env.replicated_or_loading() {
            DEFAULT_GENERATIONS
        } else {
            env.settings().window_generations
        },
    }
}

/// The error reply for a window that cannot be shaped.
fn sizing_error(e: WindowSizingError) -> CommandError {
    CommandError::Static(match e {
        WindowSizingError::SpanTooShort => replies::SPAN_TOO_SHORT,
        WindowSizingError::Generations => replies::BAD_GENERATIONS,
        WindowSizingError::GenerationsOverItems => replies::GENERATIONS_OVER_ITEMS,
        WindowSizingError::Sizing(_) => replies::TOO_LARGE,
    })
}

/// A client's creation options must say what they mean: ORIGIN places a
/// time window's generations, and an item window has no clock.
fn check_creation(creation: &Creation, source: Source) -> Result<(), CommandError> {
    if !source.trusted && creation.given.has(Given::ORIGIN) && !creation.params.span.is_time() {
        return Err(CommandError::Static(replies::ORIGIN_NEEDS_TIME));
    }
    Ok(())
}

/// BF.INSERT's creation options on a key that holds a windowed filter
/// already: each option named must be what the filter has, or the add is
/// refused (as WINDOW is on a plain filter), so that nobody believes a
/// filter was made as asked when it was not.
fn check_matches(creation: &Creation, f: &WindowFilter) -> Result<(), CommandError> {
    let have = f.spec().params;
    let want = creation.params;
    let mismatch = [
        (
            Given::WINDOW,
            "WINDOW",
            want.span != have.span,
            have.span.display(),
        ),
        (
            Given::GENERATIONS,
            "GENERATIONS",
            want.generations != have.generations,
            have.generations.to_string(),
        ),
        (
            Given::POLICY,
            "POLICY",
            want.policy != have.policy,
            have.policy.name().to_string(),
        ),
        (
            Given::CAPACITY,
            "CAPACITY",
            want.capacity != have.capacity,
            have.capacity.to_string(),
        ),
        (
            Given::ERROR,
            "ERROR",
            want.error != have.error,
            have.error.to_string(),
        ),
        (
            Given::ORIGIN,
            "ORIGIN",
            creation.origin_ms != Some(f.origin_ms()),
            f.origin_ms().to_string(),
        ),
        (
            Given::NONSCALING,
            "NONSCALING",
            have.scaling,
            "not given (it scales)".to_string(),
        ),
    ]
    .into_iter()
    .find(|&(option, _, differs, _)| creation.given.has(option) && differs);
    match mismatch {
        Some((_, name, _, value)) => Err(CommandError::Text(format!(
            "ERR the key holds a windowed filter with {name} {value}: creation options apply only when creating a filter"
        ))),
        None => Ok(()),
    }
}

/// Creates a windowed filter in the empty key.
fn create<'k, E: Env>(
    key: &'k mut impl KeySlot<Window>,
    name: &[u8],
    creation: &Creation,
    env: &E,
    events: &mut Events,
) -> Result<&'k mut Window, CommandError> {
    check_creation(creation, Source::of(env))?;
    let spec = WindowSpec::new(&creation.params).map_err(sizing_error)?;
    let origin = creation.origin_ms.unwrap_or_else(|| env.now_ms());
    let filter = WindowFilter::new(
        spec,
        origin,
        &guard::CommandGuard::new(env, name, super::WHAT),
    )
    .map_err(|e| match e {
        WindowCreateError::Refused(refusal) => {
            events.add(Event::GuardRefused);
            CommandError::Text(guard::refusal_message(&refusal, env.memory()))
        }
        WindowCreateError::Alloc(e) => {
            events.add(Event::GuardRefused);
            CommandError::Text(guard::allocation_failed_message(e.bytes))
        }
        WindowCreateError::Sizing(_) => CommandError::Static(replies::TOO_LARGE),
    })?;
    let window = key
        .store(Window::new(filter))
        .ok_or(CommandError::Static(bloom::COULD_NOT_CREATE))?;
    events.add(Event::Created);
    Ok(window)
}

/// The creation options, spelled out for replicas and the AOF.
fn creation_args(w: &WindowFilter, out: &mut Vec<RewriteArg>) {
    let params = w.spec().params;
    out.extend([
        RewriteArg::text("WINDOW"),
        RewriteArg::text(params.span.display()),
        RewriteArg::text("GENERATIONS"),
        RewriteArg::text(params.generations),
        RewriteArg::text("POLICY"),
        RewriteArg::text(params.policy.name()),
        RewriteArg::text("ORIGIN"),
        RewriteArg::text(w.origin_ms()),
    ]);
    if !params.scaling {
        out.push(RewriteArg::text("NONSCALING"));
    }
}

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

/// The epoch a read sees: the clock's (never before the filter's own).
fn read_epoch(window: &Window, env: &impl Env) -> u64 {
    window.filter().epoch_at(env.now_ms())
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
    let propagate = if applied.is_empty() && !created {
        Propagation::Nothing
    } else if !created && !moved && applied.len() == items.len() {
        // A replica (or an AOF replay) holds the state this server had
        // before the command: every earlier move of the epoch went out
        // with its AT. When the clock did not move it now, the command as
        // sent reaches the same state there (an item window's epoch moves
        // with its adds alone, a replica's write without AT keeps its
        // epoch), and is the cheapest propagation on the hot path. Once
        // per generation, the write that moves the epoch names it.
        Propagation::Verbatim
    } else if applied.is_empty() {
        // Created, nothing added: the creation alone.
        let mut rewrite = vec![
            KEY,
            RewriteArg::text(window.filter().spec().params.error),
            RewriteArg::text(window.filter().spec().params.capacity),
        ];
        creation_args(window.filter(), &mut rewrite);
        Propagation::Rewrite {
            command: c"bf.reserve",
            args: rewrite,
        }
    } else {
        // key, 14 creation words at most, AT epoch ITEMS, the items.
        let mut rewrite = Vec::with_capacity(18 + applied.len());
        rewrite.push(KEY);
        if created {
            rewrite.push(RewriteArg::text("ERROR"));
            rewrite.push(RewriteArg::text(window.filter().spec().params.error));
            rewrite.push(RewriteArg::text("CAPACITY"));
            rewrite.push(RewriteArg::text(window.filter().spec().params.capacity));
            creation_args(window.filter(), &mut rewrite);
        }
        rewrite.push(RewriteArg::text("AT"));
        rewrite.push(RewriteArg::text(start_epoch));
        rewrite.push(RewriteArg::text("ITEMS"));
        rewrite.extend(applied.into_iter().map(RewriteArg::Input));
        Propagation::Rewrite {
            command: c"bf.insert",
            args: rewrite,
        }
    };
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
            Ok(window) => {
                let params = window.filter().spec().params;
                let mut rewrite = vec![
                    KEY,
                    RewriteArg::text(params.error),
                    RewriteArg::text(params.capacity),
                ];
                creation_args(window.filter(), &mut rewrite);
                Outcome {
                    reply: Reply::Ok,
                    propagate: Propagation::Rewrite {
                        command: c"bf.reserve",
                        args: rewrite,
                    },
                    events,
                }
            }
            Err(e) => Outcome {
                reply: Reply::Error(e),
                propagate: Propagation::Nothing,
                events,
            },
        }
    }
}

/// BF.ADD and BF.MADD on a windowed filter (routed here only when the key
/// holds one).
pub struct Add;

impl KeyedCommand for Add {
    const NAME: &'static CStr = c"bf.add";
    const WRITES: bool = true;
    type Value = Window;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 3, 3)
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
                add_items(window, args, 2..3, true, false, moved, env, events)
            }
            Err(e) => Outcome::error(e),
        }
    }
}

pub struct MAdd;

impl KeyedCommand for MAdd {
    const NAME: &'static CStr = c"bf.madd";
    const WRITES: bool = true;
    type Value = Window;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        match args.count() {
            3.. => Ok(()),
            _ => Err(CommandError::Arity),
        }
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
                add_items(
                    window,
                    args,
                    2..args.count(),
                    false,
                    false,
                    moved,
                    env,
                    events,
                )
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
                    Err(e) => {
                        return Outcome {
                            reply: Reply::Error(e),
                            propagate: Propagation::Nothing,
                            events,
                        }
                    }
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

/// A read command on a windowed filter.
macro_rules! window_read {
    ($type:ident, $name:literal, $min:expr, $max:expr, $run:expr) => {
        pub struct $type;

        impl KeyedCommand for $type {
            const NAME: &'static CStr = $name;
            const WRITES: bool = false;
            type Value = Window;
            type Request = ();

            fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
                arity(args, $min, $max)
            }

            fn run<'k>(
                (): (),
                args: &impl ArgSource,
                key: &'k mut impl KeySlot<Window>,
                env: &impl Env,
            ) -> Outcome<'k> {
                let key: &'k _ = key;
                Outcome::reply(match key.state().existing() {
                    Ok(window) => $run(args, window, read_epoch(window, env)),
                    Err(e) => Reply::Error(e),
                })
            }
        }
    };
}

window_read!(Exists, c"bf.exists", 3, 3, exists);
window_read!(MExists, c"bf.mexists", 3, usize::MAX, mexists);
window_read!(Card, c"bf.card", 2, 2, card);
window_read!(Info, c"bf.info", 2, 3, info);

/// BF.STATS on a windowed filter (`super::observe`).
pub struct Stats;

impl KeyedCommand for Stats {
    const NAME: &'static CStr = c"bf.stats";
    const WRITES: bool = false;
    type Value = Window;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 2, 2)
    }

    fn run<'k>(
        (): (),
        _: &impl ArgSource,
        key: &'k mut impl KeySlot<Window>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let key: &'k _ = key;
        Outcome::reply(match key.state().existing() {
            Ok(window) => super::observe::stats(window.filter(), env.now_ms()),
            Err(e) => Reply::Error(e),
        })
    }
}

fn exists(args: &impl ArgSource, w: &Window, at: u64) -> Reply<'static> {
    let f = w.filter();
    Reply::Bool(f.contains(f.hash(args.arg(2)), at))
}

fn mexists(args: &impl ArgSource, w: &Window, at: u64) -> Reply<'static> {
    let f = w.filter();
    let mut replies = Batch::with_capacity(args.count() - 2);
    for i in 2..args.count() {
        replies.push_bool(f.contains(f.hash(args.arg(i)), at));
    }
    Reply::Batch(replies)
}

fn card(_: &impl ArgSource, w: &Window, at: u64) -> Reply<'static> {
    Reply::count(w.filter().items(at))
}

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
fn info(args: &impl ArgSource, w: &Window, at: u64) -> Reply<'static> {
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

/// The BF.* commands windowed filters do not take (BF.DEBUG, BF.SCANDUMP,
/// BF.LOADCHUNK): a clear error instead of WRONGTYPE.
macro_rules! unsupported {
    ($type:ident, $name:literal, $writes:expr) => {
        pub struct $type;

        impl KeyedCommand for $type {
            const NAME: &'static CStr = $name;
            const WRITES: bool = $writes;
            type Value = Window;
            type Request = ();

            fn parse(_: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
                Ok(())
            }

            fn run<'k>(
                (): (),
                _: &impl ArgSource,
                _: &'k mut impl KeySlot<Window>,
                _: &impl Env,
            ) -> Outcome<'k> {
                Outcome::error(replies::UNSUPPORTED)
            }
        }
    };
}

unsupported!(Debug, c"bf.debug", false);
unsupported!(ScanDump, c"bf.scandump", false);
unsupported!(LoadChunk, c"bf.loadchunk", true);

/// BF.PLAN ... WINDOW: the shape and memory of a windowed filter, what a
/// plain filter holding one window's items would take, and what a steady
/// 2x and 10x the planned items per window would cost: memory when it
/// scales, the false positive rate with NONSCALING.
pub fn plan_reply(args: &impl ArgSource, env: &impl Env) -> Result<Reply<'static>, CommandError> {
    // BF.PLAN creates nothing: it plans with the local settings.
    let settings = env.settings();
    let creation = grammar::parse_plan(
        args,
        &WindowDefaults {
            chain: settings.creation_params(),
            generations: settings.window_generations,
        },
        Source::of(env),
    )?;
    let params = creation.params;
    let spec = WindowSpec::new(&params).map_err(sizing_error)?;
    let generation_span = match params.span {
        ferrobloom_core::window::Span::Time { .. } => ferrobloom_core::window::Span::Time {
            ms: spec.generation_span,
        },
        ferrobloom_core::window::Span::Items { .. } => ferrobloom_core::window::Span::Items {
            count: spec.generation_span,
        },
    };
    let plain = ferrobloom_core::LinkSpec::new(params.capacity, params.error, params.policy)
        .map(|l| l.bytes)
        .unwrap_or(0);
    let text = |s: String| Reply::Bulk(std::borrow::Cow::Owned(s.into_bytes()));
    Ok(Reply::Map(vec![
        (c"policy", text(params.policy.name().to_string())),
        (c"window", text(params.span.display())),
        (c"generations", Reply::count(u64::from(params.generations))),
        (c"generation_span", text(generation_span.display())),
        (c"generation_capacity", Reply::count(spec.link.entries)),
        (c"generation_error", Reply::Double(spec.generation_error)),
        (c"hashes", Reply::count(u64::from(spec.link.hashes))),
        (c"bit_arrays", Reply::count(u64::from(spec.slots))),
        (c"bytes", Reply::count(spec.bytes)),
        (c"fpr", Reply::Double(params.error)),
        (c"forgotten_late_by", text(late_by(&spec))),
        (c"plain_filter_bytes", Reply::count(plain)),
        (c"scaling", Reply::count(u64::from(params.scaling))),
        (c"burst_2x_bytes", Reply::count(spec.burst(2.0).bytes)),
        (c"burst_2x_fpr", Reply::Double(spec.burst(2.0).fpr)),
        (c"burst_10x_bytes", Reply::count(spec.burst(10.0).bytes)),
        (c"burst_10x_fpr", Reply::Double(spec.burst(10.0).fpr)),
    ]))
}
