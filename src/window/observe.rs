//! BF.STATS on a windowed filter: the window and how much of it the filter
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

use crate::bloom::observe::policy_name;
use crate::command::Reply;
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
    let generation_span = match params.span {
        Span::Time { .. } => Span::Time {
            ms: spec.generation_span,
        },
        Span::Items { .. } => Span::Items {
            count: spec.generation_span,
        },
    };
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
