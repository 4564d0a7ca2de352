//! BF.STATS and BF.PLAN ... WINDOW. BF.STATS on a windowed filter: the window and how much of it the filter
//! covers, each live generation (items, fill, age), what was forgotten, and
//! the false positive rate estimated from the bits actually set.
//!
//! The fill level judges generations by their share of the window, not by
//! the plain filters' warning and alert thresholds: an item window's
//! generation is full by design before it rotates. `warning` says a
//! generation has received more than its share (more than `capacity`
//! items per window are arriving); `alert` says the estimated false
//! positive rate is above the error rate asked for, or a generation has
//! received more than twice its share (a scaling window keeps its error
//! rate by growing, so the load itself must be seen). `INFO bf` counts
//! windows at these levels in its warning and alert totals.

use std::borrow::Cow;
use std::ffi::CStr;

use ferrobloom_core::window::{GenerationView, Span, WindowFilter, WindowSpec};

use super::create::sizing_error;
use super::grammar::{self, Source, WindowDefaults};
use super::Window;
use crate::bloom::observe::policy_name;
use crate::command::{ArgSource, CommandError, Env, KeylessCommand, Outcome, ReadCommand, Reply};
use crate::metrics::WindowLevel;

/// A generation this far over its share alerts even when its false
/// positive rate holds (a scaling window grew it): far more is arriving
/// than was planned, and memory follows.
pub const ALERT_LOAD: f64 = 2.0;

/// The level of a window: see the module's documentation.
pub fn level(fullest: f64, estimated_fpr: f64, error: f64) -> WindowLevel {
    if estimated_fpr > error || fullest > ALERT_LOAD {
        WindowLevel::Alert
    } else if fullest > 1.0 {
        WindowLevel::Warning
    } else {
        WindowLevel::Ok
    }
}

/// The fill level of a window, as BF.STATS names it.
pub fn fill_level(fullest: f64, estimated_fpr: f64, error: f64) -> &'static CStr {
    match level(fullest, estimated_fpr, error) {
        WindowLevel::Alert => c"alert",
        WindowLevel::Warning => c"warning",
        WindowLevel::Ok => c"ok",
    }
}

/// How much of its window the filter has seen, at most 1: a time window
/// created less than a window ago cannot know what was added before it
/// existed; an item window has seen every item so far, fewer than its span
/// until that many have arrived.
pub fn coverage(f: &WindowFilter, at: u64, now_ms: u64) -> f64 {
    let seen = match f.spec().params.span {
        Span::Time { ms } => now_ms.saturating_sub(f.origin_ms()) as f64 / ms.max(1) as f64,
        Span::Items { count } => (f.forgotten() + f.items(at)) as f64 / count.max(1) as f64,
    };
    seen.min(1.0)
}

/// How late an item may be forgotten after it leaves the window, as the
/// user writes spans: a duration, or a count of items (`0`: an item
/// window whose generations divide it keeps exactly its last N items).
pub fn late_by(spec: &WindowSpec) -> String {
    match spec.params.span {
        Span::Time { .. } => Span::Time { ms: spec.slack() }.display(),
        Span::Items { .. } => spec.slack().to_string(),
    }
}

/// How long one generation lasts, in the window's unit.
fn generation_span(spec: &WindowSpec) -> Span {
    match spec.params.span {
        Span::Time { .. } => Span::Time {
            ms: spec.generation_span,
        },
        Span::Items { .. } => Span::Items {
            count: spec.generation_span,
        },
    }
}

pub fn stats(f: &WindowFilter, now_ms: u64) -> Reply<'static> {
    let at = f.epoch_at(now_ms);
    let spec = f.spec();
    let params = spec.params;
    let live = f.generation_views(at);
    let fullest = live
        .iter()
        .map(GenerationView::fill_ratio)
        .fold(0.0, f64::max);
    let estimated_fpr = f.estimated_fpr(at);
    let text = |s: String| Reply::Bulk(Cow::Owned(s.into_bytes()));
    let generation_span = generation_span(spec);
    let per_generation = live
        .iter()
        .map(|g| {
            Reply::Map(vec![
                (c"epoch", Reply::count(g.epoch)),
                (
                    c"age_ms",
                    f.epoch_start_ms(g.epoch).map_or(Reply::Null, |start| {
                        Reply::count(now_ms.saturating_sub(start))
                    }),
                ),
                (c"items", Reply::count(g.items)),
                (c"capacity", Reply::count(g.capacity)),
                (c"bit_arrays", Reply::count(u64::from(g.links))),
                (c"bytes", Reply::count(g.bytes)),
                (c"fill_ratio", Reply::Double(g.fill_ratio())),
                (c"set_fraction", Reply::Double(g.set_fraction())),
                (c"estimated_fpr", Reply::Double(g.estimated_fpr)),
            ])
        })
        .collect();
    Reply::Map(vec![
        (c"window", text(params.span.display())),
        (c"generations", Reply::count(u64::from(params.generations))),
        (c"generation_span", text(generation_span.display())),
        (c"epoch", Reply::count(at)),
        (c"capacity", Reply::count(params.capacity)),
        (c"items", Reply::count(f.items(at))),
        (c"bytes", Reply::count(f.bytes())),
        (c"policy", policy_name(params.policy)),
        (c"scaling", Reply::count(u64::from(params.scaling))),
        (c"coverage", Reply::Double(coverage(f, at, now_ms))),
        (c"fill_ratio", Reply::Double(fullest)),
        (
            c"fill_level",
            Reply::Simple(fill_level(fullest, estimated_fpr, params.error)),
        ),
        (c"estimated_fpr", Reply::Double(estimated_fpr)),
        (c"target_error", Reply::Double(params.error)),
        (c"rotations", Reply::count(f.rotations())),
        (c"forgotten", Reply::count(f.forgotten())),
        (c"forgotten_late_by", text(late_by(spec))),
        (
            c"pending_clear_bytes",
            Reply::count(f.pending_clear_bytes()),
        ),
        (c"per_generation", Reply::Array(per_generation)),
    ])
}

/// BF.STATS on a windowed filter.
pub struct Stats;

impl ReadCommand for Stats {
    const NAME: &'static CStr = c"bf.stats";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Window;

    fn read(w: &Window, _: &impl ArgSource, env: &impl Env) -> Reply<'static> {
        stats(w.filter(), env.now_ms())
    }
}

/// BF.PLAN with a WINDOW option (routed here by `claims`).
pub struct Plan;

impl KeylessCommand for Plan {
    const NAME: &'static CStr = c"bf.plan";

    fn run(args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
        Outcome::reply(plan_reply(args, env).unwrap_or_else(Reply::Error))
    }

    fn claims(args: &impl ArgSource) -> bool {
        grammar::plans_a_window(args)
    }
}

/// BF.PLAN ... WINDOW: the shape and memory of a windowed filter, what a
/// plain filter holding one window's items would take, and what a steady
/// 2x and 10x the planned items per window would cost: memory when it
/// scales, the false positive rate with NONSCALING.
fn plan_reply(args: &impl ArgSource, env: &impl Env) -> Result<Reply<'static>, CommandError> {
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
    let generation_span = generation_span(&spec);
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
