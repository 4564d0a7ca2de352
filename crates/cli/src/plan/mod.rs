//! `ferrobloom plan`: the size of a filter before it exists, computed
//! offline by the same code as BF.PLAN and CF.PLAN.
//!
//! One leaf per type (`bloom`, `cuckoo`, `window`) turns the shared
//! [`PlanArgs`] into a [`Planned`]; this file holds what they share: the
//! flags, the choice of leaf, and how a plan and its warnings are printed.
//! A leaf imports from here only, never from another leaf.

mod bloom;
mod cms;
mod cuckoo;
mod flags;
mod tdigest;
mod topk;
mod window;

use clap::Args;
use console::style;
use ferrobloom_core::window::Span;
use ferrobloom_core::Policy;
use serde_json::Value;

use crate::fmt;
use crate::{Failure, Result, EXIT_USAGE};
use flags::{
    parse_count, parse_decay, parse_error_rate, parse_expansion, parse_generations, parse_policy,
    parse_positive, parse_rate, parse_span, Rate,
};

/// Size a filter offline: links, memory, false positive rate.
///
/// Computes, without a server, the links a filter will have to hold
/// --items items, what each costs, the total memory (bit arrays and BF.INFO
/// Size) and the expected false positive rate, under the exact and pow2
/// allocation policies. The numbers are BF.PLAN's (same code).
///
/// With --cuckoo, sizes a Cuckoo filter (CF.RESERVE): its first
/// sub-filter, every expansion up to the cf-max-expansions limit, the false
/// positive bound, and the load at which the first expansion typically
/// happens (measured); the numbers are CF.PLAN's.
///
/// With --window, sizes a windowed filter (BF.RESERVE ... WINDOW): its
/// generations, their error rate, its memory (fixed at creation), how late
/// it forgets, and what a plain filter or filters rotated by hand would
/// take instead; the numbers are BF.PLAN ... WINDOW's.
///
/// With --cms, sizes a Count-Min sketch (CMS.INITBYPROB from --error and
/// --probability, or CMS.INITBYDIM from --width and --depth) for an
/// expected --total count: its width and depth, its bytes at each cell
/// size, the overestimate to expect (error × total with probability
/// 1 − p), and the smallest cell size that holds the total.
///
/// With --topk K, sizes a Top-K sketch (TOPK.RESERVE key K [width depth
/// decay]): its memory as MEMORY USAGE reports it and as it is allocated,
/// what the memory guard would say, and the smallest count its width,
/// depth and decay track reliably.
///
/// With --tdigest COMPRESSION, sizes a t-digest (TDIGEST.CREATE key
/// COMPRESSION c): its capacity, its memory, what the memory guard would
/// say, and the rank error to expect for --observations values.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ferrobloom plan --capacity 10000000 --error 0.001 --items 25000000
  ferrobloom plan --capacity 1000000 --error 0.01 --nonscaling --items 1500000 --json
  ferrobloom plan --window 30d --per-day 500000 --error 0.001
  ferrobloom plan --window 12h --rate 2000/m --error 0.01 --generations 12
  ferrobloom plan --window 1000000 --error 0.001
  ferrobloom plan --cuckoo --capacity 1000000 --bucket-size 4
  ferrobloom plan --cms --error 0.001 --probability 0.01 --total 1e6
  ferrobloom plan --cms --width 2000 --depth 7 --total 50000 --json
  ferrobloom plan --topk 100 --width 2000 --depth 7 --decay 0.9
  ferrobloom plan --tdigest 200 --observations 1e8")]
pub struct PlanArgs {
    /// Capacity of the first link (BF.RESERVE's capacity): a whole number
    /// such as 1000000, 1_000_000, 1,000,000 or 1e6. With --window: the
    /// items expected within one window (or give --rate / --per-day).
    #[arg(
        long,
        value_parser = parse_positive,
        allow_negative_numbers = true,
        required_unless_present_any = ["window", "cms", "topk", "tdigest"]
    )]
    pub capacity: Option<u64>,
    /// Target error rate, between 0 and 1 (BF.RESERVE's error_rate). With
    /// --cms: CMS.INITBYPROB's error, the overestimate as a fraction of
    /// the total count.
    #[arg(
        long,
        value_parser = parse_error_rate,
        allow_negative_numbers = true,
        required_unless_present_any = ["cuckoo", "cms", "topk", "tdigest"]
    )]
    pub error: Option<f64>,
    /// Capacity multiplier of each new link [default: 2]. With --cuckoo:
    /// CF.RESERVE's EXPANSION, 0 to 32768 [default: 1].
    #[arg(long, value_parser = parse_expansion, allow_negative_numbers = true)]
    pub expansion: Option<u32>,
    /// Plan a Cuckoo filter (CF.RESERVE --capacity) instead of a Bloom
    /// filter.
    #[arg(
        long,
        conflicts_with_all = ["error", "window", "nonscaling", "items", "policy"]
    )]
    pub cuckoo: bool,
    /// With --cuckoo: slots per bucket, 1 to 255 (BUCKETSIZE) [default: 2].
    #[arg(
        long,
        requires = "cuckoo",
        value_parser = clap::value_parser!(u8).range(1..),
    )]
    pub bucket_size: Option<u8>,
    /// With --cuckoo: kick-outs before an insert expands the filter, 1 to
    /// 65535 (MAXITERATIONS) [default: 20].
    #[arg(
        long,
        requires = "cuckoo",
        value_parser = clap::value_parser!(u16).range(1..),
    )]
    pub max_iterations: Option<u16>,
    /// With --cuckoo: the server's bf.cf-max-expansions (CF_MAX_EXPANSIONS):
    /// an add is refused once the filter has this many sub-filters.
    #[arg(
        long,
        requires = "cuckoo",
        default_value_t = ferrobloom_core::cuckoo::sizing::DEFAULT_MAX_EXPANSIONS,
        value_parser = clap::value_parser!(u64).range(1..=65535),
    )]
    pub max_expansions: u64,
    /// Plan a Count-Min sketch (CMS.INITBYPROB with --error and
    /// --probability, or CMS.INITBYDIM with --width and --depth) for a
    /// --total count.
    #[arg(
        long,
        conflicts_with_all = [
            "cuckoo", "window", "nonscaling", "items", "policy", "capacity", "expansion"
        ],
        requires = "total"
    )]
    pub cms: bool,
    /// With --cms: CMS.INITBYPROB's probability, between 0 and 1, that an
    /// estimate is off by more than the error.
    #[arg(
        long,
        requires = "cms",
        value_parser = parse_error_rate,
        allow_negative_numbers = true
    )]
    pub probability: Option<f64>,
    /// With --cms: CMS.INITBYDIM's width (counters per row). With --topk:
    /// TOPK.RESERVE's width (buckets per row, at most 4294967295)
    /// [default: 8].
    #[arg(
        long,
        conflicts_with_all = ["error", "probability"],
        value_parser = parse_positive,
        allow_negative_numbers = true
    )]
    pub width: Option<u64>,
    /// With --cms: CMS.INITBYDIM's depth (rows). With --topk:
    /// TOPK.RESERVE's depth (rows, at most 4294967295) [default: 7].
    #[arg(
        long,
        conflicts_with_all = ["error", "probability"],
        value_parser = parse_positive,
        allow_negative_numbers = true
    )]
    pub depth: Option<u64>,
    /// Plan a Top-K sketch of K items (TOPK.RESERVE key K [width depth
    /// decay]), 1 to 4294967295.
    #[arg(
        long,
        value_name = "K",
        conflicts_with_all = [
            "cuckoo", "window", "nonscaling", "items", "policy", "capacity", "expansion",
            "cms", "error", "probability"
        ],
        value_parser = clap::value_parser!(u32).range(1..),
    )]
    pub topk: Option<u32>,
    /// With --topk: the mean item length in bytes, for the memory of a
    /// full list (TOPK.PLAN's ITEMLEN) [default: 0].
    #[arg(
        long,
        value_name = "BYTES",
        value_parser = parse_count,
        allow_negative_numbers = true
    )]
    pub item_bytes: Option<u64>,
    /// With --topk: TOPK.RESERVE's decay, above 0 and at most 1
    /// [default: 0.9].
    #[arg(
        long,
        requires = "topk",
        value_parser = parse_decay,
        allow_negative_numbers = true
    )]
    pub decay: Option<f64>,
    /// Plan a t-digest of this compression (TDIGEST.CREATE key
    /// COMPRESSION c): a positive integer.
    #[arg(
        long,
        value_name = "COMPRESSION",
        conflicts_with_all = [
            "cuckoo", "window", "nonscaling", "items", "policy", "capacity", "expansion",
            "cms", "topk", "error", "probability", "total", "width", "depth"
        ],
        value_parser = parse_positive,
        allow_negative_numbers = true
    )]
    pub tdigest: Option<u64>,
    /// With --tdigest: the values the digest will hold, for its rank error
    /// [default: 1000000].
    #[arg(
        long,
        value_name = "N",
        requires = "tdigest",
        value_parser = parse_count,
        allow_negative_numbers = true
    )]
    pub observations: Option<u64>,
    /// With --cms: the total count the sketch is expected to reach (the
    /// sum of all increments, CMS.INFO count). With --topk: the stream's
    /// expected total count, for the smallest count tracked reliably
    /// (TOPK.PLAN's TOTAL).
    #[arg(
        long,
        value_parser = parse_count,
        allow_negative_numbers = true
    )]
    pub total: Option<u64>,
    /// A filter that never adds links (items beyond its capacity are refused).
    #[arg(long)]
    pub nonscaling: bool,
    /// Items to plan for [default: the capacity].
    #[arg(long, value_parser = parse_count, allow_negative_numbers = true)]
    pub items: Option<u64>,
    /// Only this allocation policy, exact or pow2 [default: both; with
    /// --window: exact].
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<Policy>,
    /// A windowed filter that forgets items older than SPAN: a duration
    /// (30d, 12h, 90m, 3600s) or a whole number N (the last N items).
    #[arg(long, value_name = "SPAN", value_parser = parse_span)]
    pub window: Option<Span>,
    /// Generations the window is cut into, 1 to 64 (with --window)
    /// [default: 8].
    #[arg(
        long,
        value_name = "G",
        requires = "window",
        value_parser = parse_generations,
        allow_negative_numbers = true
    )]
    pub generations: Option<u32>,
    /// Items arriving per unit of time, N/s, N/m, N/h or N/d (with a time
    /// --window): the capacity is the rate times the window.
    #[arg(
        long,
        value_name = "N/UNIT",
        requires = "window",
        conflicts_with = "capacity",
        value_parser = parse_rate,
        allow_negative_numbers = true
    )]
    pub rate: Option<Rate>,
    /// Items arriving per day (--rate N/d).
    #[arg(
        long,
        value_name = "N",
        requires = "window",
        conflicts_with_all = ["capacity", "rate"],
        value_parser = parse_positive,
        allow_negative_numbers = true
    )]
    pub per_day: Option<u64>,
    /// The server's bf.max-filter-bytes, to warn about filters it would
    /// refuse (0: no limit).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = DEFAULT_MAX_FILTER_BYTES,
        value_parser = parse_count,
        allow_negative_numbers = true
    )]
    pub max_filter_bytes: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// FerroBloom's default bf.max-filter-bytes (4 GiB).
pub const DEFAULT_MAX_FILTER_BYTES: u64 = 4 << 30;

impl PlanArgs {
    /// The error rate of a Bloom filter plan (clap requires it without
    /// --cuckoo).
    pub fn error(&self) -> f64 {
        self.error.expect("--error is required for a Bloom filter")
    }
}

/// A leaf's plan, ready to print.
trait Planned {
    fn to_json(&self) -> Value;
    fn to_text(&self) -> String;
}

pub fn run(args: &PlanArgs) -> Result<u8> {
    let planned = leaf(args)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&planned.to_json()).expect("JSON")
        );
    } else {
        print!("{}", planned.to_text());
    }
    Ok(0)
}

/// The plan of the type the flags ask for: --cuckoo, --cms, --topk,
/// --tdigest, --window, or a Bloom filter; flags of another type are usage
/// errors.
fn leaf(args: &PlanArgs) -> Result<Box<dyn Planned + '_>> {
    if args.cuckoo {
        return Ok(Box::new(cuckoo::plan(args)?));
    }
    if args.cms {
        return Ok(Box::new(cms::plan(args)?));
    }
    if args.topk.is_some() {
        return Ok(Box::new(topk::plan(args)?));
    }
    if args.tdigest.is_some() {
        return Ok(Box::new(tdigest::plan(args)?));
    }
    if args.width.is_some() || args.depth.is_some() {
        return Err(usage(
            "--width and --depth size a Count-Min sketch or a Top-K: add --cms or --topk",
        ));
    }
    // clap waives `requires` when the flag required conflicts with one
    // given (--decay with --capacity): checked here.
    if args.decay.is_some() || args.item_bytes.is_some() {
        return Err(usage("--decay and --item-bytes size a Top-K: add --topk"));
    }
    if args.total.is_some() {
        return Err(usage(
            "--total plans a Count-Min sketch or a Top-K: add --cms or --topk",
        ));
    }
    if args.observations.is_some() {
        return Err(usage("--observations sizes a t-digest: add --tdigest"));
    }
    if args.bucket_size.is_some() || args.max_iterations.is_some() {
        return Err(usage(
            "--bucket-size and --max-iterations size a Cuckoo filter: add --cuckoo",
        ));
    }
    if args.expansion == Some(0) {
        return Err(usage(
            "--expansion must be positive for a Bloom filter (0 is a Cuckoo filter's \
             EXPANSION: --cuckoo)",
        ));
    }
    if args.window.is_some() {
        return Ok(Box::new(window::WindowPlan::new(args)?));
    }
    Ok(Box::new(bloom::plan(args)?))
}

/// An invalid combination of flags (exit status 64).
fn usage(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        code: EXIT_USAGE,
    }
}

/// A small probability as a percentage with enough digits to be useful.
pub fn percent_fine(p: f64) -> String {
    format!("{}%", fmt::g(p * 100.0, 3))
}

/// Appends each warning to a plan's text, after a blank line.
fn push_warnings(out: &mut String, warnings: Vec<String>) {
    for w in warnings {
        out.push_str(&format!("\n{} {w}\n", style("WARNING:").yellow().bold()));
    }
}

/// Every field empty but the defaults clap gives, for the leaves' tests.
#[cfg(test)]
fn test_args() -> PlanArgs {
    PlanArgs {
        capacity: None,
        error: None,
        expansion: None,
        cuckoo: false,
        bucket_size: None,
        max_iterations: None,
        max_expansions: 32,
        cms: false,
        probability: None,
        width: None,
        depth: None,
        total: None,
        topk: None,
        item_bytes: None,
        decay: None,
        tdigest: None,
        observations: None,
        nonscaling: false,
        items: None,
        policy: None,
        window: None,
        generations: None,
        rate: None,
        per_day: None,
        max_filter_bytes: DEFAULT_MAX_FILTER_BYTES,
        json: false,
    }
}
