//! Argument grammars of the windowed forms of BF.RESERVE and BF.INSERT.
//!
//! ```text
//! BF.RESERVE key error_rate capacity WINDOW span [GENERATIONS n]
//!            [POLICY exact|pow2] [ORIGIN ms] [NONSCALING]
//! BF.INSERT key [CAPACITY c] [ERROR e] [WINDOW span] [GENERATIONS n]
//!           [POLICY p] [ORIGIN ms] [AT epoch] [NOCREATE] [NONSCALING]
//!           ITEMS item...
//! ```
//!
//! Options are whole words in any case and order. A time window's
//! generation that receives more than its share grows a larger bit array
//! (each twice the last, as a scaling filter's links); NONSCALING keeps
//! the memory fixed at creation instead. EXPANSION is refused: growth is
//! always by 2.
//! ORIGIN (when epoch 0 began, ms of the master's clock) and AT (the epoch
//! an add happens in) are what a master spells out for its replicas and
//! AOF, so that they apply exactly what it did whatever their clocks say.
//! AT is accepted only from them ([`Source::trusted`]): a client that
//! could name an epoch could move a window's clock for everyone. A
//! client's ORIGIN may not be ahead of the server's clock (by more than
//! [`MAX_ORIGIN_AHEAD_MS`]). Every option may be given once.

use ferrobloom_core::window::{Span, WindowParams, MAX_GENERATIONS};
use ferrobloom_core::{ChainParams, Policy};

use super::replies;
use crate::bloom::replies as bloom;
use crate::command::{ArgSource, CommandError};

/// Whether BF.PLAN plans a windowed filter: a WINDOW word among its
/// options.
pub fn plans_a_window(args: &impl ArgSource) -> bool {
    (3..args.count()).any(|i| args.arg(i).eq_ignore_ascii_case(b"WINDOW"))
}

/// Whether a BF.RESERVE or BF.INSERT asks for a windowed filter: a WINDOW
/// word after the key (for BF.INSERT, before ITEMS).
pub fn asks_for_window(args: &impl ArgSource) -> bool {
    (2..args.count())
        .take_while(|&i| !args.arg(i).eq_ignore_ascii_case(b"ITEMS"))
        .any(|i| args.arg(i).eq_ignore_ascii_case(b"WINDOW"))
}

/// Creation parameters of a windowed filter, and where its epoch 0 began
/// (None: now).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Creation {
    pub params: WindowParams,
    pub origin_ms: Option<u64>,
    /// The options the command named (an existing filter must match them).
    pub given: Given,
}

/// What a windowed filter gets where the command does not say: the plain
/// filters' creation defaults and the configured number of generations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowDefaults {
    pub chain: ChainParams,
    pub generations: u32,
}

/// Who sent the command, and when: the clock options (`AT`, an `ORIGIN`
/// ahead of the clock) belong to what a master propagates and an AOF
/// replays, never to a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    /// From the master's stream or an AOF being loaded.
    pub trusted: bool,
    /// The local clock (ms).
    pub now_ms: u64,
}

impl Source {
    pub fn of(env: &impl crate::command::Env) -> Source {
        Source {
            trusted: env.replicated_or_loading(),
            now_ms: env.now_ms(),
        }
    }
}

/// How far ahead of the server's clock a client's `ORIGIN` may be: the
/// skew between a client's clock and the server's (a client that names
/// "now" by its own clock). A later origin would stretch the first
/// generation, keeping its items past the window by as much. A master's
/// creations are never refused: a replica whose clock lags its master's
/// sees the master's `ORIGIN` in its future, and applies it.
pub const MAX_ORIGIN_AHEAD_MS: u64 = 1_000;

/// The latest epoch an `AT` may name. A loaded filter's epoch may be up
/// to `u64::MAX / 4`; an item window moves on one epoch per generation of
/// adds, so starting from here it would take some 2^61 adds to reach it.
pub const MAX_EPOCH: u64 = u64::MAX / 8;

/// The options both grammars share, read one at a time.
struct Options {
    span: Option<Span>,
    generations: u32,
    policy: Policy,
    origin_ms: Option<u64>,
    at: Option<u64>,
    nonscaling: bool,
    /// Options given, in the order of [`Given`]'s bits.
    given: Given,
    source: Source,
}

/// Which options a command named (each at most once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Given(u16);

impl Given {
    pub const WINDOW: u16 = 1 << 0;
    pub const GENERATIONS: u16 = 1 << 1;
    pub const POLICY: u16 = 1 << 2;
    pub const ORIGIN: u16 = 1 << 3;
    pub const AT: u16 = 1 << 4;
    pub const NONSCALING: u16 = 1 << 5;
    pub const CAPACITY: u16 = 1 << 6;
    pub const ERROR: u16 = 1 << 7;
    pub const NOCREATE: u16 = 1 << 8;

    pub fn has(self, option: u16) -> bool {
        self.0 & option != 0
    }

    /// Records `option`; an option named twice is an error, never a
    /// silent choice of one of the two.
    fn mark(&mut self, option: u16, name: &[u8]) -> Result<(), CommandError> {
        if self.has(option) {
            return Err(CommandError::Text(format!(
                "ERR {} is given more than once",
                String::from_utf8_lossy(name).to_ascii_uppercase()
            )));
        }
        self.0 |= option;
        Ok(())
    }
}

impl Options {
    /// The window these options describe, of `capacity` items at `error`
    /// over `span`.
    fn creation(&self, error: f64, capacity: u64, span: Span) -> Creation {
        Creation {
            params: WindowParams {
                error,
                capacity,
                span,
                generations: self.generations,
                policy: self.policy,
                scaling: !self.nonscaling,
            },
            origin_ms: self.origin_ms,
            given: self.given,
        }
    }

    fn new(defaults: &WindowDefaults, source: Source) -> Self {
        Options {
            span: None,
            generations: defaults.generations,
            policy: defaults.chain.policy,
            origin_ms: None,
            at: None,
            nonscaling: false,
            given: Given::default(),
            source,
        }
    }

    /// Reads the option at `i` (if it is one of the shared options);
    /// returns the index after it.
    fn read(&mut self, args: &impl ArgSource, i: usize) -> Result<Option<usize>, CommandError> {
        let token = args.arg(i);
        let value = (i + 1 < args.count()).then(|| args.arg(i + 1));
        let is = |name: &[u8]| token.eq_ignore_ascii_case(name);
        if is(b"WINDOW") {
            self.given.mark(Given::WINDOW, token)?;
            let text = value.ok_or(CommandError::Static(replies::BAD_SPAN))?;
            let span = Span::parse(text).map_err(|e| CommandError::Text(e.message().into()))?;
            self.span = Some(span);
        } else if is(b"GENERATIONS") {
            self.given.mark(Given::GENERATIONS, token)?;
            self.generations = value
                .and_then(|_| args.int(i + 1))
                .filter(|g| (1..=i64::from(MAX_GENERATIONS)).contains(g))
                .ok_or(CommandError::Static(replies::BAD_GENERATIONS))?
                as u32;
        } else if is(b"POLICY") {
            self.given.mark(Given::POLICY, token)?;
            self.policy = value
                .and_then(Policy::parse)
                .ok_or(CommandError::Static(bloom::BAD_POLICY))?;
        } else if is(b"ORIGIN") {
            self.given.mark(Given::ORIGIN, token)?;
            let ms = value
                .and_then(|_| args.int(i + 1))
                .filter(|&ms| ms >= 0)
                .ok_or(CommandError::Static(replies::BAD_ORIGIN))? as u64;
            if !self.source.trusted && ms > self.source.now_ms.saturating_add(MAX_ORIGIN_AHEAD_MS) {
                return Err(CommandError::Text(format!(
                    "ERR ORIGIN {ms} is in the future (the server's clock says {}): a window's first generation must not begin later than now",
                    self.source.now_ms
                )));
            }
            self.origin_ms = Some(ms);
        } else if is(b"AT") && self.source.trusted {
            // The epoch a master's add went to: only its stream and the
            // AOF name it. From a client it is an unknown option.
            self.given.mark(Given::AT, token)?;
            self.at = Some(
                value
                    .and_then(|_| args.int(i + 1))
                    .filter(|&e| e >= 0 && e as u64 <= MAX_EPOCH)
                    .ok_or(CommandError::Static(replies::BAD_AT))? as u64,
            );
        } else if is(b"EXPANSION") {
            return Err(CommandError::Static(replies::NO_EXPANSION));
        } else if is(b"NONSCALING") {
            self.given.mark(Given::NONSCALING, token)?;
            self.nonscaling = true;
            return Ok(Some(i + 1));
        } else {
            return Ok(None);
        }
        Ok(Some(i + 2))
    }
}

/// A parsed windowed BF.RESERVE.
pub fn parse_reserve(
    args: &impl ArgSource,
    defaults: &WindowDefaults,
    source: Source,
) -> Result<Creation, CommandError> {
    if args.count() < 6 {
        return Err(CommandError::Arity);
    }
    // The error rate and capacity are checked first, as for any filter.
    let error = args
        .double(2)
        .ok_or(CommandError::Static(bloom::BAD_ERROR_RATE))?;
    if !(error > 0.0 && error < 1.0) {
        return Err(CommandError::Static(bloom::ERROR_RATE_RANGE));
    }
    let capacity = args
        .int(3)
        .ok_or(CommandError::Static(bloom::BAD_CAPACITY))?;
    if capacity <= 0 {
        return Err(CommandError::Static(bloom::CAPACITY_RANGE));
    }
    let mut options = Options::new(defaults, source);
    let mut i = 4;
    while i < args.count() {
        i = options
            .read(args, i)?
            .ok_or(CommandError::Static(replies::UNKNOWN_OPTION))?;
    }
    if options.at.is_some() {
        return Err(CommandError::Static(replies::UNKNOWN_OPTION));
    }
    let span = options
        .span
        .ok_or(CommandError::Static(replies::BAD_SPAN))?;
    Ok(options.creation(error, capacity as u64, span))
}

/// A parsed windowed BF.INSERT.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Insert {
    /// What a missing key is created with (None: no WINDOW given, so the
    /// key must hold a windowed filter already).
    pub creation: Option<Creation>,
    pub nocreate: bool,
    /// The epoch to add at (from a master or an AOF); None: the clock's.
    pub at: Option<u64>,
    pub items_from: usize,
}

pub fn parse_insert(
    args: &impl ArgSource,
    defaults: &WindowDefaults,
    source: Source,
) -> Result<Insert, CommandError> {
    if args.count() < 4 {
        return Err(CommandError::Arity);
    }
    let mut options = Options::new(defaults, source);
    let mut error = defaults.chain.error;
    let mut capacity = defaults.chain.capacity as i64;
    let mut nocreate = false;
    let mut i = 2;
    let items_from = loop {
        if i >= args.count() {
            return Err(CommandError::Arity);
        }
        let token = args.arg(i);
        if token.eq_ignore_ascii_case(b"ITEMS") {
            break i + 1;
        }
        if token.eq_ignore_ascii_case(b"CAPACITY") {
            options.given.mark(Given::CAPACITY, token)?;
            capacity = args
                .int(i + 1)
                .filter(|&c| c > 0)
                .ok_or(CommandError::Static(bloom::INSERT_BAD_CAPACITY))?;
            i += 2;
        } else if token.eq_ignore_ascii_case(b"ERROR") {
            options.given.mark(Given::ERROR, token)?;
            error = args
                .double(i + 1)
                .filter(|&e| e > 0.0 && e < 1.0)
                .ok_or(CommandError::Static(bloom::INSERT_BAD_ERROR_RATE))?;
            i += 2;
        } else if token.eq_ignore_ascii_case(b"NOCREATE") {
            options.given.mark(Given::NOCREATE, token)?;
            nocreate = true;
            i += 1;
        } else {
            i = options
                .read(args, i)?
                .ok_or(CommandError::Static(replies::UNKNOWN_OPTION))?;
        }
    };
    if items_from >= args.count() {
        return Err(CommandError::Arity);
    }
    let creation = options
        .span
        .map(|span| options.creation(error, capacity as u64, span));
    Ok(Insert {
        creation,
        nocreate,
        at: options.at,
        items_from,
    })
}

/// `BF.PLAN capacity error_rate WINDOW span [GENERATIONS n] [POLICY p]
/// [NONSCALING]`: a windowed filter's shape, before anything is allocated.
pub fn parse_plan(
    args: &impl ArgSource,
    defaults: &WindowDefaults,
    source: Source,
) -> Result<Creation, CommandError> {
    if args.count() < 5 {
        return Err(CommandError::Arity);
    }
    let capacity = match args.int(1) {
        Some(c) if c >= 1 => c as u64,
        _ => return Err(CommandError::Static(bloom::PLAN_BAD_CAPACITY)),
    };
    let error = match args.double(2) {
        Some(e) if e > 0.0 && e < 1.0 => e,
        _ => return Err(CommandError::Static(bloom::PLAN_BAD_ERROR_RATE)),
    };
    // A plan has no clock: ORIGIN and AT are options of a filter's life.
    let plan_option = |i: usize| {
        let token = args.arg(i);
        !(token.eq_ignore_ascii_case(b"ORIGIN") || token.eq_ignore_ascii_case(b"AT"))
    };
    let mut options = Options::new(
        defaults,
        Source {
            trusted: false,
            ..source
        },
    );
    let mut i = 3;
    while i < args.count() {
        if !plan_option(i) {
            return Err(CommandError::Static(replies::UNKNOWN_PLAN_OPTION));
        }
        i = options
            .read(args, i)?
            .ok_or(CommandError::Static(replies::UNKNOWN_PLAN_OPTION))?;
    }
    Ok(Creation {
        params: WindowParams {
            error,
            capacity,
            span: options
                .span
                .ok_or(CommandError::Static(replies::BAD_SPAN))?,
            generations: options.generations,
            policy: options.policy,
            scaling: !options.nonscaling,
        },
        origin_ms: None,
        given: options.given,
    })
}
