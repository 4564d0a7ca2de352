//! FerroBloom's own Count-Min commands. CMS.STATS: what a sketch holds,
//! the overestimate to expect at its N, and how close its fullest cell is
//! to the cell size's maximum (it reads every cell: O(width·depth)).
//! CMS.PLAN: what CMS.INITBYPROB / CMS.INITBYDIM would create, at each
//! cell size, without a key. Replies are maps in RESP3 and flat name/value
//! arrays in RESP2, like CMS.INFO.

use std::ffi::CStr;

use ferrobloom_core::cms::plan::{self as cms_plan, CellSizePlan, PlanInput};
use ferrobloom_core::cms::sizing::check_dims;
use ferrobloom_core::cms::{stats, CellSize, InitError};
use ferrobloom_core::AllocRequest;

use super::{read, Sketch};
use crate::command::{
    Absent, ArgSource, CommandError, Env, KeylessCommand, Outcome, ReadCommand, Reply,
};
use crate::guard;

pub struct Stats;

impl ReadCommand for Stats {
    const NAME: &'static CStr = c"cms.stats";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Sketch;

    fn read(sketch: &Sketch, _: &impl ArgSource, env: &impl Env) -> Reply<'static> {
        stats_reply(sketch, env)
    }

    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        read::absent(key)
    }
}

/// `ok`, `warning` when the fullest cell has reached the fill-warning
/// fraction of its maximum, `alert` past fill-alert: increments of the
/// items in that cell will soon be refused (`CMS: INCRBY overflow`).
pub fn fill_level(fullest_fraction: f64, env: &impl Env) -> &'static CStr {
    let settings = env.settings();
    if fullest_fraction >= settings.fill_alert {
        c"alert"
    } else if fullest_fraction >= settings.fill_warning {
        c"warning"
    } else {
        c"ok"
    }
}

fn stats_reply(sketch: &Sketch, env: &impl Env) -> Reply<'static> {
    let s = sketch.sketch();
    let st = stats::stats(s);
    Reply::Map(vec![
        (c"width", Reply::count(st.width)),
        (c"depth", Reply::count(st.depth)),
        (c"cell_size", Reply::count(st.cell_size.bytes())),
        (c"count", Reply::Integer(s.reported_count())),
        (c"bytes", Reply::count(s.cell_bytes().len() as u64)),
        (c"memory_usage", Reply::count(s.memory_usage())),
        (c"error_bound", Reply::Double(st.bound.counts)),
        (c"confidence", Reply::Double(st.bound.confidence)),
        (c"fullest_cell", Reply::count(st.fullest_cell)),
        (c"cell_max", Reply::count(st.cell_max)),
        (c"fullest_fraction", Reply::Double(st.fullest_fraction)),
        (c"count_headroom", Reply::count(st.count_headroom)),
        (
            c"fill_level",
            Reply::Simple(fill_level(st.fullest_fraction, env)),
        ),
    ])
}

/// `CMS.PLAN BYPROB error probability [TOTAL n]` or
/// `CMS.PLAN BYDIM width depth [TOTAL n]`.
pub struct PlanCommand;

impl KeylessCommand for PlanCommand {
    const NAME: &'static CStr = c"cms.plan";

    fn run(args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
        Outcome::reply(plan_reply(args, env).unwrap_or_else(Reply::Error))
    }
}

/// CMS.INITBYDIM's and CMS.INITBYPROB's texts for the same numbers
/// (RedisBloom's, without `ERR`).
const INVALID_WIDTH: &CStr = c"CMS: invalid width";
const INVALID_DEPTH: &CStr = c"CMS: invalid depth";
const INVALID_OVERESTIMATION: &CStr = c"CMS: invalid overestimation value";
const INVALID_PROB: &CStr = c"CMS: invalid prob value";
/// CMS.PLAN's own, worded as BF.PLAN's.
pub const PLAN_UNKNOWN_MODE: &CStr = c"ERR unknown mode (expected BYPROB or BYDIM)";
pub const PLAN_UNKNOWN_ARGUMENT: &CStr = c"ERR unknown argument (expected TOTAL)";
pub const PLAN_BAD_TOTAL: &CStr = c"ERR bad total (expected an integer >= 0)";

fn init_error(e: InitError) -> &'static CStr {
    match e {
        InitError::Overestimation => INVALID_OVERESTIMATION,
        InitError::Probability => INVALID_PROB,
        InitError::InvalidArguments => c"CMS: invalid init arguments",
        InitError::InsufficientMemory => c"CMS: Insufficient memory to create the key",
    }
}

/// A parsed CMS.PLAN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanRequest {
    pub input: PlanInput,
    pub total: u64,
}

/// The mode, then its two numbers with CMS.INITBYPROB's or CMS.INITBYDIM's
/// checks and texts, in their order; then `TOTAL n` (any case).
pub fn parse_plan(args: &impl ArgSource) -> Result<PlanRequest, CommandError> {
    if args.count() < 4 {
        return Err(CommandError::Arity);
    }
    let mode = args.arg(1);
    let input = if mode.eq_ignore_ascii_case(b"BYPROB") {
        let error = args
            .double(2)
            .filter(|&e| e > 0.0 && e < 1.0)
            .ok_or(CommandError::Static(INVALID_OVERESTIMATION))?;
        let probability = args
            .double(3)
            .filter(|&p| p > 0.0 && p < 1.0)
            .ok_or(CommandError::Static(INVALID_PROB))?;
        PlanInput::Prob { error, probability }
    } else if mode.eq_ignore_ascii_case(b"BYDIM") {
        let dimension = |i: usize, text: &'static CStr| {
            args.int(i)
                .filter(|&n| n >= 1)
                .map(|n| n as u64)
                .ok_or(CommandError::Static(text))
        };
        let width = dimension(2, INVALID_WIDTH)?;
        let depth = dimension(3, INVALID_DEPTH)?;
        PlanInput::Dims { width, depth }
    } else {
        return Err(CommandError::Static(PLAN_UNKNOWN_MODE));
    };
    let mut total = 0;
    let mut i = 4;
    while i < args.count() {
        if !args.arg(i).eq_ignore_ascii_case(b"TOTAL") {
            return Err(CommandError::Static(PLAN_UNKNOWN_ARGUMENT));
        }
        if i + 1 >= args.count() {
            return Err(CommandError::Arity);
        }
        total = args
            .int(i + 1)
            .filter(|&n| n >= 0)
            .ok_or(CommandError::Static(PLAN_BAD_TOTAL))? as u64;
        i += 2;
    }
    Ok(PlanRequest { input, total })
}

/// What the memory guard would answer a creation of this size now, with
/// the live settings: `ok`, `insufficient-memory` when the cells could
/// not be addressed at all (CMS.INITBY*'s `CMS: Insufficient memory to
/// create the key`), else the limit it would cross (`bf.max-filter-bytes`,
/// `maxmemory`, `machine-memory`, as CF.PLAN names them).
pub fn guard_verdict(width: u64, depth: u64, plan: &CellSizePlan, env: &impl Env) -> &'static CStr {
    if check_dims(width, depth, plan.cell_size).is_err() {
        return c"insufficient-memory";
    }
    let request = AllocRequest {
        bytes: plan.cell_bytes,
        filter_size_after: plan.memory_usage,
    };
    match guard::check(env.memory(), env.settings().max_filter_bytes, request) {
        Ok(()) => c"ok",
        Err(refusal) => crate::cuckoo::observe::refusal_kind(refusal.kind),
    }
}

fn plan_reply(args: &impl ArgSource, env: &impl Env) -> Result<Reply<'static>, CommandError> {
    let request = parse_plan(args)?;
    let plan = cms_plan::plan(request.input, request.total)
        .map_err(|e| CommandError::Static(init_error(e)))?;
    let cell_sizes = plan
        .cell_sizes
        .iter()
        .map(|c| {
            Reply::Map(vec![
                (c"cell_size", Reply::count(c.cell_size.bytes())),
                (c"bytes", Reply::count(c.cell_bytes)),
                (c"memory_usage", Reply::count(c.memory_usage)),
                (c"holds_total", Reply::count(u64::from(c.holds_total))),
                (
                    c"guard",
                    Reply::Simple(guard_verdict(plan.width, plan.depth, c, env)),
                ),
            ])
        })
        .collect();
    Ok(Reply::Map(vec![
        (c"width", Reply::count(plan.width)),
        (c"depth", Reply::count(plan.depth)),
        (c"total", Reply::count(plan.total)),
        (c"error", Reply::Double(plan.error)),
        (c"probability", Reply::Double(plan.probability)),
        (c"error_bound", Reply::Double(plan.bound.counts)),
        (c"confidence", Reply::Double(plan.bound.confidence)),
        (
            c"textbook_error_bound",
            Reply::Double(plan.textbook_bound.counts),
        ),
        (
            c"textbook_confidence",
            Reply::Double(plan.textbook_bound.confidence),
        ),
        (c"cell_sizes", Reply::Array(cell_sizes)),
        (
            c"smallest_cell_size",
            plan.smallest_cell_size
                .map_or(Reply::Null, |c: CellSize| Reply::count(c.bytes())),
        ),
    ]))
}
